"""``infersight deploy rules``: put the bundle's rule files into a running Prometheus safely.

1. ``promtool check rules`` on every file, in a staging folder: a refused file stops everything
   before the rules folder is touched.
2. Write the files atomically into the rules folder (``infersight-<kind>-<pack>.yaml``) and
   remove infersight files the bundle no longer has, keeping the previous contents in memory.
3. Reload: ``POST /-/reload``; when the lifecycle API is off, say how to reload (SIGHUP) and wait
   for the reload to happen.
4. Confirm through ``/api/v1/status/runtimeinfo`` that the reload succeeded and through
   ``/api/v1/rules`` that Prometheus runs what was written: every group loaded from the file just
   written (not a namesake in another folder), with the same rules, queries, labels and ``for``,
   and every rule evaluated healthy.

Steps 3 and 4 share one deadline (``timeout``), however slowly Prometheus answers. Any failure
after step 2, an interrupt included (Ctrl-C, SIGTERM), restores the previous files and reloads
again, then says what failed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infersight import interrupts
from infersight.deploy import http
from infersight.deploy.naming import resource_name
from infersight.durations import Duration, DurationError
from infersight.output import write_atomic
from infersight.packs import RULE_KINDS

MANAGED_GLOB = "infersight-*.yaml"  # files in the rules folder that this command owns


class DeployError(RuntimeError):
    """The deploy failed; the message says what failed and what state the rules folder is in."""


class DeployInterrupted(DeployError):
    """Ctrl-C or SIGTERM stopped the deploy; the message says what state the rules folder is in."""

    def __init__(self, signum: signal.Signals, message: str):
        super().__init__(message)
        self.exit_code = 128 + signum


def target_name(rel: str) -> str:
    """alerts/kv_cache.yaml -> infersight-alerts-kv-cache.yaml"""
    return resource_name(rel) + ".yaml"


def rule_files(files: Mapping[str, str]) -> dict[str, str]:
    """The bundle's rule files, by their name in the rules folder."""
    return {target_name(rel): text for rel, text in sorted(files.items()) if rel.split("/")[0] in RULE_KINDS}


def promtool_check(files: Mapping[str, str], promtool: str = "promtool") -> None:
    """Raise DeployError with promtool's findings unless every file passes ``check rules``."""
    exe = shutil.which(promtool)
    if exe is None:
        raise DeployError(f"{promtool} not found: install Prometheus's promtool (Debian package prometheus)")
    with tempfile.TemporaryDirectory(prefix="infersight-rules-") as tmp:
        paths = []
        for name, text in files.items():
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        proc = subprocess.run([exe, "check", "rules", *paths], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        report = (proc.stdout + proc.stderr).replace(tmp + "/", "")
        raise DeployError(f"promtool check rules refused the rules; nothing was changed:\n{report.strip()}")


@dataclass(frozen=True)
class RuntimeInfo:
    last_config_time: str
    reload_success: bool


@dataclass
class Prometheus:
    """The parts of Prometheus's HTTP API the deploy uses; an answer that is not Prometheus's JSON
    raises DeployError naming the endpoint."""

    url: str

    def runtime(self, deadline: http.Deadline) -> RuntimeInfo:
        path = "/api/v1/status/runtimeinfo"
        data = self._data(path, http.request("GET", f"{self.url}{path}", deadline=deadline))
        last = data.get("lastConfigTime") if isinstance(data, dict) else None
        success = data.get("reloadConfigSuccess") if isinstance(data, dict) else None
        if not isinstance(last, str) or not isinstance(success, bool):
            raise self._not_prometheus(path, "no lastConfigTime or reloadConfigSuccess")
        return RuntimeInfo(last, success)

    def reload(self, deadline: http.Deadline) -> http.Response:
        return http.request("POST", f"{self.url}/-/reload", deadline=deadline)

    def groups(self, deadline: http.Deadline) -> list[dict[str, Any]]:
        """Every loaded rule group, each with a str ``name`` and ``file`` and ``rules`` that each
        have a str ``name`` and ``query``."""
        path = "/api/v1/rules"
        data = self._data(path, http.request("GET", f"{self.url}{path}", deadline=deadline))
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, list) or not all(_is_group(g) for g in groups):
            raise self._not_prometheus(path, "no list of rule groups, each with name, file and rules")
        return groups

    def format_query(self, query: str, deadline: http.Deadline) -> str | None:
        """The query as Prometheus prints it; None when Prometheus cannot say (before 2.32)."""
        path = "/api/v1/format_query"
        url = f"{self.url}{path}?{urllib.parse.urlencode({'query': query})}"
        resp = http.request("GET", url, deadline=deadline)
        if resp.status == 404:
            return None
        formatted = self._data(path, resp)
        if not isinstance(formatted, str):
            raise self._not_prometheus(path, "no formatted query")
        return formatted

    def _data(self, path: str, resp: http.Response) -> Any:
        if not resp.ok:
            raise DeployError(f"{self.url}{path} answered {resp.status}: {resp.message()}")
        body = resp.body
        if not isinstance(body, dict) or body.get("status") != "success" or "data" not in body:
            raise self._not_prometheus(path, f"it said: {resp.message()[:120]}")
        return body["data"]

    def _not_prometheus(self, path: str, detail: str) -> DeployError:
        return DeployError(
            f"{self.url}{path} answered something that is not Prometheus's JSON ({detail}); is {self.url} Prometheus?"
        )


