"""CPU time of processes and of the host over a window, from /proc: what tells rule evaluation
that is slow from rule evaluation that waits for a core. A group's evaluation time is wall time;
on a host whose cores are all busy it grows with everything else that runs there."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float:
    """User plus system CPU seconds of one process (all its threads) so far; 0 for one that is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    fields = text.rpartition(")")[2].split()  # the name may hold spaces: split after its ')'
    try:
        return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND  # utime, stime (fields 14, 15)
    except (IndexError, ValueError):
        return 0.0


def host_cpu_seconds(proc: Path = Path("/proc")) -> tuple[float, float]:
    """(busy, total) CPU seconds of the host so far, summed over its CPUs; iowait counts as idle."""
    first = (proc / "stat").read_text().splitlines()[0].split()
    ticks = [int(v) for v in first[1:8]]  # user nice system idle iowait irq softirq
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / TICKS_PER_SECOND, sum(ticks) / TICKS_PER_SECOND


@dataclass(frozen=True)
class CpuSnapshot:
    at: float  # time.monotonic()
    host_busy: float
    host_total: float
    processes: dict[str, float]


def snapshot(pids: Mapping[str, int], proc: Path = Path("/proc")) -> CpuSnapshot:
    busy, total = host_cpu_seconds(proc)
    return CpuSnapshot(
        time.monotonic(), busy, total, {name: process_cpu_seconds(pid, proc) for name, pid in pids.items()}
    )


@dataclass(frozen=True)
class CpuUse:
    """Average use over a window: cores per process, and the host's busy share of all its CPUs."""

    seconds: float
    cores: dict[str, float]
    host_busy: float  # 0..1 of every CPU
    cpus: int

    def render(self) -> str:
        procs = ", ".join(f"{name} {cores:.2f}" for name, cores in self.cores.items())
        return (
            f"CPU over the last {self.seconds:.0f} s (cores of {self.cpus}): {procs}; "
            f"host busy {100 * self.host_busy:.0f}%"
        )


def between(before: CpuSnapshot, after: CpuSnapshot) -> CpuUse:
    wall = max(after.at - before.at, 1e-9)
    total = max(after.host_total - before.host_total, 1e-9)
    return CpuUse(
        seconds=wall,
        cores={name: (after.processes[name] - before.processes.get(name, 0.0)) / wall for name in after.processes},
        host_busy=(after.host_busy - before.host_busy) / total,
        cpus=os.cpu_count() or 1,
    )
