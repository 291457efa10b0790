"""The vertical slice against real processes: vLLM serving a tiny dense model, a real
Prometheus loading the built rules (time-scaled profile) and a real Alertmanager.

Every query of every panel of the overview and requests dashboards must return data, and stopping vLLM
must get InfersightVLLMTargetDown to Alertmanager."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infersight import bundle
from infersight.alerts import serving as serving_alerts
from infersight.lint import dashboard_queries
from infersight.stack.observed import ObservedStack, validation_profile
from infersight.stack.tiny_models import SERVED_NAMES
from infersight.stack.vllm_server import VLLMServer
from tests.e2e.traffic import burst, complete
from tests.packs.e2e_support import assert_every_query_answers, assert_queries_eventually

pytestmark = pytest.mark.e2e

CFG = validation_profile()
MODEL = SERVED_NAMES["dense"]


@pytest.fixture(scope="module")
def dense_vllm(stack_dir: Path, tiny_dense_model: Path) -> Iterator[VLLMServer]:
    # Its own server: the target-down test below stops it.
    with VLLMServer(tiny_dense_model, MODEL, stack_dir / "vllm-dense") as server:
        yield server


@pytest.fixture(scope="module")
def observed(stack_dir: Path, dense_vllm: VLLMServer) -> Iterator[ObservedStack]:
    with ObservedStack(stack_dir / "observed-serving", CFG, {"vllm": [dense_vllm.target]}) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        yield stack


@pytest.fixture(scope="module")
def with_traffic(dense_vllm: VLLMServer, observed: ObservedStack) -> Iterator[None]:
    """Keep light traffic flowing (bounded) while the module's assertions run."""
    stop = threading.Event()

    def loop() -> None:
        deadline = time.monotonic() + 300
        while not stop.is_set() and time.monotonic() < deadline and dense_vllm.alive:
            burst(dense_vllm.url, MODEL, requests=4, concurrency=2, max_tokens=16)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    # Two scrapes after the first traffic, plus one full rate window, before asserting on rate().
    window = CFG.scaled(CFG.intervals.rate).total_seconds
    time.sleep(window + 2 * observed.scrape_seconds() + 2 * CFG.scaled(CFG.intervals.evaluation).total_seconds)
    yield
    stop.set()
    thread.join(timeout=120)


def _values(result: list[dict[str, Any]]) -> list[float]:
    return [float(s["value"][1]) for s in result]


@pytest.mark.parametrize(("board", "at_least"), [("vllm-overview.json", 30), ("vllm-requests.json", 10)])
def test_every_dashboard_query_returns_data(
    observed: ObservedStack, with_traffic: None, board: str, at_least: int
) -> None:
    # Other packs' dashboards are proven by their own end-to-end tests. Asked again for a while: a
    # machine stall (tests/host_stalls.py) can empty a 5 s rate window for a moment while traffic
    # flows; a query that never answers still fails.
    assert len(list(dashboard_queries(bundle.build(CFG).dashboard(board)))) > at_least
    assert_every_query_answers(observed, board, timeout=30)


def test_golden_signals_move_with_traffic(observed: ObservedStack, with_traffic: None) -> None:
    exprs = (
        'sum(instance:vllm_requests:rate5m{model_name="tiny-dense"})',
        'sum(instance:vllm_generation_tokens:rate5m{model_name="tiny-dense"})',
        'max(model:vllm_time_to_first_token_seconds:p99_rate5m{model_name="tiny-dense"})',
    )

    def moved(result: list[dict[str, Any]]) -> bool:
        values = [v for v in _values(result) if not math.isnan(v)]
        return bool(values) and values[0] > 0

    # Re-asked (bounded) like the dashboard queries above; a signal that never moves still fails.
    assert_queries_eventually(observed.prometheus, {e: e for e in exprs}, moved, 30, "golden signals move with traffic")
    # Healthy light traffic raises no serving alert.
    assert not {a for a in observed.firing() if a.startswith("InfersightVLLM")}


def test_the_parallel_sampling_panel_has_data_once_a_request_asks_for_n_samples(
    observed: ObservedStack, dense_vllm: VLLMServer, with_traffic: None
) -> None:
    # The panel says "No request with n > 1" otherwise, so the test of every query above leaves it out.
    assert [complete(dense_vllm.url, MODEL, "three samples of one prompt", 8, n=3) for _ in range(2)] == [200, 200]
    assert_every_query_answers(observed, "vllm-requests.json", timeout=60, panels=("Longest of n parallel samples",))


def test_target_down_reaches_alertmanager(observed: ObservedStack, dense_vllm: VLLMServer, with_traffic: None) -> None:
    assert serving_alerts.TARGET_DOWN not in observed.alertmanager.alert_names()
    dense_vllm.stop()
    observed.prometheus.wait_until(
        lambda: serving_alerts.TARGET_DOWN in observed.alertmanager.alert_names(),
        timeout=60,
        what=f"{serving_alerts.TARGET_DOWN} in Alertmanager",
    )
    alert = next(a for a in observed.alertmanager.alerts() if a["labels"]["alertname"] == serving_alerts.TARGET_DOWN)
    assert alert["labels"]["instance"] == dense_vllm.target
    assert alert["labels"]["severity"] == "critical"
    assert alert["labels"]["component"] == "serving"
