"""Faults and bad input for ``infersight deploy rules`` and ``infersight deploy dashboards``.

A server that answers HTML, redirects, drips one byte at a time or answers garbage; a --rules-dir
that Prometheus does not read; an interrupt in the middle of a deploy; bad flags and bad bundle
files. Each ends in a one-line error (never a traceback, never a false success), and a failed rules
deploy leaves the previous rule files in place."""

from __future__ import annotations

import shutil
import signal
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.cli import main
from infersight.config import parse_config
from infersight.deploy import rules_deploy
from infersight.deploy.grafana_api import TOKEN_ENV
from infersight.deploy.rules_deploy import MANAGED_GLOB, rule_files
from infersight.durations import Duration
from infersight.stack.process import ManagedProcess, wait_until
from infersight.stack.prometheus import Prometheus
from tests.fault_servers import (
    FaultServer,
    Reply,
    Request,
    drip_server,
    garbage_server,
    html_server,
    redirect_server,
    routes_server,
)

TOKEN = "glsa_fault-test-token-0123456789"
RUNTIME = {"status": "success", "data": {"lastConfigTime": "2026-01-01T00:00:00Z", "reloadConfigSuccess": True}}


# --- bundles and helpers ------------------------------------------------------------------------


def write_bundle(folder: Path, config: dict[str, Any]) -> Path:
    bundle_files.write(bundle_files.render(bundle.build(parse_config(config))), folder)
    return folder


@pytest.fixture(scope="module")
def scaled_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Time-scaled, so every group evaluates within a second of a reload."""
    return write_bundle(tmp_path_factory.mktemp("scaled"), {"time_scale": 60})


@pytest.fixture(scope="module")
def stricter_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same bundle with a changed availability objective: one recording rule's query differs."""
    config = {"time_scale": 60, "slo": {"availability": {"objective": 0.999}}}
    return write_bundle(tmp_path_factory.mktemp("stricter"), config)


def bundle_rule_files(folder: Path) -> dict[str, str]:
    return rule_files({p.relative_to(folder).as_posix(): p.read_text() for p in folder.glob("*/*.yaml")})


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def previous_rules(folder: Path) -> dict[str, bytes]:
    """A rules folder with one earlier infersight file and a file of someone else's."""
    (folder / "infersight-alerts-old.yaml").write_text("groups: []\n")
    (folder / "team-rules.yaml").write_text("groups: []\n")
    return snapshot(folder)


def deploy_rules(bundle_dir: Path, rules_dir: Path, url: str, timeout: str = "30") -> int:
    argv = ["deploy", "rules", "--bundle", str(bundle_dir), "--rules-dir", str(rules_dir)]
    return main([*argv, "--prometheus-url", url, "--timeout", timeout])


def deploy_dashboards(bundle_dir: Path, url: str, *extra: str) -> int:
    return main(["deploy", "dashboards", "--bundle", str(bundle_dir), "--grafana-url", url, *extra])


def one_line_error(capsys: pytest.CaptureFixture[str], command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"infersight deploy {command}: ") and "\n" not in err, err
    return err


def loaded_groups(files: dict[str, str], folder: str) -> list[dict[str, Any]]:
    """/api/v1/rules's groups for ``files`` loaded from ``folder``, every rule evaluated healthy."""

    def rule(r: dict[str, Any]) -> dict[str, Any]:
        loaded = {"name": r.get("record") or r["alert"], "query": r["expr"], "labels": r.get("labels", {})}
        if "alert" in r:
            for_s = Duration.parse(r["for"]).total_seconds if "for" in r else 0
            loaded |= {"type": "alerting", "duration": for_s, "annotations": r.get("annotations", {})}
        return {**loaded, "type": loaded.get("type", "recording"), "health": "ok"}

    return [
        {"name": g["name"], "file": f"{folder}/{name}", "rules": [rule(r) for r in g["rules"]]}
        for name, text in files.items()
        for g in yaml.safe_load(text)["groups"]
    ]


def prometheus_stand_in(rules: Reply, lifecycle: bool = True) -> FaultServer:
    """Prometheus's API as the deploy uses it: the reload succeeds at once (or the lifecycle API is
    off and nobody reloads), /api/v1/rules answers ``rules``, /api/v1/format_query echoes its query
    (the stand-in's queries are already in Prometheus's form)."""

    def answer(request: Request, out: Any, stop: threading.Event) -> None:
        path, _, query = request.path.partition("?")
        if path == "/api/v1/status/runtimeinfo":
            reply = Reply.json(RUNTIME)
        elif path == "/-/reload":
            reply = Reply.json({}) if lifecycle else Reply.text("Lifecycle API is not enabled.", 403)
        elif path == "/api/v1/rules":
            reply = rules
        elif path == "/api/v1/format_query":
            formatted = urllib.parse.parse_qs(query or request.body.decode())["query"][0]
            reply = Reply.json({"status": "success", "data": formatted})
        else:
            reply = Reply.json({"status": "error", "error": "not found"}, 404)
        out.write(reply.encode())

    return FaultServer(answer)


