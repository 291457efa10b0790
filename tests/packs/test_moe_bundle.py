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


def test_dashboard_has_a_valid_heatmap_and_reads_only_recordings_and_the_expert_counters() -> None:
    assert schema_problems(BOARD) == []
    heatmaps = [p for p in BOARD["panels"] if p["type"] == "heatmap"]
    assert len(heatmaps) == 1 and heatmaps[0]["options"]["calculate"] is False
    assert heatmaps[0]["fieldConfig"]["defaults"]["unit"] == "percentunit"
    recorded = bundle.build(Config()).recorded_names()
    per_expert = {"Load share, layer x expert", "Top 10 hot experts", "Tokens/s per expert"}
    seen = set()
    for where, expr in dashboard_queries(BOARD):
        plain = substitute(expr)
        title = where.split("'")[1] if "'" in where else where
        if any(title.startswith(t) or t in where for t in per_expert):
            # Read when opened, over the panel's rate interval; the per-layer panels read recordings.
            assert metric_names(plain) == {"infersight_moe_expert_tokens_total"}, where
            assert "[$__rate_interval]" in expr, where
            seen.add(where)
        elif "Most uneven replicas" in where:
            # Each replica's figure, read when opened (the recording keeps only the worst of them);
            # its values are checked in tests/packs/test_moe_promtool.py.
            assert metric_names(plain) == {
                "infersight_moe_layer_share_variance",
                "infersight_moe_layer_window_tokens",
                "infersight_moe_layer_top_k",
                "infersight_moe_layer_experts",
            }, where
            seen.add(where)
        elif "Exporter window" in where:
            assert metric_names(plain) == {"infersight_moe_exporter_window_seconds"}, where
            seen.add(where)
        else:
            assert metric_names(plain) <= recorded, where
    assert len(seen) == 6  # three per-expert panels, two exporter-window queries, one most-uneven
    assert [v["name"] for v in BOARD["templating"]["list"]] == ["datasource", "job", "model_name", "layer"]
    top = next(p for p in BOARD["panels"] if p["title"].startswith("Top "))
    assert top["targets"][0]["expr"].startswith("topk(10, ")


def _colour(steps: list[dict[str, Any]], value: float) -> str:
    """The colour Grafana gives ``value``: the last step at or below it."""
    return [s["color"] for s in steps if s["value"] is None or value >= s["value"]][-1]


def test_exporter_window_panel_turns_orange_off_the_bundles_window() -> None:
    """An exporter left at another INFERSIGHT_MOE_EXPORTER_WINDOW is shown, not silently judged:
    the panel divides the window each exporter was started with by the (scaled) moe.window."""
    for cfg, window_s in ((Config(), "300"), (parse_config({"moe": {"window": "10m"}, "time_scale": 60}), "10")):
        board = json.loads(bundle_files.render(bundle.build(cfg))["dashboards/vllm-moe.json"])
        panel = next(p for p in board["panels"] if p["title"] == "Exporter window")
        for target in panel["targets"]:
            assert metric_names(target["expr"]) == {"infersight_moe_exporter_window_seconds"}
            assert target["expr"].endswith(f"\n/ {window_s}")
        steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert _colour(steps, 1.0) == "green"
        for ratio in (0.5, 0.99, 1.01, 2.0):  # a window shorter or longer by a few seconds in 300
            assert _colour(steps, ratio) == "orange", ratio


def test_alerts_read_the_exporters_per_layer_gauges_never_the_expert_counters() -> None:
    files = bundle_files.render(bundle.build(parse_config({"moe": {"models": ["tiny-moe"]}})))
    for name in ("recording_rules/moe.yaml", "alerts/moe.yaml"):
        for group in yaml.safe_load(files[name])["groups"]:
            for rule in group["rules"]:
                assert "infersight_moe_expert_tokens_total" not in rule["expr"], (name, rule)


def test_absent_alert_watches_exactly_the_configured_models() -> None:
    cfg = parse_config({"moe": {"models": ["org/Mixtral-8x7B.v0.1+x", "tiny-moe"]}})
    alert = _alerts(bundle_files.render(bundle.build(cfg)))[
        "InfersightMoEExpertLoadAbsent"
    ]  # build() lints: the regex parses
    assert 'model_name=~"org/Mixtral-8x7B\\\\.v0\\\\.1\\\\+x|tiny-moe"' in alert["expr"]
    assert alert["for"] == "10m" and alert["labels"] == {"component": "moe", "severity": "warning"}


def test_thresholds_and_window_come_from_the_config() -> None:
    cfg = parse_config(
        {
            "moe": {
                "models": ["tiny-moe"],
                "window": "10m",
                "min_expected_tokens_per_expert": 250,
                "alerts": {"imbalance": {"variance_threshold": 0.01}},
            }
        }
    )
    files = bundle_files.render(bundle.build(cfg))
    alerts = _alerts(files)
    imbalance = alerts["InfersightMoEExpertImbalance"]["expr"]
    assert imbalance == "max_over_time(layer:infersight_moe_layer_share_variance:replica_max[3m]) > 0.01"
    assert "[10m]" in alerts["InfersightMoEExpertLoadAbsent"]["expr"]
    rules = files["recording_rules/moe.yaml"]
    # every judged figure: variance (per replica and per job), max/mean (its ranks and its weights;
    # balancedness reads it), dead experts
    assert rules.count(">= 250") == 5


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"moe": {"models": ["a", "a"]}}, "moe.models"),
        ({"moe": {"models": [""]}}, "moe.models"),
        ({"moe": {"window": "30s"}}, "moe.window"),
        ({"moe": {"top_experts": 0}}, "moe.top_experts"),
        ({"moe": {"replica_labels": ["pod", "pod"]}}, "moe.replica_labels"),
        ({"moe": {"replica_labels": ["model_name"]}}, "moe.replica_labels"),
        ({"moe": {"replica_labels": ["no-dash"]}}, "moe.replica_labels"),
        ({"moe": {"alerts": {"imbalance": {"variance_threshold": 0}}}}, "moe.alerts.imbalance.variance_threshold"),
    ],
)
def test_bad_config_names_the_field(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert any(p.startswith(path) for p, _ in err.value.problems), err.value.problems
