"""What `infersight up --keep-running` does to show the dashboards, on a stand-in of its stack (the
built bundle and two URLs; nothing of vLLM or Prometheus is started): a Grafana on PATH is started
(the stand-in of tests/stack/test_grafana.py), else exactly one docker command is printed."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.commands import up
from infersight.config import Config
from infersight.stack import grafana
from infersight.stack.observed import validation_profile
from infersight.validate.local_stack import LocalStack
from tests.stack.test_grafana import RECORD_VAR, STAND_IN, install

PROMETHEUS_URL = "http://127.0.0.1:19090"


def stack_stand_in(workdir: Path) -> LocalStack:
    cfg = validation_profile(Config())
    built = bundle.build(cfg)
    bundle_dir = workdir / "monitoring" / "bundle"
    bundle_files.write(bundle_files.render(built, with_deploy=False), bundle_dir)
    observed = SimpleNamespace(
        bundle=built,
        bundle_dir=bundle_dir,
        prometheus=SimpleNamespace(url=PROMETHEUS_URL),
        alertmanager=SimpleNamespace(url="http://127.0.0.1:19093"),
    )
    return cast(LocalStack, SimpleNamespace(workdir=workdir, cfg=cfg, observed=observed))


def option(argv: list[str], flag: str) -> list[str]:
    return [argv[k + 1] for k, arg in enumerate(argv) if arg == flag]


def test_without_a_grafana_up_prints_one_docker_command_for_this_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    stack = stack_stand_in(tmp_path)
    view = up._grafana_view(stack)
    assert view.started is None and view.docker is not None
    argv = shlex.split(view.docker)
    env = dict(e.split("=", 1) for e in option(argv, "-e"))
    mounts = {m.split(":")[1]: Path(m.split(":")[0]) for m in option(argv, "-v")}
    provisioning = tmp_path / "grafana" / "provisioning"
    assert view.docker == grafana.docker_command(
        provisioning,
        tmp_path / "monitoring" / "bundle" / "dashboards",
        "/var/lib/grafana/dashboards/infersight",
        int(env["GF_SERVER_HTTP_PORT"]),
        os.getuid(),
    )
    assert view.overview == f"http://127.0.0.1:{env['GF_SERVER_HTTP_PORT']}/d/infersight-vllm-overview"
    datasources = yaml.safe_load(mounts["/etc/grafana/provisioning/datasources/infersight.yaml"].read_text())
    assert datasources["datasources"][0]["url"] == PROMETHEUS_URL  # the stack's, filled in

    up._say_grafana(view)
    out = capsys.readouterr().out
    assert [line.strip() for line in out.splitlines() if "docker run" in line] == [view.docker]
    assert view.overview in out


def test_with_a_grafana_on_path_up_starts_it_and_names_the_overview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exe = install(tmp_path / "install", "grafana", STAND_IN.format(python=sys.executable, record_var=RECORD_VAR))
    monkeypatch.setenv("PATH", str(exe.parent))
    monkeypatch.setenv(RECORD_VAR, str(tmp_path / "record.json"))
    view = up._grafana_view(stack_stand_in(tmp_path))
    started = view.started
    assert started is not None
    try:
        assert view.docker is None and started.alive
        assert view.overview == f"{started.url}/d/infersight-vllm-overview"
        up._say_grafana(view)
        assert view.overview in capsys.readouterr().out
    finally:
        started.stop()
    assert not started.alive


def test_a_grafana_that_fails_gets_one_line_and_the_docker_command_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exe = install(tmp_path / "install", "grafana-server", "#!/bin/sh\necho 'no database' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", str(exe.parent))
    view: Any = up._grafana_view(stack_stand_in(tmp_path))
    assert view.started is None and view.docker.startswith("docker run ")
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "infersight up: Grafana did not start: grafana exited with 1; its log ends: no database"
    ]
