"""The watcher against a stub of Prometheus's and Alertmanager's alert APIs on loopback: pending,
firing, arrival in Alertmanager, resolution, re-activation, API failures."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from infersight.stack.ports import LOOPBACK
from infersight.validate.apis import AlertmanagerApi, ApiError, PrometheusApi, parse_time
from infersight.validate.watcher import AlertWatcher

LABELS = {"alertname": "InfersightVLLMTargetDown", "severity": "critical", "component": "serving", "instance": "a:1"}
ACTIVE_AT = "2023-11-14T22:13:20.123456789Z"  # 1_700_000_000.123456 (nanoseconds as Prometheus writes them)


@dataclass
class Apis:
    prom: list[dict[str, Any]] = field(default_factory=list)
    am: list[dict[str, Any]] = field(default_factory=list)
    fail: bool = False
    url: str = ""


@pytest.fixture
def apis() -> Iterator[Apis]:
    state = Apis()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if state.fail:
                self.send_error(503)
                return
            if self.path.startswith("/api/v1/alerts"):
                body: Any = {"status": "success", "data": {"alerts": state.prom}}
            elif self.path.startswith("/api/v2/alerts"):
                body = state.am
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://{LOOPBACK}:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_010.0

    def __call__(self) -> float:
        return self.t


def watcher(apis: Apis, clock: Clock, with_am: bool = True) -> AlertWatcher:
    am = AlertmanagerApi(apis.url) if with_am else None
    return AlertWatcher(PrometheusApi(apis.url), am, poll_s=0.05, clock=clock)


def prom_alert(state: str, labels: dict[str, str] | None = None, active_at: str = ACTIVE_AT) -> dict[str, Any]:
    return {"labels": labels or LABELS, "state": state, "activeAt": active_at, "value": "0e+00"}


def test_parse_time_keeps_sub_second_precision() -> None:
    assert parse_time(ACTIVE_AT) == pytest.approx(1_700_000_000.123456, abs=1e-6)
    assert parse_time("2023-11-14T22:13:20Z") == 1_700_000_000
    assert parse_time("2023-11-14T23:13:20.5+01:00") == 1_700_000_000.5


def test_pending_firing_received_resolved(apis: Apis) -> None:
    clock = Clock()
    w = watcher(apis, clock)
    w.poll_once()
    assert w.intervals() == []

    apis.prom = [prom_alert("pending")]
    w.poll_once()
    (i,) = w.intervals()
    assert i.name == "InfersightVLLMTargetDown" and i.labels == LABELS
    assert i.pending_at == pytest.approx(1_700_000_000.123456)  # Prometheus's activeAt, not the poll
    assert i.firing_at is None and i.received_at is None and i.resolved_at is None

    clock.t += 5
    apis.prom = [prom_alert("firing")]
    w.poll_once()
    assert w.intervals()[0].firing_at == clock.t
    assert w.intervals()[0].received_at is None  # not in Alertmanager yet

    clock.t += 1
    apis.am = [{"labels": LABELS, "status": {"state": "active"}}]
    w.poll_once()
    assert w.intervals()[0].received_at == clock.t
    assert [a.name for a in w.active()] == ["InfersightVLLMTargetDown"]

    clock.t += 10
    apis.prom, apis.am = [], []
    w.poll_once()
    (done,) = w.intervals()
    assert done.resolved_at == clock.t
    assert (done.firing_at, done.received_at) == (clock.t - 11, clock.t - 10)
    assert w.active() == [] and w.polls == 5 and w.max_gap_s == 10


def test_reactivation_is_a_new_interval_and_label_sets_are_apart(apis: Apis) -> None:
    clock = Clock()
    w = watcher(apis, clock)
    other = {**LABELS, "instance": "b:2"}
    apis.prom = [prom_alert("firing"), prom_alert("pending", other)]
    w.poll_once()
    clock.t += 1
    apis.prom = [prom_alert("pending", other)]
    w.poll_once()
    clock.t += 1
    apis.prom = [prom_alert("firing", active_at="2023-11-14T22:13:31Z"), prom_alert("firing", other)]
    w.poll_once()
    intervals = w.intervals()
    assert len(intervals) == 3
    first, again, second = sorted(intervals, key=lambda i: (i.labels["instance"], i.pending_at))
    assert first.resolved_at == 1_700_000_011 and again.pending_at == 1_700_000_011 and again.firing_at == clock.t
    assert second.labels["instance"] == "b:2" and second.firing_at == clock.t and second.resolved_at is None


def test_alertmanager_alerts_without_a_prometheus_interval_are_ignored(apis: Apis) -> None:
    w = watcher(apis, Clock())
    apis.am = [{"labels": LABELS, "status": {"state": "active"}}]  # e.g. left from before the watch began
    w.poll_once()
    assert w.intervals() == []


def test_api_failures_are_counted_not_raised_and_keep_the_state(apis: Apis) -> None:
    clock = Clock()
    w = watcher(apis, clock)
    apis.prom = [prom_alert("firing")]
    w.poll_once()
    apis.fail = True
    clock.t += 3
    w.poll_once()
    assert len(w.errors) == 1 and "503" in w.errors[0]
    assert w.intervals()[0].resolved_at is None  # a failed poll is not a resolution
    apis.fail = False
    clock.t += 3
    w.poll_once()
    assert w.max_gap_s == 6  # the failed poll left a 6 s hole in what was seen


def test_a_malformed_alert_is_a_failed_poll_and_the_watcher_keeps_polling(apis: Apis) -> None:
    """An alert that is not an object, or whose activeAt is not a time, once killed the polling
    thread without a word: the run then reported its alerts as never seen."""
    w = AlertWatcher(PrometheusApi(apis.url), None, poll_s=0.02).start()
    try:
        apis.prom = ["x", {**prom_alert("firing"), "activeAt": "yesterday"}]  # type: ignore[list-item]
        for _ in range(200):
            if len(w.errors) >= 2:
                break
            threading.Event().wait(0.02)
        apis.prom = [prom_alert("firing")]
        for _ in range(200):
            if w.intervals():
                break
            threading.Event().wait(0.02)
    finally:
        w.stop()
    assert w.errors and "not a list of alerts with their labels" in w.errors[0], w.errors
    assert [i.name for i in w.intervals()] == ["InfersightVLLMTargetDown"]


def test_unreachable_prometheus_is_an_api_error() -> None:
    with pytest.raises(ApiError, match=r"cannot reach http://127\.0\.0\.1:9/api/v1/alerts"):
        PrometheusApi("http://127.0.0.1:9", timeout=2).alerts()


def test_background_polling(apis: Apis) -> None:
    w = AlertWatcher(PrometheusApi(apis.url), None, poll_s=0.02).start()
    apis.prom = [prom_alert("firing")]
    try:
        deadline = threading.Event()
        for _ in range(200):
            if w.intervals():
                break
            deadline.wait(0.02)
    finally:
        w.stop()
    assert [i.name for i in w.intervals()] == ["InfersightVLLMTargetDown"] and w.polls >= 1


def test_a_new_activation_between_two_polls_starts_a_new_interval(apis: Apis) -> None:
    clock = Clock()
    w = watcher(apis, clock)
    apis.prom = [prom_alert("firing")]
    w.poll_once()
    clock.t += 20  # the poll stalled; meanwhile the alert resolved and went pending again at :13:45
    apis.prom = [prom_alert("pending", active_at="2023-11-14T22:13:45Z")]
    w.poll_once()
    first, second = w.intervals()
    assert first.firing_at == 1_700_000_010 and first.resolved_at == 1_700_000_025
    assert second.pending_at == 1_700_000_025 and second.firing_at is None and second.resolved_at is None


def test_start_has_polled_once_when_it_returns(apis: Apis) -> None:
    """An alert already firing is seen before the caller starts the load: first seen by a slow
    background poll after the load's start, a carried-over alert read as firing inside the scenario
    (a false positive of healthy traffic, a quiet expectation missed)."""

    class SlowPrometheus(PrometheusApi):
        def alerts(self) -> list[dict[str, Any]]:
            threading.Event().wait(0.3)
            return super().alerts()

    apis.prom = [prom_alert("firing")]
    w = AlertWatcher(SlowPrometheus(apis.url), None, poll_s=0.02).start()
    try:
        seen = w.intervals()
    finally:
        w.stop()
    assert [(i.name, i.firing_at is not None) for i in seen] == [("InfersightVLLMTargetDown", True)]
