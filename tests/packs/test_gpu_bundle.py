"""The gpu and exporter_health packs as built: files, rule conventions, dashboard, config checks and
time scaling."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files, catalog
from infersight.config import Config, ConfigError, parse_config
from infersight.config.gpu import NEEDED_DCGM_FIELDS
from infersight.lint import metric_names, substitute
from infersight.packs import by_name
from infersight.stack.observed import validation_profile
from tests.grafana_schema import schema_problems

FILES = bundle_files.render(bundle.build(Config()))
BOARD = json.loads(FILES["dashboards/gpu.json"])
OWN = ("recording_rules/gpu.yaml", "alerts/gpu.yaml", "alerts/exporter_health.yaml")
GPU_ALERTS = {
    "InfersightGPUMemoryLeak",
    "InfersightGPUPredictedOOM",
    "InfersightGPUXidError",
    "InfersightGPUEccDoubleBitError",
    "InfersightGPUThrottling",
    "InfersightGPUTemperatureHigh",
    "InfersightGPUBandwidthKVThrash",
    "InfersightGPUIdleWithQueuedRequests",
    "InfersightGPUTelemetryDown",
    "InfersightGPULost",
    "InfersightGPUFieldMissing",
}
EXPORTER_ALERTS = {"InfersightExporterDown", "InfersightExporterCollectionStale", "InfersightExporterErrors"}


def _rules(files: dict[str, str], rel: str) -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(files[rel])["groups"] for r in g["rules"]]


def test_the_packs_are_in_the_bundle() -> None:
    assert {*OWN, "dashboards/gpu.json"} <= set(FILES)
    gpu = _rules(FILES, "alerts/gpu.yaml")
    exporters = _rules(FILES, "alerts/exporter_health.yaml")
    assert {r["alert"] for r in gpu} == GPU_ALERTS
    assert {r["alert"] for r in exporters} == EXPORTER_ALERTS
    assert {r["labels"]["component"] for r in gpu} == {"gpu"}
    assert {r["labels"]["component"] for r in exporters} == {"exporter"}


def test_every_alert_has_a_runbook_section() -> None:
    runbook = (Path(__file__).resolve().parents[2] / "docs" / "runbook.md").read_text()
    for alert in GPU_ALERTS | EXPORTER_ALERTS:
        assert f"\n### {alert}\n" in runbook, alert


def test_rule_files_pass_promtool_check(tmp_path: Path) -> None:
    bundle_files.write(FILES, tmp_path)
    result = subprocess.run(
        ["promtool", "check", "rules", *(str(tmp_path / rel) for rel in OWN)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_memory_is_read_in_bytes_from_mib() -> None:
    rules = {r["record"]: r["expr"] for r in _rules(FILES, "recording_rules/gpu.yaml")}
    assert 'DCGM_FI_DEV_FB_USED{job="dcgm-exporter"} * 1048576' in rules["node:dcgm_fb_used:sum_bytes"]
    assert (
        'deriv(DCGM_FI_DEV_FB_USED{job="dcgm-exporter"}[30m]) * 1048576'
        in rules["node:dcgm_fb_used_bytes:max_deriv30m"]
    )
    leak = next(r for r in _rules(FILES, "alerts/gpu.yaml") if r["alert"] == "InfersightGPUMemoryLeak")
    assert 'deriv(DCGM_FI_DEV_FB_USED{job="dcgm-exporter"}[30m]) * 1048576' in leak["expr"]


def test_nothing_is_recorded_per_gpu() -> None:
    """Fleet scale: a per-GPU copy of every field would add as many series as the GPUs expose
    (docs/scale.md). Recordings are per node (Hostname) or per vLLM workload; the per-GPU
    recordings have a series only while a GPU is throttled (the mask filtered before any arithmetic,
    and each reason's result a filter) or while its uncorrectable-error count rises (each clause a
    filter), and the throttle evaluation counter is one series."""
    rules = {r["record"]: r["expr"] for r in _rules(FILES, "recording_rules/gpu.yaml")}
    levels = {name.split(":")[0] for name in rules}
    assert levels == {"node", "workload", "instance", "gpu", "infersight"}
    assert [name for name in rules if name.split(":")[0] in ("gpu", "infersight")] == [
        "gpu:dcgm_clock_throttle:active",
        "infersight:dcgm_clock_throttle_evaluations:count",
        "gpu:dcgm_uncorrectable_errors:increase5m",
    ]
    errors = rules["gpu:dcgm_uncorrectable_errors:increase5m"].strip("()\n").split("\nor\n")
    assert len(errors) == 4 and all(clause.endswith(" > 0") for clause in errors)
    throttled = rules["gpu:dcgm_clock_throttle:active"]
    mask = 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{job="dcgm-exporter"}) >= 4)'
    assert throttled.count(mask) == throttled.count("DCGM_FI_DEV_CLOCKS_EVENT_REASONS") == 4
    assert throttled.count(" > 0") == 4 and "== 0" not in throttled and " bool " not in throttled
    assert rules["infersight:dcgm_clock_throttle_evaluations:count"] == "vector(1)"
    for r in _rules(FILES, "recording_rules/gpu.yaml"):
        if r["record"].startswith("node:"):
            # aggregated by every host label before Hostname is set on the node's one series
            assert " by (job, Hostname, hostname" in r["expr"], r["record"]


def test_renamed_dcgm_fields_are_read_under_both_names() -> None:
    text = "\n".join(r["expr"] for r in _rules(FILES, "recording_rules/gpu.yaml") + _rules(FILES, "alerts/gpu.yaml"))
    for old, new in [
        ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"),
        ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS"),
        ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"),
        ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"),
        ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
    ]:
        assert new in catalog.get(old).all_names
        assert f'{old}{{job="dcgm-exporter"}} or {new}{{job="dcgm-exporter"}}' in text


def test_dashboard_validates_and_has_the_promised_panels() -> None:
    assert schema_problems(BOARD) == []
    assert BOARD["uid"] == "infersight-gpu"
    variables = [v["name"] for v in BOARD["templating"]["list"]]
    assert variables == ["datasource", "job", "Hostname"]
    chained = {v["name"]: v for v in BOARD["templating"]["list"] if v["type"] == "query"}
    assert chained["Hostname"]["definition"] == 'label_values(node:dcgm_gpus:count{job=~"$job"}, Hostname)'
    # One node at a time: no All, no multi (a per-GPU panel across a fleet is neither readable nor cheap).
    assert not chained["Hostname"]["includeAll"] and not chained["Hostname"]["multi"]
    assert chained["job"]["includeAll"] and chained["job"]["multi"]
    titles = {p["title"] for p in BOARD["panels"]}
    for title in (
        "Utilization per node",
        "Steepest framebuffer growth per node",
        "Soonest OOM per node",
        "GPU utilization",
        "Memory-copy utilization",
        "Framebuffer used and total",
        "Used framebuffer trend",
        "Time to OOM",
        "Per-process GPU memory",
        "Power draw",
        "Temperature",
        "Clocks",
        "XID errors (last code)",
        "ECC errors and row remaps",
    ):
        assert title in titles
    process = next(p for p in BOARD["panels"] if p["title"] == "Per-process GPU memory")
    assert "infersight_gpu_process_memory_bytes" in process["targets"][0]["expr"]


def test_fleet_rows_read_node_recordings_and_the_drill_down_one_node() -> None:
    """Panels in the fleet rows read only recordings; every raw dcgm-exporter selector (the
    drill-down) is narrowed to the selected node in the selector itself, under each host label."""
    recorded = bundle.build(Config()).recorded_names()
    rows = _panels_by_row(BOARD)
    for row in ("Fleet", "Nodes"):
        for panel in rows[row]:
            for target in panel["targets"]:
                names = metric_names(substitute(target["expr"]))
                assert names <= recorded, (panel["title"], names - recorded)
    for row, panels in rows.items():
        if not row.startswith("Node $Hostname"):
            continue
        for panel in panels:
            for target in panel["targets"]:
                expr = target["expr"]
                for selector in re.findall(r"DCGM_FI_\w+\{[^}]*\}", expr):
                    assert re.search(r'[Hh]ostname=~"\$Hostname"', selector), (panel["title"], selector)
                assert 'hostname=~"$Hostname"' in expr or "DCGM_FI" not in expr, panel["title"]


def _panels_by_row(board: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    current = ""
    for panel in board["panels"]:
        if panel["type"] == "row":
            current = panel["title"]
            rows[current] = []
        else:
            rows[current].append(panel)
    return rows


def test_build_is_deterministic_and_scales_with_time() -> None:
    assert bundle_files.render(bundle.build(Config())) == FILES
    scaled = bundle_files.render(bundle.build(validation_profile()))
    leak = next(r for r in _rules(scaled, "alerts/gpu.yaml") if r["alert"] == "InfersightGPUMemoryLeak")
    assert leak["for"] == "45s"
    assert "offset 30s" in leak["expr"]
    assert 'deriv(DCGM_FI_DEV_FB_USED{job="dcgm-exporter"}[30s])' in leak["expr"]
    assert "* 30 / 1048576 > 225" in leak["expr"]
    recorded = {r["record"] for r in _rules(scaled, "recording_rules/gpu.yaml")}
    assert "node:dcgm_fb_used_bytes:max_deriv30m" in recorded  # the name keeps the nominal window


def test_disabled_alerts_are_left_out() -> None:
    cfg = parse_config(
        {"gpu": {"alerts": {"xid": {"enabled": False}}}, "exporters": {"alerts": {"down": {"enabled": False}}}}
    )
    files = bundle_files.render(bundle.build(cfg))
    assert "InfersightGPUXidError" not in files["alerts/gpu.yaml"]
    assert "InfersightExporterDown" not in files["alerts/exporter_health.yaml"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"gpu": {"alerts": {"memory_leak": {"for": "10m"}}}}, "gpu.alerts.memory_leak"),
        ({"gpu": {"alerts": {"predicted_oom": {"short_window": "2h"}}}}, "gpu.alerts.predicted_oom"),
        ({"gpu": {"alerts": {"predicted_oom": {"for": "5m"}}}}, "gpu.alerts.predicted_oom"),
        ({"gpu": {"alerts": {"memory_leak": {"growth_mib": 0}}}}, "gpu.alerts.memory_leak.growth_mib"),
        ({"gpu": {"alerts": {"lost": {"for": "1h"}}}}, "gpu.alerts.lost"),  # never fires inside its 1h window
        ({"gpu": {"alerts": {"xid": {"window": "1m"}}}}, "gpu.alerts.xid"),
        ({"gpu": {"alerts": {"throttling": {"window": "30s"}}}}, "gpu.alerts.throttling.window"),
        ({"exporters": {"alerts": {"errors": {"window": "30s"}}}}, "exporters.alerts.errors.window"),
        ({"gpu": {"warmup": "soon"}}, "gpu.warmup"),
    ],
)
def test_bad_values_name_their_field(data: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert any(p.startswith(path) for p, _ in err.value.problems), err.value.problems


def test_the_field_coverage_alert_checks_every_field_read_without_a_fallback() -> None:
    dcgm = {n for n in by_name("gpu").reads if catalog.get(n).source is catalog.Source.DCGM}
    # FB_USED is what the alert holds the others to; the total falls back to used + free
    # (+ reserved), so a GPU without these two loses nothing
    assert set(NEEDED_DCGM_FIELDS) == dcgm - {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_RESERVED"}


def test_the_field_coverage_alert_refuses_a_field_outside_dcgm() -> None:
    with pytest.raises(ConfigError, match=r"gpu\.alerts\.field_missing\.fields"):
        parse_config({"gpu": {"alerts": {"field_missing": {"fields": ["vllm:num_requests_waiting"]}}}})
