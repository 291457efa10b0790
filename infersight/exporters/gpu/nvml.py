"""The NVML backend (``nvidia-ml-py``, module ``pynvml``), rendering dcgm-exporter's field names.

NVML error codes become ``Problem`` kinds; nothing the driver says is raised to the sampler:
- library missing / driver not loaded / version mismatch: no devices, retry ``nvmlInit`` next sample;
- one GPU lost (XID 79, ``NVML_ERROR_GPU_IS_LOST``) or needing reset: that GPU drops out, the others
  keep reporting, and its last XID is still served so alerts on XID 79 can fire;
- a field the GPU does not support: the field is omitted (as dcgm-exporter does), no error;
- permission denied on the process list: device metrics still served, the problem is non-fatal.
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable
from typing import Any

from infersight.exporters.common.health import Problem
from infersight.exporters.gpu.backend import BackendUnavailable
from infersight.exporters.gpu.model import MIB, DeviceSample, Kind, ProcessSample, Snapshot

# NVML error names (resolved against the module in use) -> problem kind.
_KINDS = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": Kind.NVML_NOT_FOUND,
    "NVML_ERROR_DRIVER_NOT_LOADED": Kind.DRIVER_NOT_LOADED,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": Kind.DRIVER_MISMATCH,
    "NVML_ERROR_GPU_IS_LOST": Kind.GPU_LOST,
    "NVML_ERROR_RESET_REQUIRED": Kind.RESET_REQUIRED,
    "NVML_ERROR_NO_PERMISSION": Kind.PERMISSION_DENIED,
    "NVML_ERROR_TIMEOUT": Kind.DRIVER_TIMEOUT,
}
# Codes meaning "this GPU/driver cannot answer that query": omit the value, report nothing.
_ABSENT = (
    "NVML_ERROR_NOT_SUPPORTED",
    "NVML_ERROR_NO_DATA",
    "NVML_ERROR_NOT_FOUND",
    "NVML_ERROR_FUNCTION_NOT_FOUND",
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
)
# Kinds after which the whole library must be initialised again.
_REINIT = {Kind.NVML_NOT_FOUND, Kind.DRIVER_NOT_LOADED, Kind.DRIVER_MISMATCH}
_DEVICE_DOWN = {Kind.GPU_LOST, Kind.RESET_REQUIRED}
_MAX_EVENTS_PER_SAMPLE = 1024
# nvmlFieldValue_t.valueType -> the union member holding the value.
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _handle_key(handle: Any) -> Any:
    """A hashable identity for an NVML device handle (a ctypes pointer, or whatever a stand-in uses)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return handle


