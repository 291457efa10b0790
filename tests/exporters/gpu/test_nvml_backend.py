"""NvmlBackend against a stand-in NVML raising the real pynvml error classes: every driver error
becomes a Problem (never an exception), the right devices keep reporting, values are in
dcgm-exporter units."""

from __future__ import annotations

import pynvml
import pytest

from infersight.exporters.gpu.model import Kind
from infersight.exporters.gpu.nvml import NvmlBackend

from .standins import MIB, StandInGpu, StandInNvml


def two_gpus() -> StandInNvml:
    return StandInNvml(
        [
            StandInGpu("GPU-aaaa", minor=0, processes=[(101, 4096 * MIB), (102, None)]),
            StandInGpu("GPU-bbbb", bus_id="00000000:0A:00.0", minor=1, processes=[(201, 1024 * MIB)]),
        ]
    )


def kinds(snapshot) -> list[tuple[str, bool]]:
    return [(p.kind, p.fatal) for p in snapshot.problems]


def test_healthy_values_use_dcgm_names_and_units() -> None:
    nvml = two_gpus()
    snap = NvmlBackend(nvml).collect()
    assert snap.problems == ()
    gpu0 = snap.devices[0]
    assert (gpu0.index, gpu0.uuid, gpu0.pci_bus_id, gpu0.device, gpu0.model_name) == (
        0,
        "GPU-aaaa",
        "00000000:07:00.0",
        "nvidia0",
        "NVIDIA H100 80GB HBM3",
    )
    assert gpu0.values["DCGM_FI_DEV_FB_USED"] == 10 * 1024  # MiB, like dcgm-exporter
    assert gpu0.values["DCGM_FI_DEV_FB_RESERVED"] == 512
    assert gpu0.values["DCGM_FI_DEV_FB_FREE"] == 80 * 1024 - 10 * 1024 - 512
    assert gpu0.values["DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(300.5)  # W from mW
    assert gpu0.values["DCGM_FI_DEV_ENFORCED_POWER_LIMIT"] == pytest.approx(650.0)
    assert gpu0.values["DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF"] == pytest.approx(700.0)
    assert gpu0.values["DCGM_FI_DEV_GPU_UTIL"] == 50
    assert gpu0.values["DCGM_FI_DEV_MEM_COPY_UTIL"] == 20
    assert gpu0.values["DCGM_FI_DEV_GPU_TEMP"] == 60
    assert gpu0.values["DCGM_FI_DEV_SM_CLOCK"] == 1980
    assert gpu0.values["DCGM_FI_DEV_XID_ERRORS"] == 0  # watched, none seen
    assert not any(k.startswith("DCGM_FI_PROF") for k in gpu0.values)  # DCGM-only fields
    # usedGpuMemory=None (not available) is skipped, not reported as 0
    assert [(p.gpu_index, p.uuid, p.pid, p.used_bytes) for p in snap.processes] == [
        (0, "GPU-aaaa", 101, 4096 * MIB),
        (1, "GPU-bbbb", 201, 1024 * MIB),
    ]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (pynvml.NVMLError_LibraryNotFound(), Kind.NVML_NOT_FOUND),
        (pynvml.NVMLError_DriverNotLoaded(), Kind.DRIVER_NOT_LOADED),
        (pynvml.NVMLError_LibRmVersionMismatch(), Kind.DRIVER_MISMATCH),
        (pynvml.NVMLError_NoPermission(), Kind.PERMISSION_DENIED),
        (pynvml.NVMLError_Unknown(), Kind.DRIVER_ERROR),
    ],
)
def test_init_failure_is_a_fatal_problem_and_retried(error: Exception, kind: str) -> None:
    nvml = two_gpus()
    nvml.init_error = error
    backend = NvmlBackend(nvml)
    snap = backend.collect()
    assert snap.devices == () and snap.processes == ()
    assert kinds(snap) == [(kind, True)]
    # The driver appears (e.g. after installation or a container restart): the next sample recovers.
    nvml.init_error = None
    snap = backend.collect()
    assert nvml.init_calls == 2
    assert snap.problems == () and len(snap.devices) == 2


