"""Small builders shared by the load generator's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infersight.loadgen.prompts import WordVocabulary
from infersight.loadgen.runner import RunOptions, RunOutcome, run
from infersight.loadgen.scenario import Scenario, parse_scenario
from infersight.loadgen.scheduler import Sender


def scenario(stages: list[dict[str, Any]], **top: Any) -> Scenario:
    data: dict[str, Any] = {"name": "t", "limits": {"max_duration": "30s", "max_requests": 10_000}, "stages": stages}
    for key, value in top.items():
        data[key] = data[key] | value if isinstance(data.get(key), dict) else value
    return parse_scenario(data)


def run_scenario(
    sc: Scenario, out: Path, target: str = "http://127.0.0.1:9", sender: Sender | None = None
) -> RunOutcome:
    opts = RunOptions(target=target, out_dir=out, vocabulary=WordVocabulary(), sender=sender, handle_signals=False)
    return run(sc, opts)
