"""Which recordings evaluate every 30 s, every minute and every 2 m (infersight/evaluation_intervals.py):
a recording that a prompt alert (for: under 10 m, or a burn rate) reads, directly or through other
recordings, keeps the evaluation interval; one that only slower alerts read moves to the dashboard
interval, and one that no alert reads to the view interval, a mixed group split by tier. Alerts keep
theirs."""

from __future__ import annotations

import pytest

from infersight import bundle, evaluation_intervals
from infersight.config import Config, ConfigError, parse_config
from infersight.durations import Duration
from infersight.packs import PACKS, RULE_KINDS
from infersight.rules import Alert, RecordingRule, RuleGroup
from infersight.stack.observed import validation_profile


def _intervals(cfg: Config) -> dict[str, str]:
    return {g.name: str(g.interval) for g in bundle.build(cfg).groups()}


def _alert(name: str, expr: str, for_: str) -> Alert:
    return Alert(name, expr, "warning", "serving", "X is high.", "{{ $value }}", "https://x", Duration.parse(for_))


def _names(cfg: Config, group: str) -> set[str]:
    (found,) = [g for g in bundle.build(cfg).groups() if g.name == group]
    return {r.record if isinstance(r, RecordingRule) else r.alert for r in found.rules}


def test_a_mixed_group_keeps_its_prompt_rules_and_the_rest_moves_to_patient_and_view_groups() -> None:
    intervals = _intervals(Config())
    # What the target, hung-engine and traffic-stop alerts read, and only that, stays at 30 s.
    assert _names(Config(), "infersight-serving.rules") == {
        "instance:vllm_requests:rate5m",
        "model:vllm_requests:rate5m",
        "instance:vllm_num_requests_running:sum",
        "instance:vllm_num_requests_waiting:sum",
    }
    # Read by alerts that wait 10 m or more (sustained preemptions, KV thrash) and by dashboards.
    assert "instance:vllm_num_preemptions:rate5m" in _names(Config(), "infersight-serving-patient.rules")
    assert intervals["infersight-serving-patient.rules"] == "1m"
    # Read by dashboards only.
    assert "instance:vllm_request_errors:ratio_rate5m" in _names(Config(), "infersight-serving-view.rules")
    assert intervals["infersight-serving-view.rules"] == "2m"
    # Alerts that wait 10 m or more evaluate every minute, the prompt ones every 30 s.
    assert _names(Config(), "infersight-serving-patient.alerts") == {
        "InfersightVLLMMetricsAbsent",
        "InfersightVLLMOutlierReplica",
    }
    assert intervals["infersight-serving-patient.alerts"] == "1m" and intervals["infersight-serving.alerts"] == "30s"
    assert "InfersightVLLMHungEngine" in _names(Config(), "infersight-serving.alerts")
    # Nothing is lost or doubled: the same rules as the packs build, and each part keeps their order.
    built = {g.name: list(g.rules) for p in PACKS for kind in RULE_KINDS if (b := p.groups(kind)) for g in b(Config())}
    relaxed = bundle.build(Config()).groups()
    every = [r for rules in built.values() for r in rules]
    assert sorted(repr(r) for g in relaxed for r in g.rules) == sorted(map(repr, every))
    assert any(isinstance(r, Alert) for r in every)
    for g in relaxed:
        original = built[g.name.replace("-patient.", ".").replace("-view.", ".")]
        assert list(g.rules) == [r for r in original if r in g.rules], g.name


def test_dashboard_only_histograms_move_and_what_prompt_alerts_read_stays() -> None:
    intervals = _intervals(Config())
    # Read by dashboards, and by alerts that wait 15 m (outlier replica, MoE imbalance) at most.
    for name in ("infersight-serving-ttft.rules", "infersight-moe.rules", "infersight-kv-cache-queue-time.rules"):
        assert intervals[name] == "1m", name
    assert _names(Config(), "infersight-serving-ttft.rules") == {"instance:vllm_time_to_first_token_seconds:p99_rate5m"}
    # Read by dashboards only: the per-model quantiles, the MoE balance views, the per-node GPU views.
    for name in (
        "infersight-serving-itl.rules",
        "infersight-serving-ttft-view.rules",
        "infersight-moe-view.rules",
        "infersight-gpu.rules",
    ):
        assert intervals[name] == "2m", name
    assert _names(Config(), "infersight-moe.rules") == {
        "layer:infersight_moe_layer_share_variance:replica_max",
        "layer:infersight_moe_layer_dead_experts:max",
    }
    # Burn-rate alerts (no for:) read the SLO recordings; target, queue and KV alerts the golden ones.
    slo = [name for name in intervals if name.startswith("infersight-serving-slo-") and name.endswith(".rules")]
    assert len(slo) == 6
    for name in slo:
        if name.endswith("-view.rules"):  # the 30-day attainment: dashboards only
            assert intervals[name] == "2m" and _names(Config(), name) == {"model:vllm_slo_errors:ratio_rate30d"}
        else:
            assert intervals[name] == "30s"
    assert intervals["infersight-serving.rules"] == intervals["infersight-kv-cache.rules"] == "30s"
    assert intervals["infersight-serving-slo.alerts"] == "30s"
    assert intervals["infersight-gpu-slow.rules"] == "2m"  # its own interval is kept
    # Read by a 10 m for: only, but the throttling alert counts its samples: every evaluation.
    assert intervals["infersight-gpu-throttle.rules"] == "30s"


