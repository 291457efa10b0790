"""``infersight deploy rules`` against a real Prometheus on loopback: a good bundle is loaded and
healthy; a broken rule file is refused and the old rules stay loaded; any later failure puts the
previous files back."""

from __future__ import annotations

import http.server
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.cli import main
from infersight.config import parse_config
from infersight.deploy.rules_deploy import MANAGED_GLOB, rule_files
from infersight.stack.prometheus import Prometheus

from .stub_server import reply_json, serve

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def scaled_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A time-scaled bundle, so every group evaluates within a second."""
    out = tmp_path_factory.mktemp("scaled-bundle")
    bundle_files.write(bundle_files.render(bundle.build(parse_config({"time_scale": 60}))), out)
    return out


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rules")


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, rules_dir: Path) -> Iterator[Prometheus]:
    with Prometheus(tmp_path_factory.mktemp("prom"), rule_files=[rules_dir / MANAGED_GLOB]) as server:
        yield server


def deploy(bundle_dir: Path, rules_dir: Path, url: str, timeout: str = "60") -> int:
    argv = ["deploy", "rules", "--bundle", str(bundle_dir), "--rules-dir", str(rules_dir)]
    return main([*argv, "--prometheus-url", url, "--timeout", timeout])


def expected_groups(bundle_dir: Path) -> set[str]:
    files = {p.relative_to(bundle_dir).as_posix(): p.read_text() for p in bundle_dir.glob("*/*.yaml")}
    return {g["name"] for text in rule_files(files).values() for g in yaml.safe_load(text)["groups"]}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_good_bundle_is_loaded_and_healthy(prom: Prometheus, rules_dir: Path, scaled_bundle: Path) -> None:
    assert deploy(scaled_bundle, rules_dir, prom.url) == 0
    groups = prom.rules()
    assert {g["name"] for g in groups} == expected_groups(scaled_bundle)
    assert all(r["health"] == "ok" for g in groups for r in g["rules"])
    assert sorted(p.name for p in rules_dir.iterdir()) == sorted(
        rule_files({p.relative_to(scaled_bundle).as_posix(): "" for p in scaled_bundle.glob("*/*.yaml")})
    )


def test_broken_rule_file_is_refused_and_old_rules_stay_loaded(
    prom: Prometheus, rules_dir: Path, scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert deploy(scaled_bundle, rules_dir, prom.url) == 0
    before_files, before_groups = snapshot(rules_dir), prom.rules()
    before_reload = prom._get("/api/v1/status/runtimeinfo")["data"]["lastConfigTime"]
    broken = tmp_path / "broken"
    shutil.copytree(scaled_bundle, broken)
    path = broken / "alerts" / "serving.yaml"
    path.write_text(path.read_text().replace("expr: ", "expr: sum(", 1))
    capsys.readouterr()
    assert deploy(broken, rules_dir, prom.url) == 1
    err = capsys.readouterr().err
    assert "promtool check rules refused" in err and "nothing was changed" in err
    assert "infersight-alerts-serving.yaml" in err
    assert snapshot(rules_dir) == before_files
    assert prom._get("/api/v1/status/runtimeinfo")["data"]["lastConfigTime"] == before_reload
    assert [g["name"] for g in prom.rules()] == [g["name"] for g in before_groups]


def test_a_pack_the_bundle_no_longer_has_is_removed(
    prom: Prometheus, rules_dir: Path, scaled_bundle: Path, tmp_path: Path
) -> None:
    assert deploy(scaled_bundle, rules_dir, prom.url) == 0
    smaller = tmp_path / "smaller"
    shutil.copytree(scaled_bundle, smaller)
    (smaller / "alerts" / "moe.yaml").unlink()
    assert deploy(smaller, rules_dir, prom.url) == 0
    assert not (rules_dir / "infersight-alerts-moe.yaml").exists()
    assert {g["name"] for g in prom.rules()} == expected_groups(smaller)


def test_groups_that_do_not_load_restore_the_previous_files(
    prom: Prometheus, scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unread = tmp_path / "not-in-rule-files"
    unread.mkdir()
    (unread / "infersight-old.yaml").write_text("groups: []\n")
    capsys.readouterr()
    assert deploy(scaled_bundle, unread, prom.url, timeout="3") == 1
    err = capsys.readouterr().err
    # Before any deploy: its groups are not loaded at all. After one: they load from the other folder.
    assert ("groups not loaded" in err or "it loads group" in err) and "rule_files" in err
    assert "restored the previous 1 infersight rule files" in err and "reloaded Prometheus" in err
    assert snapshot(unread) == {"infersight-old.yaml": b"groups: []\n"}


class _NoLifecycle(http.server.BaseHTTPRequestHandler):
    """A Prometheus whose lifecycle API is off and that nobody reloads."""

    def do_GET(self) -> None:
        if self.path == "/api/v1/status/runtimeinfo":
            info = {"lastConfigTime": "2026-01-01T00:00:00Z", "reloadConfigSuccess": True}
            reply_json(self, 200, {"status": "success", "data": info})
        else:
            reply_json(self, 200, {"status": "success", "data": {"groups": []}})

    def do_POST(self) -> None:
        self.send_response(403)
        self.end_headers()
        self.wfile.write(b"Lifecycle API is not enabled.")

    def log_message(self, *args: object) -> None:
        pass


def test_lifecycle_api_off_says_how_to_reload_and_restores_on_timeout(
    scaled_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve(_NoLifecycle) as url:
        capsys.readouterr()
        assert deploy(scaled_bundle, tmp_path, url, timeout="1") == 1
    captured = capsys.readouterr()
    assert "--web.enable-lifecycle" in captured.out and "kill -HUP" in captured.out
    assert "did not reload" in captured.err and "reload Prometheus (SIGHUP)" in captured.err
    assert list(tmp_path.iterdir()) == []
