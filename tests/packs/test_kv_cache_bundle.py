"""The KV-cache pack as built: files, dashboard, time scaling and config checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files, catalog
from infersight.config import Config, ConfigError, parse_config
from infersight.lint import dashboard_queries, metric_names, names_read_over_a_range, substitute
from infersight.stack.observed import validation_profile
from tests.grafana_schema import schema_problems

FILES = bundle_files.render(bundle.build(Config()))
BOARD = json.loads(FILES["dashboards/vllm-kv-cache.json"])
ALERTS = ("recording_rules/kv_cache.yaml", "alerts/kv_cache.yaml")


def _rules(files: dict[str, str], rel: str) -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(files[rel])["groups"] for r in g["rules"]]


def _recorded(cfg: Config) -> frozenset[str]:
    return bundle.build(cfg).recorded_names()


def test_the_pack_is_in_the_bundle() -> None:
    assert {*ALERTS, "dashboards/vllm-kv-cache.json"} <= set(FILES)
    names = {r["alert"] for r in _rules(FILES, "alerts/kv_cache.yaml")}
    assert names == {
        "InfersightVLLMKVCacheSaturated",
        "InfersightVLLMPreemptionsSustained",
        "InfersightVLLMQueueBuildUp",
        "InfersightVLLMPrefixCacheHitCollapse",
        "InfersightVLLMKVCacheThrash",
    }
    assert {r["labels"]["component"] for r in _rules(FILES, "alerts/kv_cache.yaml")} == {"kv_cache"}


def test_recorded_series_are_unique_across_the_bundle() -> None:
    # Two rules writing one series would clash; the pack reuses serving's rules instead.
    series = [
        (r["record"], tuple(sorted((r.get("labels") or {}).items())))
        for rel in FILES
        if rel.startswith("recording_rules/")
        for r in _rules(FILES, rel)
    ]
    assert len(series) == len(set(series))


def test_dashboard_validates_and_reads_no_raw_series_over_a_range() -> None:
    # Even the per-engine views: a range function over raw per-engine series read every sample of
    # its window at every step, and timed out over 6 h at 1,000 engines (docs/scale.md). A raw
    # gauge read at the instant costs what a recording of it would, and adds no series.
    assert schema_problems(BOARD) == []
    recorded = _recorded(Config())
    queries = list(dashboard_queries(BOARD))
    assert len(queries) > 20
    ranged = {
        where: names - recorded
        for where, expr in queries
        if (names := names_read_over_a_range(substitute(expr))) - recorded
    }
    assert ranged == {}
    instant_raw = {n for _, expr in queries for n in metric_names(substitute(expr)) - recorded}
    assert instant_raw == {
        "vllm:cache_config_info",
        "vllm:kv_offload_cpu_cache_usage_perc",
        "vllm:kv_offload_cpu_cache_write_usage_perc",
        "vllm:kv_offload_cpu_cache_read_usage_perc",
        "vllm:simple_kv_offload_used_blocks",
        "vllm:simple_kv_offload_pending_store_blocks",
    }
    assert all(catalog.CATALOG[n].type is catalog.MetricType.GAUGE for n in instant_raw)
    assert [v["name"] for v in BOARD["templating"]["list"]] == ["datasource", "job", "model_name", "instance", "engine"]


def test_prefix_hit_ratio_is_a_ratio_of_rates() -> None:
    exprs = {r["record"]: r["expr"] for r in _rules(FILES, "recording_rules/kv_cache.yaml")}
    baseline = exprs["instance:vllm_prefix_cache_hits:ratio_rate1h"]
    assert "rate(vllm:prefix_cache_hits_total" in baseline and "rate(vllm:prefix_cache_queries_total" in baseline
    ratio = exprs["instance:vllm_prefix_cache_hits:ratio_rate5m"]
    assert (
        ratio.count("rate(vllm:prefix_cache_hits_total") == 1 and "instance:vllm_prefix_cache_queries:rate5m" in ratio
    )
    assert exprs["instance:vllm_prefix_cache_queries:rate5m"].count("rate(") == 2  # current name or the 0.10 alias


def test_time_scaled_profile_scales_windows_and_for_but_keeps_names() -> None:
    scaled_cfg = validation_profile(Config(), 60)
    scaled = bundle_files.render(bundle.build(scaled_cfg))
    assert _recorded(scaled_cfg) == _recorded(Config())
    alerts = {r["alert"]: r for r in _rules(scaled, "alerts/kv_cache.yaml")}
    assert alerts["InfersightVLLMKVCacheSaturated"]["for"] == "5s"
    assert "offset 1m" in alerts["InfersightVLLMPrefixCacheHitCollapse"]["expr"]
    exprs = {r["record"]: r["expr"] for r in _rules(scaled, "recording_rules/kv_cache.yaml")}
    assert 'avg_over_time(vllm:kv_cache_usage_perc{job="vllm"}[5s])' in alerts["InfersightVLLMKVCacheSaturated"]["expr"]
    assert (
        'stddev_over_time(vllm:kv_cache_usage_perc{job="vllm"}[10s])' in exprs["engine:vllm_kv_cache_usage:stddev10m"]
    )
    assert "engine:vllm_kv_cache_usage:stddev10m > " in alerts["InfersightVLLMKVCacheThrash"]["expr"]
    assert 'deriv(vllm:num_requests_waiting{job="vllm"}[5s])' in exprs["engine:vllm_num_requests_waiting:deriv5m"]
    assert "[1m]" in exprs["instance:vllm_prefix_cache_hits:ratio_rate1h"]


def test_a_disabled_alert_is_not_built() -> None:
    cfg = parse_config({"kv_cache": {"alerts": {"thrash": {"enabled": False}}}})
    names = {r["alert"] for r in _rules(bundle_files.render(bundle.build(cfg)), "alerts/kv_cache.yaml")}
    assert "InfersightVLLMKVCacheThrash" not in names and "InfersightVLLMKVCacheSaturated" in names


def test_thresholds_come_from_the_config() -> None:
    cfg = parse_config({"kv_cache": {"alerts": {"saturation": {"usage_threshold": 0.8, "for": "2m"}}}})
    alert = next(
        r for r in _rules(bundle_files.render(bundle.build(cfg)), "alerts/kv_cache.yaml") if "Saturated" in r["alert"]
    )
    assert alert["expr"].startswith(
        "max by (job, instance, model_name, engine) ((avg_over_time(vllm:kv_cache_usage_perc"
    )
    assert ") > 0.8\nand on (job, instance, model_name, engine)\n" in alert["expr"]
    assert alert["for"] == "2m"
    assert "(threshold 80%)" in alert["annotations"]["description"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"kv_cache": {"alerts": {"saturation": {"usage_threshold": 1.5}}}}, "kv_cache.alerts.saturation"),
        ({"kv_cache": {"alerts": {"thrash": {"window": "30s"}}}}, "kv_cache.alerts.thrash.window"),
        ({"kv_cache": {"alerts": {"prefix_collapse": {"drop_fraction": 1}}}}, "kv_cache.alerts.prefix_collapse"),
        ({"kv_cache": {"fleet_quantiles": [0.5, 2]}}, "kv_cache.fleet_quantiles"),
        ({"kv_cache": {"alerts": {"preemption": {}}}}, "kv_cache.alerts.preemption"),
    ],
)
def test_bad_config_names_the_field(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert any(p.startswith(path) for p, _ in err.value.problems), err.value.problems
