"""Scenario files for the fake backend: a node's GPUs, the processes on them and a timeline of faults.

    description: A vLLM worker on GPU 0 leaks 64 MiB/s.
    loop_after: 10m                 # optional: replay from the start after this long
    gpus:
      - model: NVIDIA H100 80GB HBM3 (fake)
        count: 2
        memory_total_mib: 81559
        gpu_util: 80
    processes:
      - {pid: 4242, gpu: 0, process: python3, model_name: llama-8b, memory_mib: 30000, grow_mib_per_s: 64}
      - {pid: 4343, gpu: 1, memory_mib: 20000, start: 20s, stop: 60s}
    events:
      - {at: 30s, kind: xid, gpu: 0, xid: 79}
      - {at: 30s, kind: gpu_lost, gpu: 0}
      - {at: 90s, kind: gpu_recovered, gpu: 0}
      - {at: 100s, kind: set, gpu: 1, field: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, value: 2}  # any served field
      - {at: 120s, kind: driver_unavailable}
      - {at: 130s, kind: driver_available}

Bundled scenarios live in ``scenarios/`` beside this module and are named without ``.yaml``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from infersight.durations import Duration
from infersight.exporters.common.errors import InputFileError
from infersight.exporters.gpu.model import DEVICE_FIELDS
from infersight.inputs import read_yaml, validate

EventKind = Literal["xid", "gpu_lost", "gpu_recovered", "set", "driver_unavailable", "driver_available"]
_GPU_EVENTS = ("xid", "gpu_lost", "gpu_recovered", "set")


class ScenarioError(InputFileError):
    what = "scenario"


class _Strict(BaseModel):
    # finite numbers only: pydantic would read the strings "1e400" or "Infinity" as floats
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GpuSpec(_Strict):
    model: str = Field(default="NVIDIA H100 80GB HBM3 (fake)", min_length=1, max_length=96)
    count: int = Field(default=1, ge=1, le=64)
    memory_total_mib: float = Field(default=81559, gt=0)
    reserved_mib: float = Field(default=512, ge=0)
    base_used_mib: float = Field(default=0, ge=0)  # driver and context overhead outside any process
    gpu_util: float = Field(default=0, ge=0, le=100)
    mem_copy_util: float = Field(default=0, ge=0, le=100)
    power_w: float = Field(default=70, ge=0)
    power_limit_w: float = Field(default=700, gt=0)  # enforced; the board's default is 700 W (fake.py)
    temp_c: float = Field(default=35, ge=-40, le=150)
    sm_clock_mhz: float = Field(default=1980, ge=0)
    mem_clock_mhz: float = Field(default=2619, ge=0)
    memory_temp_c: float = Field(default=45, ge=-40, le=150)
    # Profiling ratios (0-1) exist only with DCGM; left unset they are not served.
    gr_engine_active: float | None = Field(default=None, ge=0, le=1)
    dram_active: float | None = Field(default=None, ge=0, le=1)
    tensor_active: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _fits(self) -> GpuSpec:
        if self.reserved_mib + self.base_used_mib > self.memory_total_mib:
            raise ValueError("reserved_mib + base_used_mib exceed memory_total_mib")
        return self


class ProcessSpec(_Strict):
    pid: int = Field(ge=2, le=4_194_304)
    gpu: int = Field(ge=0)
    process: str = Field(default="python3", pattern=r"^[A-Za-z0-9._:+-]{1,32}$")
    model_name: str = Field(default="", max_length=128)
    pod: str = Field(default="", max_length=128)
    memory_mib: float = Field(ge=0)
    grow_mib_per_s: float = Field(default=0, ge=0)
    max_mib: float | None = Field(default=None, ge=0)
    start: Duration = Duration(0)
    stop: Duration | None = None

    @model_validator(mode="after")
    def _lifetime(self) -> ProcessSpec:
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"stop ({self.stop}) must come after start ({self.start})")
        return self


class EventSpec(_Strict):
    at: Duration
    kind: EventKind
    gpu: int | None = Field(default=None, ge=0)
    xid: int | None = Field(default=None, ge=1, le=65535)
    field: str | None = None  # kind: set -- a served DCGM field name
    value: float | None = None  # kind: set -- its value from then on

    @model_validator(mode="after")
    def _fields_for_kind(self) -> EventSpec:
        if self.kind in _GPU_EVENTS and self.gpu is None:
            raise ValueError(f"a {self.kind} event needs gpu: <index>")
        if self.kind not in _GPU_EVENTS and self.gpu is not None:
            raise ValueError(f"a {self.kind} event concerns the whole driver; remove gpu")
        if (self.kind == "xid") != (self.xid is not None):
            raise ValueError("xid: <code> belongs to, and is required by, kind: xid events")
        if (self.kind == "set") != (self.field is not None and self.value is not None):
            raise ValueError("field: <DCGM name> and value: <number> belong to, and are required by, kind: set events")
        if self.field is not None and self.field not in DEVICE_FIELDS:
            raise ValueError(f"field {self.field!r} is not served by this exporter; one of {', '.join(DEVICE_FIELDS)}")
        return self


class Scenario(_Strict):
    description: str = ""
    loop_after: Duration | None = None
    gpus: list[GpuSpec] = Field(min_length=1)
    processes: list[ProcessSpec] = []
    events: list[EventSpec] = []

    @property
    def gpu_count(self) -> int:
        return sum(g.count for g in self.gpus)

    def gpu(self, index: int) -> GpuSpec:
        for spec in self.gpus:
            if index < spec.count:
                return spec
            index -= spec.count
        raise IndexError(index)

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        n = self.gpu_count
        problems = [
            f"processes.{i}.gpu: {p.gpu} is not a GPU index (0-{n - 1})"
            for i, p in enumerate(self.processes)
            if p.gpu >= n
        ]
        problems += [
            f"events.{i}.gpu: {e.gpu} is not a GPU index (0-{n - 1})"
            for i, e in enumerate(self.events)
            if e.gpu is not None and e.gpu >= n
        ]
        seen: set[int] = set()
        for i, p in enumerate(self.processes):
            if p.pid in seen:
                problems.append(f"processes.{i}.pid: {p.pid} appears twice; give each process its own pid")
            seen.add(p.pid)
        if self.loop_after is not None and self.loop_after.ms == 0:
            problems.append("loop_after: must be longer than 0s")
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self


def parse_scenario(data: Any, source: str) -> Scenario:
    return validate(
        Scenario, data, source, ScenarioError, mapping_hint="a mapping with gpus, processes and events"
    )  # fmt: skip


def bundled_names() -> list[str]:
    folder = resources.files("infersight.exporters.gpu").joinpath("scenarios")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A bundled scenario by name (``leak``) or a YAML file by path. Raises only ScenarioError."""
    path = Path(name_or_path)
    if not path.suffix and "/" not in name_or_path:
        if name_or_path not in bundled_names():
            raise ScenarioError(
                name_or_path,
                [
                    (
                        "(name)",
                        f"no bundled scenario of that name; bundled: {', '.join(bundled_names())}, or a file path",
                    )
                ],
            )
        text = resources.files("infersight.exporters.gpu").joinpath(f"scenarios/{name_or_path}.yaml").read_text()
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:  # a bundled file: a packaging bug, still reported the same way
            raise ScenarioError(name_or_path, [("(file)", f"not valid YAML: {exc}")]) from None
    else:
        data = read_yaml(path, ScenarioError, name_or_path)
    return parse_scenario(data, name_or_path)