def _is_group(group: Any) -> bool:
    return (
        isinstance(group, dict)
        and isinstance(group.get("name"), str)
        and isinstance(group.get("file"), str)
        and isinstance(group.get("rules"), list)
        and all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in group["rules"])
        and all(isinstance(r.get("query"), str) for r in group["rules"])
    )


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _for_ms(rule: Mapping[str, Any]) -> int:
    try:
        return Duration.parse(str(rule.get("for") or "0s")).ms
    except DurationError:
        return -1  # promtool passed it, so this does not happen; -1 never matches what Prometheus loaded


@dataclass
class RulesDeploy:
    rules_dir: Path
    prometheus: Prometheus
    timeout: float = 120.0  # seconds for the reload and every rule's first evaluation, together
    log: Callable[[str], None] = print
    poll: float = 0.5
    _previous: dict[str, bytes] = field(default_factory=dict)
    _touched: bool = False  # the rules folder may differ from _previous
    _deadline: http.Deadline = field(default_factory=lambda: http.Deadline.after(0))
    _unformatted: int = 0  # queries Prometheus could not format, compared as text

    def run(self, files: Mapping[str, str]) -> None:
        """Deploy ``files`` ({name in the rules folder: text}); raise DeployError on any failure,
        DeployInterrupted on Ctrl-C or SIGTERM, with the previous files back in place."""
        if not files:
            raise DeployError("the bundle has no rule files")
        promtool_check(files)
        self.log(f"promtool: {len(files)} rule files pass")
        self._check_folder()
        self._touched, self._unformatted = False, 0
        with interrupts.interrupts_raise():
            try:
                self._deploy(files)
            except BaseException as exc:  # anything at all: the folder must not keep unchecked files
                raise self._failed(exc) from None
        self.log(f"every group is loaded and healthy ({len(files)} files in {self.rules_dir})")

    def _check_folder(self) -> None:
        if not self.rules_dir.is_dir():
            raise DeployError(f"{self.rules_dir} is not a folder; give the folder Prometheus's rule_files reads")
        if not os.access(self.rules_dir, os.W_OK | os.X_OK):
            raise DeployError(f"cannot write to {self.rules_dir} (permission denied); nothing was changed")

    def _deploy(self, files: Mapping[str, str]) -> None:
        self._deadline = http.Deadline.after(self.timeout)
        before = self.prometheus.runtime(self._deadline)  # also proves Prometheus answers before anything changes
        try:
            self._previous = {p.name: p.read_bytes() for p in sorted(self.rules_dir.glob(MANAGED_GLOB))}
        except OSError as exc:
            raise DeployError(f"cannot read {exc.filename}: {exc.strerror}; nothing was changed") from None
        self._touched = True
        self._write(files)
        self._reload(before.last_config_time)
        self._confirm(files)

    def _failed(self, exc: BaseException) -> BaseException:
        """What to raise for ``exc``, once the previous files are back (when anything was touched)."""
        state = None
        if self._touched:
            with interrupts.uninterruptible():
                state = self._restore()
        signum = interrupts.signal_of(exc)
        if signum is not None:
            return DeployInterrupted(signum, f"interrupted ({signum.name}); {state or 'nothing was changed'}")
        if isinstance(exc, (DeployError, http.RequestFailed)):
            message = str(exc)
        elif isinstance(exc, Exception):
            message = f"unexpected {type(exc).__name__}: {exc}"
        else:
            return exc  # SystemExit and the like: on their way, after the restore
        if state is None:
            return exc if isinstance(exc, DeployError) else DeployError(message)
        return DeployError(message + ("\n" if "\n" in message else "; ") + state)

    def _write(self, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            try:
                write_atomic(self.rules_dir / name, text)
            except OSError as exc:
                raise DeployError(f"cannot write {self.rules_dir / name}: {exc.strerror or exc}") from None
        for name in sorted(self._previous.keys() - files.keys()):  # packs the bundle no longer has
            try:
                (self.rules_dir / name).unlink()
            except OSError as exc:
                raise DeployError(f"cannot remove {self.rules_dir / name}: {exc.strerror or exc}") from None
        self.log(f"wrote {len(files)} files to {self.rules_dir}")

    def _wait(self) -> bool:
        """Sleep one poll interval; False once the deadline has passed."""
        time.sleep(min(self.poll, self._deadline.remaining()))
        return not self._deadline.expired

    def _reload(self, last_config_time: str) -> None:
        resp = self.prometheus.reload(self._deadline)
        if resp.status == 403:
            self.log(
                "Prometheus's lifecycle API is off (start it with --web.enable-lifecycle to let infersight "
                "reload it). Reload it yourself now, e.g. `kill -HUP $(pidof prometheus)`; waiting up to "
                f"{self._deadline.remaining():.0f}s for the reload."
            )
        elif not resp.ok:
            raise DeployError(f"POST /-/reload failed ({resp.status}): {resp.message()}")
        while True:
            info = self.prometheus.runtime(self._deadline)
            if not info.reload_success:
                raise DeployError("Prometheus failed to load its configuration with the new rules; see its log")
            # An API reload answers once it is done; a SIGHUP shows as a new lastConfigTime.
            if resp.ok or info.last_config_time != last_config_time:
                return
            if not self._wait():
                raise DeployError(f"Prometheus did not reload within the {self.timeout:g}s timeout")

    def _confirm(self, files: Mapping[str, str]) -> None:
        """Every group of every file loaded from that file, as written, each rule evaluated healthy."""
        written = {
            (name, g["name"]): g["rules"]
            for name, text in files.items()
            for g in (yaml.safe_load(text) or {}).get("groups", [])
        }
        compared: set[tuple[str, str]] = set()
        while True:
            loaded = {(Path(g["file"]).name, g["name"]): g for g in self.prometheus.groups(self._deadline)}
            differences, broken, pending = [], [], []
            for key, rules in written.items():
                group = loaded.get(key)
                if group is None:
                    continue
                if key not in compared:
                    differences += self._differences(key[0], rules, group)
                    compared.add(key)
                for rule in group["rules"]:
                    if rule.get("health") == "err":
                        broken.append(f"{key[1]}: {rule['name']}: {rule.get('lastError', 'error')}")
                    elif rule.get("health") != "ok":
                        pending.append(rule["name"])
            if differences:
                count = f" ({len(differences)} differences; the first)" if len(differences) > 1 else ""
                raise DeployError(f"Prometheus does not run what was written{count}: {differences[0]}")
            if broken:
                raise DeployError("unhealthy rules after the reload:\n  " + "\n  ".join(broken))
            missing = sorted(f"{group} ({name})" for name, group in written.keys() - loaded.keys())
            if not missing and not pending:
                if self._unformatted:
                    self.log(
                        f"note: Prometheus has no /api/v1/format_query (before 2.32), so {self._unformatted} "
                        "queries it prints differently were checked by rule name only"
                    )
                return
            if not self._wait():
                if missing:
                    raise DeployError(
                        f"groups not loaded after the reload: {', '.join(missing)}; is "
                        f"{self.rules_dir}/{MANAGED_GLOB} matched by rule_files in prometheus.yml?"
                    )
                raise DeployError(
                    f"rules not evaluated within the {self.timeout:g}s timeout: {', '.join(sorted(pending)[:10])}"
                )

    def _differences(self, name: str, written: list[dict[str, Any]], group: dict[str, Any]) -> list[str]:
        """How the group Prometheus loaded differs from the one written into ``name``, one line each."""
        where = f"group {group['name']} from {group['file']}"
        if self._loaded_from_elsewhere(group["file"], name):
            return [
                f"it loads group {group['name']} from {group['file']}, not from {self.rules_dir / name}; "
                f"is {self.rules_dir} the folder Prometheus's rule_files reads?"
            ]
        names = [r.get("record") or r.get("alert") for r in written]
        if [r["name"] for r in group["rules"]] != names:
            return [f"{where}: its rules are not the ones in {name}"]
        differences = []
        for ours, theirs in zip(written, group["rules"], strict=True):
            rule = f"{where}, rule {theirs['name']}"
            if not self._same_query(str(ours["expr"]), theirs["query"]):
                differences.append(f"{rule}: it runs `{_one_line(theirs['query'])}`, not `{_one_line(ours['expr'])}`")
            for part in ("labels", "annotations"):
                if part in theirs and {k: str(v) for k, v in (ours.get(part) or {}).items()} != theirs[part]:
                    differences.append(f"{rule}: its {part} are {theirs[part]}, not {ours.get(part) or {}}")
            if "duration" in theirs and round(float(theirs["duration"]) * 1000) != _for_ms(ours):
                differences.append(f"{rule}: its for is {theirs['duration']}s, not {ours.get('for', '0s')}")
        return differences

    def _loaded_from_elsewhere(self, reported: str, name: str) -> bool:
        """True when Prometheus names a file on this machine that is not the one written. A path
        that does not exist here (Prometheus in a container, on another host) proves nothing; the
        rules' content decides then."""
        path = Path(reported)
        try:
            return path.is_absolute() and path.exists() and not path.samefile(self.rules_dir / name)
        except OSError:
            return False

    def _same_query(self, ours: str, theirs: str) -> bool:
        """Prometheus reports a query as its parser prints it (``sum by (a) (x)`` for
        ``sum(x) by (a)``): when the text differs, compare both as Prometheus formats them."""
        if ours == theirs:
            return True
        formatted = self.prometheus.format_query(ours, self._deadline)
        if formatted is None:
            self._unformatted += 1
            return True
        return formatted == self.prometheus.format_query(theirs, self._deadline)

    def _restore(self) -> str:
        """Put the previous files back and reload; a sentence on the resulting state. Never raises."""
        failed = []
        for path in sorted(self.rules_dir.glob(MANAGED_GLOB)):
            if path.name not in self._previous:
                try:
                    path.unlink()
                except OSError as exc:
                    failed.append(f"remove {path.name} ({exc.strerror})")
        for name, data in self._previous.items():
            path = self.rules_dir / name
            try:
                if not path.is_file() or path.read_bytes() != data:  # an unchanged file is left alone
                    write_atomic(path, data)
            except OSError as exc:
                failed.append(f"write back {name} ({exc.strerror})")
        if failed:
            return (
                f"could not restore the rules folder {self.rules_dir}: {', '.join(failed)}; fix it before "
                "Prometheus reloads"
            )
        what = f"restored the previous {len(self._previous)} infersight rule files in {self.rules_dir}"
        try:
            # Its own limit: the deploy's deadline may be what just ran out.
            resp = self.prometheus.reload(http.Deadline.after(self.timeout))
        except http.RequestFailed as exc:
            return f"{what}, but could not reload Prometheus ({exc}): reload it before trusting its rules."
        if resp.status == 403:
            return f"{what}; reload Prometheus (SIGHUP) so it drops the failed rules."
        if not resp.ok:
            return f"{what}, but the reload failed ({resp.status}: {resp.message()})."
        return f"{what} and reloaded Prometheus."
