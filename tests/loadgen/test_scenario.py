"""Scenario files: strict validation with clear messages; the shipped examples load, stay bounded
and name alerts that the bundle really has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config
from infersight.durations import Duration
from infersight.loadgen.scenario import ScenarioError, load_scenario, parse_scenario
from infersight.rules import COMPONENTS

SCENARIOS = Path(__file__).resolve().parents[2] / "loadgen" / "scenarios"
EXAMPLES = sorted(SCENARIOS.glob("*.yaml"))
BASE: dict[str, Any] = {
    "name": "t",
    "limits": {"max_duration": "1m", "max_requests": 100},
    "stages": [{"name": "a", "duration": "10s", "rate": 2}],
}


def problems(data: Any) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "test.yaml")
    assert str(info.value).startswith("invalid scenario test.yaml:")
    return info.value.problems


def paused_then_resolved(within: str, after: str) -> dict[str, Any]:
    """An engine paused by action f, and a resolve expectation counted from ``after``."""
    resolve = {"alert": "InfersightVLLMHungEngine", "within": within, "after": after}
    return BASE | {"actions": [{"name": "f", "at": "5s", "do": "engine_pause"}], "expect": {"resolve": [resolve]}}


def with_stage(**stage: Any) -> dict[str, Any]:
    return BASE | {"stages": [{"name": "a", "duration": "10s"} | stage]}


@pytest.mark.parametrize(
    ("data", "path", "fragment"),
    [
        ({k: v for k, v in BASE.items() if k != "limits"}, "limits", "required"),
        (BASE | {"limits": {"max_duration": "1m"}}, "limits.max_requests", "required"),
        (BASE | {"limits": {"max_duration": "7h", "max_requests": 10}}, "limits", "ceiling"),
        (BASE | {"limits": {"max_duration": "1m", "max_requests": 10**7}}, "limits.max_requests", "less than"),
        (BASE | {"stages": []}, "stages", "at least 1"),
        (with_stage(rate=2, concurrency=3), "stages.0", "exactly one of rate"),
        (with_stage(), "stages.0", "exactly one of rate"),
        (with_stage(rate=2, burstiness=0.5), "stages.0", "arrival: gamma only"),
        (with_stage(concurrency=2, arrival="poisson"), "stages.0", "apply to rate stages"),
        (with_stage(rate=2, arrival="weibull"), "stages.0.arrival", "'constant', 'poisson' or 'gamma'"),
        (with_stage(rate=-1), "stages.0.rate", "greater than 0"),
        (with_stage(rate=2, duration="0s"), "stages.0", "positive duration"),
        (with_stage(rate=2, duration="soon"), "stages.0.duration", "not a Prometheus duration"),
        (BASE | {"validity": {"max_schedule_lag_p99": "0s"}}, "validity", "positive duration"),
        (with_stage(rate=2, prompt_tokens="many"), "stages.0.prompt_tokens", "whole number of tokens"),
        (with_stage(rate=2, output_tokens=True), "stages.0.output_tokens", "whole number of tokens"),
        (with_stage(rate=2, prompt_tokens={"dist": "normal", "max": 9}), "stages.0.prompt_tokens", "mean and stddev"),
        (with_stage(rate=2, prompt_tokens={"dist": "uniform", "min": 9, "max": 3}), "stages.0.prompt_tokens", "min"),
        (with_stage(rate=2, fault="moe_skew"), "stages.0.fault", "mode: repeated"),
        (with_stage(rate=2, fault="meltdown"), "stages.0.fault", "'overload'"),
        (with_stage(rate=2, prompt={"mode": "repeated", "shared_prefix_tokens": 8}), "stages.0.prompt", "random only"),
        (with_stage(rate=2, ratte=3), "stages.0.ratte", "unknown key"),
        (BASE | {"name": "Bad Name"}, "name", "should match pattern"),
        (with_stage(rate=20, duration="50s"), "stages", "more than limits.max_requests"),
        (with_stage(rate=1, duration="2m"), "stages", "longer than limits.max_duration"),
        (BASE | {"actions": [{"name": "k", "at": "5s", "do": "explode"}]}, "actions.0", "does not match"),
        (
            BASE | {"actions": [{"name": "l", "at": "5s", "do": "gpu_leak_start"}]},
            "actions.0.mib_per_second",
            "required",
        ),
        (BASE | {"actions": [{"name": "u", "at": "5s", "do": "target_up"}]}, "actions", "before any target_down"),
        (BASE | {"actions": [{"name": "t", "at": "5s", "do": "engine_resume"}]}, "actions", "before any engine_pause"),
        (
            BASE | {"actions": [{"name": "g", "at": "5s", "do": "engine_unthrottle"}]},
            "actions",
            "before any engine_throttle",
        ),
        (
            BASE | {"actions": [{"name": "t", "at": "5s", "do": "engine_throttle"}]},
            "actions.0.stopped_share",
            "required",
        ),
        (
            BASE | {"actions": [{"name": "t", "at": "5s", "do": "engine_throttle", "stopped_share": 1}]},
            "actions.0.stopped_share",
            "less than 1",
        ),
        (
            BASE
            | {"actions": [{"name": "t", "at": "5s", "do": "engine_throttle", "stopped_share": 0.5, "period": "11s"}]},
            "actions.0",
            "period 11s is not between 10ms and 10s",
        ),
        (BASE | {"peers": 9}, "peers", "less than or equal to 8"),
        (BASE | {"peers": -1}, "peers", "greater than or equal to 0"),
        (
            BASE | {"expect": {"quiet": [{"alert": "InfersightVLLMOutlierReplica", "of": "peers"}]}},
            "expect.quiet.0.of",
            "no peers",
        ),
        (with_stage(rate=2, idle=True, fault="traffic_stop"), "stages.0", "exactly one of rate"),
        (with_stage(idle=True), "stages.0.fault", "an idle stage can only be a traffic_stop"),
        (with_stage(rate=2, fault="traffic_stop"), "stages.0.fault", "traffic_stop marks an idle stage"),
        (
            BASE | {"expect": {"quiet": [{"alert": "InfersightVLLMTrafficStop", "of": "companion"}]}},
            "expect.quiet.0.of",
            "no companion",
        ),
        (BASE | {"companion": {"rate": 0}}, "companion.rate", "greater than 0"),
        (BASE | {"companion": {"rate": 21}}, "companion.rate", "less than or equal to 20"),
        (
            BASE | {"companion": {"rate": 1}, "limits": {"max_duration": "5h1m", "max_requests": 100}},
            "limits.max_duration",
            "at most 5h",
        ),
        (paused_then_resolved(within="5s", after="a"), "expect.resolve.0.after", "not an action"),
        (paused_then_resolved(within="10m", after="f"), "expect.resolve.0.within", "ends before 10m"),
        (BASE | {"actions": [{"name": "a", "at": "5s", "do": "target_down"}]}, "stages", "unique"),
        (BASE | {"expect": {"fire": [{"component": "serving", "within": "1m"}]}}, "expect.fire.0", "no fault"),
        (BASE | {"expect": {"fire": [{"alert": "HighLatency", "within": "1m"}]}}, "expect.fire.0", "not an infersight"),
        (BASE | {"expect": {"fire": [{"component": "db", "within": "1m"}]}}, "expect.fire.0.component", "'serving'"),
        (BASE | {"expect": {"quiet": [{"alert": "InfersightX", "component": "gpu"}]}}, "expect.quiet.0", "exactly one"),
        (BASE | {"expect": {"quiet": [{"component": "gpu", "during": ["zz"]}]}}, "expect.quiet.0.during", "unknown"),
        ("just text", "(root)", "must be a mapping"),
    ],
)
def test_bad_scenarios_name_the_field_and_the_rule(data: Any, path: str, fragment: str) -> None:
    found = problems(data)
    assert any(p == path and fragment in msg for p, msg in found), found


def test_fire_expectation_must_fit_inside_the_run() -> None:
    data = BASE | {
        "stages": [{"name": "a", "duration": "50s", "rate": 1, "fault": "overload"}],
        "expect": {"fire": [{"alert": "InfersightVLLMTTFTBudgetBurn", "within": "2m", "after": "a"}]},
    }
    assert any("ends before" in msg for _, msg in problems(data))


def test_several_faults_need_after() -> None:
    data = BASE | {
        "limits": {"max_duration": "5m", "max_requests": 100},
        "stages": [{"name": "a", "duration": "10s", "rate": 1, "fault": "overload"}],
        "actions": [{"name": "down", "at": "20s", "do": "target_down"}],
        "expect": {"fire": [{"component": "serving", "within": "1m"}]},
    }
    assert any("name the fault with after" in msg for _, msg in problems(data))
    data["expect"]["fire"][0]["after"] = "down"
    sc = parse_scenario(data)
    assert sc.fault_starts() == {"a": Duration(0), "down": Duration.parse("20s")}
    assert sc.expect is not None and sc.fault_for(sc.expect.fire[0]) == ("down", Duration.parse("20s"))


def test_the_only_fault_is_the_default() -> None:
    stages = [
        {"name": "calm", "duration": "10s", "rate": 1},
        {"name": "hot", "duration": "10s", "rate": 2, "fault": "overload"},
    ]
    sc = parse_scenario(BASE | {"stages": stages, "expect": {"fire": [{"component": "serving", "within": "30s"}]}})
    assert sc.expect is not None and sc.fault_for(sc.expect.fire[0]) == ("hot", Duration.parse("10s"))


def test_unreadable_and_invalid_yaml_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)


def test_defaults_are_bounded_and_explicit() -> None:
    sc = parse_scenario(BASE)
    assert sc.limits.max_in_flight == 256
    assert sc.validity.max_schedule_lag_p99.ms == 10
    assert sc.stages[0].arrival == "poisson" and sc.stages[0].gamma_shape == 1.0


def test_examples_exist_for_every_fault_the_issue_lists() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"healthy", "overload", "kv_pressure", "client_errors", "moe_skew"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_scenarios_load_and_are_named_after_their_file(path: Path) -> None:
    sc = load_scenario(path)
    assert sc.name == path.stem
    assert sc.scheduled_duration <= sc.limits.max_duration


def _bundle_alerts() -> dict[str, str]:
    """Alert name -> component, from the bundle the default config builds."""
    alerts: dict[str, str] = {}
    for rel, text in bundle_files.render(bundle.build(Config())).items():
        if rel.startswith("alerts/") and rel.endswith(".yaml"):
            for group in yaml.safe_load(text)["groups"]:
                for rule in group["rules"]:
                    if "alert" in rule:
                        alerts[rule["alert"]] = rule["labels"]["component"]
    return alerts


def test_example_expectations_name_real_alerts() -> None:
    alerts = _bundle_alerts()
    for path in EXAMPLES:
        expect = load_scenario(path).expect
        if expect is None:
            continue
        for sel in [*expect.fire, *expect.quiet]:
            if sel.alert is not None:
                assert sel.alert in alerts, f"{path.name}: {sel.alert} is not an alert of the bundle"
            else:
                assert sel.component in COMPONENTS


def test_healthy_expects_quiet_and_faults_expect_firing() -> None:
    healthy = load_scenario(SCENARIOS / "healthy.yaml")
    assert healthy.expect is not None and not healthy.expect.fire and healthy.expect.quiet
    assert all(s.fault is None for s in healthy.stages) and not healthy.actions
    for name in ("overload", "kv_pressure", "moe_skew"):
        sc = load_scenario(SCENARIOS / f"{name}.yaml")
        assert sc.expect is not None and sc.expect.fire, name
        assert any(s.fault == name for s in sc.stages), name


@pytest.mark.parametrize("number", ['"1e400"', '"Infinity"', '"-inf"', '"NaN"'])
def test_numbers_written_as_strings_must_be_finite(tmp_path: Path, number: str) -> None:
    # pydantic reads these strings as floats past any lower bound; a YAML .inf is caught by the reader
    path = tmp_path / "s.yaml"
    tokens = f"{{dist: normal, min: 1, max: 64, mean: {number}, stddev: 1}}"
    stage = f"{{name: a, duration: 10s, rate: 1, prompt_tokens: {tokens}}}"
    path.write_text(f"name: t\nlimits: {{max_duration: 1m, max_requests: 100}}\nstages: [{stage}]\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert [p for p, _ in info.value.problems] == ["stages.0.prompt_tokens.mean"]
    assert "finite" in str(info.value)


def test_a_companion_load_lasts_as_long_as_asked_at_its_rate() -> None:
    sc = parse_scenario(
        BASE
        | {
            "stages": [{"name": "a", "duration": "10s", "rate": 2}, {"name": "b", "duration": "20s", "rate": 1}],
            "companion": {"rate": 3, "output_tokens": 8},
        }
    )
    assert sc.companion is not None
    # Longer than the stages: it must keep going while the scenario is watched after its load.
    companion = sc.companion.scenario(sc, Duration.parse("2m"))
    assert companion.name == "t_companion"
    ((stage),) = companion.stages
    assert (stage.duration.total_seconds, stage.rate, stage.output_tokens) == (120, 3, 8)
    assert companion.limits.max_requests >= 360 and companion.limits.max_duration == Duration.parse("2m")


def test_peers_are_sent_the_stages_without_the_fault_or_its_expectations() -> None:
    throttled = BASE | {
        "peers": 2,
        "actions": [{"name": "t", "at": "5s", "do": "engine_throttle", "stopped_share": 0.9}],
        "expect": {"fire": [{"alert": "InfersightVLLMOutlierReplica", "within": "30s"}]},
    }
    scenario = parse_scenario(throttled)
    peer = scenario.peer_load()
    assert (peer.actions, peer.expect, peer.peers) == ([], None, 0)
    assert peer.stages == scenario.stages and peer.limits == scenario.limits
    assert peer.name == "t_peer"
