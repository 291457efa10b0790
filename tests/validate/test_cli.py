"""``infersight validate`` and ``infersight up``: bad input and unreachable services give a clear
message and their exit code, and nothing is sent or started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight.cli import main
from infersight.commands import up
from infersight.loadgen.stub_server import StubConfig, StubServer


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer(StubConfig()).start()
    try:
        yield server
    finally:
        server.stop()


def test_unknown_scenario_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "no_such", "--target=http://127.0.0.1:9", "--prometheus=http://127.0.0.1:9"])
    assert code == 2
    assert "known scenarios" in capsys.readouterr().err


def test_remote_target_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "healthy", "--target=http://example.com:8000", "--prometheus=http://127.0.0.1:9"])
    assert code == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_bad_scenario_file_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nlimits: {max_duration: 1m, max_requests: 5}\nstages: []\n")
    assert main(["validate", str(bad), "--target=http://127.0.0.1:9", "--prometheus=http://127.0.0.1:9"]) == 2
    assert "stages" in capsys.readouterr().err


def test_target_that_does_not_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "healthy", "--target=http://127.0.0.1:9", "--prometheus=http://127.0.0.1:9"]) == 3
    assert "--target: cannot reach http://127.0.0.1:9/v1/models" in capsys.readouterr().err


def test_prometheus_that_does_not_answer(stub: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["validate", "healthy", f"--target={stub.url}", "--prometheus=http://127.0.0.1:9", f"--report-dir={tmp_path}"]
    )
    assert code == 3
    assert "cannot reach http://127.0.0.1:9/api/v1/alerts" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no report, no load results


def test_bad_settle_flag_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate", "healthy", "--target=http://x", "--prometheus=http://x", "--settle=soon"])
    assert exc.value.code == 2
    assert "not a Prometheus duration" in capsys.readouterr().err


def test_up_rejects_unknown_scenarios_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["up", "--scenarios=healthy,nope", f"--workdir={tmp_path}"]) == 2
    assert "nope" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no temporary folder was made


def test_up_without_scenario_files_says_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(up, "scenario_dirs", lambda: [])
    assert main(["up", f"--workdir={tmp_path}"]) == 2
    assert "pip install -e" in capsys.readouterr().err


def test_up_plan_orders_server_stoppers_last_and_maps_servers() -> None:
    loaded = up.load_scenarios(["target_down", "gpu_leak", "healthy", "overload"])
    ordered = up._order(loaded)
    assert [s.name for s, _ in ordered] == ["gpu_leak", "healthy", "overload", "target_down"]
    plan, notes = up._plan(ordered, target=None)
    assert [(s.name, kind) for s, _, kind in plan] == [
        ("gpu_leak", "dense"),
        ("healthy", "moe"),
        ("overload", "moe"),
        ("target_down", "dense"),
    ]
    assert notes == []
    plan, notes = up._plan(up.load_scenarios(["moe_skew", "healthy"]), target="http://127.0.0.1:8000")
    assert [s.name for s, _, _ in plan] == ["healthy"]
    assert "moe_skew skipped" in notes[0]
