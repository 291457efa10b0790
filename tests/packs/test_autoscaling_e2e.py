"""The autoscaling signals against a real vLLM (issue 14, Proof): the shared tiny-MoE server with
an 8-block KV cache, a real Prometheus loading the time-scaled bundle, a real Alertmanager and the
project's load generator.

vLLM is scraped twice, as two scaled models of the same served model_name in two namespaces:
  llm   (direct)             -> waiting requests per replica, target 2
  llm-b (through a TCP proxy) -> KV-cache usage, target 0.8
Each generated query (exactly what the KEDA ScaledObject asks) must return one sample, below its
target under light load and above it under KV pressure, and the HPA formula applied to those
answers must ask for more replicas only under pressure. Cutting the proxy is what Prometheus sees
when vLLM stops: llm-b's signal must then be absent (not 0) and its absent-signal alert must reach
Alertmanager, while llm's stays. Run under ``flock /tmp/infersight-heavy.lock`` (it shares vLLM)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infersight.alerts import autoscaling as autoscaling_alerts
from infersight.config import Config
from infersight.config.autoscaling import ScaledModel
from infersight.loadgen.scenario import parse_scenario
from infersight.recording_rules import autoscaling as autoscaling_rules
from infersight.stack.observed import ObservedStack
from infersight.stack.process import ServiceError
from infersight.stack.vllm_server import VLLMServer
from tests.host_stalls import StallWatch
from tests.packs.e2e_support import Load, profile
from tests.tcp_proxy import TCPProxy

pytestmark = pytest.mark.e2e


def _cfg(served: str) -> Config:
    models = [
        {
            "model_name": served,
            "workload": {"kind": "Deployment", "name": "vllm-direct", "namespace": "llm"},
            "max_replicas": 8,
            "signal": "waiting_per_replica",
        },
        {
            "model_name": served,
            "workload": {"kind": "Deployment", "name": "vllm-proxied", "namespace": "llm-b"},
            "max_replicas": 8,
            "signal": "kv_usage",
        },
    ]
    # The profile scrapes every 1m (3 s at scale 20): smoothing must hold 4 scrapes.
    scaling = {"models": models, "smoothing": "4m"}
    return profile({"selectors": {"vllm": ['job=~"vllm|vllm-b"']}, "autoscaling": scaling})


# Light: one short request a second. Pressure: 32 long streams on 8 KV blocks (as kv_pressure).
SCENARIO = {
    "name": "autoscaling",
    "limits": {"max_duration": "150s", "max_requests": 600, "request_timeout": "90s"},
    "stages": [
        {
            "name": "light",
            "duration": "30s",
            "rate": 1,
            "arrival": "constant",
            "prompt_tokens": 32,
            "output_tokens": 16,
        },
        {"name": "pressure", "duration": "70s", "concurrency": 32, "prompt_tokens": 160, "output_tokens": 300},
    ],
}
LIGHT_SECONDS = 30


@pytest.fixture(scope="module")
def proxy(vllm_moe_small_kv: VLLMServer) -> Iterator[TCPProxy]:
    with TCPProxy(("127.0.0.1", vllm_moe_small_kv.port)) as p:
        yield p


@pytest.fixture(scope="module")
def observed(stack_dir: Path, vllm_moe_small_kv: VLLMServer, proxy: TCPProxy) -> Iterator[ObservedStack]:
    cfg = _cfg(vllm_moe_small_kv.served_model_name)
    jobs = {"vllm": [vllm_moe_small_kv.target], "vllm-b": [proxy.target]}
    labels = {"vllm": {"namespace": "llm"}, "vllm-b": {"namespace": "llm-b"}}
    with ObservedStack(stack_dir / "observed-autoscaling", cfg, jobs, job_labels=labels) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        yield stack


def _answers(stack: ObservedStack) -> dict[str, tuple[ScaledModel, list[dict[str, Any]]]]:
    """Each scaled model's signal query (exactly the ScaledObject's), asked now."""
    return {
        m.workload.namespace: (m, stack.prometheus.query(autoscaling_rules.signal_query(stack.cfg, m)))
        for m in stack.cfg.autoscaling.models
    }


def _replicas(stack: ObservedStack, m: ScaledModel) -> int:
    result = stack.prometheus.query(promql_recorded(autoscaling_rules.REPLICAS, m))
    assert len(result) == 1, result
    return int(float(result[0]["value"][1]))


def promql_recorded(name: str, m: ScaledModel) -> str:
    return f'{name}{{namespace="{m.workload.namespace}", model_name="{m.model_name}"}}'


def _hpa_desired(current: int, value: float, m: ScaledModel) -> int:
    """The HPA's formula, within the model's min and max."""
    return min(m.max_replicas, max(m.min_replicas, math.ceil(current * value / m.effective_target)))


def test_signals_follow_load_and_vanish_when_vllm_stops(
    observed: ObservedStack, proxy: TCPProxy, vllm_moe_small_kv: VLLMServer, tiny_moe_model: Path, tmp_path: Path
) -> None:
    stack = observed
    # The previous tests' load must have drained: every signal answered, and under its target.
    stack.prometheus.wait_until(
        lambda: all(len(r) == 1 and float(r[0]["value"][1]) < m.effective_target for m, r in _answers(stack).values()),
        timeout=120,
        what="every signal answering and under its target before the load starts",
    )
    load = Load(parse_scenario(SCENARIO), vllm_moe_small_kv, tiny_moe_model, tmp_path).start()
    began = time.monotonic()
    with StallWatch() as stalls:
        try:
            # Light load: exactly one sample per query, under target; the HPA asks for no more replicas.
            time.sleep(10)
            while time.monotonic() - began < LIGHT_SECONDS - 5:
                for m, result in _answers(stack).values():
                    assert len(result) == 1, f"{m.workload.namespace}: {result}"
                    value = float(result[0]["value"][1])
                    assert value < m.effective_target, f"{m.signal} {value} under light load"
                    current = _replicas(stack, m)
                    assert _hpa_desired(current, value, m) <= current
                time.sleep(1)
            # Pressure: every signal goes above its target, and the HPA asks for more replicas.
            above: dict[str, float] = {}

            def all_above() -> bool:
                for ns, (m, result) in _answers(stack).items():
                    assert len(result) <= 1, f"{ns}: two series for one model: {result}"
                    if result and float(result[0]["value"][1]) > m.effective_target:
                        above[ns] = float(result[0]["value"][1])
                return set(above) == {"llm", "llm-b"}

            try:
                stack.prometheus.wait_until(all_above, timeout=80, what="every signal above its target")
            except ServiceError:
                stalls.skip_if_stalled(f"signals above target under pressure: only {sorted(above)}")
                raise
        finally:
            load.stop()  # every signal seen above its target: the rest of the pressure stage proves nothing more
            summary = load.finish(timeout=240)
    assert summary["overall"]["succeeded"] > 0, summary["overall"]
    for ns, value in above.items():
        m = next(m for m in stack.cfg.autoscaling.models if m.workload.namespace == ns)
        current = _replicas(stack, m)
        assert _hpa_desired(current, value, m) > current, f"{ns}: {value} on {current} replicas"

    # vLLM "stops" for llm-b: its scrapes fail, its series go stale, its signal is absent.
    proxy.stop()
    received: dict[str, str] = {}

    def alert_received() -> bool:
        for alert in stack.alertmanager.alerts():
            if alert["labels"]["alertname"] == autoscaling_alerts.SIGNAL_ABSENT:
                received.update(alert["labels"])
        return bool(received)

    stack.prometheus.wait_until(alert_received, timeout=90, what=f"{autoscaling_alerts.SIGNAL_ABSENT} in Alertmanager")
    answers = _answers(stack)
    assert answers["llm-b"][1] == [], "a stopped vLLM's signal must be absent, not 0"
    assert len(answers["llm"][1]) == 1, "the other model's signal must stay"
    assert received == {
        "alertname": autoscaling_alerts.SIGNAL_ABSENT,
        "namespace": "llm-b",
        "model_name": vllm_moe_small_kv.served_model_name,
        "signal": "kv_usage",
        "scale_target": "vllm-proxied",
        "severity": "warning",
        "component": "serving",
    }
