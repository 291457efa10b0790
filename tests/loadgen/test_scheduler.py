"""The scheduler: open-loop sends at due times, lag is measured and a run that fell behind is
marked invalid; closed-loop concurrency, the in-flight cap and the run's bounds hold.

An injected sender stands in for HTTP, so these tests exercise the scheduler alone."""

from __future__ import annotations

import asyncio
import csv
import time
from pathlib import Path

from infersight.loadgen.records import RequestRecord, RequestSpec
from tests.loadgen.helpers import run_scenario, scenario


async def quick(spec: RequestSpec, rec: RequestRecord) -> None:
    rec.status = 200


def test_blocked_event_loop_marks_the_run_invalid(tmp_path: Path) -> None:
    """Block the loop for 60 ms on every 10th request: due sends pile up behind it."""

    async def blocking(spec: RequestSpec, rec: RequestRecord) -> None:
        if spec.index % 10 == 0:
            time.sleep(0.06)  # the injected blocking step, on the event loop on purpose
        rec.status = 200

    sc = scenario([{"name": "a", "duration": "2s", "rate": 50, "arrival": "constant"}])
    outcome = run_scenario(sc, tmp_path, sender=blocking)
    summary = outcome.run["summary"]
    assert summary["overall"]["schedule_lag_ms"]["p99"] > 10
    assert summary["valid"] is False
    assert "schedule lag p99" in summary["invalid_reasons"][0]
    assert outcome.json_path.exists()  # still reported, as invalid


def test_lag_threshold_is_configurable_and_a_light_run_is_valid(tmp_path: Path) -> None:
    sc = scenario(
        [{"name": "a", "duration": "1s", "rate": 20, "arrival": "constant"}],
        validity={"max_schedule_lag_p99": "2s"},
    )
    summary = run_scenario(sc, tmp_path, sender=quick).run["summary"]
    assert summary["valid"] is True, summary["invalid_reasons"]
    assert summary["max_schedule_lag_p99_ms"] == 2000
    stage = summary["stages"][0]
    assert stage["sent"] == stage["planned"] == 20
    assert stage["requested_rate"] == 20
    assert stage["achieved_rate"] is not None and stage["achieved_rate"] > 0


def test_sends_follow_the_schedule_not_the_responses(tmp_path: Path) -> None:
    """Open loop: responses that take 1 s do not slow the 20/s sends down."""

    async def slow(spec: RequestSpec, rec: RequestRecord) -> None:
        await asyncio.sleep(1.0)
        rec.status = 200

    sc = scenario([{"name": "a", "duration": "1s", "rate": 20, "arrival": "constant"}])
    outcome = run_scenario(sc, tmp_path, sender=slow)
    sent = sorted(float(row["sent_s"]) for row in csv.DictReader(outcome.csv_path.open()))
    assert len(sent) == 20
    # Waiting for replies would take 20 x 1 s; open loop sends all 20 within the 1 s stage (plus slack).
    assert sent[-1] < 1.9


class Tracking:
    """A sender that holds each request for ``hold_s`` and records the peak number in flight."""

    def __init__(self, hold_s: float):
        self.hold_s = hold_s
        self.active = 0
        self.peak = 0

    async def __call__(self, spec: RequestSpec, rec: RequestRecord) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(self.hold_s)
        self.active -= 1
        rec.status = 200


def test_concurrency_stage_keeps_exactly_n_streams(tmp_path: Path) -> None:
    sender = Tracking(0.05)
    sc = scenario([{"name": "c", "duration": "1s", "concurrency": 3}])
    summary = run_scenario(sc, tmp_path, sender=sender).run["summary"]
    assert sender.peak == 3
    stage = summary["stages"][0]
    assert stage["mode"] == "concurrency"
    assert stage["schedule_lag_ms"]["count"] == 0  # closed loop: nothing is scheduled, nothing is late
    assert 3 <= stage["sent"] <= 3 * (1.0 / 0.05 + 1)


def test_in_flight_cap_delays_sends_and_shows_as_lag(tmp_path: Path) -> None:
    sender = Tracking(0.3)
    sc = scenario(
        [{"name": "a", "duration": "1s", "rate": 20, "arrival": "constant"}],
        limits={"max_in_flight": 2},
    )
    summary = run_scenario(sc, tmp_path, sender=sender).run["summary"]
    assert sender.peak == 2
    assert summary["valid"] is False  # the cap, not the schedule, set the pace


def test_max_duration_cancels_what_is_in_flight(tmp_path: Path) -> None:
    async def forever(spec: RequestSpec, rec: RequestRecord) -> None:
        await asyncio.sleep(3600)

    sc = scenario(
        [{"name": "a", "duration": "1s", "rate": 5, "arrival": "constant"}],
        limits={"max_duration": "1500ms"},
    )
    summary = run_scenario(sc, tmp_path, sender=forever).run["summary"]
    assert summary["ended"] == "max_duration"
    assert summary["overall"]["errors"] == {"cancelled": 5}
    assert any("max_duration" in n for n in summary["notes"])


def test_max_requests_bounds_closed_loop_stages(tmp_path: Path) -> None:
    sc = scenario([{"name": "c", "duration": "5s", "concurrency": 4}], limits={"max_requests": 7})
    summary = run_scenario(sc, tmp_path, sender=quick).run["summary"]
    assert summary["overall"]["sent"] == 7


def test_stages_run_back_to_back_on_one_timeline(tmp_path: Path) -> None:
    sc = scenario(
        [
            {"name": "a", "duration": "500ms", "rate": 10, "arrival": "constant"},
            {"name": "b", "duration": "500ms", "rate": 20, "arrival": "constant"},
        ]
    )
    outcome = run_scenario(sc, tmp_path, sender=quick)
    stages = outcome.run["summary"]["stages"]
    assert [s["planned"] for s in stages] == [5, 10]
    assert stages[1]["start_s"] == 0.5
    rows = outcome.csv_path.read_text().splitlines()[1:]
    b_scheduled = [float(r.split(",")[2]) for r in rows if r.split(",")[1] == "b"]
    assert min(b_scheduled) == 0.5


def test_an_idle_stage_sends_nothing_and_the_next_stage_keeps_its_time(tmp_path: Path) -> None:
    sc = scenario(
        [
            {"name": "a", "duration": "300ms", "rate": 10, "arrival": "constant"},
            {"name": "quiet", "duration": "500ms", "idle": True, "fault": "traffic_stop"},
            {"name": "b", "duration": "300ms", "rate": 10, "arrival": "constant"},
        ]
    )
    outcome = run_scenario(sc, tmp_path, sender=quick)
    stages = outcome.run["summary"]["stages"]
    assert [(s["name"], s["mode"], s["planned"]) for s in stages] == [
        ("a", "rate", 3),
        ("quiet", "idle", 0),
        ("b", "rate", 3),
    ]
    rows = [r.split(",") for r in outcome.csv_path.read_text().splitlines()[1:]]
    assert {r[1] for r in rows} == {"a", "b"}
    assert min(float(r[2]) for r in rows if r[1] == "b") == 0.8
