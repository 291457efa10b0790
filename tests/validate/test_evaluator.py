"""The evaluator on synthetic alert timelines: expectations met/missed/skipped, time to detect,
false positives on healthy traffic, and the per-alert figures across scenarios."""

from __future__ import annotations

import pytest

from infersight.validate.evaluator import evaluate, peers_scope, summarize, target_scope

from .timelines import (
    COMPANION_MODEL,
    HUNG,
    INSTANCE,
    LEAK,
    MODEL,
    OUTLIER,
    PEERS,
    STOP,
    TARGET_DOWN,
    TTFT_BURN,
    action,
    alert,
    healthy,
    hung_engine,
    outlier_replica,
    overload,
    target_down,
    traffic_stop,
)
from .timelines import window as win


def test_fire_within_the_window_is_met_with_its_time_to_detect() -> None:
    sc = overload()
    verdict = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=30, firing=42.5, resolved=70)])
    fire = verdict.expectations[0]
    assert (fire.kind, fire.status, fire.fault) == ("fire", "met", "overload")
    assert fire.fault_offset_s == 20
    assert fire.ttd_s == pytest.approx(22.5)  # overload starts at 20 s, fires at 42.5 s
    assert fire.received_s == pytest.approx(23.0)
    assert [e.status for e in verdict.expectations[1:]] == ["met", "met"]  # quiet in baseline, no GPU alert
    assert verdict.false_positives == []
    assert verdict.healthy_s == 20  # the baseline, before the first fault


def test_firing_after_within_is_missed_and_says_how_late() -> None:
    sc = overload()
    verdict = evaluate(sc, win(sc, extra_s=30), [], [alert(TTFT_BURN, pending=40, firing=55)])
    fire = verdict.expectations[0]
    assert fire.status == "missed"
    assert "35.0s after overload" in fire.detail and "within 30s" in fire.detail
    assert verdict.missed == [fire]


def test_pending_that_never_fires_is_missed() -> None:
    sc = overload()
    verdict = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=25, firing=None, resolved=28)])
    assert verdict.expectations[0].status == "missed"
    assert "never fired" in verdict.expectations[0].detail


def test_firing_without_reaching_alertmanager_is_missed_unless_it_is_not_watched() -> None:
    sc = overload()
    seen = [alert(TTFT_BURN, pending=30, firing=40, to_alertmanager=None)]
    assert evaluate(sc, win(sc), [], seen).expectations[0].status == "missed"
    assert "never reached Alertmanager" in evaluate(sc, win(sc), [], seen).expectations[0].detail
    assert evaluate(sc, win(sc), [], seen, watch_alertmanager=False).expectations[0].status == "met"


def test_an_alert_firing_before_the_fault_does_not_count_as_detection() -> None:
    sc = overload()
    # Fired during the baseline (a false positive) and stays firing through the fault: no new firing.
    verdict = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=5, firing=10)])
    assert verdict.expectations[0].status == "missed"
    assert verdict.expectations[1].status == "missed"  # quiet serving during baseline broken
    assert "fired at +10.0s" in verdict.expectations[1].offenders[0]
    assert [fp.alert for fp in verdict.false_positives] == [TTFT_BURN]
    assert verdict.false_positives[0].offset_s == 10


def test_an_alert_carried_over_from_before_the_scenario_is_neither_proof_nor_false_positive() -> None:
    sc = overload()
    verdict = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=-20, firing=-10, resolved=3)])
    assert verdict.expectations[0].status == "missed"
    assert verdict.expectations[1].status == "met"
    assert verdict.false_positives == []
    assert verdict.carried_over == [TTFT_BURN]


def test_quiet_by_component_ignores_other_components_and_other_stages() -> None:
    sc = overload()
    seen = [
        alert("InfersightVLLMKVCacheSaturated", pending=5, firing=8, component="kv_cache"),  # not serving
        alert(TTFT_BURN, pending=30, firing=45),  # serving, but in the overload stage
    ]
    verdict = evaluate(sc, win(sc), [], seen)
    assert [e.status for e in verdict.expectations] == ["met", "met", "met"]
    # The KV alert still is a false positive: it fired on healthy traffic.
    assert [fp.alert for fp in verdict.false_positives] == ["InfersightVLLMKVCacheSaturated"]


def test_quiet_over_the_whole_scenario_catches_a_gpu_alert_late_in_the_run() -> None:
    sc = overload()
    verdict = evaluate(sc, win(sc), [], [alert(LEAK, pending=60, firing=70, component="gpu")])
    quiet_gpu = verdict.expectations[2]
    assert (quiet_gpu.selector, quiet_gpu.status) == ("component gpu", "missed")
    assert verdict.false_positives == []  # after the first fault: not healthy traffic


