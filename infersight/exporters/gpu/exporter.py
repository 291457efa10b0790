"""The GPU exporter assembled: backend -> background sampler (+ /proc attribution) -> collector ->
HTTP(S) server, plus the exporter's own health metrics."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from prometheus_client import CollectorRegistry

from infersight.exporters.common.health import ExporterHealth, Problem
from infersight.exporters.common.sampler import BackgroundSampler
from infersight.exporters.common.server import MetricsServer
from infersight.exporters.common.webconfig import WebConfig
from infersight.exporters.gpu.attribution import ProcAttribution
from infersight.exporters.gpu.backend import GpuBackend
from infersight.exporters.gpu.collector import DEFAULT_MAX_PROCESS_SERIES, GpuCollector
from infersight.exporters.gpu.model import ALL_KINDS, Snapshot
from infersight.loopback import LOOPBACK

EXPORTER = "gpu"
DEFAULT_PORT = 9835
DEFAULT_HOST = LOOPBACK


def command(backend: str, port: int, hostname: str, *options: str, interval: str = "250ms") -> list[str]:
    """The command line that runs this exporter as a process of its own."""
    return [
        sys.executable, "-m", "infersight.cli", "exporter", "gpu", f"--backend={backend}",
        f"--port={port}", f"--interval={interval}", f"--hostname={hostname}", *options,
    ]  # fmt: skip


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuExporterOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    interval_s: float = 5.0
    hostname: str = ""
    max_process_series: int = DEFAULT_MAX_PROCESS_SERIES
    proc_root: Path | None = Path("/proc")  # None: do not attribute processes
    web: WebConfig = field(default_factory=WebConfig)


class GpuExporter:
    def __init__(self, backend: GpuBackend, options: GpuExporterOptions):
        self.backend = backend
        self.options = options
        # Down when no collection finished for three intervals: a hung driver call reads as down.
        stale_after = max(3 * options.interval_s, options.interval_s + 10)
        self.health = ExporterHealth(EXPORTER, backend.name, known_kinds=ALL_KINDS, stale_after=stale_after)
        self.attribution = ProcAttribution(options.proc_root) if options.proc_root is not None else None
        self.sampler: BackgroundSampler[Snapshot] = BackgroundSampler(
            EXPORTER, self._collect, options.interval_s, self.health
        )
        self.registry = CollectorRegistry()
        self.registry.register(GpuCollector(lambda: self.sampler.latest, options.hostname, options.max_process_series))
        self.registry.register(self.health)
        self.server = MetricsServer(self.registry, options.host, options.port, options.web, "infersight GPU exporter")

    def _collect(self) -> tuple[Snapshot, Sequence[Problem]]:
        snap = self.backend.collect()
        problems = list(snap.problems)
        if self.attribution is None:
            return snap, problems
        processes = []
        for p in snap.processes:
            if p.identity is None:
                identity, problem = self.attribution.identify(p.pid)
                p = replace(p, identity=identity)
                if problem is not None:
                    problems.append(problem)
            processes.append(p)
        self.attribution.forget_except(p.pid for p in processes)
        return Snapshot(snap.devices, tuple(processes), tuple(problems)), problems

    def start(self) -> GpuExporter:
        """Serve first (so a failing bind reports before any thread runs), then sample."""
        self.server.start()
        self.sampler.start()
        if self.backend.name == "fake":
            scenario = getattr(self.backend, "scenario_name", "")
            log.warning(
                "FAKE GPU backend (scenario %s): these are scripted values, not readings of real GPUs; "
                'infersight_exporter_info{backend="fake"} marks them',
                scenario,
            )
        log.info("serving %s (backend %s, every %.3gs)", self.server.url, self.backend.name, self.options.interval_s)
        return self

    def stop(self) -> None:
        self.sampler.stop()
        self.server.stop()
        self.backend.close()

    def run_until_signalled(self) -> None:
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        try:
            while not done.wait(1.0):
                pass
        finally:
            self.stop()
