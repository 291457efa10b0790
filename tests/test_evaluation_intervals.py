"""Which recordings evaluate every 30 s and which every minute (infersight/evaluation_intervals.py):
a recording that a prompt alert (for: under 10 m, or a burn rate) reads, directly or through other
recordings, keeps the evaluation interval; the rest move to the dashboard interval, a mixed group
split in two. Alerts keep theirs."""

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


def _names(cfg: Config, group: str) -> set[str]:
    (found,) = [g for g in bundle.build(cfg).groups() if g.name == group]
    return {r.record if isinstance(r, RecordingRule) else r.alert for r in found.rules}


def test_a_mixed_group_keeps_its_prompt_rules_and_the_rest_moves_to_a_patient_group() -> None:
    intervals = _intervals(Config())
    # What the target, hung-engine and traffic-stop alerts read, and only that, stays at 30 s.
    assert _names(Config(), "infersight-serving.rules") == {
        "instance:vllm_requests:rate5m",
        "model:vllm_requests:rate5m",
        "instance:vllm_num_requests_running:sum",
        "instance:vllm_num_requests_waiting:sum",
    }
    assert "instance:vllm_request_errors:ratio_rate5m" in _names(Config(), "infersight-serving-patient.rules")
    assert intervals["infersight-serving-patient.rules"] == "1m"
    # Alerts stay every 30 s, the patient ones too.
    assert all(interval in ("30s", "2m") for name, interval in intervals.items() if name.endswith(".alerts"))
    # Nothing is lost or doubled: the same rules as the packs build, and each part keeps their order.
    built = {g.name: list(g.rules) for p in PACKS for kind in RULE_KINDS if (b := p.groups(kind)) for g in b(Config())}
    relaxed = bundle.build(Config()).groups()
    every = [r for rules in built.values() for r in rules]
    assert sorted(repr(r) for g in relaxed for r in g.rules) == sorted(map(repr, every))
    assert any(isinstance(r, Alert) for r in every)
    for g in relaxed:
        original = built[g.name.replace("-patient.", ".")]
        assert list(g.rules) == [r for r in original if r in g.rules], g.name


def test_dashboard_only_histograms_move_and_what_prompt_alerts_read_stays() -> None:
    intervals = _intervals(Config())
    # Read by dashboards, and by alerts that wait 15 m (outlier replica, MoE imbalance) at most.
    for name in ("infersight-serving-itl.rules", "infersight-serving-ttft.rules", "infersight-moe.rules"):
        assert intervals[name] == "1m", name
    # Burn-rate alerts (no for:) read the SLO recordings; target, queue and KV alerts the golden ones.
    slo = [name for name in intervals if name.startswith("infersight-serving-slo-") and name.endswith(".rules")]
    assert len(slo) == 6
    for name in slo:
        if name.endswith("-patient.rules"):  # the 30-day attainment: dashboards only
            assert intervals[name] == "1m" and _names(Config(), name) == {"model:vllm_slo_errors:ratio_rate30d"}
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
    assert scaled["infersight-serving-itl.rules"] == "1s"
    assert scaled["infersight-serving.rules"] == scaled["infersight-serving.alerts"] == "500ms"
    assert {n for n, i in scaled.items() if i == "1s"} == {n for n, i in _intervals(Config()).items() if i == "1m"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("20s", "must not be shorter than evaluation (30s); set it to 30s or more"),
        ("2m", "a tenth of the shortest for:"),
    ],
)
def test_the_dashboard_interval_is_checked(value: str, says: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"intervals": {"dashboard_evaluation": value}})
    assert says in str(info.value) and "dashboard_evaluation" in str(info.value)
    assert Config().intervals.dashboard_evaluation == Duration.parse("1m")


def test_nothing_moves_or_splits_when_the_dashboard_interval_is_the_evaluation_interval() -> None:
    # As infersight up and validate run (both once a minute), and as a user may set it.
    same = parse_config({"intervals": {"evaluation": "2m", "dashboard_evaluation": "2m"}})
    intervals = _intervals(same)
    assert not any(name.endswith("-patient.rules") for name in intervals)
    assert intervals["infersight-serving-itl.rules"] == intervals["infersight-serving.rules"] == "2m"


def test_what_an_autoscaler_reads_through_another_recording_stays_prompt() -> None:
    fast, slow = Duration.parse("30s"), Duration.parse("1m")
    source = RuleGroup("infersight-x.rules", fast, (RecordingRule("model:x:rate5m", "sum(rate(x[5m]))"),))
    scaler = RuleGroup("infersight-y.rules", fast, (RecordingRule("model:y:ratio", "model:x:rate5m / 2"),), True)
    moved = evaluation_intervals.relax(Config(), [source, scaler], [source, scaler], [])
    assert [str(g.interval) for g in moved] == ["30s", "30s"]
    alone = RuleGroup("infersight-x.rules", fast, source.rules)
    assert evaluation_intervals.relax(Config(), [alone], [alone], [])[0].interval == slow
