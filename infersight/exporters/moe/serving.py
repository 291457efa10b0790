"""Serving the counts: one HTTP endpoint per worker process, on ``base port + local rank``.

Why per worker and not a merged multiprocess directory:
- the counts live in each worker's device memory, and only that worker can read them; a shared
  directory would need a host write per step, which the counting design exists to avoid;
- a merged directory keeps a dead worker's files, so a restarted worker's new counts are summed
  with its predecessor's (double counting) unless someone cleans up at exactly the right time;
- here a restart simply starts the same series (same port, same ``rank``) from 0 again: a counter
  reset, which ``rate()`` handles. No state survives the process, so nothing is counted twice.

The endpoint lives in its own registry, never vLLM's, so vLLM's ``/metrics`` gains no series and
two processes never serve the same series. The runtime is created once per process, lazily,
when the first MoE layer registers; a forked child notices the pid change and gets its own.
"""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from infersight.exporters.common.health import ExporterHealth, Problem
from infersight.exporters.common.sampler import BackgroundSampler
from infersight.exporters.common.server import MetricsServer, ServeError, exposure_warnings
from infersight.exporters.moe.balance import BalanceWindow
from infersight.exporters.moe.counting import CounterSet
from infersight.exporters.moe.cpus import unpinned_threads
from infersight.exporters.moe.logs import get_logger
from infersight.exporters.moe.rendering import ExpertLoadCollector, Exported
from infersight.exporters.moe.settings import Settings, SettingsError
from infersight.exporters.moe.topology import RankInfo
from infersight.exporters.moe.transfer import HostReader

log = get_logger(__name__)

EXPORTER = "moe"
BACKEND = "device-counter"  # index_add_ in the model step; EPLB buffers are not needed


class Runtime:
    """This process's counters, their background reader and their HTTP endpoint."""

    def __init__(self, settings: Settings, rank: RankInfo):
        self.settings = settings
        self.rank = rank
        self.pid = os.getpid()
        self.counters = CounterSet()
        self._reader = HostReader()
        self._window = BalanceWindow(settings.window_s)  # touched by the sampler thread only
        self.health = ExporterHealth(EXPORTER, BACKEND, stale_after=max(10.0, 5 * settings.interval_s))
        self.sampler: BackgroundSampler[Exported] = BackgroundSampler(
            "infersight-moe", self._collect, settings.interval_s, self.health
        )
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(
            ExpertLoadCollector(lambda: self.sampler.latest, rank.label, settings.window_s, settings.per_expert)
        )
        self.registry.register(self.health)
        self.port: int | None = None
        self._server: MetricsServer | None = None

    def _collect(self) -> tuple[Exported, Sequence[Problem]]:
        totals = self.counters.totals(self._reader.read(self.counters.counters()))
        return Exported(totals, self._window.update(time.monotonic(), totals)), ()

    def start(self) -> Runtime:
        with unpinned_threads() as cpus:  # off the worker's compute cores (cpus.py)
            self._start_threads()
        if cpus is not None:
            log.info("infersight MoE exporter: rank %s threads on CPUs %s", self.rank.label, sorted(cpus))
        return self

    def _start_threads(self) -> None:
        self.sampler.start()
        addr, web = self.settings.addr, self.settings.web
        try:
            port = self.settings.port_for(self.rank.local_rank)
            self._server = MetricsServer(self.registry, addr, port, web, "infersight MoE exporter").start()
        except (ServeError, SettingsError, ssl.SSLError, OSError) as exc:
            # Counting goes on (it is cheap and harmless); only this endpoint is missing.
            log.error("infersight MoE exporter: rank %s cannot serve: %s", self.rank.label, exc)
            return
        self.port = port
        for warning in exposure_warnings(addr, web):
            log.warning("infersight MoE exporter: %s", warning)
        log.info("infersight MoE exporter: rank %s serving on %s", self.rank.label, self._server.url)

    def stop(self) -> None:
        self.sampler.stop()
        if self._server is not None:
            self._server.stop()
            self._server = None


_lock = threading.Lock()
_runtime: Runtime | None = None


def runtime(settings: Settings, rank: RankInfo) -> Runtime:
    """The process's runtime, started on first use."""
    global _runtime
    with _lock:
        if _runtime is None or _runtime.pid != os.getpid():
            _runtime = Runtime(settings, rank).start()
        return _runtime


def current() -> Runtime | None:
    """The process's runtime if one was started here (not one inherited through fork)."""
    with _lock:
        return _runtime if _runtime is not None and _runtime.pid == os.getpid() else None
