"""Ctrl-C stops a run cleanly and still writes (partial) results: SIGINT to a real
``infersight loadgen run`` subprocess in the middle of a 60 s scenario."""

from __future__ import annotations

import csv
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from infersight.loadgen.stub_server import StubServer
from infersight.stack.process import ManagedProcess, wait_until

SCENARIO = {
    "name": "interrupt-me",
    "limits": {"max_duration": "2m", "max_requests": 10_000},
    "stages": [{"name": "long", "duration": "60s", "rate": 20, "arrival": "constant", "output_tokens": 50}],
}


def test_sigint_writes_partial_results_and_exits_130(tmp_path: Path, stub: Callable[..., StubServer]) -> None:
    # 50 tokens at 20 ms each: every request streams for ~1 s, so some are in flight at the interrupt.
    server = stub(ttft=0.01, itl=0.02)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    out = tmp_path / "results"
    argv = [sys.executable, "-m", "infersight.cli", "loadgen", "run", str(scenario), "--target", server.url]
    proc = ManagedProcess("loadgen", [*argv, "--out", str(out), "--no-progress"], tmp_path / "loadgen.log")
    with proc:
        wait_until(lambda: server.requests >= 30 or not proc.alive, timeout=60, what="30 requests sent")
        assert proc.alive, proc.log_tail()
        proc.kill(signal.SIGINT)
        assert proc.proc is not None
        code = proc.proc.wait(timeout=30)
    assert code == 130, proc.log_tail()
    run = json.loads((out / "results.json").read_text())
    summary = run["summary"]
    assert summary["ended"] == "interrupted"
    assert "interrupted: partial results" in summary["notes"]
    stage = summary["stages"][0]
    assert 30 <= stage["sent"] < stage["planned"] == 1200
    assert stage["errors"].get("cancelled", 0) >= 1  # in-flight streams were cut, and say so
    assert stage["succeeded"] >= 1
    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert len(rows) == stage["sent"]
    cancelled = [r for r in rows if r["error"] == "cancelled"]
    assert cancelled and all(r["status"] in ("", "200") for r in cancelled)
    assert not list(out.glob(".*.tmp")), "no temporary files left behind"
