"""The fake backend: replays a scenario (steady load, a leak, a restart, XIDs, a lost GPU, a missing
driver) on machines without a GPU. Its output goes through the same collector as real readings and
is marked ``infersight_exporter_info{backend="fake"}``; the exporter also logs that it is fake.

Scenario time is seconds since the backend was created (modulo ``loop_after``); the clock is
injectable so tests step through a timeline without sleeping.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from infersight.exporters.common.health import Problem
from infersight.exporters.gpu.fake_control import LeakControl
from infersight.exporters.gpu.model import DeviceSample, Kind, ProcessIdentity, ProcessSample, Snapshot
from infersight.exporters.gpu.scenario import EventSpec, GpuSpec, ProcessSpec, Scenario

_UUID_NAMESPACE = uuid.UUID("5f1d6a52-43c6-4a8e-9a0c-6d1a2b1e7c10")
DEFAULT_POWER_LIMIT_W = 700.0  # the fake GPUs are H100 SXM boards


def fake_uuid(index: int) -> str:
    return f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'infersight-fake-gpu-{index}')}"


class FakeBackend:
    name = "fake"

    def __init__(
        self,
        scenario: Scenario,
        scenario_name: str = "",
        clock: Callable[[], float] = time.monotonic,
        control: LeakControl | None = None,
    ):
        self.scenario = scenario
        self.scenario_name = scenario_name
        self._clock = clock
        self._t0 = clock()
        self.control = control  # a leak started and stopped at run time (fake_control)

    def elapsed(self) -> float:
        t = self._clock() - self._t0
        loop = self.scenario.loop_after
        return t % loop.total_seconds if loop is not None else t

    def _events_until(self, t: float) -> list[EventSpec]:
        return sorted((e for e in self.scenario.events if e.at.total_seconds <= t), key=lambda e: e.at.ms)

    @staticmethod
    def _process_mib(p: ProcessSpec, t: float) -> float | None:
        if t < p.start.total_seconds or (p.stop is not None and t >= p.stop.total_seconds):
            return None
        mib = p.memory_mib + p.grow_mib_per_s * (t - p.start.total_seconds)
        return min(mib, p.max_mib) if p.max_mib is not None else mib

    @staticmethod
    def _sample(index: int, spec: GpuSpec, values: dict[str, float]) -> DeviceSample:
        pci = f"00000000:{index + 0x18:02X}:00.0"
        return DeviceSample(index, fake_uuid(index), pci, f"nvidia{index}", spec.model, values)

    @staticmethod
    def _values(spec: GpuSpec, used_mib: float, xid: int) -> dict[str, float]:
        values = {
            "DCGM_FI_DEV_FB_USED": used_mib,
            "DCGM_FI_DEV_FB_FREE": spec.memory_total_mib - spec.reserved_mib - used_mib,
            "DCGM_FI_DEV_FB_RESERVED": spec.reserved_mib,
            "DCGM_FI_DEV_FB_TOTAL": spec.memory_total_mib,
            "DCGM_FI_DEV_GPU_UTIL": spec.gpu_util,
            "DCGM_FI_DEV_MEM_COPY_UTIL": spec.mem_copy_util,
            "DCGM_FI_DEV_POWER_USAGE": spec.power_w,
            "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": spec.power_limit_w,
            "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": DEFAULT_POWER_LIMIT_W,
            "DCGM_FI_DEV_GPU_TEMP": spec.temp_c,
            "DCGM_FI_DEV_SM_CLOCK": spec.sm_clock_mhz,
            "DCGM_FI_DEV_MEM_CLOCK": spec.mem_clock_mhz,
            "DCGM_FI_DEV_MEMORY_TEMP": spec.memory_temp_c,
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 0.0,
            "DCGM_FI_DEV_XID_ERRORS": float(xid),
            "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": 0.0,
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0.0,
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0.0,
        }
        for field, ratio in (
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", spec.gr_engine_active),
            ("DCGM_FI_PROF_DRAM_ACTIVE", spec.dram_active),
            ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", spec.tensor_active),
        ):
            if ratio is not None:
                values[field] = ratio
        return values

    def collect(self) -> Snapshot:
        t = self.elapsed()
        lost: set[int] = set()
        xids: dict[int, int] = {}
        overrides: dict[int, dict[str, float]] = {}
        driver_up = True
        for e in self._events_until(t):
            if e.kind == "xid" and e.gpu is not None and e.xid is not None:
                xids[e.gpu] = e.xid
            elif e.kind == "gpu_lost" and e.gpu is not None:
                lost.add(e.gpu)
            elif e.kind == "gpu_recovered" and e.gpu is not None:
                lost.discard(e.gpu)
            elif e.kind == "set" and e.gpu is not None and e.field is not None and e.value is not None:
                overrides.setdefault(e.gpu, {})[e.field] = e.value
            else:
                driver_up = e.kind == "driver_available"
        if not driver_up:
            return Snapshot(problems=(Problem(Kind.NVML_NOT_FOUND, "fake: driver_unavailable event in the scenario"),))

        leak = self.control.current() if self.control is not None else None
        devices: list[DeviceSample] = []
        processes: list[ProcessSample] = []
        problems: list[Problem] = []
        for index in range(self.scenario.gpu_count):
            spec = self.scenario.gpu(index)
            if index in lost:
                problems.append(Problem(Kind.GPU_LOST, f"fake: GPU {index} lost (gpu_lost event)"))
                if index in xids:  # as the NVML backend does: a lost GPU's last XID stays visible
                    devices.append(self._sample(index, spec, {"DCGM_FI_DEV_XID_ERRORS": float(xids[index])}))
                continue
            # Processes fill the GPU in file order; a leak stops growing when the memory is full.
            room = spec.memory_total_mib - spec.reserved_mib - spec.base_used_mib
            used = spec.base_used_mib
            for p in self.scenario.processes:
                mib = self._process_mib(p, t) if p.gpu == index else None
                if mib is None:
                    continue
                mib = min(mib, room)
                room -= mib
                used += mib
                identity = ProcessIdentity(p.process, p.model_name, p.pod)
                processes.append(ProcessSample(index, fake_uuid(index), p.pid, int(mib * 1024 * 1024), identity))
            if leak is not None and leak.gpu == index:
                mib = min(leak.mib, room)
                room -= mib
                used += mib
                identity = ProcessIdentity("python3")
                processes.append(ProcessSample(index, fake_uuid(index), leak.pid, int(mib * 1024 * 1024), identity))
            values = {**self._values(spec, used, xids.get(index, 0)), **overrides.get(index, {})}
            devices.append(self._sample(index, spec, values))
        return Snapshot(tuple(devices), tuple(processes), tuple(problems))

    def close(self) -> None:
        pass
