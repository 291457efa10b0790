"""``infersight bench fleet``: bad input gets one line naming what is wrong, and an interrupted
run stops the fleet server and Prometheus it started."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infersight import cli
from infersight.fleet import bench
from infersight.stack.process import http_get

INTERRUPT_TIMEOUT_S = 120


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_zero_engines_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "'0' is not a count" in _one_line_error(capsys, ["bench", "fleet", "--engines=0"])


@pytest.mark.parametrize(
    ("engines", "says"),
    [
        ("10,0", "'0' is not a count"),
        ("10,,100", "'' is not a count"),
        ("10,many", "'many' is not a count"),
        ("1,2,3,4,5,6,7", "names 7 fleet sizes: give at most 6"),
    ],
)
def test_a_bad_list_of_fleet_sizes_is_refused(capsys: pytest.CaptureFixture[str], engines: str, says: str) -> None:
    assert says in _one_line_error(capsys, ["bench", "fleet", f"--engines={engines}"])


def test_the_largest_of_several_sizes_is_the_one_checked_against_memory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "available_bytes", lambda: 4 * 2**30)
    line = _one_line_error(capsys, ["bench", "fleet", "--engines=1000,10"])
    assert "1000 engines need about" in line


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("--rounds=0", "'0' is not a whole number from 1 to 20"),
        ("--round-seconds=1", "'1' is not a whole number from 5 to 600"),
        ("--concurrency=many", "'many' is not a whole number from 1 to 64"),
    ],
)
def test_the_tracing_bench_refuses_bad_flags_before_starting_anything(
    capsys: pytest.CaptureFixture[str], flag: str, says: str
) -> None:
    assert says in _one_line_error(capsys, ["bench", "tracing", flag])


def test_a_bundle_that_is_not_a_folder_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = _one_line_error(capsys, ["bench", "fleet", "--engines=3", f"--bundle={tmp_path / 'missing'}"])
    assert "is not a folder" in line


def test_a_folder_without_rules_is_not_a_bundle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "dashboards").mkdir()
    line = _one_line_error(capsys, ["bench", "fleet", "--engines=3", f"--bundle={tmp_path}"])
    assert "not a bundle" in line


def test_a_fleet_the_machine_cannot_hold_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "available_bytes", lambda: 2**30)
    line = _one_line_error(capsys, ["bench", "fleet", "--engines=1000"])
    assert "cannot serve the fleet" in line and "enough for about" in line


@pytest.mark.e2e
def test_sigterm_stops_everything_it_started() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "infersight.cli", "bench", "fleet", "--engines=3", "--models=1", "--duration=10m"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        started = ""
        deadline = time.monotonic() + INTERRUPT_TIMEOUT_S
        while time.monotonic() < deadline and not started:
            line = proc.stderr.readline()
            if not line:
                break
            if "scraped by Prometheus at" in line:
                started = line
        urls = re.findall(r"http://[\d.]+:\d+", started)
        assert len(urls) == 2, f"the run did not start: {started!r}"
        assert all(http_get(f"{u}/-/ready")[0] == 200 for u in urls)
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=INTERRUPT_TIMEOUT_S)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, rest
    assert "interrupted (SIGTERM)" in rest
    assert [http_get(f"{u}/-/ready", timeout=2)[0] for u in urls] == [0, 0], "a process outlived the run"


@pytest.mark.e2e
def test_a_short_run_without_dashboards_prints_rule_cost_series_and_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Correctness of the command end to end, not its numbers: a short run on three engines.
    argv = ["bench", "fleet", "--engines=3,2", "--models=1", "--duration=4s", "--no-dashboards"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    # Both sizes, smallest first, then one growth row per size.
    assert re.findall(r"^fleet: (\d+) engines", out, re.M) == ["2", "3"], out
    growth = out[out.index("growth with the fleet, one run") :].splitlines()
    assert [row.split()[0] for row in growth[2:4]] == ["2", "3"], growth
    assert "infersight-serving.rules" in out and "all groups (sum of shares)" in out and "slowest rules" in out
    assert re.search(r"head series: \d+ \(raw \d+, recorded \d+", out), out
    assert re.search(r"without the bundle \(same fleet, as long, no rules\): head series \d+", out), out
    assert "dashboard queries" not in out
