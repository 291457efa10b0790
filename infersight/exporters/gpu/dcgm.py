"""The DCGM backend, through the Python bindings that ship with datacenter-gpu-manager (not on PyPI).

``DcgmReader`` (bindings ``testing/python3``) watches the fields at the sampling interval; values come
back already in dcgm-exporter's units, keyed by field id. The profiling fields
(``DCGM_FI_PROF_*``) exist only here. DCGM has no per-process memory, so processes come from NVML
when ``pynvml`` is importable; NVML trouble there is non-fatal.

The import is guarded: without the bindings this module still imports, and ``DcgmBackend()``
raises ``BackendUnavailable``, which automatic selection turns into "use NVML".
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from infersight import catalog
from infersight.exporters.common.health import Problem
from infersight.exporters.gpu.backend import BackendUnavailable
from infersight.exporters.gpu.model import DEVICE_FIELDS, DeviceSample, Kind, ProcessSample, Snapshot
from infersight.exporters.gpu.nvml import NvmlBackend

BINDINGS_PATHS = (
    "/usr/share/datacenter-gpu-manager-4/bindings/python3",
    "/usr/local/dcgm/bindings/python3",  # DCGM 2.x/3.x layout
)
_KINDS = {
    "DCGM_ST_CONNECTION_NOT_VALID": Kind.DCGM_CONNECTION,
    "DCGM_ST_LIBRARY_NOT_FOUND": Kind.DCGM_NOT_FOUND,
    "DCGM_ST_GPU_IS_LOST": Kind.GPU_LOST,
    "DCGM_ST_RESET_REQUIRED": Kind.RESET_REQUIRED,
    "DCGM_ST_NO_PERMISSION": Kind.PERMISSION_DENIED,
    "DCGM_ST_TIMEOUT": Kind.DRIVER_TIMEOUT,
    "DCGM_ST_NVML_NOT_LOADED": Kind.DRIVER_NOT_LOADED,
    "DCGM_ST_NVML_DRIVER_TIMEOUT": Kind.DRIVER_TIMEOUT,
}


class DcgmModules:
    """The three binding modules the backend uses (a stand-in can be passed in tests)."""

    def __init__(self, reader: ModuleType, fields: ModuleType, structs: ModuleType):
        self.reader, self.fields, self.structs = reader, fields, structs


def import_dcgm() -> DcgmModules:
    for path in (os.environ.get("INFERSIGHT_DCGM_BINDINGS", ""), *BINDINGS_PATHS):
        if path and Path(path).is_dir() and path not in sys.path:
            sys.path.append(path)
    try:
        return DcgmModules(
            importlib.import_module("DcgmReader"),
            importlib.import_module("dcgm_fields"),
            importlib.import_module("dcgm_structs"),
        )
    except Exception as exc:  # the bindings run code at import (e.g. loading libdcgm); any failure = unavailable
        raise BackendUnavailable(
            f"DCGM Python bindings are not importable ({type(exc).__name__}: {exc}); install "
            f"datacenter-gpu-manager-4 or set INFERSIGHT_DCGM_BINDINGS (looked in {', '.join(BINDINGS_PATHS)})"
        ) from None


def _same_unit(entry: catalog.Metric, alias: str) -> bool:
    # DCGM 4.6's *_RATIO renames are 0-1; serving one under a percent name would be off by 100x.
    return not alias.endswith("_RATIO") or entry.unit == "percentunit"


def _field_ids(fields: ModuleType) -> dict[int, str]:
    """dcgm field id -> the dcgm-exporter name we serve it as (the constant, or its DCGM 4.6 rename)."""
    ids: dict[int, str] = {}
    for name in DEVICE_FIELDS:
        entry = catalog.get(name)
        for constant in entry.all_names:
            if hasattr(fields, constant) and _same_unit(entry, constant):
                ids[int(getattr(fields, constant))] = name
                break
    return ids


class DcgmBackend:
    name = "dcgm"

    def __init__(
        self,
        address: str | None = None,
        interval_s: float = 5.0,
        modules: DcgmModules | None = None,
        processes: NvmlBackend | None = None,
    ):
        """``address``: host:port of nv-hostengine, or None for an embedded host engine (dcgm-exporter's
        default)."""
        self._m = modules or import_dcgm()
        self.address = address
        self._interval_us = max(100_000, int(interval_s * 1_000_000))
        self._field_ids = _field_ids(self._m.fields)
        self._kinds = {getattr(self._m.structs, c): k for c, k in _KINDS.items() if hasattr(self._m.structs, c)}
        self._reader: Any = None
        self._model_names: dict[int, str] = {}
        self._processes = processes
        if processes is None:
            try:
                self._processes = NvmlBackend()
            except BackendUnavailable:
                self._processes = None

    def kind(self, exc: Exception) -> str:
        return self._kinds.get(getattr(exc, "value", None), Kind.DRIVER_ERROR)

    def _connect(self) -> Any:
        reader = self._m.reader.DcgmReader(
            hostname=self.address,
            fieldIds=sorted(self._field_ids),
            updateFrequency=self._interval_us,
            fieldGroupName=f"infersight_gpu_{os.getpid()}",
            ignoreBlank=True,
        )
        reader.Init()  # swallows "host engine down" itself and leaves the handle unset
        if reader.m_dcgmHandle is None:
            raise ConnectionError(f"cannot connect to nv-hostengine at {self.address or 'embedded'}")
        return reader

    def _model_name(self, gpu_id: int) -> str:
        if gpu_id not in self._model_names:
            attrs = self._reader.m_dcgmSystem.discovery.GetGpuAttributes(gpu_id)
            name = attrs.identifiers.deviceName
            self._model_names[gpu_id] = name.decode() if isinstance(name, bytes) else str(name)
        return self._model_names[gpu_id]

    def collect(self) -> Snapshot:
        problems: list[Problem] = []
        try:
            if self._reader is None:
                self._reader = self._connect()
            values = self._reader.GetLatestGpuValuesAsFieldIdDict()
            if self._reader.m_dcgmHandle is None:  # DcgmReader drops the handle when the engine goes away
                raise ConnectionError("lost the connection to nv-hostengine")
            devices = [self._device(gpu_id, fvs) for gpu_id, fvs in sorted(values.items())]
        except ConnectionError as exc:
            self._reader = None
            return Snapshot(problems=(Problem(Kind.DCGM_CONNECTION, str(exc)),))
        except self._m.structs.DCGMError as exc:
            kind = self.kind(exc)
            if kind in (Kind.DCGM_CONNECTION, Kind.DCGM_NOT_FOUND):
                self.close()
            return Snapshot(problems=(Problem(kind, f"DCGM: {exc}"),))
        return Snapshot(tuple(devices), tuple(self._process_samples(devices, problems)), tuple(problems))

    def _device(self, gpu_id: int, fvs: dict[int, Any]) -> DeviceSample:
        values = {self._field_ids[f]: float(v) for f, v in fvs.items() if f in self._field_ids}
        uuid = str(self._reader.m_gpuIdToUUId.get(gpu_id, ""))
        bus = str(self._reader.m_gpuIdToBusId.get(gpu_id, ""))
        return DeviceSample(gpu_id, uuid, bus, f"nvidia{gpu_id}", self._model_name(gpu_id), values)

    def _process_samples(self, devices: list[DeviceSample], problems: list[Problem]) -> list[ProcessSample]:
        if self._processes is None:
            return []
        # Per-process memory is an extra: its failures never make the DCGM readings "down".
        procs, nvml_problems = self._processes.collect_processes()
        problems.extend(Problem(p.kind, p.detail, fatal=False) for p in nvml_problems)
        index_of = {d.uuid: d.index for d in devices}
        return [
            ProcessSample(index_of[p.uuid], p.uuid, p.pid, p.used_bytes, p.identity)
            for p in procs
            if p.uuid in index_of
        ]

    def close(self) -> None:
        if self._reader is not None:
            with contextlib.suppress(Exception):  # shutting down a broken connection must not raise
                self._reader.Shutdown()
            self._reader = None
        if self._processes is not None:
            self._processes.close()