# --- item 1: what Prometheus loaded must be what was written ------------------------------------


@pytest.fixture(scope="module")
def prom_rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prometheus-reads-this")


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, prom_rules: Path) -> Iterator[Prometheus]:
    with Prometheus(tmp_path_factory.mktemp("prom"), rule_files=[prom_rules / MANAGED_GLOB]) as server:
        yield server


@pytest.mark.e2e
def test_a_rules_dir_prometheus_does_not_read_fails_and_is_restored(
    prom: Prometheus,
    prom_rules: Path,
    scaled_bundle: Path,
    stricter_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert deploy_rules(scaled_bundle, prom_rules, prom.url) == 0
    running = {(g["name"], r["name"]): r["query"] for g in prom.rules() for r in g["rules"]}
    elsewhere = tmp_path / "not-in-rule-files"
    elsewhere.mkdir()
    before = previous_rules(elsewhere)
    capsys.readouterr()
    assert deploy_rules(stricter_bundle, elsewhere, prom.url) == 1
    err = one_line_error(capsys, "rules")
    assert str(prom_rules) in err and str(elsewhere) in err and "rule_files" in err
    assert "restored the previous 1 infersight rule files" in err
    assert snapshot(elsewhere) == before
    assert {(g["name"], r["name"]): r["query"] for g in prom.rules() for r in g["rules"]} == running


@pytest.mark.e2e
def test_the_written_rules_are_what_a_real_prometheus_reports(
    prom: Prometheus, prom_rules: Path, stricter_bundle: Path, scaled_bundle: Path
) -> None:
    """The query check holds against Prometheus's own rewriting of every query (1048576 ->
    1.048576e+06, ``sum(x) by (a)`` -> ``sum by (a) (x)``): a real deploy still succeeds."""
    assert deploy_rules(stricter_bundle, prom_rules, prom.url) == 0
    assert any("0.999 *" in r["query"] for g in prom.rules() for r in g["rules"])
    assert deploy_rules(scaled_bundle, prom_rules, prom.url) == 0


def test_a_loaded_query_that_differs_from_the_written_one_fails(
    scaled_bundle: Path, stricter_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Prometheus elsewhere (its rule file path does not exist here) that still runs the old
    objective: the path cannot be checked, the queries can."""
    before = previous_rules(tmp_path)
    old = loaded_groups(bundle_rule_files(scaled_bundle), "/prometheus-host-only/rules")
    with prometheus_stand_in(Reply.json({"status": "success", "data": {"groups": old}})) as stand_in:
        capsys.readouterr()
        assert deploy_rules(stricter_bundle, tmp_path, stand_in.url) == 1
    err = one_line_error(capsys, "rules")
    assert "model:vllm_slo_objective:ratio" in err and "0.999" in err
    assert "restored the previous 1 infersight rule files" in err
    assert snapshot(tmp_path) == before


def test_the_stand_in_accepts_what_matches(scaled_bundle: Path, tmp_path: Path) -> None:
    """The check above fails on the query, not on the stand-in: the same rules pass."""
    same = loaded_groups(bundle_rule_files(scaled_bundle), "/prometheus-host-only/rules")
    with prometheus_stand_in(Reply.json({"status": "success", "data": {"groups": same}})) as stand_in:
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url) == 0


def test_groups_prometheus_never_loads_are_named_when_the_time_is_up(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = previous_rules(tmp_path)
    with prometheus_stand_in(Reply.json({"status": "success", "data": {"groups": []}})) as stand_in:
        capsys.readouterr()
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url, timeout="1") == 1
    err = one_line_error(capsys, "rules")
    assert "groups not loaded" in err and "rule_files" in err and "restored the previous 1" in err
    assert snapshot(tmp_path) == before


# --- item 2: restore on any failure ------------------------------------------------------------


def test_html_from_the_rules_api_restores_the_previous_files(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = previous_rules(tmp_path)
    with prometheus_stand_in(Reply.text("<html><body>Sign in</body></html>", 200, "text/html")) as stand_in:
        capsys.readouterr()
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url) == 1
    err = one_line_error(capsys, "rules")
    assert "/api/v1/rules" in err and "not Prometheus's JSON" in err
    assert "restored the previous 1 infersight rule files" in err
    assert snapshot(tmp_path) == before


# JSON nested past Python's recursion limit: json.loads raises RecursionError, not a decode error.
DEEP_JSON = Reply(200, b"[" * 100_000)


def test_json_nested_too_deeply_from_the_rules_api_restores_the_previous_files(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = previous_rules(tmp_path)
    with prometheus_stand_in(DEEP_JSON) as stand_in:
        capsys.readouterr()
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url) == 1
    err = one_line_error(capsys, "rules")
    assert "/api/v1/rules" in err and "not Prometheus's JSON" in err
    assert snapshot(tmp_path) == before


def test_json_nested_too_deeply_from_grafana_is_one_line(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FaultServer(lambda request, out, stop: out.write(DEEP_JSON.encode())) as deep:
        assert deploy_dashboards(bundle_dir, deep.url) == 1
    err = one_line_error(capsys, "dashboards")
    assert "not Grafana's JSON" in err


def test_an_unexpected_exception_restores_the_previous_files(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def bug(self: rules_deploy.RulesDeploy, files: object) -> None:
        raise ValueError("a bug in the check")

    monkeypatch.setattr(rules_deploy.RulesDeploy, "_confirm", bug)
    before = previous_rules(tmp_path)
    with prometheus_stand_in(Reply.json({"status": "success", "data": {"groups": []}})) as stand_in:
        capsys.readouterr()
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url) == 1
    err = one_line_error(capsys, "rules")
    assert "ValueError: a bug in the check" in err and "restored the previous 1" in err
    assert snapshot(tmp_path) == before


# --- item 3: restore on Ctrl-C and SIGTERM -----------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_during_the_sighup_wait_restores_the_previous_files(
    sig: signal.Signals, scaled_bundle: Path, tmp_path: Path
) -> None:
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    before = previous_rules(rules_dir)
    empty = Reply.json({"status": "success", "data": {"groups": []}})
    with prometheus_stand_in(empty, lifecycle=False) as stand_in:
        # Started with SIGINT ignored, as a shell without job control starts a background job (CI
        # runners do): the deploy must still restore on it.
        argv = ["bash", "-c", "trap '' INT; exec \"$@\"", "deploy"]
        argv += [sys.executable, "-m", "infersight.cli", "deploy", "rules", "--bundle", str(scaled_bundle)]
        argv += ["--rules-dir", str(rules_dir), "--prometheus-url", stand_in.url, "--timeout", "5m"]
        proc = ManagedProcess("deploy", argv, tmp_path / "deploy.log", env={"PYTHONUNBUFFERED": "1"})
        with proc:
            waiting = "kill -HUP"
            wait_until(lambda: waiting in proc.log_tail() or not proc.alive, timeout=120, what="the SIGHUP wait")
            assert proc.alive and len(snapshot(rules_dir)) > len(before), proc.log_tail()
            proc.kill(sig)
            assert proc.proc is not None
            code = proc.proc.wait(timeout=60)
    log = proc.log_tail()
    assert code == 128 + sig, log
    assert "Traceback" not in log
    assert f"interrupted ({sig.name})" in log and "restored the previous 1 infersight rule files" in log
    assert snapshot(rules_dir) == before


# --- item 5: redirects are refused, credentials never follow them ----------------------------


def test_dashboards_refuse_a_redirect_and_never_send_the_token_on(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with (
        routes_server({}, Reply.json({"status": "success"})) as target,
        redirect_server(f"{target.url}/login") as redirector,
    ):
        assert deploy_dashboards(bundle_dir, redirector.url) == 1
    err = one_line_error(capsys, "dashboards")
    assert "302" in err and f"{target.url}/login" in err and "redirect" in err
    assert TOKEN not in err
    assert len(redirector.requests) == 1 and redirector.authorizations == [f"Bearer {TOKEN}"]
    assert target.requests == [] and target.authorizations == []


def test_rules_refuse_a_redirect(scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = previous_rules(tmp_path)
    with (
        routes_server({}, Reply.json(RUNTIME)) as target,
        redirect_server(f"{target.url}/elsewhere", 307) as redirector,
    ):
        assert deploy_rules(scaled_bundle, tmp_path, redirector.url) == 1
    err = one_line_error(capsys, "rules")
    assert "307" in err and f"{target.url}/elsewhere" in err
    assert target.requests == []
    assert snapshot(tmp_path) == before


# --- item 6: one deadline per operation, validated time limits -------------------------------


@pytest.mark.timeout(120)
def test_a_dripping_prometheus_cannot_hold_the_deploy_past_its_timeout(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = previous_rules(tmp_path)
    # Each byte arrives long before any per-read timeout; the whole answer would take ~15 s.
    with drip_server(Reply.json(RUNTIME), interval=0.1) as drip:
        assert deploy_rules(scaled_bundle, tmp_path, drip.url, timeout="2") == 1
    err = one_line_error(capsys, "rules")
    assert "/api/v1/status/runtimeinfo" in err and "within the 2s timeout" in err
    assert snapshot(tmp_path) == before


@pytest.mark.timeout(120)
def test_a_dripping_grafana_cannot_hold_the_deploy_past_its_timeout(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    folder = Reply.json({"id": 1, "uid": "infersight", "title": "infersight"})
    with drip_server(folder, interval=0.1) as drip:
        assert deploy_dashboards(bundle_dir, drip.url, "--timeout", "2s") == 1
    err = one_line_error(capsys, "dashboards")
    assert "/api/folders/infersight" in err and "within the 2s timeout" in err


@pytest.mark.parametrize("command", ["rules", "dashboards"])
@pytest.mark.parametrize("value", ["nan", "-5", "inf", "0", "1e999", "-1s", "soon", "2d"])
def test_a_timeout_that_is_not_a_sensible_time_limit_is_refused(
    command: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = ["--rules-dir", str(tmp_path), "--prometheus-url"] if command == "rules" else ["--grafana-url"]
    with pytest.raises(SystemExit) as exit_:
        main(["deploy", command, *target, "http://127.0.0.1:9", f"--timeout={value}"])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --timeout" in error and repr(value) in error and "1d" in error


@pytest.mark.parametrize("command", ["rules", "dashboards"])
@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "http://[zz]:9090"])
def test_a_server_address_that_is_not_a_url_is_refused(
    command: str, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = ["--rules-dir", str(tmp_path), "--prometheus-url"] if command == "rules" else ["--grafana-url"]
    with pytest.raises(SystemExit) as exit_:
        main(["deploy", command, *target, url])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{url!r} is not a URL" in error and "http://" in error, error


# --- item 12: bad bundle files, read-only folders, non-HTTP replies --------------------------


def test_a_bundle_rule_file_that_is_not_utf8_is_named(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "bundle"
    shutil.copytree(scaled_bundle, broken)
    (broken / "alerts" / "serving.yaml").write_bytes(b"groups:\n- name: caf\xe9\n")
    assert deploy_rules(broken, tmp_path / "rules", "http://127.0.0.1:9") == 2
    err = one_line_error(capsys, "rules")
    assert "alerts/serving.yaml" in err and "UTF-8" in err


def test_a_bundle_dashboard_that_is_not_json_is_named(
    bundle_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    broken = tmp_path / "bundle"
    shutil.copytree(bundle_dir, broken)
    board = next((broken / "dashboards").glob("*.json"))
    board.write_text(board.read_text()[:-40])
    assert deploy_dashboards(broken, "http://127.0.0.1:9") == 2
    err = one_line_error(capsys, "dashboards")
    assert f"dashboards/{board.name}" in err and "JSON" in err


def test_a_rules_folder_that_cannot_be_written_changes_nothing(
    scaled_bundle: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read-only folder, as root sees it too: every write into it fails (root ignores the mode
    bits, so the failure is injected where the deploy writes)."""

    def read_only(path: Path, content: str | bytes) -> None:
        raise PermissionError(13, "Read-only file system", str(path))

    monkeypatch.setattr(rules_deploy, "write_atomic", read_only)
    before = previous_rules(tmp_path)
    with prometheus_stand_in(Reply.json({"status": "success", "data": {"groups": []}})) as stand_in:
        capsys.readouterr()
        assert deploy_rules(scaled_bundle, tmp_path, stand_in.url) == 1
    err = one_line_error(capsys, "rules")
    assert "Read-only file system" in err and str(tmp_path) in err
    assert snapshot(tmp_path) == before


def test_a_non_http_reply_to_deploy_dashboards(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with garbage_server() as garbage:
        assert deploy_dashboards(bundle_dir, garbage.url) == 1
    err = one_line_error(capsys, "dashboards")
    assert garbage.url in err and "not HTTP" in err


def test_a_non_http_reply_to_deploy_rules(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with garbage_server() as garbage:
        assert deploy_rules(scaled_bundle, tmp_path, garbage.url) == 1
    err = one_line_error(capsys, "rules")
    assert garbage.url in err and "not HTTP" in err


def test_an_html_page_for_grafana_is_named_as_such(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A login page or a proxy's error page answering 200: not a folder, not an import."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with html_server() as page:
        assert deploy_dashboards(bundle_dir, page.url) == 1
    err = one_line_error(capsys, "dashboards")
    assert "/api/folders/infersight" in err and "not Grafana's JSON" in err


@pytest.mark.parametrize("what", ["missing", "a file", "an empty folder"])
def test_a_bundle_that_is_not_one_is_named_as_such(
    what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "bundle"
    if what == "a file":
        bundle.write_text("groups: []\n")
    elif what == "an empty folder":
        bundle.mkdir()
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    assert deploy_rules(bundle, rules_dir, "http://127.0.0.1:9") == 2
    err = one_line_error(capsys, "rules")
    assert f"--bundle {bundle}" in err and "infersight build --out" in err and "invalid config" not in err, err
    said = {"missing": "does not exist", "a file": "is not a folder", "an empty folder": "holds no"}[what]
    assert said in err, err
