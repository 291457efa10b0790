"""The settle before a scenario, how long its companion load may run (a stub of Prometheus's
alerts API in the process, no services), and the peers' load (stub vLLM servers)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from infersight.config import Config
from infersight.loadgen.prompts import WordVocabulary
from infersight.loadgen.scenario import parse_scenario
from infersight.loadgen.stub_server import StubConfig, StubServer
from infersight.validate import evaluator
from infersight.validate.apis import PrometheusApi
from infersight.validate.session import Monitoring, Settled, Target, companion_duration, instance_of, settle
from infersight.validate.session import _peers as session_peers
from infersight.validate.timeline import AlertInterval
from tests.validate.timelines import (
    HUNG,
    INSTANCE,
    MODEL,
    STOP,
    TTFT_BURN,
    healthy,
    hung_engine,
    overload,
    target_down,
    traffic_stop,
)


def test_the_companion_outlasts_the_load_and_the_watching_after_it() -> None:
    # CI failure this guards: the companion stopped when the stages ended, while the scenario was
    # still watched, and its model's own TrafficStop fired inside the window.
    sc = traffic_stop()  # 80 s of stages, max_duration 2m, the fire deadline at 40 s + 30 s
    mon = Monitoring(PrometheusApi("http://127.0.0.1:9"), None, Config(), 60.0, grace_s=3.0, action_timeout_s=30.0)
    # The load stops by max_duration at the latest; watching goes on for the actions and the grace.
    assert companion_duration(sc, mon).total_seconds >= 120 + 30 + 3
    mon.action_timeout_s = 330.0
    assert companion_duration(sc, mon).total_seconds >= 120 + 330 + 3


class Alerts(PrometheusApi):
    """Prometheus's /api/v1/alerts as a script: each call answers the next list (the last one again)."""

    def __init__(self, *answers: list[dict[str, Any]]):
        super().__init__("http://127.0.0.1:9")
        self.answers = list(answers)
        self.calls = 0

    def alerts(self) -> list[dict[str, Any]]:
        self.calls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def active(
    name: str, state: str, model: str = MODEL, severity: str = "critical", component: str = "serving"
) -> dict[str, Any]:
    labels = {"alertname": name, "severity": severity, "component": component, "model_name": model, "job": "vllm"}
    return {"labels": labels, "state": state, "activeAt": "2023-11-14T22:13:20Z", "value": "1"}


def settling(prometheus: Alerts, timeout_s: float = 2.0) -> Monitoring:
    return Monitoring(prometheus, None, Config(), 60.0, settle_timeout_s=timeout_s, poll_s=0.01)


SCOPE = evaluator.target_scope(INSTANCE, MODEL)
MOE = "InfersightMoEExpertImbalance"


def described(name: str) -> str:
    return f"{name}{{model_name={MODEL}, job=vllm}}"


def test_settle_does_not_wait_for_a_firing_alert_no_expectation_of_the_scenario_names() -> None:
    # A target-down scenario judges only TargetDown: the model's TrafficStop and a warning TTFT
    # burn left by the scenarios before cannot change its verdict, and waiting for them cost the
    # whole settle.
    prometheus = Alerts([active(STOP, "firing"), active(TTFT_BURN, "firing", severity="warning")])
    began = time.monotonic()
    settled = settle(settling(prometheus, timeout_s=30.0), SCOPE, target_down())
    assert time.monotonic() - began < 5 and prometheus.calls == 1
    assert settled.still_active == []
    # Reported all the same: carried over, judged neither way.
    assert settled.not_waited_for == [described(TTFT_BURN), described(STOP)]


def test_settle_waits_for_a_firing_alert_a_fire_resolve_or_quiet_expectation_names() -> None:
    # Still firing as the scenario starts, it could not start firing inside it (overload's TTFT
    # burn), nor tell the thaw's resolve from its own end (the hung engine); and had it cleared in
    # the wait, firing again under healthy traffic would break a quiet expectation (healthy's).
    for scenario, name in ((overload(), TTFT_BURN), (hung_engine(), HUNG), (healthy(), STOP)):
        prometheus = Alerts([active(name, "firing"), active(MOE, "firing", component="moe")])
        settled = settle(settling(prometheus, timeout_s=0.2), SCOPE, scenario)
        assert prometheus.calls > 5, scenario.name  # polled until the timeout
        assert settled.still_active == [described(name)], scenario.name
        assert settled.not_waited_for == [described(MOE)], scenario.name  # named by none of them


