"""The KV-cache alerts against a real vLLM (issue 3, Proof): the tiny MoE model with an
8-block KV cache, a real Prometheus loading the time-scaled bundle, a real Alertmanager and
the project's load generator.

Light load on that server must leave the saturation and preemption alerts quiet; the
shipped kv_pressure scenario (32 long streams) must make vLLM really preempt and get both
alerts to Alertmanager. Run under ``flock /tmp/infersight-heavy.lock`` (it starts vLLM)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight.alerts import kv_cache as kv_alerts
from infersight.loadgen.scenario import parse_scenario
from infersight.stack.observed import ObservedStack
from infersight.stack.process import ServiceError
from infersight.stack.vllm_server import VLLMServer
from tests.host_stalls import StallWatch
from tests.packs.e2e_support import (
    Load,
    alert_timeline,
    assert_every_query_answers,
    scenario_seconds,
    tiny_kv_profile,
    with_longer_fault,
)

pytestmark = pytest.mark.e2e

CFG = tiny_kv_profile()  # one setting differs from production, and why
WATCHED = (kv_alerts.SATURATED, kv_alerts.PREEMPTIONS)
# Well under capacity: one short request a second needs one 128-token block at a time.
LIGHT = {
    "name": "kv_light",
    "limits": {"max_duration": "80s", "max_requests": 100, "request_timeout": "30s"},
    "stages": [
        {"name": "light", "duration": "50s", "rate": 1, "arrival": "constant", "prompt_tokens": 48, "output_tokens": 24}
    ],
}
PRESSURE_SECONDS = 120  # the shipped scenario's 75 s, plus room for production's 15m (45 s) preemption for:


@pytest.fixture(scope="module")
def observed(stack_dir: Path, vllm_moe_small_kv: VLLMServer) -> Iterator[ObservedStack]:
    with ObservedStack(stack_dir / "observed-kv-cache", CFG, {"vllm": [vllm_moe_small_kv.target]}) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        yield stack


def _active(stack: ObservedStack, target: str) -> set[str]:
    """Watched alerts Prometheus holds pending or firing for this server."""
    return {
        a["labels"]["alertname"]
        for a in stack.prometheus.alerts()
        if a["labels"]["alertname"] in WATCHED and a["labels"].get("instance") == target
    }


def _preemptions(stack: ObservedStack, target: str) -> float:
    result = stack.prometheus.query(f'sum(vllm:num_preemptions_total{{instance="{target}"}})')
    return float(result[0]["value"][1]) if result else 0.0


def test_light_load_keeps_kv_alerts_quiet(
    observed: ObservedStack, vllm_moe_small_kv: VLLMServer, tiny_moe_model: Path, tmp_path: Path
) -> None:
    target = vllm_moe_small_kv.target
    # Whatever ran before on the shared server must have cleared first.
    observed.prometheus.wait_until(lambda: not _active(observed, target), timeout=90, what="no KV alert active")
    before = _preemptions(observed, target)
    load = Load(parse_scenario(LIGHT), vllm_moe_small_kv, tiny_moe_model, tmp_path).start()
    seen: set[str] = set()
    while load.running:  # 50 s here is 17 minutes of the production profile: every for: passes
        seen |= _active(observed, target)
        time.sleep(0.5)
    summary = load.finish(timeout=60)
    # Two more evaluations over the last samples.
    deadline = time.monotonic() + 2 * CFG.scaled(CFG.intervals.evaluation).total_seconds + observed.scrape_seconds()
    while time.monotonic() < deadline:
        seen |= _active(observed, target)
        time.sleep(0.25)
    assert summary["overall"]["succeeded"] >= 30, summary["overall"]
    assert _preemptions(observed, target) == before, "light load preempted: the premise of this test is broken"
    assert seen == set(), f"alerts went pending or firing under light load: {seen}"
    assert not set(WATCHED) & observed.alertmanager.alert_names()


def test_kv_pressure_gets_saturation_and_preemption_alerts_to_alertmanager(
    observed: ObservedStack, vllm_moe_small_kv: VLLMServer, tiny_moe_model: Path, tmp_path: Path
) -> None:
    target = vllm_moe_small_kv.target
    before = _preemptions(observed, target)
    scenario = with_longer_fault("kv_pressure.yaml", PRESSURE_SECONDS)
    load = Load(scenario, vllm_moe_small_kv, tiny_moe_model, tmp_path).start()
    received: dict[str, dict[str, str]] = {}

    def both_received() -> bool:  # keep the labels: the alerts resolve once the pressure stage ends
        for alert in observed.alertmanager.alerts():
            if alert["labels"]["alertname"] in WATCHED:
                received[alert["labels"]["alertname"]] = alert["labels"]
        return set(WATCHED) <= set(received)

    what = f"{' and '.join(WATCHED)} in Alertmanager"
    with StallWatch() as stalls:
        try:
            observed.prometheus.wait_until(both_received, timeout=scenario_seconds(scenario) + 10, what=what)
        except ServiceError:
            missing = " and ".join(a for a in WATCHED if a not in received)
            stalls.skip_if_stalled(f"{missing} not in Alertmanager (received: {sorted(received) or 'none'})")
            raise
        finally:
            summary = load.finish(timeout=240)
            print(alert_timeline(observed, WATCHED, f', instance="{target}"', scenario_seconds(scenario) + 10))
    assert _preemptions(observed, target) > before, "vLLM did not preempt"
    assert summary["overall"]["succeeded"] > 0, summary["overall"]
    common = {"instance": target, "model_name": vllm_moe_small_kv.served_model_name, "job": "vllm"}
    common |= {"severity": "warning", "component": "kv_cache"}
    assert received[kv_alerts.SATURATED] == {"alertname": kv_alerts.SATURATED, "engine": "0", **common}
    assert received[kv_alerts.PREEMPTIONS] == {"alertname": kv_alerts.PREEMPTIONS, **common}


def test_every_kv_dashboard_query_returns_data(observed: ObservedStack) -> None:
    # Runs after the pressure test, so preemptions, queueing and prefix lookups all happened.
    assert_every_query_answers(observed, "vllm-kv-cache.json")
