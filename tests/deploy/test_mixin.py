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

from infersight import bundle, bundle_files
from infersight.config import Config, parse_config
from infersight.deploy import mixin, trace

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
        # A window that names recording rules renames them everywhere, dashboards included.
        ({"intervals.rate": "10m"}, {"intervals": {"rate": "10m"}}),
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
    assert settings and all(values[k] == v for k, v in settings.items())
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

    traced = trace.trace(Config(), ["unit"], build)
    keys = {leaf.key for leaf in traced.settings}
    assert keys == {"alerts.serving.target_down.for"}
    assert trace.render(traced.templates["unit"], {"alerts.serving.target_down.for": "9m"}) == [
        {"expr": "x > 14.4", "halved": "y > 7.2", "for": "9m"}
    ]


def test_percent_and_complement_forms_are_traced() -> None:
    def build(name: str, cfg: Config) -> Any:
        objective = cfg.slo.availability.objective
        return {"title": f"objective {objective * 100:.6g}%", "threshold": 1 - objective, "expr": f"a < {objective}"}

    traced = trace.trace(Config(), ["unit"], build)
    assert [leaf.key for leaf in traced.settings] == ["slo.availability.objective"]
    assert trace.render(traced.templates["unit"], {"slo.availability.objective": 0.9}) == build(
        "unit", parse_config({"slo": {"availability": {"objective": 0.9}}})
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
        bundle_files.render(bundle.build(Config()))[f"{mixin.DIR}/config.libsonnet"]
        == built[f"{mixin.DIR}/config.libsonnet"]
    )


def test_a_unit_that_fails_on_some_values_still_exposes_the_others() -> None:
    def build(name: str, cfg: Config) -> Any:
        factor = cfg.slo.burn_windows[0].factor
        if factor != 14.4:
            raise ValueError("this pack only knows the default factor")
        return {"for": str(cfg.alerts.serving.target_down.for_), "factor": f"x > {factor}"}

    traced = trace.trace(Config(), ["unit"], build)
    assert [leaf.key for leaf in traced.settings] == ["alerts.serving.target_down.for"]
