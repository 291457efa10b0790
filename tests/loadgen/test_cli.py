"""``infersight loadgen``: bad input gives a clear message and no run; a good run writes
results.json and requests.csv without any prompt text."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from infersight.cli import main
from infersight.loadgen.prompts import _WORDS
from infersight.loadgen.stub_server import StubServer
from infersight.stack.ports import free_port

GOOD = {
    "name": "cli-test",
    "limits": {"max_duration": "20s", "max_requests": 100},
    "validity": {"max_schedule_lag_p99": "5s"},  # correctness here, not a benchmark
    "stages": [
        {"name": "open", "duration": "1s", "rate": 10, "arrival": "constant", "prompt_tokens": 12, "output_tokens": 4},
        {"name": "closed", "duration": "500ms", "concurrency": 2, "prompt_tokens": 6, "output_tokens": 3},
    ],
}


def write(tmp_path: Path, data: object, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_bad_scenario_gives_a_clear_message_and_sends_nothing(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    server = stub()
    bad = write(tmp_path, GOOD | {"stages": [{"name": "open", "duration": "1s", "rate": 10, "concurency": 2}]})
    out = tmp_path / "results"
    code = main(["loadgen", "run", str(bad), "--target", server.url, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"invalid scenario {bad}" in err
    assert "stages.0.concurency: unknown key" in err
    assert not out.exists()
    assert server.requests == 0


@pytest.mark.parametrize("target", ["http://10.0.0.5:8000", "http://example.com:8000", "http://[2001:db8::1]:80"])
def test_non_loopback_target_is_refused_without_the_flag(
    tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["loadgen", "run", str(write(tmp_path, GOOD)), "--target", target, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "not a loopback address" in err and "--allow-remote" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("target", ["127.0.0.1:8000", "ftp://127.0.0.1", "http://127.0.0.1:8000/v1/completions"])
def test_malformed_target_is_refused(tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["loadgen", "run", str(write(tmp_path, GOOD)), "--target", target]) == 2
    assert "--target" in capsys.readouterr().err


def test_target_that_does_not_answer_fails_before_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    code = main(
        ["loadgen", "run", str(write(tmp_path, GOOD)), "--target", f"http://127.0.0.1:{free_port()}", "--out", str(out)]
    )
    assert code == 3
    assert "/v1/models failed" in capsys.readouterr().err
    assert not out.exists()


def test_missing_tokenizer_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["loadgen", "run", str(write(tmp_path, GOOD)), "--target", "http://127.0.0.1:1", "--tokenizer", str(tmp_path)]
    )
    assert code == 2
    assert "no tokenizer.json" in capsys.readouterr().err


def test_unknown_scenario_name_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["loadgen", "check", "no_such_scenario"]) == 2
    assert "known scenarios" in capsys.readouterr().err


def test_check_accepts_the_shipped_scenarios_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["loadgen", "check", "healthy", "overload", "kv_pressure", "client_errors", "moe_skew"]) == 0
    assert capsys.readouterr().out.count(": ok") == 5


def test_run_writes_json_and_csv_without_prompt_text(
    tmp_path: Path, stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    server = stub(ttft=0.01, itl=0.002)
    out = tmp_path / "results"
    code = main(
        ["loadgen", "run", str(write(tmp_path, GOOD)), "--target", server.url, "--out", str(out), "--no-progress"]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "valid run" in printed
    run = json.loads((out / "results.json").read_text())
    summary = run["summary"]
    assert run["model"] == "stub-model" and run["prompt_source"] == "words"
    assert summary["ended"] == "completed" and summary["valid"] is True
    open_stage, closed_stage = summary["stages"]
    assert open_stage["planned"] == open_stage["sent"] == open_stage["succeeded"] == 10
    assert open_stage["completion_tokens_total"] == 40
    assert open_stage["ttft_s"]["count"] == 10 and open_stage["itl_sources"] == {"usage": 10}
    assert closed_stage["mode"] == "concurrency" and closed_stage["sent"] >= 2
    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert len(rows) == summary["overall"]["sent"] == server.requests
    assert {r["stage"] for r in rows} == {"open", "closed"}
    assert all(r["status"] == "200" and r["prompt_tokens"] == r["prompt_tokens_planned"] for r in rows)
    # Each row's trace ID is the one its request carried in a W3C traceparent, each a fresh one.
    received = {tp.split("-")[1]: tp for tp in server.traceparents}
    assert len(received) == len(rows) and {r["trace_id"] for r in rows} == set(received)
    assert all(re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", tp) for tp in received.values())
    # No prompt text anywhere: no run of 4+ vocabulary words in either file.
    words = "|".join(map(re.escape, _WORDS))
    prompt_like = re.compile(rf"\b(?:(?:{words})\s+){{3}}(?:{words})\b")
    for name in ("results.json", "requests.csv"):
        assert not prompt_like.search((out / name).read_text()), name
