"""The MoE exporter's threads leave the worker's compute binding (infersight.exporters.moe.cpus).

A helper thread stands in for vLLM's bound worker thread: it binds itself to one CPU, as the
OpenMP runtime binds the worker's main thread, and starts threads inside ``unpinned_threads``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from infersight.exporters.moe import cpus

HOST = os.sched_getaffinity(0)


def _in_bound_thread(bound: set[int], parent: int, body: Callable[[], object]) -> dict[str, object]:
    """Run ``body`` in a thread bound to ``bound``; return what it saw."""
    seen: dict[str, object] = {}

    def run() -> None:
        os.sched_setaffinity(0, bound)
        with cpus.unpinned_threads(parent) as got:
            seen["yielded"] = got
            seen["inner"] = body()
        seen["after"] = os.sched_getaffinity(0)

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    return seen


def _affinity_of_a_new_thread() -> set[int]:
    out: list[set[int]] = []
    t = threading.Thread(target=lambda: out.append(os.sched_getaffinity(0)))
    t.start()
    t.join(10)
    return out[0]


@pytest.mark.skipif(len(HOST) < 2, reason="needs two CPUs to bind one thread narrower than the process")
def test_threads_started_inside_run_on_the_process_cpus_and_the_caller_keeps_its_binding() -> None:
    one = {min(HOST)}
    seen = _in_bound_thread(one, os.getpid(), _affinity_of_a_new_thread)  # this process's main thread: HOST
    assert seen["inner"] == HOST
    assert seen["yielded"] == HOST
    assert seen["after"] == one


@pytest.mark.skipif(len(HOST) < 2, reason="needs two CPUs to bind one thread narrower than the process")
def test_caller_put_back_even_when_the_block_raises() -> None:
    def boom() -> object:
        raise RuntimeError("starting a thread failed")

    seen: dict[str, object] = {}

    def run() -> None:
        os.sched_setaffinity(0, {min(HOST)})
        with pytest.raises(RuntimeError), cpus.unpinned_threads(os.getpid()):
            boom()
        seen["after"] = os.sched_getaffinity(0)

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert seen["after"] == {min(HOST)}


def test_unchanged_where_nothing_was_bound() -> None:
    seen = _in_bound_thread(HOST, os.getpid(), _affinity_of_a_new_thread)  # as on a GPU worker
    assert seen["yielded"] is None
    assert seen["inner"] == HOST


def test_unchanged_when_the_parent_is_gone() -> None:
    gone = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000  # above any live pid
    assert cpus.started_with(gone) is None
    seen = _in_bound_thread({min(HOST)}, gone, _affinity_of_a_new_thread)
    assert seen["yielded"] is None
    assert seen["inner"] == {min(HOST)}
