"""``infersight deploy rules``: put the bundle's rule files into a running Prometheus safely.

1. ``promtool check rules`` on every file, in a staging folder: a refused file stops everything
   before the rules folder is touched.
2. Write the files atomically into the rules folder (``infersight-<kind>-<concern>.yaml``) and
   remove infersight files the bundle no longer has, keeping the previous contents in memory.
3. Reload: ``POST /-/reload``; when the lifecycle API is off, say how to reload (SIGHUP) and wait
   for the reload to happen.
4. Confirm through ``/api/v1/status/runtimeinfo`` that the reload succeeded and through
   ``/api/v1/rules`` that every group is loaded from its file and every rule evaluated healthy.

Any failure after step 2 restores the previous files and reloads again, then says what failed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infersight.deploy import http
from infersight.deploy.naming import resource_name
from infersight.output import write_atomic
from infersight.packs import RULE_KINDS

MANAGED_GLOB = "infersight-*.yaml"  # files in the rules folder that this command owns


class DeployError(RuntimeError):
    """The deploy failed; the message says what failed and what state the rules folder is in."""


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


@dataclass
class Prometheus:
    """The parts of Prometheus's HTTP API the deploy uses."""

    url: str

    def runtime(self) -> dict[str, Any]:
        resp = http.request("GET", f"{self.url}/api/v1/status/runtimeinfo")
        if not resp.ok:
            raise DeployError(f"{self.url}/api/v1/status/runtimeinfo answered {resp.status}: {resp.message()}")
        data: dict[str, Any] = resp.body["data"]
        return data

    def reload(self) -> http.Response:
        return http.request("POST", f"{self.url}/-/reload", timeout=60)

    def groups(self) -> list[dict[str, Any]]:
        resp = http.request("GET", f"{self.url}/api/v1/rules")
        if not resp.ok:
            raise DeployError(f"{self.url}/api/v1/rules answered {resp.status}: {resp.message()}")
        groups: list[dict[str, Any]] = resp.body["data"]["groups"]
        return groups


@dataclass
class RulesDeploy:
    rules_dir: Path
    prometheus: Prometheus
    timeout: float = 120.0  # for the reload and for every rule's first evaluation
    log: Callable[[str], None] = print
    poll: float = 0.5
    _previous: dict[str, bytes] = field(default_factory=dict)

    def run(self, files: Mapping[str, str]) -> None:
        """Deploy ``files`` ({name in the rules folder: text}); raise DeployError on any failure."""
        if not files:
            raise DeployError("the bundle has no rule files")
        promtool_check(files)
        self.log(f"promtool: {len(files)} rule files pass")
        if not self.rules_dir.is_dir():
            raise DeployError(f"{self.rules_dir} is not a folder; give the folder Prometheus's rule_files reads")
        before = self.prometheus.runtime()  # also proves Prometheus answers before anything changes
        self._previous = {p.name: p.read_bytes() for p in sorted(self.rules_dir.glob(MANAGED_GLOB))}
        try:
            self._write(files)
            self._reload(before["lastConfigTime"])
            self._confirm(files)
        except (DeployError, OSError) as exc:  # OSError: a write failed, or Prometheus went away
            raise DeployError(f"{exc}\n{self._restore()}") from None
        self.log(f"every group is loaded and healthy ({len(files)} files in {self.rules_dir})")

    def _write(self, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            write_atomic(self.rules_dir / name, text)
        for name in self._previous.keys() - files.keys():
            (self.rules_dir / name).unlink()  # a pack the bundle no longer has
        self.log(f"wrote {len(files)} files to {self.rules_dir}")

    def _reload(self, last_config_time: str) -> None:
        resp = self.prometheus.reload()
        if resp.status == 403:
            self.log(
                "Prometheus's lifecycle API is off (start it with --web.enable-lifecycle to let infersight "
                "reload it). Reload it yourself now, e.g. `kill -HUP $(pidof prometheus)`; waiting "
                f"{self.timeout:g}s for the reload."
            )
        elif not resp.ok:
            raise DeployError(f"POST /-/reload failed ({resp.status}): {resp.message()}")
        deadline = time.monotonic() + self.timeout
        while True:
            info = self.prometheus.runtime()
            if not info["reloadConfigSuccess"]:
                raise DeployError("Prometheus failed to load its configuration with the new rules; see its log")
            # An API reload answers once it is done; a SIGHUP shows as a new lastConfigTime.
            if resp.ok or info["lastConfigTime"] != last_config_time:
                return
            if time.monotonic() > deadline:
                raise DeployError(f"Prometheus did not reload within {self.timeout:g}s")
            time.sleep(self.poll)

    def _confirm(self, files: Mapping[str, str]) -> None:
        """Every group of every file loaded from that file, with its rules, each evaluated healthy."""
        expected = {
            (name, g["name"]): [r.get("record") or r.get("alert") for r in g["rules"]]
            for name, text in files.items()
            for g in (yaml.safe_load(text) or {}).get("groups", [])
        }
        deadline = time.monotonic() + self.timeout
        while True:
            loaded = {(Path(g["file"]).name, g["name"]): g for g in self.prometheus.groups()}
            missing = sorted(f"{group} ({name})" for name, group in expected.keys() - loaded.keys())
            broken, pending = [], []
            for key, names in expected.items():
                group = loaded.get(key)
                if group is None:
                    continue
                if [r["name"] for r in group["rules"]] != names:
                    broken.append(f"{key[1]}: loaded rules differ from {key[0]}")
                for rule in group["rules"]:
                    if rule.get("health") == "err":
                        broken.append(f"{key[1]}: {rule['name']}: {rule.get('lastError', 'error')}")
                    elif rule.get("health") != "ok":
                        pending.append(rule["name"])
            if broken:
                raise DeployError("unhealthy rules after the reload:\n  " + "\n  ".join(broken))
            if not missing and not pending:
                return
            if time.monotonic() > deadline:
                if missing:
                    raise DeployError(
                        f"groups not loaded after the reload: {', '.join(missing)}; is "
                        f"{self.rules_dir}/{MANAGED_GLOB} matched by rule_files in prometheus.yml?"
                    )
                raise DeployError(f"rules not evaluated within {self.timeout:g}s: {', '.join(sorted(pending)[:10])}")
            time.sleep(self.poll)

    def _restore(self) -> str:
        """Put the previous files back and reload; a sentence on the resulting state."""
        for path in self.rules_dir.glob(MANAGED_GLOB):
            if path.name not in self._previous:
                path.unlink()
        for name, data in self._previous.items():
            write_atomic(self.rules_dir / name, data)
        what = f"restored the previous {len(self._previous)} infersight rule files in {self.rules_dir}"
        try:
            resp = self.prometheus.reload()
        except http.Unreachable as exc:
            return f"{what}, but could not reload Prometheus ({exc}): reload it before trusting its rules."
        if resp.status == 403:
            return f"{what}; reload Prometheus (SIGHUP) so it drops the failed rules."
        if not resp.ok:
            return f"{what}, but the reload failed ({resp.status}: {resp.message()})."
        return f"{what} and reloaded Prometheus."
