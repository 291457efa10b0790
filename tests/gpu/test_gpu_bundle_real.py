"""The bundle's GPU pack against a real GPU: `infersight exporter gpu --backend=nvml` as a process,
scraped by a real Prometheus that evaluates the bundle's GPU rules (time scale 60), while one child
process leaks GPU memory at a steady rate and another keeps the GPU at full load (matrix products,
which hold an H200 at its power cap). Every query of gpu.json that needs no vLLM and no fault must
answer, the leak must show in the trend rule at about the rate leaked, InfersightGPUMemoryLeak
must fire with the real GPU's labels (no vLLM engine maps to this GPU, so nothing suppresses it),
and the power cap of a busy GPU at its default limit must show in the drill-down but be
neither recorded nor alerted on.

The fake backend's end-to-end test (tests/exporters/gpu/test_e2e_prometheus.py) runs everywhere;
this one proves the same queries and alert on real NVML readings. Run with `pytest tests/gpu -m gpu`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.alerts import gpu as gpu_alerts
from infersight.config import parse_config
from infersight.exporters.gpu import exporter as gpu_exporter
from infersight.lint import dashboard_queries, substitute
from infersight.recording_rules import gpu as gpu_rules
from infersight.stack.observed import validation_profile
from infersight.stack.ports import free_port
from infersight.stack.process import ManagedProcess
from infersight.stack.prometheus import Prometheus
from tests.packs.e2e_support import assert_queries_eventually

pytestmark = pytest.mark.gpu

JOB = "infersight-gpu"
HOSTNAME = "gpu-node"
CFG = validation_profile(
    parse_config({"intervals": {"scrape": "1m", "evaluation": "1m"}, "selectors": {"dcgm": [f'job="{JOB}"']}})
)
CHILD = Path(__file__).with_name("vllm_like_leak_child.py")
BURN_CHILD = Path(__file__).with_name("power_burn_child.py")
BURN_S = 300  # outlasts the module's tests (about 3 minutes); stopped at teardown
STEP_MIB, STEP_EVERY_S = 64, 0.5  # 128 MiB/s: far over the leak threshold (225 MiB per 30 s here)
MAX_STEPS = 300  # 19 GiB at most, of the card's 141; bounds the run to 150 s
# Panels that join the GPU to its vLLM engines' load (no vLLM runs on this GPU here), and the node
# counts of GPUs held down or whose last XID is not 0 (a healthy GPU has neither: its power cap
# under the burn is at the default limit, which is not throttling).
NO_DATA_HERE = ("workload:vllm_", "instance:vllm_", gpu_rules.NODE_XID, gpu_rules.NODE_THROTTLED)


@dataclass
class Leak:
    """A child process on one GPU that allocates STEP_MIB every STEP_EVERY_S until stopped."""

    child: subprocess.Popen[str]
    uuid: str
    stop: threading.Event
    steps: int = 0

    def run(self) -> None:
        assert self.child.stdin is not None and self.child.stdout is not None
        while self.steps < MAX_STEPS and not self.stop.wait(STEP_EVERY_S):
            self.child.stdin.write("step\n")
            self.child.stdin.flush()
            if self.child.stdout.readline().strip() != "allocated":
                return
            self.steps += 1


@dataclass
class GpuStack:
    prometheus: Prometheus
    leak: Leak


def _first_gpu_uuid() -> str:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "--id=0"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GpuStack]:
    work = tmp_path_factory.mktemp("gpu-real")
    port = free_port()
    exporter = ManagedProcess(
        "gpu-exporter",
        gpu_exporter.command("nvml", port, HOSTNAME),
        work / "exporter.log",
    )
    built = bundle.build(CFG)
    bundle_files.write(bundle_files.render(built, with_deploy=False), work / "bundle")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in bundle_files.rule_file_paths(built, work / "bundle")],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}],
    }
    uuid = _first_gpu_uuid()
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": uuid}
    argv = [sys.executable, str(CHILD), "--served-model-name", "gpu-bundle-test", "--step-mib", str(STEP_MIB)]
    # The burn allocates its matrices before the first scrape, so the leak trend sees only the leak.
    burn = subprocess.Popen([sys.executable, str(BURN_CHILD), str(BURN_S)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert burn.stdout is not None
        assert burn.stdout.readline().strip() == "ready", "the burn child could not start on the GPU"
        with exporter:
            exporter.wait_http_ready(f"http://127.0.0.1:{port}/metrics", timeout=60)
            with Prometheus(work, config_yaml=yaml.safe_dump(config)) as prometheus:
                prometheus.wait_for_targets_up(timeout=60)
                child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                leak = Leak(child, uuid, threading.Event())
                thread = threading.Thread(target=leak.run, name="gpu-leak", daemon=True)
                try:
                    assert child.stdout is not None
                    assert child.stdout.readline().strip() == "ready", "the leak child could not create a CUDA context"
                    thread.start()
                    yield GpuStack(prometheus, leak)
                finally:
                    leak.stop.set()
                    child.kill()
                    child.wait(30)
                    thread.join(10)
    finally:
        burn.kill()
        burn.wait(30)


def test_every_gpu_dashboard_query_answers_on_a_real_gpu(stack: GpuStack) -> None:
    board = bundle.build(CFG).dashboard("gpu.json")
    queries = {
        where: substitute(expr)
        for where, expr in dashboard_queries(board)
        if not any(part in expr for part in NO_DATA_HERE)
    }
    assert len(queries) > 20
    assert_queries_eventually(stack.prometheus, queries, bool, 90, "data for every gpu.json query (real GPU)")


def test_the_leak_shows_in_the_trend_rule_at_the_leaked_rate(stack: GpuStack) -> None:
    uuid = [f'UUID="{stack.leak.uuid}"']
    expr = gpu_rules.fb_used_trend(CFG, uuid)  # the expression the leak alert and the drill-down read
    leaked = STEP_MIB * 2**20 / STEP_EVERY_S  # bytes per second

    def near_the_leak() -> bool:
        result = stack.prometheus.query(expr)
        return bool(result) and 0.5 * leaked < float(result[0]["value"][1]) < 1.5 * leaked

    stack.prometheus.wait_until(near_the_leak, 60, f"{expr} near {leaked / 2**20:.0f} MiB/s")
    (series,) = stack.prometheus.query(expr)
    assert series["metric"]["Hostname"] == HOSTNAME and series["metric"]["infersight_workload"] == f"host/{HOSTNAME}"
    (oom,) = stack.prometheus.query(gpu_rules.time_to_oom(CFG, uuid))
    assert 0 < float(oom["value"][1]) < float("inf")


def test_the_leak_alert_fires_with_the_real_gpus_labels(stack: GpuStack) -> None:
    firing = f'ALERTS{{alertname="{gpu_alerts.LEAK}", alertstate="firing", UUID="{stack.leak.uuid}"}}'
    # window 30 s + for: 45 s at time scale 60, plus scrapes and evaluations
    stack.prometheus.wait_until(lambda: bool(stack.prometheus.query(firing)), 120, f"{gpu_alerts.LEAK} to fire")
    (alert,) = stack.prometheus.query(firing)
    labels = alert["metric"]
    assert labels["Hostname"] == HOSTNAME and labels["job"] == JOB and labels["severity"] == "warning"
    assert labels["modelName"].startswith("NVIDIA"), labels
    assert stack.leak.steps < MAX_STEPS, "the leak ran out of steps before the alert fired"


def test_no_other_gpu_alert_fires_on_a_healthy_real_gpu(stack: GpuStack) -> None:
    """Once the leak alert fired, every GPU alert has had far more than its scaled for: on real
    readings. Only the planted leak (and the OOM it predicts) may be active: a field the NVML
    exporter cannot serve would show as InfersightGPUFieldMissing, a misread clock-event mask as
    InfersightGPUThrottling, a misread ECC or XID counter as its alert."""
    firing = f'ALERTS{{alertname="{gpu_alerts.LEAK}", alertstate="firing"}}'
    stack.prometheus.wait_until(lambda: bool(stack.prometheus.query(firing)), 120, f"{gpu_alerts.LEAK} to fire")
    active = stack.prometheus.query('ALERTS{component="gpu"}')
    unexpected = [
        a["metric"] for a in active if a["metric"]["alertname"] not in (gpu_alerts.LEAK, gpu_alerts.PREDICTED_OOM)
    ]
    assert not unexpected, unexpected


def test_a_busy_gpu_at_its_power_cap_is_shown_but_neither_recorded_nor_alerted(stack: GpuStack) -> None:
    """A GPU under full load sits at its power cap by design (the SW power cap bit); at its default
    power limit that is not throttling. The drill-down (decoded from the raw mask) shows it; the
    fleet recording holds no series for it (a busy fleet would otherwise add one per GPU), and
    InfersightGPUThrottling stays quiet, not even pending, for well over its scaled window and
    for: (10 s each here)."""
    uuid = f'UUID="{stack.leak.uuid}"'
    enforced = stack.prometheus.query(f"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{{{uuid}}}")
    default = stack.prometheus.query(f"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF{{{uuid}}}")
    assert enforced and default, "the NVML exporter serves both power limits"
    if float(enforced[0]["value"][1]) < CFG.gpu.alerts.throttling.lowered_limit_ratio * float(default[0]["value"][1]):
        pytest.skip("this GPU's power limit was lowered by its owner: the alert should fire here")
    drill_down = gpu_rules.throttle(CFG, [uuid])

    def capped() -> bool:
        return any(
            r["metric"]["reason"] == gpu_rules.POWER_CAP_REASON and float(r["value"][1]) == 1
            for r in stack.prometheus.query(drill_down)
        )

    stack.prometheus.wait_until(capped, 60, "the burn to hold the GPU at its cap")
    recorded = f"{gpu_rules.GPU_THROTTLED}{{{uuid}}}"
    throttling = f'ALERTS{{alertname="{gpu_alerts.THROTTLING}", {uuid}}}'
    polls = capped_polls = 0
    deadline = time.monotonic() + 35  # window 10 s + for: 10 s, plus evaluations
    while time.monotonic() < deadline:
        assert not stack.prometheus.query(throttling), stack.prometheus.query(throttling)
        assert not stack.prometheus.query(recorded), stack.prometheus.query(recorded)
        polls += 1
        capped_polls += capped()
        time.sleep(1)
    assert capped_polls >= 0.8 * polls, f"the GPU was at its cap in only {capped_polls} of {polls} polls"
