"""The jsonnet mixin, evaluated with the real jsonnet (Python package ``jsonnet``): with its
default _config it is the Python build; overriding a setting in jsonnet gives what the Python
build gives for the same setting in infersight.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import _jsonnet
import pytest
import yaml

from infersight import bundle, bundle_files, deploy, promql
from infersight.config import Config, parse_config
from infersight.deploy import mixin, trace

# Every setting the default mixin exposes in _config, in config order. A change here is a change
# of what jsonnet users can override: review it.
EXPOSED_KEYS = [
    "selectors.vllm",
    "selectors.dcgm",
    "selectors.gpu_exporter",
    "selectors.moe_exporter",
    "intervals.evaluation",
    "intervals.slow_evaluation",
    "intervals.dashboard_evaluation",
    "intervals.view_evaluation",
    "intervals.rate",
    "slo.period",
    "slo.burn_windows.0.long",
    "slo.burn_windows.0.short",
    "slo.burn_windows.0.factor",
    "slo.burn_windows.1.short",
    "slo.burn_windows.1.factor",
    "slo.burn_windows.2.long",
    "slo.burn_windows.2.short",
    "slo.burn_windows.2.factor",
    "slo.burn_windows.3.long",
    "slo.burn_windows.3.factor",
    "slo.availability.objective",
    "slo.ttft.objective",
    "slo.itl.objective",
    "alerts.serving.target_down.for",
    "alerts.serving.metrics_absent.for",
    "alerts.serving.hung_engine.for",
    "alerts.serving.hung_engine.window",
    "alerts.serving.traffic_stop.for",
    "alerts.serving.traffic_stop.baseline_window",
    "alerts.serving.traffic_stop.min_requests_per_second",
    "alerts.serving.outlier_replica.for",
    "alerts.serving.outlier_replica.factor",
    "alerts.serving.outlier_replica.min_replicas",
    "alerts.serving.outlier_replica.min_requests_per_second",
    "alerts.serving.outlier_replica.min_ttft_seconds",
    "alerts.serving.outlier_replica.min_queue_seconds",
    "alerts.serving.outlier_replica.min_itl_seconds",
    "alerts.serving.engine_unhealthy.for",
    "kv_cache.alerts.saturation.for",
    "kv_cache.alerts.saturation.usage_threshold",
    "kv_cache.alerts.saturation.preemptions_per_second",
    "kv_cache.alerts.saturation.queue_growth_per_second",
    "kv_cache.alerts.preemptions.for",
    "kv_cache.alerts.preemptions.per_second",
    "kv_cache.alerts.queue_build_up.for",
    "kv_cache.alerts.queue_build_up.p95_seconds",
    "kv_cache.alerts.prefix_collapse.for",
    "kv_cache.alerts.prefix_collapse.baseline_window",
    "kv_cache.alerts.prefix_collapse.baseline_offset",
    "kv_cache.alerts.prefix_collapse.min_baseline_ratio",
    "kv_cache.alerts.prefix_collapse.min_queries_per_second",
    "kv_cache.alerts.thrash.for",
    "kv_cache.alerts.thrash.window",
    "kv_cache.alerts.thrash.usage_stddev",
    "kv_cache.alerts.thrash.preemptions_per_second",
    "spec_decode.alerts.acceptance_collapse.for",
    "spec_decode.alerts.acceptance_collapse.baseline_window",
    "spec_decode.alerts.acceptance_collapse.baseline_offset",
    "spec_decode.alerts.acceptance_collapse.min_baseline_ratio",
    "spec_decode.alerts.acceptance_collapse.min_draft_tokens_per_second",
    "moe.window",
    "moe.min_expected_tokens_per_expert",
    "moe.alerts.imbalance.for",
    "moe.alerts.imbalance.variance_threshold",
    "moe.alerts.dead_expert.for",
    "gpu.warmup",  # printed as seconds (seconds_g6)
    "gpu.alerts.memory_leak.for",
    "gpu.alerts.memory_leak.kv_usage_rise",
    "gpu.alerts.predicted_oom.for",
    "gpu.alerts.predicted_oom.long_window",
    "gpu.alerts.predicted_oom.short_window",
    "gpu.alerts.xid.for",
    "gpu.alerts.xid.window",
    "gpu.alerts.ecc_double_bit.for",
    "gpu.alerts.ecc_double_bit.window",
    "gpu.alerts.throttling.for",
    "gpu.alerts.throttling.window",
    "gpu.alerts.throttling.thermal_ratio",
    "gpu.alerts.throttling.lowered_limit_ratio",
    "gpu.alerts.throttling.power_ratio",
    "gpu.alerts.temperature.for",
    "gpu.alerts.temperature.celsius",
    "gpu.alerts.bandwidth_kv_thrash.for",
    "gpu.alerts.bandwidth_kv_thrash.mem_copy_ratio",
    "gpu.alerts.bandwidth_kv_thrash.preemptions_per_second",
    "gpu.alerts.idle_with_queue.for",
    "gpu.alerts.idle_with_queue.util_ratio",
    "gpu.alerts.idle_with_queue.min_waiting",
    "gpu.alerts.telemetry_down.for",
    "gpu.alerts.lost.for",
    "gpu.alerts.lost.window",
    "gpu.alerts.field_missing.for",
    "exporters.alerts.down.for",
    "exporters.alerts.stale.for",
    "exporters.alerts.stale.after",  # printed as seconds (seconds_g6)
    "exporters.alerts.errors.for",
    "exporters.alerts.errors.window",
    "exporters.alerts.errors.min_errors",
]

EVAL = """
local m = (import 'mixin.libsonnet') + { _config+:: %s };
{ prometheusRules: m.prometheusRules, prometheusAlerts: m.prometheusAlerts, grafanaDashboards: m.grafanaDashboards }
"""


def evaluate(bundle_dir: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    text = _jsonnet.evaluate_snippet("test", EVAL % json.dumps(overrides or {}), jpathdir=[str(bundle_dir / mixin.DIR)])
    result: dict[str, Any] = json.loads(text)
    return result


def written_bundle(root: Path) -> dict[str, Any]:
    """The bundle as written, in the mixin's shape."""

    def groups(kind: str) -> list[Any]:
        return [g for p in sorted((root / kind).glob("*.yaml")) for g in yaml.safe_load(p.read_text())["groups"]]

    return {
        "prometheusRules": {"groups": groups("recording_rules")},
        "prometheusAlerts": {"groups": groups("alerts")},
        "grafanaDashboards": {p.name: json.loads(p.read_text()) for p in sorted((root / "dashboards").glob("*.json"))},
    }