def test_action_fault_counts_from_when_the_action_really_started() -> None:
    sc = target_down()
    late_start = action("down", "target_down", at=23)  # planned at 20 s, performed at 23 s
    verdict = evaluate(sc, win(sc), [late_start], [alert(TARGET_DOWN, pending=25, firing=30)])
    fire = verdict.expectations[0]
    assert fire.status == "met" and fire.ttd_s == pytest.approx(7)
    assert verdict.healthy_s == 23


def test_skipped_action_skips_its_expectation_and_leaves_the_traffic_healthy() -> None:
    sc = target_down()
    skipped = action("down", "target_down", at=20, status="skipped", detail="no hook for target_down")
    verdict = evaluate(sc, win(sc), [skipped], [])
    assert verdict.expectations[0].status == "skipped"
    assert "no hook for target_down" in verdict.expectations[0].detail
    assert verdict.missed == []
    assert verdict.healthy_s == 60  # the fault never happened


def test_failed_action_misses_its_expectation() -> None:
    sc = target_down()
    failed = action("down", "target_down", at=20, status="failed", detail="`systemctl stop vllm` exited with 5")
    verdict = evaluate(sc, win(sc), [failed], [])
    assert verdict.expectations[0].status == "missed"
    assert "exited with 5" in verdict.expectations[0].detail


def test_scope_drops_alerts_about_another_target() -> None:
    sc = target_down()
    other = alert(TARGET_DOWN, pending=21, firing=25, instance="127.0.0.1:9999", job="vllm")
    mine = alert(TARGET_DOWN, pending=22, firing=28, instance=INSTANCE, job="vllm")
    other_model = alert(TTFT_BURN, pending=1, firing=2, model_name="tiny-dense")
    scope = target_scope(INSTANCE, MODEL)
    verdict = evaluate(sc, win(sc), [action("down", "target_down", 20)], [other, mine, other_model], scope)
    assert verdict.expectations[0].ttd_s == pytest.approx(8)  # not the other instance's 5 s
    assert verdict.false_positives == []  # the other model's burn is not this target's
    assert scope(alert(LEAK, 1, 2, component="gpu", instance="127.0.0.1:9835"))  # GPU alerts stay in scope


def test_summary_detection_rate_median_ttd_and_false_positives_per_hour() -> None:
    sc = overload()
    detected_fast = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=25, firing=30)])  # 10 s
    detected_slow = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=35, firing=46)])  # 26 s
    detected_mid = evaluate(sc, win(sc), [], [alert(TTFT_BURN, pending=30, firing=34)])  # 14 s
    not_detected = evaluate(sc, win(sc), [], [])
    h = healthy()
    noisy = evaluate(h, win(h), [], [alert(TARGET_DOWN, pending=10, firing=15, resolved=20)])
    summary = summarize([detected_fast, detected_slow, detected_mid, not_detected, noisy], known_alerts=[LEAK])
    stats = {s.alert: s for s in summary.alerts}
    burn = stats[TTFT_BURN]
    assert (burn.expected, burn.detected) == (4, 3)
    assert burn.detection_rate == 0.75
    assert burn.median_ttd_s == pytest.approx(14)
    # Healthy traffic: 4 x 20 s of baseline + 60 s of the healthy scenario = 140 s; one false positive.
    assert summary.healthy_s == pytest.approx(140)
    assert stats[TARGET_DOWN].false_positives == 1
    assert summary.false_positives_per_hour(stats[TARGET_DOWN]) == pytest.approx(3600 / 140)
    assert summary.false_positives_per_hour(burn) == 0
    assert stats[LEAK].expected == 0 and stats[LEAK].detection_rate is None  # listed, never exercised
    # Missed: the undetected burn, and the healthy scenario's quiet serving (the target-down blip).
    assert (summary.expectations, summary.missed, summary.skipped) == (14, 2, 0)


def test_summary_of_nothing_has_no_rates() -> None:
    summary = summarize([])
    assert summary.alerts == [] and summary.healthy_s == 0


def _hung_outcomes(thaw: str = "done") -> list:  # type: ignore[type-arg]
    return [action("freeze", "engine_pause", 20), action("thaw", "engine_resume", 50, status=thaw)]


def test_an_alert_that_resolves_within_the_time_after_its_fault_ends_is_met() -> None:
    sc = hung_engine()
    verdict = evaluate(sc, win(sc), _hung_outcomes(), [alert(HUNG, pending=27, firing=33, resolved=54.5)])
    fire, resolve = verdict.expectations
    assert (fire.status, resolve.status) == ("met", "met")
    assert (resolve.kind, resolve.fault, resolve.fault_offset_s) == ("resolve", "thaw", 50)
    assert resolve.ttd_s == pytest.approx(4.5)
    assert resolve.detail == "resolved 4.5s after thaw"


