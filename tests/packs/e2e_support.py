"""Helpers of the packs' end-to-end tests: the time-scaled profile they share, a load-generator
run in a background thread, shipped scenarios with a longer fault stage, the dashboard check and
an alert timeline for the log."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight.config import Config, parse_config
from infersight.durations import Duration
from infersight.lint import dashboard_queries, flag_gated, substitute
from infersight.loadgen.background import BackgroundRun
from infersight.loadgen.prompts import TokenizerVocabulary
from infersight.loadgen.runner import RunOptions
from infersight.loadgen.scenario import Scenario, parse_scenario
from infersight.stack.observed import ObservedStack, validation_profile
from infersight.stack.process import ServiceError
from infersight.stack.prometheus import Prometheus
from infersight.stack.vllm_server import VLLMServer

SCENARIOS = Path(__file__).resolve().parents[2] / "loadgen" / "scenarios"


def profile(overrides: dict[str, Any] | None = None) -> Config:
    """The shipped defaults with every duration divided by 20, scraping and evaluating every 3 s.

    Faster profiles break here: vLLM saturating both CPU cores (on a machine shared with other
    test runs) stalls Prometheus's scrapes for seconds, and a 5 s rate window (factor 60) then
    loses its samples and resets every for:. Here rate windows are 15 s and the longest for: 45 s."""
    data: dict[str, Any] = {"intervals": {"scrape": "1m", "evaluation": "1m"}, **(overrides or {})}
    return validation_profile(parse_config(data), time_scale=20)


def tiny_kv_profile() -> Config:
    """The profile for the 8-block-cache server under KV pressure. One setting differs from production:
    saturation at 0.85. The tiny cache has 7 usable blocks, so two running requests that leave one
    block nobody can use read 6/7 = 86% "full"; 0.85 is that cache's 0.9 (no usage level lies
    between 5/7 and 6/7). Sustained preemptions keep production's 15m (45 s here)."""
    return profile({"kv_cache": {"alerts": {"saturation": {"usage_threshold": 0.85}}}})


def with_longer_fault(file: str, seconds: int, **stage_changes: Any) -> Scenario:
    """A shipped scenario whose fault stage lasts ``seconds`` (and takes ``stage_changes``)."""
    data = yaml.safe_load((SCENARIOS / file).read_text())
    stage = next(s for s in data["stages"] if s.get("fault"))
    stage |= {"duration": f"{seconds}s", **stage_changes}
    data["limits"]["max_duration"] = f"{sum(_seconds(s['duration']) for s in data['stages']) + 30}s"
    data.pop("expect", None)  # its within: deadlines are for the shipped stage lengths
    return parse_scenario(data, f"{file} (fault stage {seconds}s)")


def _seconds(duration: str) -> int:
    return int(Duration.parse(duration).total_seconds)


def scenario_seconds(scenario: Scenario) -> float:
    return sum(stage.duration.total_seconds for stage in scenario.stages)


class Load:
    """A loadgen run in a thread, so the test can watch Prometheus while it runs."""

    def __init__(self, scenario: Scenario, server: VLLMServer, model_dir: Path, out: Path):
        opts = RunOptions(
            target=server.url,
            out_dir=out,
            vocabulary=TokenizerVocabulary(model_dir),
            model=server.served_model_name,
            handle_signals=False,
        )
        self._background = BackgroundRun(scenario, opts)

    def start(self) -> Load:
        self._background.begin()
        return self

    @property
    def running(self) -> bool:
        return self._background.running

    def stop(self) -> None:
        """Stop sending now and cancel what is in flight; finish() then gives what was sent until
        then (``ended: interrupted``). A no-op before the run has started or after it ended."""
        self._background.stop()

    def finish(self, timeout: float) -> dict[str, Any]:
        """The run's summary; an error of the run is raised here, in the test's thread."""
        self._background.join(timeout)
        assert not self.running, f"load generator still running after {timeout}s"
        return dict(self._background.result().run["summary"])


def alert_timeline(stack: ObservedStack, names: tuple[str, ...], matchers: str, seconds: float) -> str:
    """For the log, not asserted: each alert per evaluation over the last ``seconds``
    (. inactive, p pending, F firing)."""
    step = stack.cfg.scaled(stack.cfg.intervals.evaluation).total_seconds
    end = time.time()
    lines = []
    for name in names:
        marks = ["."] * max(1, int(seconds // step))
        for state, mark in (("pending", "p"), ("firing", "F")):
            expr = f'ALERTS{{alertname="{name}", alertstate="{state}"{matchers}}}'
            for series in stack.prometheus.query_range(expr, end - seconds, end, step):
                for ts, _ in series["values"]:
                    marks[min(int((float(ts) - end + seconds) // step), len(marks) - 1)] = mark
        lines.append(f"{name:40} {''.join(marks)}")
    return "\n".join(lines)


def assert_queries_eventually(
    prometheus: Prometheus,
    queries: dict[str, str],
    accept: Callable[[list[dict[str, Any]]], bool],
    timeout: float,
    what: str,
) -> None:
    """Each query's result is accepted at least once within ``timeout``: re-asked because a machine
    stall (tests/host_stalls.py) can empty a short rate window for a moment while traffic flows.
    A query never accepted fails the test, listed with its last result. ``queries``: where -> expr."""
    accepted: set[str] = set()
    last: dict[str, list[dict[str, Any]]] = {}

    def all_accepted() -> bool:
        for where, expr in queries.items():
            if where not in accepted:
                last[where] = prometheus.query(expr)
                if accept(last[where]):
                    accepted.add(where)
        return accepted == set(queries)

    try:
        prometheus.wait_until(all_accepted, timeout=timeout, what=what)
    except ServiceError:
        missing = "\n".join(f"{w}: {queries[w]} -> {last.get(w)}" for w in sorted(set(queries) - accepted))
        pytest.fail(f"not met within {timeout:.0f}s, {what}:\n{missing}")


def finite(result: list[dict[str, Any]]) -> bool:
    """A query result with a finite sample: a series of NaN (a quantile of nothing) is no data."""
    return any(math.isfinite(float(series["value"][1])) for series in result)


def assert_every_query_answers(
    stack: ObservedStack,
    board_file: str,
    timeout: float = 90,
    panels: Collection[str] = (),
    accept: Callable[[list[dict[str, Any]]], bool] = bool,
) -> None:
    """Each query of the dashboard (of the ``panels`` titled so, when given) returns data at least
    once (a scrape may still be late); ``accept`` says what counts as data. Without ``panels``, the
    panels gated by a vLLM flag are left out (tests/packs/test_vllm_features_e2e.py proves them)."""
    board = stack.bundle.dashboard(board_file)
    if panels:
        board = {"panels": [p for p in board.get("panels", []) if p.get("title") in panels]}
        assert {p["title"] for p in board["panels"]} == set(panels), f"{board_file} lacks a panel of {panels}"
    else:
        board = {**board, "panels": [p for p in board.get("panels", []) if not flag_gated(p)]}
    queries = {where: substitute(expr) for where, expr in dashboard_queries(board)}
    assert len(queries) >= (len(panels) if panels else 5)
    assert_queries_eventually(stack.prometheus, queries, accept, timeout, f"data for every query of {board_file}")
