"""End to end: `infersight exporter gpu --backend fake` as a real process behind TLS + basic auth,
scraped by a real Prometheus on loopback that also evaluates the bundle's GPU rules (time-scaled,
with this job as dcgm-exporter); the values and alerts are queried back from Prometheus."""

from __future__ import annotations

from collections.abc import Iterator

import bcrypt
import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.alerts import gpu as gpu_alerts
from infersight.config import parse_config
from infersight.exporters.gpu import exporter as gpu_exporter
from infersight.stack.observed import validation_profile
from infersight.stack.ports import free_port
from infersight.stack.process import ManagedProcess, wait_until
from infersight.stack.prometheus import Prometheus

from .standins import CertFiles, https_get, make_certs

pytestmark = pytest.mark.e2e

JOB = "infersight-gpu"  # the job the default config's gpu_exporter selector expects
# The exporter writes dcgm-exporter's names, so the GPU rules read it in dcgm-exporter's place.
# Time scale 60, a minute's scrape and evaluation (1 s here); a lost GPU stays news for 6 minutes.
RULES_CFG = validation_profile(
    parse_config(
        {
            "intervals": {"scrape": "1m", "evaluation": "1m"},
            "selectors": {"dcgm": [f'job="{JOB}"']},
            "gpu": {"alerts": {"lost": {"window": "6h"}}},
        }
    )
)
USER, PASSWORD = "prometheus", "scrape-me"
LOST_AT_S = 8
SCENARIO = {
    "description": "e2e: GPU 0 leaks 512 MiB/s; GPU 1 is lost after XID 79",
    "gpus": [{"count": 2, "memory_total_mib": 81559, "gpu_util": 40}],
    "processes": [
        {"pid": 4201, "gpu": 0, "model_name": "llama-3-8b", "memory_mib": 1000, "grow_mib_per_s": 512},
        {"pid": 4202, "gpu": 1, "model_name": "llama-3-8b", "memory_mib": 2000},
    ],
    "events": [
        {"at": f"{LOST_AT_S}s", "kind": "xid", "gpu": 1, "xid": 79},
        {"at": f"{LOST_AT_S}s", "kind": "gpu_lost", "gpu": 1},
    ],
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    work = tmp_path_factory.mktemp("gpu-e2e")
    certs: CertFiles = make_certs(work / "certs")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = work / "web.yml"
    web.write_text(
        yaml.safe_dump(
            {
                "tls_server_config": {"cert_file": str(certs.cert), "key_file": str(certs.key)},
                "basic_auth_users": {USER: hashed},
            }
        )
    )
    scenario = work / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    port = free_port()
    exporter = ManagedProcess(
        "gpu-exporter",
        gpu_exporter.command("fake", port, "e2e-node", f"--scenario={scenario}", f"--web-config-file={web}"),
        work / "exporter.log",
    )
    built = bundle.build(RULES_CFG)
    bundle_files.write(bundle_files.render(built, with_deploy=False), work / "bundle")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in bundle_files.rule_file_paths(built, work / "bundle")],
        "scrape_configs": [
            {
                "job_name": JOB,
                "scheme": "https",
                "tls_config": {"ca_file": str(certs.ca)},
                "basic_auth": {"username": USER, "password": PASSWORD},
                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
            }
        ],
    }
    prometheus = Prometheus(work, config_yaml=yaml.safe_dump(config))
    with exporter:

        def exporter_ready() -> bool:
            if not exporter.alive:
                raise AssertionError(f"exporter exited:\n{exporter.log_tail()}")
            try:
                return https_get(port, certs.ca, (USER, PASSWORD))[0] == 200
            except OSError:
                return False

        wait_until(exporter_ready, 30, "the GPU exporter to serve over TLS", interval=0.2)
        with prometheus:
            prometheus.wait_for_targets_up(timeout=60)
            yield prometheus
    log = (work / "exporter.log").read_text()
    assert "FAKE GPU backend" in log  # clearly labelled as fake in the logs too


def value(prometheus: Prometheus, expr: str) -> float | None:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else None


def test_device_and_process_series_reach_prometheus(stack: Prometheus) -> None:
    (fb,) = stack.query(f'DCGM_FI_DEV_FB_USED{{job="{JOB}", gpu="0"}}')
    labels = fb["metric"]
    assert labels["Hostname"] == "e2e-node" and labels["device"] == "nvidia0"
    assert labels["UUID"].startswith("GPU-") and labels["modelName"].endswith("(fake)")
    assert value(stack, f'infersight_exporter_info{{job="{JOB}", exporter="gpu", backend="fake"}}') == 1
    (proc,) = stack.query(f'infersight_gpu_process_memory_bytes{{job="{JOB}", pid="4201"}}')
    assert proc["metric"]["model_name"] == "llama-3-8b" and proc["metric"]["process"] == "python3"
    assert float(proc["value"][1]) >= 1000 * 1024 * 1024


def test_leak_shows_as_a_positive_slope_in_mib(stack: Prometheus) -> None:
    expr = f'deriv(DCGM_FI_DEV_FB_USED{{job="{JOB}", gpu="0"}}[4s])'
    stack.wait_until(lambda: (value(stack, expr) or 0) > 256, 60, "GPU 0's framebuffer slope to show the leak")
    slope = value(stack, expr)
    assert slope is not None and 256 < slope < 1024  # 512 MiB/s scripted
    per_process = f'deriv(infersight_gpu_process_memory_bytes{{job="{JOB}", pid="4201"}}[4s])'
    stack.wait_until(lambda: (value(stack, per_process) or 0) > 256 * 2**20, 30, "the leaking process's slope")


def test_lost_gpu_drops_up_and_counts_errors_while_the_other_keeps_reporting(stack: Prometheus) -> None:
    stack.wait_until(
        lambda: value(stack, f'infersight_exporter_up{{job="{JOB}", exporter="gpu"}}') == 0,
        60,
        "infersight_exporter_up to drop after the GPU is lost",
    )
    errors = f'infersight_exporter_errors_total{{job="{JOB}", exporter="gpu", kind="gpu_lost"}}'
    stack.wait_until(lambda: (value(stack, errors) or 0) >= 2, 30, "gpu_lost errors to be counted")
    assert value(stack, f'DCGM_FI_DEV_XID_ERRORS{{job="{JOB}", gpu="1"}}') == 79
    stack.wait_until(
        lambda: value(stack, f'DCGM_FI_DEV_FB_USED{{job="{JOB}", gpu="1"}}') is None,
        30,
        "the lost GPU's framebuffer series to go stale",
    )
    assert value(stack, f'DCGM_FI_DEV_FB_USED{{job="{JOB}", gpu="0"}}') is not None
    assert value(stack, f'up{{job="{JOB}"}}') == 1  # the exporter itself keeps serving


def test_lost_gpu_fires_the_lost_alert_with_its_last_labels(stack: Prometheus) -> None:
    firing = f'ALERTS{{alertname="{gpu_alerts.LOST}", alertstate="firing"}}'
    stack.wait_until(lambda: bool(stack.query(firing)), 60, f"{gpu_alerts.LOST} to fire")
    (alert,) = stack.query(firing)  # GPU 0 keeps reporting: it is not lost
    labels = alert["metric"]
    assert labels["gpu"] == "1" and labels["UUID"].startswith("GPU-") and labels["Hostname"] == "e2e-node"
    assert labels["severity"] == "critical" and labels["job"] == JOB
