"""The GPU pack on what a real GPU served, everywhere: two scrapes of the NVML exporter on an NVIDIA
H200 (scripts/capture_gpu_scrape.py; docs/results.md), one idle and one under a matrix-product
burn that held the GPU at its power cap, each replayed unchanged for 40 minutes by promtool
against the production build. The pack must find every field it needs, record no throttling and
fire no GPU alert (InfersightGPUThrottling included): an idle or busy healthy GPU at its default
power limit is not a fault.
tests/gpu/test_gpu_bundle_real.py proves the same live on a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from infersight.alerts import gpu as gpu_alerts
from infersight.config import Config
from infersight.config.gpu import NEEDED_DCGM_FIELDS
from infersight.recording_rules import gpu as gpu_rules
from infersight.rules import Alert
from tests.promtool_runner import promtool_test

DATA = Path(__file__).parents[1] / "data"
SCRAPES = {
    "idle": DATA / "gpu-exporter-nvml-h200-idle.txt",
    "burn": DATA / "gpu-exporter-nvml-h200-burn.txt",
}
TARGET = {"job": "dcgm-exporter", "instance": "h200-node:9400"}
# Every alert of the GPU pack, as the production build defines them.
GPU_ALERTS = tuple(r.alert for g in gpu_alerts.groups(Config()) for r in g.rules if isinstance(r, Alert))


def dcgm_samples(path: Path) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, {**s.labels, **TARGET}, s.value)
        for family in text_string_to_metric_families(path.read_text())
        for s in family.samples
        if s.name.startswith("DCGM_FI_")
    ]


def selector(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def replayed(path: Path) -> dict:
    """A promtool test file: every DCGM series of the scrape held for 40 minutes, then every GPU
    alert expected quiet and no throttling recorded (the burn's power cap is at the default limit)."""
    samples = dcgm_samples(path)
    return {
        "rule_files": ["recording_rules/serving.yaml", "recording_rules/gpu.yaml", "alerts/gpu.yaml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "name": f"a real H200's scrape ({path.name}) held for 40 minutes",
                "interval": "30s",
                "input_series": [
                    {"series": selector(name, labels), "values": f"{value}x80"} for name, labels, value in samples
                ],
                "alert_rule_test": [{"eval_time": "40m", "alertname": name, "exp_alerts": []} for name in GPU_ALERTS],
                "promql_expr_test": [
                    {
                        "expr": gpu_rules.GPU_THROTTLED,
                        "eval_time": "40m",
                        "exp_samples": [],
                    }
                ],
            }
        ],
    }


@pytest.mark.parametrize("scrape", sorted(SCRAPES))
def test_the_real_scrape_serves_every_field_the_pack_needs(scrape: str) -> None:
    served = {name for name, _, _ in dcgm_samples(SCRAPES[scrape])}
    assert not set(NEEDED_DCGM_FIELDS) - served


@pytest.mark.parametrize("scrape", sorted(SCRAPES))
def test_a_healthy_real_gpu_idle_or_at_its_power_cap_records_no_throttling_and_fires_no_gpu_alert(
    tmp_path: Path, scrape: str
) -> None:
    test_file = tmp_path / "real.test.yaml"
    test_file.write_text(yaml.safe_dump(replayed(SCRAPES[scrape]), sort_keys=False))
    result = promtool_test(test_file, tmp_path / "bundle")
    assert result.returncode == 0, result.stdout + result.stderr