def strings(node: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(node, dict):
        return [s for v in node.values() for s in strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in strings(v)]
    return [node] if isinstance(node, str) else []


def alert_expr(data: dict[str, Any], name: str, severity: str) -> str:
    return next(
        r["expr"]
        for g in data["prometheusAlerts"]["groups"]
        for r in g["rules"]
        if r["alert"] == name and r["labels"]["severity"] == severity
    )


def test_default_config_evaluates_to_the_bundle(bundle_dir: Path) -> None:
    assert evaluate(bundle_dir) == written_bundle(bundle_dir)


def test_overriding_a_threshold_changes_the_alert_expression(bundle_dir: Path) -> None:
    default = evaluate(bundle_dir)
    paged = evaluate(bundle_dir, {"slo.burn_windows.0.factor": 20.0})
    before = alert_expr(default, "InfersightVLLMTTFTBudgetBurn", "critical")
    after = alert_expr(paged, "InfersightVLLMTTFTBudgetBurn", "critical")
    assert "> 14.4" in before and "> 14.4" not in after
    assert "> 20.0" in after
    assert alert_expr(paged, "InfersightVLLMTTFTBudgetBurn", "warning") == alert_expr(
        default, "InfersightVLLMTTFTBudgetBurn", "warning"
    )


def _burn_windows(first_factor: float) -> list[dict[str, Any]]:
    rows = Config().model_dump(mode="json")["slo"]["burn_windows"]
    rows[0]["factor"] = first_factor
    return list(rows)


@pytest.mark.parametrize(
    ("jsonnet_overrides", "yaml_config"),
    [
        ({"slo.burn_windows.0.factor": 20.0}, {"slo": {"burn_windows": _burn_windows(20.0)}}),
        ({"slo.availability.objective": 0.995}, {"slo": {"availability": {"objective": 0.995}}}),
        (
            {"kv_cache.alerts.saturation.usage_threshold": 0.85, "alerts.serving.target_down.for": "7m"},
            {
                "kv_cache": {"alerts": {"saturation": {"usage_threshold": 0.85}}},
                "alerts": {"serving": {"target_down": {"for": "7m"}}},
            },
        ),
        # Printed as seconds where PromQL needs a number (the MoE dashboard's exporter-window ratio).
        ({"moe.window": "10m"}, {"moe": {"window": "10m"}}),
        # A window that names recording rules renames them everywhere, dashboards included.
        ({"intervals.rate": "10m"}, {"intervals": {"rate": "10m"}}),
        (
            {"selectors.vllm": ['job="my-vllm"', 'namespace="llm"']},
            {"selectors": {"vllm": ['job="my-vllm"', 'namespace="llm"']}},
        ),
        (
            {
                "selectors.dcgm": ['job="dcgm"', 'cluster=~"gpu-.*"'],
                "selectors.gpu_exporter": ['job!="other"'],
                "selectors.moe_exporter": ['job="moe"', 'rank!=""'],
            },
            {
                "selectors": {
                    "dcgm": ['job="dcgm"', 'cluster=~"gpu-.*"'],
                    "gpu_exporter": ['job!="other"'],
                    "moe_exporter": ['job="moe"', 'rank!=""'],
                }
            },
        ),
    ],
)
def test_jsonnet_override_equals_the_python_build_of_the_same_setting(
    bundle_dir: Path, jsonnet_overrides: dict[str, Any], yaml_config: dict[str, Any]
) -> None:
    assert evaluate(bundle_dir, jsonnet_overrides) == mixin.core(parse_config(yaml_config))


def test_config_exposes_traced_settings_with_their_values(bundle_dir: Path) -> None:
    settings = json.loads(
        _jsonnet.evaluate_snippet("t", "(import 'mixin.libsonnet')._config", jpathdir=[str(bundle_dir / mixin.DIR)])
    )
    values = {leaf.key: leaf.value for leaf in trace.leaves(Config())}
    assert settings and all(values[k] == (tuple(v) if isinstance(v, list) else v) for k, v in settings.items())
    assert "slo.burn_windows.0.factor" in settings
    # Bucket boundaries are printed in several forms; they stay a Python-side setting.
    assert "slo.ttft.threshold_seconds" not in settings


def test_a_setting_that_reaches_the_output_derived_is_not_exposed() -> None:
    """Tracing keeps a value printed verbatim and drops one the generator transforms."""

    def build(name: str, cfg: Config) -> Any:
        factor = cfg.slo.burn_windows[0].factor
        return [
            {"expr": f"x > {factor}", "halved": f"y > {factor / 2}", "for": str(cfg.alerts.serving.target_down.for_)}
        ]

    traced = trace.trace(Config(), ["builder"], build)
    keys = {leaf.key for leaf in traced.settings}
    assert keys == {"alerts.serving.target_down.for"}
    assert trace.render(traced.templates["builder"], {"alerts.serving.target_down.for": "9m"}) == [
        {"expr": "x > 14.4", "halved": "y > 7.2", "for": "9m"}
    ]


def test_a_literal_number_is_not_taken_for_a_duration_printed_in_seconds() -> None:
    """A long duration's sentinel (6h plus a millisecond) prints in seconds as the real value
    does (21600 at six digits): that form cannot tell them apart, so a literal 21600 beside a
    traced setting stays a literal, and a duration printed in seconds is still traced."""

    def build(name: str, cfg: Config) -> Any:
        objective = cfg.slo.availability.objective
        return {"expr": f"a < {objective} and b < 21600", "window": f"c > {cfg.moe.window.total_seconds:.6g}"}

    traced = trace.trace(Config(), ["builder"], build)
    assert {leaf.key for leaf in traced.settings} == {"slo.availability.objective", "moe.window"}
    assert trace.render(traced.templates["builder"], {"slo.availability.objective": 0.9, "moe.window": "7m"}) == {
        "expr": "a < 0.9 and b < 21600",
        "window": "c > 420",
    }


def test_percent_and_complement_forms_are_traced() -> None:
    def build(name: str, cfg: Config) -> Any:
        objective = cfg.slo.availability.objective
        return {"title": f"objective {objective * 100:.6g}%", "threshold": 1 - objective, "expr": f"a < {objective}"}

    traced = trace.trace(Config(), ["builder"], build)
    assert [leaf.key for leaf in traced.settings] == ["slo.availability.objective"]
    assert trace.render(traced.templates["builder"], {"slo.availability.objective": 0.9}) == build(
        "builder", parse_config({"slo": {"availability": {"objective": 0.9}}})
    )


def test_mixin_files_are_the_bundle_files(built: dict[str, str]) -> None:
    names = {rel for rel in built if rel.startswith(mixin.DIR + "/")}
    assert names == {
        f"{mixin.DIR}/{n}"
        for n in (
            "mixin.libsonnet",
            "config.libsonnet",
            "rules.libsonnet",
            "alerts.libsonnet",
            "dashboards.libsonnet",
            "lib/format.libsonnet",
            "jsonnetfile.json",
        )
    }
    assert (
        bundle_files.render(bundle.build(Config()), with_mixin=True)[f"{mixin.DIR}/config.libsonnet"]
        == built[f"{mixin.DIR}/config.libsonnet"]
    )


def test_a_builder_that_fails_on_some_values_still_exposes_the_others() -> None:
    def build(name: str, cfg: Config) -> Any:
        factor = cfg.slo.burn_windows[0].factor
        if factor != 14.4:
            raise ValueError("this pack only knows the default factor")
        return {"for": str(cfg.alerts.serving.target_down.for_), "factor": f"x > {factor}"}

    traced = trace.trace(Config(), ["builder"], build)
    assert [leaf.key for leaf in traced.settings] == ["alerts.serving.target_down.for"]


def test_a_builder_bug_under_a_sentinel_makes_the_trace_raise() -> None:
    """A builder that crashes (TypeError here) is a bug to report, not a setting to hide."""

    def build(name: str, cfg: Config) -> Any:
        factor = cfg.slo.burn_windows[0].factor
        if factor != 14.4:
            raise TypeError("a bug that only shows for other values")
        return {"factor": f"x > {factor}"}

    with pytest.raises(trace.TraceError) as raised:
        trace.trace(Config(), ["buggy-builder"], build)
    message = str(raised.value)
    assert "buggy-builder" in message and "slo.burn_windows.0.factor" in message and "TypeError" in message


def test_only_a_build_that_writes_the_mixin_runs_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test stacks and promtool cases render without the deploy stage, or without the mixin: no trace."""
    calls: list[str] = []

    def counting_trace(*args: Any) -> trace.Traced:
        calls.append("trace")
        return trace.Traced({name: [] for name in mixin.builder_names()}, ())

    monkeypatch.setattr(trace, "trace", counting_trace)
    built = bundle.build(Config())
    bundle_files.render(built, with_deploy=False)
    bundle_files.render(built)
    deploy.artefacts(built, with_mixin=False)
    assert calls == []
    deploy.artefacts(built, with_mixin=True)
    bundle_files.render(built, with_mixin=True)
    assert calls == ["trace", "trace"]


def test_the_default_mixin_exposes_exactly_these_settings(bundle_dir: Path) -> None:
    settings = json.loads(
        _jsonnet.evaluate_snippet("t", "(import 'mixin.libsonnet')._config", jpathdir=[str(bundle_dir / mixin.DIR)])
    )
    assert sorted(settings) == sorted(EXPOSED_KEYS)
    assert len(set(EXPOSED_KEYS)) == len(EXPOSED_KEYS)


def test_overriding_a_selector_rewrites_every_expression_that_prints_it(bundle_dir: Path) -> None:
    default = strings(evaluate(bundle_dir))
    mine = strings(evaluate(bundle_dir, {"selectors.vllm": ['job="my-vllm"', 'namespace="llm"']}))
    assert any('{job="vllm"' in s for s in default)
    assert not any('job="vllm"' in s for s in mine)
    assert any('{job="my-vllm", namespace="llm"' in s for s in mine)


def test_a_selector_printed_whole_is_traced_and_renders_like_the_python_build() -> None:
    def build(name: str, cfg: Config) -> Any:
        return {"expr": "up" + promql.braces([*cfg.selectors.vllm, 'model_name="m"']) + " == 0"}

    traced = trace.trace(Config(), ["builder"], build)
    assert [leaf.key for leaf in traced.settings] == ["selectors.vllm"]
    mine = ['job="a"', 'namespace=~"b-.*"']
    assert trace.render(traced.templates["builder"], {"selectors.vllm": mine}) == build(
        "builder", parse_config({"selectors": {"vllm": mine}})
    )


@pytest.mark.parametrize(
    "printed",
    [
        lambda sel: f"up{{{sel[0]}}}",  # only the first matcher: jsonnet would print them all
        lambda sel: "up{" + ",".join(sel) + "}",  # joined another way than promql.braces
        lambda sel: "up{" + ", ".join(sorted(sel)) + "}",  # reordered
        lambda sel: json.dumps("up{" + ", ".join(sel) + "}"),  # escaped inside another string
    ],
)
def test_a_selector_printed_in_another_form_is_not_exposed(printed: Any) -> None:
    def build(name: str, cfg: Config) -> Any:
        return {"expr": printed(cfg.selectors.vllm), "for": str(cfg.alerts.serving.target_down.for_)}

    traced = trace.trace(Config(), ["builder"], build)
    assert [leaf.key for leaf in traced.settings] == ["alerts.serving.target_down.for"]


def test_a_for_moved_across_ten_minutes_in_jsonnet_is_refused_with_its_key(bundle_dir: Path) -> None:
    """A patient alert (for: of 10 m or more) and its recordings may evaluate every minute
    (infersight.evaluation_intervals); under 10 m it would need them every 30 s. A prompt alert
    brought to 10 m or more would move to the 1 m group in the build. The mixin cannot regroup, so
    either override fails and names the key; one that stays on its side is the build."""
    with pytest.raises(RuntimeError, match=r"infersight\.yaml and rebuild: alerts\.serving\.outlier_replica\.for"):
        evaluate(bundle_dir, {"alerts.serving.outlier_replica.for": "5m"})  # 15m in the build
    with pytest.raises(RuntimeError, match=r"infersight\.yaml and rebuild: alerts\.serving\.target_down\.for"):
        evaluate(bundle_dir, {"alerts.serving.target_down.for": "10m"})  # 5m in the build
    stays = {"alerts.serving.outlier_replica.for": "20m", "alerts.serving.target_down.for": "9m"}
    expected = {"alerts": {"serving": {"outlier_replica": {"for": "20m"}, "target_down": {"for": "9m"}}}}
    assert evaluate(bundle_dir, stays) == mixin.core(parse_config(expected))


def test_the_mixin_reads_prometheus_durations_as_seconds(bundle_dir: Path) -> None:
    snippet = "local f = import 'lib/format.libsonnet'; [f.seconds(d) for d in %s]"
    durations = ["1h30m", "90s", "10m", "1d", "500ms", "1w2d"]
    text = _jsonnet.evaluate_snippet("t", snippet % json.dumps(durations), jpathdir=[str(bundle_dir / mixin.DIR)])
    assert json.loads(text) == [5400, 90, 600, 86400, 0.5, 777600]
    with pytest.raises(RuntimeError, match="not a duration"):
        _jsonnet.evaluate_snippet("t", snippet % '["5x"]', jpathdir=[str(bundle_dir / mixin.DIR)])


def test_no_guard_where_no_recording_moves() -> None:
    """With both intervals equal nothing is split by for:, so any override is the build; otherwise
    each alert's for: key is guarded on the side it was built on."""
    cfg = parse_config({"intervals": {"dashboard_evaluation": "30s"}})
    assert "guard" not in mixin.files(cfg, "header")[f"{mixin.DIR}/mixin.libsonnet"]
    guarded = mixin.files(Config(), "header")[f"{mixin.DIR}/mixin.libsonnet"]
    patient, prompt = (guarded.split(f"local {side} = ")[1].split(";")[0] for side in ("patient", "prompt"))
    assert '"alerts.serving.outlier_replica.for"' in patient and "target_down" in prompt
    # Reads raw series only, but is itself evaluated every minute with the other patient alerts.
    assert '"gpu.alerts.temperature.for"' in patient and '"alerts.serving.metrics_absent.for"' in patient