class NvmlBackend:
    name = "nvml"

    def __init__(self, nvml: Any = None):
        if nvml is None:
            try:
                nvml = importlib.import_module("pynvml")
            except ImportError:
                raise BackendUnavailable("the NVML backend needs nvidia-ml-py: pip install 'infersight[gpu]'") from None
        self._nvml = nvml
        self._error = nvml.NVMLError
        self._kinds = {getattr(nvml, code): kind for code, kind in _KINDS.items()}
        self._absent = {getattr(nvml, code) for code in _ABSENT if hasattr(nvml, code)}
        self._initialized = False
        self._memory_v2 = hasattr(nvml, "nvmlMemory_v2")
        self._events: Any = None
        self._event_uuid: dict[Any, str] = {}  # handle key -> UUID, so a lost GPU's XID still maps
        self._last_xid: dict[str, int] = {}
        self._known: dict[int, DeviceSample] = {}  # index -> last identity, to label a lost GPU's XID

    # --- error handling -----------------------------------------------------------------------
    def kind(self, exc: Exception) -> str:
        return self._kinds.get(getattr(exc, "value", None), Kind.DRIVER_ERROR)

    def _absent_code(self, exc: Exception) -> bool:
        return getattr(exc, "value", None) in self._absent

    # --- lifecycle ----------------------------------------------------------------------------
    def _init(self, problems: list[Problem]) -> bool:
        if self._initialized:
            return True
        try:
            self._nvml.nvmlInit()
        except self._error as exc:
            problems.append(Problem(self.kind(exc), f"nvmlInit failed: {exc}"))
            return False
        self._initialized = True
        self._setup_xid_events(problems)
        return True

    def close(self) -> None:
        if self._initialized:
            try:
                if self._events is not None:
                    self._nvml.nvmlEventSetFree(self._events)
                self._nvml.nvmlShutdown()
            except self._error:
                pass
        self._initialized = False
        self._events = None

    # --- XID events ---------------------------------------------------------------------------
    def _setup_xid_events(self, problems: list[Problem]) -> None:
        nvml = self._nvml
        try:
            self._events = nvml.nvmlEventSetCreate()
            count = nvml.nvmlDeviceGetCount()
        except self._error as exc:
            if not self._absent_code(exc):
                problems.append(Problem(self.kind(exc), f"cannot watch XID events: {exc}", fatal=False))
            return
        for i in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                uuid = _text(nvml.nvmlDeviceGetUUID(handle))
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, self._events)
            except self._error as exc:
                # A lost GPU is reported by the device read itself; count it once.
                if not self._absent_code(exc) and self.kind(exc) not in _DEVICE_DOWN:
                    problems.append(Problem(self.kind(exc), f"GPU {i}: cannot watch XID events: {exc}", fatal=False))
                continue
            self._event_uuid[_handle_key(handle)] = uuid

    def _drain_xid_events(self, problems: list[Problem]) -> None:
        if self._events is None:
            return
        timeout_code = getattr(self._nvml, "NVML_ERROR_TIMEOUT", None)
        for _ in range(_MAX_EVENTS_PER_SAMPLE):
            try:
                event = self._nvml.nvmlEventSetWait_v2(self._events, 0)
            except self._error as exc:
                if getattr(exc, "value", None) != timeout_code:  # timeout = no more events
                    problems.append(Problem(self.kind(exc), f"reading XID events: {exc}", fatal=False))
                return
            uuid = self._event_uuid.get(_handle_key(event.device))
            if uuid is not None:
                self._last_xid[uuid] = int(event.eventData)

    # --- reads --------------------------------------------------------------------------------
    def _memory(self, handle: Any) -> dict[str, float]:
        nvml = self._nvml
        if self._memory_v2:
            try:
                mem = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
                return {
                    "DCGM_FI_DEV_FB_USED": mem.used / MIB,
                    "DCGM_FI_DEV_FB_FREE": mem.free / MIB,
                    "DCGM_FI_DEV_FB_RESERVED": mem.reserved / MIB,
                    "DCGM_FI_DEV_FB_TOTAL": mem.total / MIB,
                }
            except self._error as exc:
                if not self._absent_code(exc):
                    raise
                self._memory_v2 = False  # older driver: v1 has no reserved figure
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        return {
            "DCGM_FI_DEV_FB_USED": mem.used / MIB,
            "DCGM_FI_DEV_FB_FREE": mem.free / MIB,
            "DCGM_FI_DEV_FB_TOTAL": mem.total / MIB,
        }

    def _memory_temp(self, handle: Any) -> dict[str, float]:
        nvml = self._nvml
        (fv,) = nvml.nvmlDeviceGetFieldValues(handle, [nvml.NVML_FI_DEV_MEMORY_TEMP])
        if fv.nvmlReturn != nvml.NVML_SUCCESS:
            raise nvml.NVMLError(fv.nvmlReturn)
        member = _VALUE_MEMBERS.get(fv.valueType, "uiVal")
        return {"DCGM_FI_DEV_MEMORY_TEMP": float(getattr(fv.value, member))}

    def _ecc(self, handle: Any) -> dict[str, float]:
        nvml = self._nvml

        def total(kind: int) -> float:
            return float(nvml.nvmlDeviceGetTotalEccErrors(handle, kind, nvml.NVML_VOLATILE_ECC))

        return {
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": total(nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": total(nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        }

    def _throttle(self, handle: Any) -> dict[str, float]:
        nvml = self._nvml
        # Renamed "clocks event reasons" in newer drivers; same bitmask as DCGM's field.
        read = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        read = read or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": float(read(handle))}

    def _readers(self) -> tuple[tuple[str, Callable[[Any], dict[str, float]]], ...]:
        nvml = self._nvml

        def util(h: Any) -> dict[str, float]:
            u = nvml.nvmlDeviceGetUtilizationRates(h)
            return {"DCGM_FI_DEV_GPU_UTIL": float(u.gpu), "DCGM_FI_DEV_MEM_COPY_UTIL": float(u.memory)}

        return (
            ("memory", self._memory),
            ("utilization", util),
            ("power", lambda h: {"DCGM_FI_DEV_POWER_USAGE": nvml.nvmlDeviceGetPowerUsage(h) / 1000.0}),
            (
                "enforced power limit",
                lambda h: {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT": nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0},
            ),
            (
                "default power limit",
                lambda h: {
                    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0
                },
            ),
            (
                "temperature",
                lambda h: {"DCGM_FI_DEV_GPU_TEMP": float(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU))},
            ),
            ("sm clock", lambda h: {"DCGM_FI_DEV_SM_CLOCK": float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))}),
            (
                "memory clock",
                lambda h: {"DCGM_FI_DEV_MEM_CLOCK": float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM))},
            ),
            ("memory temperature", self._memory_temp),
            ("clock throttle reasons", self._throttle),
            ("ECC", self._ecc),
            (
                "remapped rows",
                lambda h: {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": float(nvml.nvmlDeviceGetRemappedRows(h)[1])},
            ),
        )

    def _optional(self, read: Callable[[], Any], default: Any) -> Any:
        try:
            return read()
        except self._error as exc:
            if self._absent_code(exc):
                return default
            raise

    def _read_gpu(self, index: int, problems: list[Problem]) -> tuple[DeviceSample, list[ProcessSample]]:
        nvml = self._nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        name = _text(self._optional(lambda: nvml.nvmlDeviceGetName(handle), ""))
        pci = _text(self._optional(lambda: nvml.nvmlDeviceGetPciInfo(handle).busId, ""))
        minor = self._optional(lambda: nvml.nvmlDeviceGetMinorNumber(handle), index)
        values: dict[str, float] = {}
        for what, read in self._readers():
            try:
                values.update(read(handle))
            except self._error as exc:
                if self._absent_code(exc):
                    continue
                if self.kind(exc) in _DEVICE_DOWN:
                    raise
                problems.append(Problem(self.kind(exc), f"GPU {index} {what}: {exc}", fatal=False))
        if uuid in self._event_uuid.values():  # XIDs are watched on this GPU: 0 means none seen
            values["DCGM_FI_DEV_XID_ERRORS"] = float(self._last_xid.get(uuid, 0))
        device = DeviceSample(index, uuid, pci, f"nvidia{minor}", name, values)
        return device, self._processes(device, handle, problems)

    def _processes(self, device: DeviceSample, handle: Any, problems: list[Problem]) -> list[ProcessSample]:
        try:
            procs = self._nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except self._error as exc:
            if self._absent_code(exc):
                return []
            if self.kind(exc) in _DEVICE_DOWN:
                raise
            problems.append(Problem(self.kind(exc), f"GPU {device.index} process list: {exc}", fatal=False))
            return []
        used: dict[int, int] = {}
        for p in procs:
            if p.usedGpuMemory is None:  # not available (e.g. no permission in some containers)
                continue
            used[int(p.pid)] = used.get(int(p.pid), 0) + int(p.usedGpuMemory)
        return [ProcessSample(device.index, device.uuid, pid, b) for pid, b in sorted(used.items())]

    def _count(self, problems: list[Problem]) -> int | None:
        """GPUs on the node, or None after recording why not (re-initialising next time if needed)."""
        if not self._init(problems):
            return None
        try:
            return int(self._nvml.nvmlDeviceGetCount())
        except self._error as exc:
            kind = self.kind(exc)
            problems.append(Problem(kind, f"nvmlDeviceGetCount failed: {exc}"))
            if kind in _REINIT or getattr(exc, "value", None) == getattr(self._nvml, "NVML_ERROR_UNINITIALIZED", -1):
                self.close()
            return None

    def collect_processes(self) -> tuple[list[ProcessSample], list[Problem]]:
        """Only the per-process memory (for the DCGM backend, which lacks it)."""
        problems: list[Problem] = []
        out: list[ProcessSample] = []
        for i in range(self._count(problems) or 0):
            try:
                handle = self._nvml.nvmlDeviceGetHandleByIndex(i)
                device = DeviceSample(i, _text(self._nvml.nvmlDeviceGetUUID(handle)), "", "", "")
                out.extend(self._processes(device, handle, problems))
            except self._error as exc:
                problems.append(Problem(self.kind(exc), f"GPU {i}: {exc}"))
        return out, problems

    def collect(self) -> Snapshot:
        problems: list[Problem] = []
        count = self._count(problems)
        if count is None:
            return Snapshot(problems=tuple(problems))
        self._drain_xid_events(problems)
        devices: list[DeviceSample] = []
        processes: list[ProcessSample] = []
        for i in range(count):
            try:
                device, procs = self._read_gpu(i, problems)
            except self._error as exc:
                problems.append(Problem(self.kind(exc), f"GPU {i}: {exc}"))
                lost = self._known.get(i)
                if lost is not None and lost.uuid in self._last_xid:
                    xid = {"DCGM_FI_DEV_XID_ERRORS": float(self._last_xid[lost.uuid])}
                    devices.append(DeviceSample(i, lost.uuid, lost.pci_bus_id, lost.device, lost.model_name, xid))
                continue
            self._known[i] = device
            devices.append(device)
            processes.extend(procs)
        return Snapshot(tuple(devices), tuple(processes), tuple(problems))
