"""Collection decoupled from scrapes: a daemon thread calls ``collect`` every ``interval`` seconds and
keeps the latest result, which the scrape handler serves. A slow or hung driver call therefore
delays the next sample, never a ``/metrics`` request.

``collect`` returns ``(value, problems)``. Driver states are problems, not exceptions; an exception
that still escapes is recorded as kind ``internal``, logged with its traceback once, and clears the
value so stale numbers are not served as current. If the thread itself ends anyway, the health
it reports to reads down from then on (``ExporterHealth.watch_sampler``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from infersight.exporters.common.health import INTERNAL_ERROR, ExporterHealth, Problem

T = TypeVar("T")
log = logging.getLogger(__name__)
# The longest sleep threading's waits accept; a longer interval would kill the thread after one sample.
MAX_INTERVAL_S = threading.TIMEOUT_MAX


class ProblemLog:
    """Logs a problem kind when it starts and when it clears, not on every sample (1 Hz spam
    would bury the one line that matters)."""

    def __init__(self, name: str):
        self.name = name
        self._active: dict[str, Problem] = {}

    def update(self, problems: Sequence[Problem]) -> None:
        now = {p.kind: p for p in problems}
        for kind, p in now.items():
            if kind not in self._active:
                level = logging.WARNING if p.fatal else logging.INFO
                log.log(level, "%s: %s: %s", self.name, kind, p.detail)
            else:
                log.debug("%s: still %s: %s", self.name, kind, p.detail)
        for kind in self._active.keys() - now.keys():
            log.info("%s: recovered from %s", self.name, kind)
        self._active = now

    def active(self, kind: str) -> bool:
        return kind in self._active


class BackgroundSampler(Generic[T]):
    def __init__(
        self,
        name: str,
        collect: Callable[[], tuple[T | None, Sequence[Problem]]],
        interval: float,
        health: ExporterHealth,
        clock: Callable[[], float] = time.time,
    ):
        if not 0 < interval <= MAX_INTERVAL_S:  # also refuses NaN
            raise ValueError(
                f"sampling interval must be more than 0 and at most {MAX_INTERVAL_S:.0f} s, got {interval}"
            )
        self.name = name
        self.interval = interval
        self._collect = collect
        self._health = health
        self._clock = clock
        self._problem_log = ProblemLog(name)
        self._latest: T | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples_taken = 0

    @property
    def latest(self) -> T | None:
        with self._lock:
            return self._latest

    def sample_once(self) -> None:
        started = self._clock()
        value: T | None
        try:
            value, problems = self._collect()
        except Exception as exc:  # never let a bug kill the sampler thread; report it instead
            if not self._problem_log.active(INTERNAL_ERROR):
                log.exception("%s: collection raised", self.name)
            value, problems = None, [Problem(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")]
        finished = self._clock()
        with self._lock:
            self._latest = value
            self.samples_taken += 1
        self._health.record(started, finished, problems)
        self._problem_log.update(problems)

    @property
    def running(self) -> bool:
        """The sampler thread was started and has not ended."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            next_due = time.monotonic()
            while not self._stop.is_set():
                self.sample_once()
                next_due = max(next_due + self.interval, time.monotonic())
                self._stop.wait(max(0.0, next_due - time.monotonic()))
        except BaseException as exc:  # the thread's last word: say so, count it; health already reads down
            log.critical("%s: the sampler thread stopped; up reads 0 until a restart", self.name, exc_info=True)
            now = self._clock()
            self._health.record(now, now, [Problem(INTERNAL_ERROR, f"sampler stopped: {type(exc).__name__}: {exc}")])

    def start(self) -> BackgroundSampler[T]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"{self.name}-sampler", daemon=True)
            self._health.watch_sampler(self._thread.is_alive)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
