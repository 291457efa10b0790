"""The GPU exporter against a real GPU: NVML/DCGM readings vs nvidia-smi, and a deliberate leak that
must move DCGM_FI_DEV_FB_USED and the per-process series. Run with `pytest tests/gpu -m gpu`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from infersight.config.gpu import NEEDED_DCGM_FIELDS
from infersight.exporters.gpu.backend import BackendUnavailable, GpuBackend
from infersight.exporters.gpu.dcgm import DcgmBackend
from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
from infersight.exporters.gpu.model import Kind
from infersight.exporters.gpu.nvml import NvmlBackend
from infersight.stack.process import http_get, wait_until

pytestmark = pytest.mark.gpu

CHILD = Path(__file__).with_name("vllm_like_leak_child.py")
STEP_MIB = 256
STEPS = 4
SMI_FIELDS = ("index", "uuid", "name", "pci.bus_id", "memory.total", "memory.used", "temperature.gpu", "clocks.sm")


def nvidia_smi() -> dict[str, dict[str, str]]:
    """nvidia-smi's view, keyed by UUID."""
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rows = [dict(zip(SMI_FIELDS, (v.strip() for v in line.split(",")), strict=True)) for line in out.splitlines()]
    return {r["uuid"]: r for r in rows if r}


def open_real(name: str) -> GpuBackend:
    if name == "nvml":
        return NvmlBackend()
    try:
        backend = DcgmBackend(interval_s=0.5)
    except BackendUnavailable as exc:
        pytest.skip(f"DCGM not usable here: {exc}")
    problems = backend.collect().problems
    if any(p.kind in (Kind.DCGM_CONNECTION, Kind.DCGM_NOT_FOUND) for p in problems):
        backend.close()
        pytest.skip(f"DCGM host engine not usable: {problems}")
    return backend


@pytest.fixture(params=["nvml", "dcgm"])
def exporter(request: pytest.FixtureRequest) -> Iterator[GpuExporter]:
    options = GpuExporterOptions(port=0, interval_s=0.5, hostname="gpu-test")
    exp = GpuExporter(open_real(request.param), options)
    try:
        yield exp
    finally:
        exp.stop()


def families(exporter: GpuExporter) -> dict[str, list]:
    exporter.sampler.sample_once()
    text = generate_latest(exporter.registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def by_uuid(samples: list) -> dict[str, float]:
    return {s.labels["UUID"]: s.value for s in samples}


def test_readings_match_nvidia_smi(exporter: GpuExporter) -> None:
    smi = nvidia_smi()
    got = families(exporter)
    assert got["infersight_exporter_up"][0].value == 1, exporter.health.errors()
    fb_used = by_uuid(got["DCGM_FI_DEV_FB_USED"])
    assert set(fb_used) == set(smi), "the exporter and nvidia-smi must see the same GPUs"
    for sample in got["DCGM_FI_DEV_FB_USED"]:
        row = smi[sample.labels["UUID"]]
        assert sample.labels["gpu"] == row["index"]
        assert sample.labels["modelName"] == row["name"]
        assert sample.labels["pci_bus_id"].lower() == row["pci.bus_id"].lower()
        assert sample.labels["Hostname"] == "gpu-test"
    free = by_uuid(got["DCGM_FI_DEV_FB_FREE"])
    reserved = by_uuid(got.get("DCGM_FI_DEV_FB_RESERVED", []))
    for uuid, row in smi.items():
        # MiB, read a moment apart. Drivers differ on whether nvidia-smi's used includes the reserved part.
        smi_used = float(row["memory.used"])
        assert min(abs(fb_used[uuid] - smi_used), abs(fb_used[uuid] + reserved.get(uuid, 0) - smi_used)) <= 64
    for uuid, row in smi.items():
        total = fb_used[uuid] + free[uuid] + reserved.get(uuid, 0)
        assert abs(total - float(row["memory.total"])) <= 2, "used + free + reserved = total (MiB)"
    temps = by_uuid(got["DCGM_FI_DEV_GPU_TEMP"])
    clocks = by_uuid(got["DCGM_FI_DEV_SM_CLOCK"])
    for uuid, row in smi.items():
        assert abs(temps[uuid] - float(row["temperature.gpu"])) <= 5
        assert abs(clocks[uuid] - float(row["clocks.sm"])) <= max(150, 0.15 * float(row["clocks.sm"]))
    for name in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"):
        assert set(by_uuid(got[name])) == set(smi), name


def test_every_field_the_gpu_pack_reads_is_served(exporter: GpuExporter) -> None:
    """InfersightGPUFieldMissing checks these per GPU: one this backend cannot read on a real GPU
    would hold that alert on every GPU it serves, and silence the alerts that read the field."""
    got = families(exporter)
    gpus = set(by_uuid(got["DCGM_FI_DEV_FB_USED"]))
    missing = {field: sorted(gpus - set(by_uuid(got.get(field, [])))) for field in NEEDED_DCGM_FIELDS}
    assert not any(missing.values()), ({f: u for f, u in missing.items() if u}, exporter.health.errors())


def test_served_over_http(exporter: GpuExporter) -> None:
    exporter.start()
    wait_until(lambda: exporter.sampler.latest is not None, 30, "the first sample")
    status, body = http_get(exporter.server.url)
    assert status == 200 and b"DCGM_FI_DEV_FB_USED{" in body
    assert f'backend="{exporter.backend.name}"'.encode() in body


def test_a_leak_moves_fb_used_and_the_process_series(exporter: GpuExporter) -> None:
    first = exporter.backend.collect().devices[0]
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": first.uuid}
    argv = [sys.executable, str(CHILD), "--served-model-name", "gpu-leak-test", "--step-mib", str(STEP_MIB)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready", "the leak child could not create a CUDA context"

        def reading() -> tuple[float, dict[str, str], float]:
            got = families(exporter)
            fb = by_uuid(got["DCGM_FI_DEV_FB_USED"])[first.uuid]
            mine = [s for s in got["infersight_gpu_process_memory_bytes"] if s.labels["pid"] == str(child.pid)]
            return fb, (mine[0].labels if mine else {}), (mine[0].value if mine else 0.0)

        wait_until(lambda: reading()[2] > 0, 30, f"pid {child.pid} in the per-process series (host PID namespace?)")
        fb0, labels, proc0 = reading()
        assert labels["gpu"] == str(first.index) and labels["UUID"] == first.uuid
        assert labels["model_name"] == "gpu-leak-test", "vLLM-style --served-model-name read from /proc"
        assert labels["process"].startswith("python"), labels
        for step in range(1, STEPS + 1):
            child.stdin.write("step\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "allocated"
            want_fb = fb0 + 0.9 * STEP_MIB * step
            want_proc = proc0 + (STEP_MIB * step - 16) * 2**20

            # DCGM refreshes its watches on its own clock: poll (bounded) rather than sleep.
            def grown(w: float = want_fb, p: float = want_proc) -> bool:
                fb, _, proc = reading()
                return fb >= w and proc >= p

            wait_until(
                grown,
                30,
                f"step {step}: FB_USED >= {want_fb:.0f} MiB and the process series >= {p_mib(want_proc)} MiB",
                interval=0.2,
            )
        fb_end, _, proc_end = reading()
        grown_mib = (proc_end - proc0) / 2**20
        assert STEP_MIB * STEPS - 16 <= grown_mib <= STEP_MIB * STEPS + 64, grown_mib
        assert fb_end - fb0 >= 0.9 * STEP_MIB * STEPS
    finally:
        child.kill()
        child.wait(30)


def p_mib(b: float) -> str:
    return f"{b / 2**20:.0f}"