def test_an_alert_made_prompt_brings_what_it_reads_back_to_the_evaluation_interval() -> None:
    assert _intervals(Config())["infersight-kv-cache-queue-time.rules"] == "1m"  # read by a 10 m for: only
    prompt = parse_config({"kv_cache": {"alerts": {"queue_build_up": {"for": "5m"}}}})
    assert _intervals(prompt)["infersight-kv-cache-queue-time.rules"] == "30s"


def test_time_scaling_keeps_the_split() -> None:
    scaled = _intervals(validation_profile(Config(), 60))
    assert scaled["infersight-serving-ttft.rules"] == "1s"
    assert scaled["infersight-serving-itl.rules"] == "2s"
    assert scaled["infersight-serving.rules"] == scaled["infersight-serving.alerts"] == "500ms"
    production = _intervals(Config())
    for fast, slow in (("1s", "1m"), ("2s", "2m")):
        assert {n for n, i in scaled.items() if i == fast} == {n for n, i in production.items() if i == slow}


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("dashboard_evaluation", "20s", "must not be shorter than evaluation (30s); set it to 30s or more"),
        ("dashboard_evaluation", "2m", "a tenth of the shortest for:"),
        ("view_evaluation", "20s", "must not be shorter than evaluation (30s); set it to 30s or more"),
        ("view_evaluation", "3m", "half of Prometheus' 5m lookback"),
    ],
)
def test_the_dashboard_and_view_intervals_are_checked(key: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"intervals": {key: value}})
    assert says in str(info.value) and key in str(info.value)
    assert (Config().intervals.dashboard_evaluation, Config().intervals.view_evaluation) == (
        Duration.parse("1m"),
        Duration.parse("2m"),
    )


def test_a_view_interval_no_longer_than_the_dashboard_interval_joins_the_patient_groups() -> None:
    intervals = _intervals(parse_config({"intervals": {"view_evaluation": "1m"}}))
    assert not any("-view." in name for name in intervals)
    assert intervals["infersight-serving-itl.rules"] == intervals["infersight-serving-patient.rules"] == "1m"
    assert "instance:vllm_request_errors:ratio_rate5m" in _names(
        parse_config({"intervals": {"view_evaluation": "1m"}}), "infersight-serving-patient.rules"
    )


def test_nothing_moves_or_splits_when_the_dashboard_interval_is_the_evaluation_interval() -> None:
    # As infersight up and validate run (both once a minute), and as a user may set it.
    same = parse_config({"intervals": {"evaluation": "2m", "dashboard_evaluation": "2m", "view_evaluation": "2m"}})
    intervals = _intervals(same)
    assert not any(name.endswith(("-patient.rules", "-view.rules")) for name in intervals)
    assert intervals["infersight-serving-itl.rules"] == intervals["infersight-serving.rules"] == "2m"


def test_what_an_autoscaler_reads_through_another_recording_stays_prompt() -> None:
    fast, view = Duration.parse("30s"), Duration.parse("2m")
    source = RuleGroup("infersight-x.rules", fast, (RecordingRule("model:x:rate5m", "sum(rate(x[5m]))"),))
    scaler = RuleGroup("infersight-y.rules", fast, (RecordingRule("model:y:ratio", "model:x:rate5m / 2"),), True)
    moved = evaluation_intervals.relax(Config(), [source, scaler], [source, scaler], [])
    assert [str(g.interval) for g in moved] == ["30s", "30s"]
    alone = RuleGroup("infersight-x.rules", fast, source.rules)
    assert evaluation_intervals.relax(Config(), [alone], [alone], [])[0].interval == view  # read by nothing


@pytest.mark.parametrize(
    ("alert_for", "interval", "name"),
    [("5m", "30s", "infersight-x.rules"), ("15m", "1m", "infersight-x.rules"), (None, "2m", "infersight-x.rules")],
)
def test_a_recording_takes_the_tier_of_its_most_urgent_reader(alert_for: str | None, interval: str, name: str) -> None:
    fast = Duration.parse("30s")
    rules = (RecordingRule("model:x:rate5m", "sum(rate(x[5m]))"), RecordingRule("model:x:double", "model:x:rate5m * 2"))
    readers = [] if alert_for is None else [_alert("InfersightX", "model:x:double > 1", alert_for)]
    group = RuleGroup("infersight-x.rules", fast, rules)
    (moved,) = evaluation_intervals.relax(Config(), [group], [group], readers)
    # Read through the second recording: the first follows it.
    assert (moved.name, str(moved.interval), moved.rules) == (name, interval, rules)


def test_a_group_of_all_three_tiers_splits_in_three_in_order() -> None:
    fast = Duration.parse("30s")
    prompt, patient, view = (RecordingRule(f"model:{n}:rate5m", f"sum(rate({n}[5m]))") for n in ("p", "q", "v"))
    group = RuleGroup("infersight-x.rules", fast, (view, patient, prompt))
    alerts = [
        _alert("InfersightP", "model:p:rate5m > 1", "1m"),
        _alert("InfersightQ", "model:q:rate5m > 1", "10m"),
    ]
    parts = evaluation_intervals.relax(Config(), [group], [group], alerts)
    assert [(g.name, str(g.interval), g.rules) for g in parts] == [
        ("infersight-x.rules", "30s", (prompt,)),
        ("infersight-x-patient.rules", "1m", (patient,)),
        ("infersight-x-view.rules", "2m", (view,)),
    ]
