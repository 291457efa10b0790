"""What one collection of a node's GPUs yields, independent of the backend that produced it.

Device values are keyed by dcgm-exporter field names and already in dcgm-exporter's units (MiB,
W, °C, MHz, percent, ratio), so the collector only renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infersight import catalog
from infersight.exporters.common.health import Problem

# The device fields this exporter serves, in output order; every one is a catalog entry. All are
# exposed with TYPE gauge: dcgm-exporter's counters (ECC, remapped rows) end in upper-case _TOTAL,
# which prometheus_client cannot emit as a counter without appending its own _total; rules read the
# name, not the TYPE line.
DEVICE_FIELDS: tuple[str, ...] = (
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_FB_TOTAL",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
)
for _name in DEVICE_FIELDS:
    catalog.get(_name)  # fail at import if the catalog lost one

MIB = 1024 * 1024


class Kind:
    """The ``kind`` label values of ``infersight_exporter_errors_total`` for the GPU exporter."""

    NVML_NOT_FOUND = "nvml_not_found"  # libnvidia-ml.so is not installed / not mounted
    DRIVER_NOT_LOADED = "driver_not_loaded"
    DRIVER_MISMATCH = "driver_version_mismatch"  # NVML library and kernel module differ
    GPU_LOST = "gpu_lost"  # NVML_ERROR_GPU_IS_LOST, typically after XID 79
    RESET_REQUIRED = "gpu_reset_required"
    PERMISSION_DENIED = "permission_denied"  # the driver refused a query
    DRIVER_TIMEOUT = "driver_timeout"
    DRIVER_ERROR = "driver_error"  # any other NVML/DCGM error code
    DCGM_NOT_FOUND = "dcgm_not_found"  # bindings importable but libdcgm missing
    DCGM_CONNECTION = "dcgm_connection"  # host engine unreachable
    PROCESS_VANISHED = "process_vanished"  # a GPU process exited between listing and reading /proc
    PROC_PERMISSION_DENIED = "proc_permission_denied"  # /proc/<pid> unreadable (no hostPID / not root)


ALL_KINDS: tuple[str, ...] = tuple(v for k, v in vars(Kind).items() if k.isupper())


@dataclass(frozen=True)
class DeviceSample:
    index: int
    uuid: str
    pci_bus_id: str
    device: str  # "nvidia<minor>", as dcgm-exporter labels it
    model_name: str  # dcgm-exporter's modelName, e.g. "NVIDIA H100 80GB HBM3"
    values: dict[str, float] = field(default_factory=dict)  # DEVICE_FIELDS name -> value


@dataclass(frozen=True)
class ProcessIdentity:
    """What a process is, for labels: never a full command line."""

    process: str = ""  # short executable name
    model_name: str = ""  # vLLM's served model name when the process is a vLLM worker
    pod: str = ""


@dataclass(frozen=True)
class ProcessSample:
    gpu_index: int
    uuid: str
    pid: int
    used_bytes: int
    identity: ProcessIdentity | None = None  # set by backends that know it (fake); else resolved from /proc


@dataclass(frozen=True)
class Snapshot:
    devices: tuple[DeviceSample, ...] = ()
    processes: tuple[ProcessSample, ...] = ()
    problems: tuple[Problem, ...] = ()
