"""An exporter's own health: ``infersight_exporter_{up,info,collection_duration_seconds,errors_total,
last_success_timestamp_seconds}``, all labelled ``exporter``. Names come from the catalog."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from infersight import __version__, catalog

UP = catalog.get("infersight_exporter_up")
INFO = catalog.get("infersight_exporter_info")
DURATION = catalog.get("infersight_exporter_collection_duration_seconds")
ERRORS = catalog.get("infersight_exporter_errors_total")
LAST_SUCCESS = catalog.get("infersight_exporter_last_success_timestamp_seconds")

# A collection that raised something no backend anticipated (a bug, not a driver state).
INTERNAL_ERROR = "internal"


@dataclass(frozen=True)
class Problem:
    """One thing that went wrong during a collection.

    ``kind`` is a short, fixed vocabulary (it becomes the ``kind`` label); ``detail`` goes to logs
    only. A fatal problem means the collection is incomplete, so ``up`` reads 0 until one succeeds.
    """

    kind: str
    detail: str
    fatal: bool = True


class ExporterHealth(Collector):
    """Thread-safe record of the sampler's outcomes, exposed as the catalog's health metrics.

    ``up`` is 1 only when the last collection had no fatal problem AND finished recently enough
    (``stale_after`` seconds) AND the sampler thread, once started, is still running; a sampler stuck
    inside a hung driver call, or one whose thread ended, therefore reads down.
    """

    def __init__(
        self,
        exporter: str,
        backend: str,
        known_kinds: Iterable[str] = (),
        stale_after: float = float("inf"),
        clock: Callable[[], float] = time.time,
    ):
        self.exporter = exporter
        self.backend = backend
        self.stale_after = stale_after
        self._clock = clock
        self._lock = threading.Lock()
        # Pre-seeded at 0 so increase() sees the first real error of each kind.
        self._errors: dict[str, int] = dict.fromkeys(sorted({*known_kinds, INTERNAL_ERROR}), 0)
        self._ok = False
        self._finished_at: float | None = None
        self._duration: float | None = None
        self._last_success: float | None = None
        self._sampler_alive: Callable[[], bool] | None = None

    def watch_sampler(self, alive: Callable[[], bool]) -> None:
        """From now on ``up`` also needs ``alive()``: a sampler thread that ended, for any reason,
        reads down at once rather than after ``stale_after`` (which a long interval makes long)."""
        with self._lock:
            self._sampler_alive = alive

    def record(self, started: float, finished: float, problems: Sequence[Problem]) -> None:
        """Account one finished collection (wall-clock seconds)."""
        with self._lock:
            for p in problems:
                self._errors[p.kind] = self._errors.get(p.kind, 0) + 1
            self._ok = not any(p.fatal for p in problems)
            self._finished_at = finished
            self._duration = max(0.0, finished - started)
            if self._ok:
                self._last_success = finished

    def errors(self) -> dict[str, int]:
        with self._lock:
            return dict(self._errors)

    @property
    def up(self) -> bool:
        with self._lock:
            fresh = self._finished_at is not None and self._clock() - self._finished_at <= self.stale_after
            alive = self._sampler_alive is None or self._sampler_alive()
            return self._ok and fresh and alive

    def collect(self) -> Iterator[Metric]:
        up = self.up
        with self._lock:
            errors = dict(self._errors)
            duration, last_success = self._duration, self._last_success
        lbl = [self.exporter]
        g = GaugeMetricFamily(UP.name, UP.help, labels=UP.labels)
        g.add_metric(lbl, 1.0 if up else 0.0)
        yield g
        g = GaugeMetricFamily(INFO.name, INFO.help, labels=INFO.labels)
        g.add_metric([self.exporter, self.backend, __version__], 1.0)
        yield g
        if duration is not None:
            g = GaugeMetricFamily(DURATION.name, DURATION.help, labels=DURATION.labels)
            g.add_metric(lbl, duration)
            yield g
        # prometheus_client appends _total to counter names itself.
        c = CounterMetricFamily(ERRORS.name.removesuffix("_total"), ERRORS.help, labels=ERRORS.labels)
        for kind, n in errors.items():
            c.add_metric([self.exporter, kind], float(n))
        yield c
        if last_success is not None:
            g = GaugeMetricFamily(LAST_SUCCESS.name, LAST_SUCCESS.help, labels=LAST_SUCCESS.labels)
            g.add_metric(lbl, last_success)
            yield g
