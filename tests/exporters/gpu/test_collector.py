"""The collector's exposition (dcgm-exporter names and labels, capped process series) and the
exporter's health metrics through a sampler."""

from __future__ import annotations

import threading

import pynvml
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from infersight import catalog
from infersight.exporters.common.health import ExporterHealth, Problem
from infersight.exporters.common.sampler import BackgroundSampler
from infersight.exporters.gpu.collector import DEVICE_LABELS, GpuCollector, cap_processes
from infersight.exporters.gpu.exporter import GpuExporter, GpuExporterOptions
from infersight.exporters.gpu.model import ALL_KINDS, DeviceSample, Kind, ProcessIdentity, ProcessSample, Snapshot
from infersight.exporters.gpu.nvml import NvmlBackend
from infersight.stack.process import wait_until

from .standins import MIB, StandInGpu, StandInNvml


def scrape(*collectors) -> dict[str, list]:
    registry = CollectorRegistry()
    for c in collectors:
        registry.register(c)
    text = generate_latest(registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def snapshot(n_processes: int = 2) -> Snapshot:
    device = DeviceSample(
        0,
        "GPU-x",
        "00000000:07:00.0",
        "nvidia0",
        "NVIDIA H200",
        {"DCGM_FI_DEV_FB_USED": 1234.0, "DCGM_FI_DEV_GPU_TEMP": 50},
    )
    procs = tuple(
        ProcessSample(0, "GPU-x", 100 + i, (i + 1) * MIB, ProcessIdentity("python3", "llama", "pod-a"))
        for i in range(n_processes)
    )
    return Snapshot((device,), procs)


def test_device_series_have_dcgm_exporter_labels() -> None:
    families = scrape(GpuCollector(lambda: snapshot(), hostname="node-1"))
    (fb,) = families["DCGM_FI_DEV_FB_USED"]
    assert fb.value == 1234.0
    assert fb.labels == {
        "gpu": "0",
        "UUID": "GPU-x",
        "pci_bus_id": "00000000:07:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H200",
        "Hostname": "node-1",
    }
    assert set(DEVICE_LABELS) <= set(catalog.get("DCGM_FI_DEV_FB_USED").labels)
    # fields the backend did not read are absent, not zero
    assert "DCGM_FI_DEV_POWER_USAGE" not in families


def test_process_series_labels_match_the_catalog() -> None:
    families = scrape(GpuCollector(lambda: snapshot(1), hostname="node-1"))
    (p,) = families["infersight_gpu_process_memory_bytes"]
    assert set(p.labels) == set(catalog.get("infersight_gpu_process_memory_bytes").labels)
    assert p.labels["pid"] == "100" and p.labels["model_name"] == "llama" and p.labels["pod"] == "pod-a"
    assert p.value == MIB


def test_no_snapshot_yet_serves_nothing() -> None:
    assert scrape(GpuCollector(lambda: None, hostname="h")) == {}


def test_cap_keeps_the_largest_and_sums_the_rest_per_gpu() -> None:
    procs = [ProcessSample(i % 2, f"GPU-{i % 2}", 1000 + i, (i + 1) * MIB) for i in range(100)]
    capped = cap_processes(procs, 10)
    real = [p for p in capped if p.pid >= 0]
    other = [p for p in capped if p.pid < 0]
    assert len(real) == 10 and {p.pid for p in real} == set(range(1090, 1100))
    assert [(p.gpu_index, p.identity.process if p.identity else "") for p in other] == [(0, "other"), (1, "other")]
    for gpu in (0, 1):  # sums by GPU are preserved
        assert sum(p.used_bytes for p in capped if p.gpu_index == gpu) == sum(
            p.used_bytes for p in procs if p.gpu_index == gpu
        )


def test_cap_applies_in_exposition() -> None:
    families = scrape(GpuCollector(lambda: snapshot(100), hostname="h", max_process_series=5))
    samples = families["infersight_gpu_process_memory_bytes"]
    assert len(samples) == 6
    assert sorted(s.labels["pid"] for s in samples) == ["195", "196", "197", "198", "199", "other"]
    assert sum(s.value for s in samples) == sum((i + 1) * MIB for i in range(100))


def test_cap_of_zero_and_negative() -> None:
    families = scrape(GpuCollector(lambda: snapshot(3), hostname="h", max_process_series=0))
    assert [s.labels["pid"] for s in families["infersight_gpu_process_memory_bytes"]] == ["other"]
    with pytest.raises(ValueError, match="max_process_series"):
        GpuCollector(lambda: None, hostname="h", max_process_series=-1)


def test_health_metrics_names_and_kinds_pre_seeded() -> None:
    t = [1000.0]
    health = ExporterHealth("gpu", "fake", known_kinds=ALL_KINDS, stale_after=30, clock=lambda: t[0])
    families = scrape(health)
    assert families["infersight_exporter_up"][0].value == 0  # nothing collected yet
    assert families["infersight_exporter_info"][0].labels["backend"] == "fake"
    errors = {s.labels["kind"]: s.value for s in families["infersight_exporter_errors"] if s.name.endswith("_total")}
    assert set(errors) >= {Kind.GPU_LOST, Kind.NVML_NOT_FOUND, Kind.PROCESS_VANISHED, "internal"}
    assert set(errors.values()) == {0.0}
    health.record(999.0, 999.5, [])
    families = scrape(health)
    assert families["infersight_exporter_up"][0].value == 1
    assert families["infersight_exporter_collection_duration_seconds"][0].value == 0.5
    assert families["infersight_exporter_last_success_timestamp_seconds"][0].value == 999.5
    health.record(1000.0, 1000.0, [Problem(Kind.PROCESS_VANISHED, "x", fatal=False)])
    assert health.up  # non-fatal problems count but keep up
    health.record(1001.0, 1001.0, [Problem(Kind.GPU_LOST, "x")])
    assert not health.up
    assert health.errors()[Kind.GPU_LOST] == 1 and health.errors()[Kind.PROCESS_VANISHED] == 1
    for name in families:  # every health name is catalogued
        catalog.get(name if name != "infersight_exporter_errors" else "infersight_exporter_errors_total")


def test_up_goes_to_zero_when_collections_stop_arriving() -> None:
    t = [0.0]
    health = ExporterHealth("gpu", "nvml", stale_after=15, clock=lambda: t[0])
    health.record(0.0, 0.1, [])
    assert health.up
    t[0] = 15.2
    assert not health.up


def test_exporter_counts_driver_errors_and_keeps_serving() -> None:
    nvml = StandInNvml([StandInGpu("GPU-a", processes=[(4242, 10 * MIB)])])
    nvml.init_error = pynvml.NVMLError_LibraryNotFound()
    exporter = GpuExporter(NvmlBackend(nvml), GpuExporterOptions(port=0, proc_root=None, hostname="h"))
    exporter.sampler.sample_once()
    families = scrape_registry(exporter)
    assert families["infersight_exporter_up"][0].value == 0
    assert error_count(families, Kind.NVML_NOT_FOUND) == 1
    assert "DCGM_FI_DEV_FB_USED" not in families
    nvml.init_error = None
    exporter.sampler.sample_once()
    families = scrape_registry(exporter)
    assert families["infersight_exporter_up"][0].value == 1
    assert families["DCGM_FI_DEV_FB_USED"][0].value == 10 * 1024
    nvml.gpus[0].errors["*"] = pynvml.NVMLError_GpuIsLost()
    exporter.sampler.sample_once()
    families = scrape_registry(exporter)
    assert families["infersight_exporter_up"][0].value == 0
    assert error_count(families, Kind.GPU_LOST) == 1
    assert "DCGM_FI_DEV_FB_USED" not in families


def test_unexpected_exception_is_internal_and_the_sampler_survives() -> None:
    calls = []

    def collect():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        return snapshot(), []

    health = ExporterHealth("gpu", "nvml")
    sampler: BackgroundSampler[Snapshot] = BackgroundSampler("gpu", collect, 0.05, health)
    sampler.sample_once()
    assert sampler.latest is None and health.errors()["internal"] == 1 and not health.up
    sampler.sample_once()
    assert sampler.latest is not None and health.up


def test_attribution_problems_are_counted(tmp_path) -> None:
    nvml = StandInNvml([StandInGpu("GPU-a", processes=[(4242, 10 * MIB)])])
    exporter = GpuExporter(NvmlBackend(nvml), GpuExporterOptions(port=0, proc_root=tmp_path, hostname="h"))
    exporter.sampler.sample_once()
    families = scrape_registry(exporter)
    assert error_count(families, Kind.PROCESS_VANISHED) == 1
    assert families["infersight_exporter_up"][0].value == 1  # attribution never makes the GPU data "down"
    (p,) = families["infersight_gpu_process_memory_bytes"]
    assert (p.labels["pid"], p.labels["process"], p.value) == ("4242", "", 10 * MIB)


def test_background_sampler_keeps_scrapes_independent_of_a_hung_driver() -> None:
    """A collection blocked inside the driver must not block /metrics: the last snapshot is served."""
    release = threading.Event()
    calls = []

    def collect():
        calls.append(1)
        if len(calls) > 1:
            release.wait(30)  # the "driver" hangs on the second sample
        return snapshot(), []

    health = ExporterHealth("gpu", "nvml")
    sampler: BackgroundSampler[Snapshot] = BackgroundSampler("gpu", collect, 0.01, health).start()
    try:
        wait_until(lambda: len(calls) >= 2, 10, "the second (hanging) collection to start", interval=0.01)
        families = scrape(GpuCollector(lambda: sampler.latest, hostname="h"), health)
        assert families["DCGM_FI_DEV_FB_USED"][0].value == 1234.0
        assert families["infersight_exporter_up"][0].value == 1
    finally:
        release.set()
        sampler.stop()


def scrape_registry(exporter: GpuExporter) -> dict[str, list]:
    text = generate_latest(exporter.registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def error_count(families: dict[str, list], kind: str) -> float:
    return next(
        s.value
        for s in families["infersight_exporter_errors"]
        if s.name.endswith("_total") and s.labels["kind"] == kind
    )