def test_real_missing_library_is_reported_not_raised() -> None:
    """The real pynvml on this machine (no driver) -> nvml_not_found, not an exception."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present here")
    snap = NvmlBackend().collect()
    assert snap.devices == ()
    assert [p.kind for p in snap.problems] in ([Kind.NVML_NOT_FOUND], [Kind.DRIVER_NOT_LOADED])


def test_lost_gpu_drops_out_while_the_other_keeps_reporting() -> None:
    nvml = two_gpus()
    nvml.gpus[1].errors["nvmlDeviceGetHandleByIndex"] = pynvml.NVMLError_GpuIsLost()
    snap = NvmlBackend(nvml).collect()
    assert [d.uuid for d in snap.devices] == ["GPU-aaaa"]
    assert [p.pid for p in snap.processes] == [101]
    assert kinds(snap) == [(Kind.GPU_LOST, True)]


@pytest.mark.parametrize(
    ("fn", "error", "kind"),
    [
        ("nvmlDeviceGetPowerUsage", pynvml.NVMLError_GpuIsLost(), Kind.GPU_LOST),
        ("nvmlDeviceGetMemoryInfo", pynvml.NVMLError_ResetRequired(), Kind.RESET_REQUIRED),
        ("nvmlDeviceGetComputeRunningProcesses", pynvml.NVMLError_GpuIsLost(), Kind.GPU_LOST),
    ],
)
def test_gpu_lost_mid_read_drops_that_gpu(fn: str, error: Exception, kind: str) -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors[fn] = error
    snap = NvmlBackend(nvml).collect()
    assert [d.uuid for d in snap.devices] == ["GPU-bbbb"]
    assert [p.pid for p in snap.processes] == [201]
    assert kinds(snap) == [(kind, True)]


def test_xid_events_are_read_without_blocking_and_a_lost_gpu_keeps_its_last_xid() -> None:
    nvml = two_gpus()
    backend = NvmlBackend(nvml)
    backend.collect()
    assert nvml.registered == [0, 1]
    nvml.events = [(0, 13), (1, 48), (1, 79)]
    snap = backend.collect()
    assert {d.uuid: d.values["DCGM_FI_DEV_XID_ERRORS"] for d in snap.devices} == {"GPU-aaaa": 13, "GPU-bbbb": 79}
    # XID 79: the GPU falls off the bus. Its readings go; its identity and last XID stay visible.
    nvml.gpus[1].errors["*"] = pynvml.NVMLError_GpuIsLost()
    snap = backend.collect()
    lost = [d for d in snap.devices if d.uuid == "GPU-bbbb"]
    assert len(lost) == 1 and lost[0].values == {"DCGM_FI_DEV_XID_ERRORS": 79}
    assert (lost[0].pci_bus_id, lost[0].device) == ("00000000:0A:00.0", "nvidia1")
    assert kinds(snap) == [(Kind.GPU_LOST, True)]


def test_event_registration_not_supported_means_no_xid_field() -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["nvmlDeviceRegisterEvents"] = pynvml.NVMLError_NotSupported()
    snap = NvmlBackend(nvml).collect()
    assert snap.problems == ()
    assert "DCGM_FI_DEV_XID_ERRORS" not in snap.devices[0].values
    assert snap.devices[1].values["DCGM_FI_DEV_XID_ERRORS"] == 0


@pytest.mark.parametrize(
    "error",
    [pynvml.NVMLError_NotSupported(), pynvml.NVMLError_NotFound(), pynvml.NVMLError_NoData()],
)
def test_unsupported_field_is_omitted_silently(error: Exception) -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["nvmlDeviceGetPowerUsage"] = error
    snap = NvmlBackend(nvml).collect()
    assert snap.problems == ()
    assert "DCGM_FI_DEV_POWER_USAGE" not in snap.devices[0].values
    assert "DCGM_FI_DEV_POWER_USAGE" in snap.devices[1].values


def test_other_field_error_is_non_fatal_and_keeps_the_rest() -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["nvmlDeviceGetTemperature"] = pynvml.NVMLError_Unknown()
    snap = NvmlBackend(nvml).collect()
    assert kinds(snap) == [(Kind.DRIVER_ERROR, False)]
    assert "DCGM_FI_DEV_GPU_TEMP" not in snap.devices[0].values
    assert snap.devices[0].values["DCGM_FI_DEV_FB_USED"] == 10 * 1024


def test_process_list_permission_denied_keeps_device_metrics() -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["nvmlDeviceGetComputeRunningProcesses"] = pynvml.NVMLError_NoPermission()
    snap = NvmlBackend(nvml).collect()
    assert kinds(snap) == [(Kind.PERMISSION_DENIED, False)]
    assert len(snap.devices) == 2
    assert [p.pid for p in snap.processes] == [201]


def test_vanished_process_in_nvml_list_is_not_an_error() -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["nvmlDeviceGetComputeRunningProcesses"] = pynvml.NVMLError_NotFound()
    snap = NvmlBackend(nvml).collect()
    assert snap.problems == ()
    assert [p.pid for p in snap.processes] == [201]


def test_duplicate_process_entries_are_summed() -> None:
    nvml = two_gpus()
    nvml.gpus[0].processes = [(101, 100 * MIB), (101, 50 * MIB)]
    snap = NvmlBackend(nvml).collect()
    assert [(p.pid, p.used_bytes) for p in snap.processes if p.gpu_index == 0] == [(101, 150 * MIB)]


def test_old_driver_without_memory_v2_falls_back_to_v1() -> None:
    nvml = two_gpus()
    nvml.memory_v2_error = pynvml.NVMLError_FunctionNotFound()
    backend = NvmlBackend(nvml)
    snap = backend.collect()
    assert snap.problems == ()
    values = snap.devices[0].values
    assert "DCGM_FI_DEV_FB_RESERVED" not in values
    assert values["DCGM_FI_DEV_FB_USED"] == 10 * 1024 + 512  # v1's used includes the reserved memory


@pytest.mark.parametrize(
    "error",
    [pynvml.NVMLError_DriverNotLoaded(), pynvml.NVMLError_Uninitialized(), pynvml.NVMLError_LibRmVersionMismatch()],
)
def test_driver_gone_after_init_reinitialises(error: Exception) -> None:
    nvml = two_gpus()
    backend = NvmlBackend(nvml)
    backend.collect()
    nvml.count_error = error
    snap = backend.collect()
    assert snap.devices == () and snap.problems[0].fatal
    assert nvml.shutdown_calls == 1
    nvml.count_error = None
    snap = backend.collect()
    assert nvml.init_calls == 2 and len(snap.devices) == 2


def test_collect_processes_only() -> None:
    nvml = two_gpus()
    nvml.gpus[1].errors["nvmlDeviceGetHandleByIndex"] = pynvml.NVMLError_GpuIsLost()
    procs, problems = NvmlBackend(nvml).collect_processes()
    assert [(p.uuid, p.pid) for p in procs] == [("GPU-aaaa", 101)]
    assert [p.kind for p in problems] == [Kind.GPU_LOST]


def test_health_fields_ecc_remapped_throttle_clocks_memory_temp() -> None:
    nvml = two_gpus()
    g = nvml.gpus[0]
    g.ecc_sbe, g.ecc_dbe, g.remapped_uncorrectable, g.throttle_reasons = 7, 2, 1, 0x4
    values = NvmlBackend(nvml).collect().devices[0].values
    assert values["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"] == 7
    assert values["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == 2
    assert values["DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"] == 1
    assert values["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] == 0x4
    assert values["DCGM_FI_DEV_MEM_CLOCK"] == 2619
    assert values["DCGM_FI_DEV_MEMORY_TEMP"] == 45
    assert values["DCGM_FI_DEV_FB_TOTAL"] == 80 * 1024


def test_per_field_status_of_field_values_is_honoured() -> None:
    nvml = two_gpus()
    nvml.gpus[0].errors["NVML_FI_DEV_MEMORY_TEMP"] = pynvml.NVMLError_NotSupported()
    nvml.gpus[1].errors["nvmlDeviceGetTotalEccErrors"] = pynvml.NVMLError_NotSupported()  # ECC off
    snap = NvmlBackend(nvml).collect()
    assert snap.problems == ()
    assert "DCGM_FI_DEV_MEMORY_TEMP" not in snap.devices[0].values
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in snap.devices[1].values
    assert "DCGM_FI_DEV_MEMORY_TEMP" in snap.devices[1].values
