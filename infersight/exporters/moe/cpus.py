"""The MoE exporter's threads are not pinned to the worker's compute cores.

vLLM's CPU backend binds each worker's OpenMP threads, its main thread among them, to the worker's
compute cores (``VLLM_CPU_OMP_THREADS_BIND``), and keeps the process's other CPUs for everything
else. A thread inherits the affinity of the thread that starts it, so the exporter's sampler and
HTTP threads, started from the worker's main thread while the model loads, would answer scrapes
only in the gaps the forward passes leave on those cores: on a busy worker a scrape times out and
``InfersightExporterDown`` reads a live exporter as down.

The process was started with its parent's CPUs (vLLM's engine core starts the workers, before any
binding); the threads started here may run on all of them. Where nothing was bound (vLLM on GPUs,
``nobind``) this changes nothing. The calling thread's own binding is put back at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from infersight.exporters.moe.logs import get_logger

log = get_logger(__name__)


def started_with(parent: int | None = None) -> set[int] | None:
    """The CPUs the process was started with (its parent's), or None where they cannot be read."""
    try:
        return os.sched_getaffinity(os.getppid() if parent is None else parent)
    except (OSError, AttributeError):  # the parent is gone; a platform without affinity
        return None


def _narrower_than_started(parent: int | None) -> tuple[set[int], set[int]] | None:
    """(this thread's CPUs, the process's) when this thread is bound narrower; else None."""
    try:
        own = os.sched_getaffinity(0)
    except (OSError, AttributeError):
        return None
    wider = started_with(parent)
    return (own, wider) if wider is not None and own < wider else None


@contextmanager
def unpinned_threads(parent: int | None = None) -> Iterator[set[int] | None]:
    """Threads started inside the block may run on every CPU the process was started with, not only
    on the calling thread's narrower binding. Yields the CPUs they get, or None when unchanged."""
    bound = _narrower_than_started(parent)
    if bound is not None:
        try:
            os.sched_setaffinity(0, bound[1])
        except OSError as exc:  # a cpuset that shrank since: keep the binding, the threads still work
            log.warning("infersight MoE exporter: its threads stay on CPUs %s: %s", sorted(bound[0]), exc)
            bound = None
    try:
        yield None if bound is None else bound[1]
    finally:
        if bound is not None:
            os.sched_setaffinity(0, bound[0])