def test_an_alert_still_firing_after_the_time_is_a_missed_resolve_naming_it() -> None:
    sc = hung_engine()
    still = alert(HUNG, pending=27, firing=33, resolved=None, instance=INSTANCE)
    (_, resolve) = evaluate(sc, win(sc), _hung_outcomes(), [still]).expectations
    assert resolve.status == "missed"
    assert resolve.detail == "still firing 20s after thaw"
    assert resolve.offenders == [f"{HUNG}{{instance={INSTANCE}}}"]
    late = alert(HUNG, pending=27, firing=33, resolved=71)  # 21 s after the thaw
    assert evaluate(sc, win(sc), _hung_outcomes(), [late]).expectations[1].status == "missed"


def test_nothing_to_resolve_is_a_miss_and_a_thaw_not_performed_is_skipped() -> None:
    sc = hung_engine()
    (_, resolve) = evaluate(sc, win(sc), _hung_outcomes(), []).expectations
    assert resolve.status == "missed"
    assert "was not firing when thaw started" in resolve.detail
    # resolved before the thaw (it was not about the freeze any more): also nothing to resolve
    early = alert(HUNG, pending=27, firing=33, resolved=45)
    assert evaluate(sc, win(sc), _hung_outcomes(), [early]).expectations[1].status == "missed"
    skipped = evaluate(sc, win(sc), _hung_outcomes(thaw="skipped"), [alert(HUNG, 27, 33)]).expectations[1]
    assert skipped.status == "skipped"
    failed = evaluate(sc, win(sc), _hung_outcomes(thaw="failed"), [alert(HUNG, 27, 33)]).expectations[1]
    assert failed.status == "missed" and failed.detail.startswith("thaw failed")


def test_the_run_is_watched_until_the_last_resolve_deadline() -> None:
    assert hung_engine().deadline().total_seconds == 70  # thaw at 50 s + 20 s; the fire's is 20 + 30


def test_a_companion_quiet_is_judged_on_the_companion_model_alone() -> None:
    sc = traffic_stop()
    mine, theirs = target_scope(INSTANCE, MODEL), target_scope("127.0.0.1:9000", COMPANION_MODEL)
    stopped = alert(STOP, pending=47, firing=53, model_name=MODEL)
    verdict = evaluate(sc, win(sc), [], [stopped], mine, companion_scope=theirs)
    fire, quiet = verdict.expectations
    assert (fire.status, quiet.status) == ("met", "met")
    assert quiet.selector == f"alert {STOP} of the companion"
    companion_stopped = alert(STOP, pending=60, firing=66, model_name=COMPANION_MODEL)
    verdict = evaluate(sc, win(sc), [], [stopped, companion_stopped], mine, companion_scope=theirs)
    assert verdict.expectations[0].status == "met"  # about this target: still its own alert
    assert verdict.expectations[1].status == "missed"
    assert f"model_name={COMPANION_MODEL}" in verdict.expectations[1].offenders[0]


def test_without_a_companion_load_its_quiet_is_skipped() -> None:
    sc = traffic_stop()
    stopped = alert(STOP, pending=47, firing=53, model_name=MODEL)
    (_, quiet) = evaluate(sc, win(sc), [], [stopped], target_scope(INSTANCE, MODEL)).expectations
    assert (quiet.status, quiet.detail) == ("skipped", "no companion load ran")


def test_a_peers_quiet_is_judged_on_the_peer_replicas_alone() -> None:
    sc = outlier_replica()
    mine, peers = target_scope(INSTANCE, MODEL), peers_scope(PEERS, MODEL)
    outcomes = [action("throttle", "engine_throttle", 30)]
    slow = alert(OUTLIER, pending=35, firing=50, instance=INSTANCE, model_name=MODEL)
    fire, quiet_healthy, quiet_peers = evaluate(sc, win(sc), outcomes, [slow], mine, peer_scope=peers).expectations
    assert [e.status for e in (fire, quiet_healthy, quiet_peers)] == ["met", "met", "met"]
    assert fire.ttd_s == pytest.approx(20)
    assert quiet_peers.selector == f"alert {OUTLIER} of the peers"
    # A peer named too breaks it; another model's replica on the same port range does not.
    peer = alert(OUTLIER, pending=40, firing=55, instance=PEERS[1], model_name=MODEL)
    elsewhere = alert(OUTLIER, pending=40, firing=55, instance=PEERS[0], model_name="other-model")
    verdict = evaluate(sc, win(sc), outcomes, [slow, peer, elsewhere], mine, peer_scope=peers)
    assert [e.status for e in verdict.expectations] == ["met", "met", "missed"]
    assert verdict.expectations[2].offenders == [
        f"{OUTLIER}{{instance={PEERS[1]}, model_name={MODEL}}} fired at +55.0s"
    ]
    # No peer load ran: skipped, saying so.
    skipped = evaluate(sc, win(sc), outcomes, [slow], mine).expectations[2]
    assert (skipped.status, skipped.detail) == ("skipped", "no peer load ran")