def test_settle_waits_for_a_pending_alert_until_it_fires_or_clears() -> None:
    # Pending as the scenario starts, it would start firing inside it: a false positive of this
    # scenario's traffic that came from the one before.
    prometheus = Alerts([active(STOP, "pending")], [active(STOP, "pending")], [active(STOP, "firing")])
    settled = settle(settling(prometheus), SCOPE, target_down())
    assert prometheus.calls == 3 and settled.still_active == [] and len(settled.not_waited_for) == 1
    prometheus = Alerts([active(STOP, "pending")], [])
    settled = settle(settling(prometheus), SCOPE, target_down())
    assert prometheus.calls == 2 and settled == Settled([], [])


def test_settle_ignores_another_models_alerts_and_without_a_scenario_waits_for_every_one() -> None:
    other = active(TTFT_BURN, "pending", model="another-model")
    assert settle(settling(Alerts([other])), SCOPE, overload()).still_active == []
    firing = Alerts([active(STOP, "firing")])
    assert settle(settling(firing, timeout_s=0.1), SCOPE).still_active == [described(STOP)]


def test_an_alert_firing_at_the_start_spoils_the_expectations_of_the_target_that_name_it() -> None:
    def interval(name: str, component: str = "serving") -> AlertInterval:
        return AlertInterval(name, {"alertname": name, "component": component}, 0.0)

    assert evaluator.spoils(overload(), interval(TTFT_BURN))  # fire
    assert evaluator.spoils(hung_engine(), interval(HUNG))  # fire and resolve
    assert evaluator.spoils(healthy(), interval(TTFT_BURN))  # quiet serving
    assert evaluator.spoils(overload(), interval(STOP))  # quiet serving during the baseline
    assert not evaluator.spoils(target_down(), interval(STOP))
    # traffic_stop's quiet is of the companion's model, not the target's
    assert not evaluator.spoils(traffic_stop(), interval(TTFT_BURN))
    by_component = overload(fire=[{"component": "kv_cache", "within": "30s"}])
    assert evaluator.spoils(by_component, interval("AnyKVAlert", "kv_cache"))
    assert not evaluator.spoils(by_component, interval(TTFT_BURN))


def test_each_peer_is_sent_the_scenarios_stages_and_a_missing_peer_is_noted(tmp_path: Path) -> None:
    sc = parse_scenario(
        {
            "name": "p",
            "limits": {"max_duration": "10s", "max_requests": 100},
            "peers": 2,
            "stages": [{"name": "s", "duration": "1s", "rate": 5, "arrival": "constant"}],
            "actions": [{"name": "t", "at": "0s", "do": "engine_throttle", "stopped_share": 0.5}],
        }
    )
    with StubServer(StubConfig()).start() as one, StubServer(StubConfig()).start() as two:
        peers = tuple(Target(s.url, "stub-model", instance_of(s.url), WordVocabulary()) for s in (one, two))
        target = Target("http://127.0.0.1:9", "stub-model", "127.0.0.1:9", WordVocabulary(), peers=peers)
        notes: list[str] = []
        runs = session_peers(sc, target, tmp_path, notes)
        for run in runs:
            run.join(30)
        assert [run.result().run["summary"]["overall"]["succeeded"] for run in runs] == [5, 5]
        assert (one.requests, two.requests) == (5, 5)
        assert notes == [f"the same load to 2 peer replicas: {one.url}, {two.url}"]
        # One peer short: no peer load at all (the outlier's median needs them all), and the note says why.
        short: list[str] = []
        assert session_peers(sc, dataclasses.replace(target, peers=peers[:1]), tmp_path / "short", short) == []
        assert short == [
            "peer load skipped: the scenario needs 2 other replicas of stub-model, 1 known (infersight up starts them)"
        ]
        assert (one.requests, two.requests) == (5, 5)
