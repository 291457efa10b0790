"""The MoE pack as built: files, heatmap dashboard, the absent alert's model list and config checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config, ConfigError, parse_config
from infersight.lint import dashboard_queries, metric_names, substitute
from tests.grafana_schema import schema_problems

FILES = bundle_files.render(bundle.build(Config()))
BOARD = json.loads(FILES["dashboards/vllm-moe.json"])


def _alerts(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in yaml.safe_load(files["alerts/moe.yaml"])["groups"] for r in g["rules"]}


def test_the_pack_is_in_the_bundle() -> None:
    assert {"recording_rules/moe.yaml", "alerts/moe.yaml", "dashboards/vllm-moe.json"} <= set(FILES)
    # No MoE model configured: nothing can be "absent", so a dense-only fleet stays quiet.
    assert set(_alerts(FILES)) == {"InfersightMoEExpertImbalance", "InfersightMoEDeadExpert"}


def test_dashboard_has_a_valid_heatmap_and_reads_only_recording_rules() -> None:
    assert schema_problems(BOARD) == []
    heatmaps = [p for p in BOARD["panels"] if p["type"] == "heatmap"]
    assert len(heatmaps) == 1 and heatmaps[0]["options"]["calculate"] is False
    assert heatmaps[0]["fieldConfig"]["defaults"]["unit"] == "percentunit"
    recorded = bundle.build(Config()).recorded_names()
    for where, expr in dashboard_queries(BOARD):
        assert metric_names(substitute(expr)) <= recorded, where
    assert [v["name"] for v in BOARD["templating"]["list"]] == ["datasource", "job", "model_name", "layer"]
    top = next(p for p in BOARD["panels"] if p["title"].startswith("Top "))
    assert top["targets"][0]["expr"].startswith("topk(10, ")


def test_absent_alert_watches_exactly_the_configured_models() -> None:
    cfg = parse_config({"moe": {"models": ["org/Mixtral-8x7B.v0.1+x", "tiny-moe"]}})
    alert = _alerts(bundle_files.render(bundle.build(cfg)))[
        "InfersightMoEExpertLoadAbsent"
    ]  # build() lints: the regex parses
    assert 'model_name=~"org/Mixtral-8x7B\\\\.v0\\\\.1\\\\+x|tiny-moe"' in alert["expr"]
    assert alert["for"] == "10m" and alert["labels"] == {"component": "moe", "severity": "warning"}


def test_thresholds_and_window_come_from_the_config() -> None:
    cfg = parse_config({"moe": {"window": "10m", "alerts": {"imbalance": {"variance_threshold": 0.01}}}})
    files = bundle_files.render(bundle.build(cfg))
    imbalance = _alerts(files)["InfersightMoEExpertImbalance"]
    assert imbalance["expr"].startswith("layer:infersight_moe_expert_load_share:variance_rate10m > 0.01\n")
    assert "* 600 >= 100" in imbalance["expr"]  # expected tokens per expert over the 10m window
    assert "[10m]" in files["recording_rules/moe.yaml"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"moe": {"models": ["a", "a"]}}, "moe.models"),
        ({"moe": {"models": [""]}}, "moe.models"),
        ({"moe": {"window": "30s"}}, "moe.window"),
        ({"moe": {"top_experts": 0}}, "moe.top_experts"),
        ({"moe": {"alerts": {"imbalance": {"variance_threshold": 0}}}}, "moe.alerts.imbalance.variance_threshold"),
    ],
)
def test_bad_config_names_the_field(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert any(p.startswith(path) for p, _ in err.value.problems), err.value.problems
