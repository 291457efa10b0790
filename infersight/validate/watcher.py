"""The watcher: polls Prometheus's ``/api/v1/alerts`` and Alertmanager's ``/api/v2/alerts`` and
turns what it sees into :class:`AlertInterval` records (pending, firing, received, resolved).

Times are those of the poll that first saw each state, except the start of pending, which is
Prometheus's own ``activeAt``. The watcher keeps its largest gap between successful polls, so the
report can state how fine its times are (a starved machine can stall a poll for seconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from infersight.validate.apis import AlertmanagerApi, ApiError, PrometheusApi, parse_time
from infersight.validate.timeline import AlertInterval

Key = tuple[tuple[str, str], ...]


def _key(labels: dict[str, Any]) -> Key:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


class AlertWatcher:
    def __init__(
        self,
        prometheus: PrometheusApi,
        alertmanager: AlertmanagerApi | None,
        poll_s: float = 0.5,
        clock: Callable[[], float] = time.time,
    ):
        self.prometheus = prometheus
        self.alertmanager = alertmanager
        self.poll_s = poll_s
        self._clock = clock
        self._open: dict[Key, AlertInterval] = {}
        self._closed: list[AlertInterval] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.polls = 0
        self.errors: list[str] = []
        self.max_gap_s = 0.0
        self._last_ok: float | None = None

    # --- one poll (tests drive this directly) ---------------------------------------------------
    def poll_once(self) -> None:
        try:
            prom = self.prometheus.alerts()
        except ApiError as exc:
            self._error(str(exc))
            return
        am: list[dict[str, Any]] | None = None
        if self.alertmanager is not None:
            try:
                am = self.alertmanager.alerts()
            except ApiError as exc:
                self._error(str(exc))
        now = self._clock()
        with self._lock:
            self._apply(prom, am, now)
            self.polls += 1
            if self._last_ok is not None:
                self.max_gap_s = max(self.max_gap_s, now - self._last_ok)
            self._last_ok = now

    def _error(self, message: str) -> None:
        with self._lock:
            if len(self.errors) < 100:  # a dead API for minutes must not grow memory
                self.errors.append(message)

    def _apply(self, prom: list[dict[str, Any]], am: list[dict[str, Any]] | None, now: float) -> None:
        seen: set[Key] = set()
        for alert in prom:
            labels = {str(k): str(v) for k, v in alert.get("labels", {}).items()}
            key = _key(labels)
            state = alert.get("state")
            if state not in ("pending", "firing"):
                continue
            seen.add(key)
            active = alert.get("activeAt")
            pending_at = (
                min(now, parse_time(active)) if isinstance(active, str) and not active.startswith("0001") else now
            )
            interval = self._open.get(key)
            if interval is not None and pending_at > interval.pending_at + 0.001 and isinstance(active, str):
                # A later activeAt: it resolved and went pending again between two polls.
                interval.resolved_at = pending_at
                self._closed.append(self._open.pop(key))
                interval = None
            if interval is None:
                interval = AlertInterval(labels.get("alertname", "?"), labels, pending_at=pending_at)
                self._open[key] = interval
            if state == "firing" and interval.firing_at is None:
                interval.firing_at = now
        for key in [k for k in self._open if k not in seen]:
            interval = self._open.pop(key)
            interval.resolved_at = now
            self._closed.append(interval)
        if am is None:
            return
        for alert in am:  # active, suppressed or still unprocessed: either way it arrived
            interval = self._open.get(_key(alert.get("labels", {})))
            if interval is not None and interval.received_at is None:
                interval.received_at = now

    # --- results ---------------------------------------------------------------------------------
    def intervals(self) -> list[AlertInterval]:
        """Every interval seen so far (open ones included, copied), in order of pending."""
        with self._lock:
            every = [*self._closed, *self._open.values()]
            copies = [
                AlertInterval(i.name, dict(i.labels), i.pending_at, i.firing_at, i.received_at, i.resolved_at)
                for i in every
            ]
        return sorted(copies, key=lambda i: (i.pending_at, i.name))

    def active(self) -> list[AlertInterval]:
        with self._lock:
            return list(self._open.values())

    # --- background thread -----------------------------------------------------------------------
    def start(self) -> AlertWatcher:
        """Poll once in the caller's thread, then every ``poll_s`` in a background one: what is
        active when start() returns was seen before the caller went on. (An alert already firing,
        first seen by a background poll after the load began, would read as starting to fire
        inside the scenario.)"""
        self._stop.clear()
        self.poll_once()
        self._thread = threading.Thread(target=self._loop, name="alert-watcher", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.poll_once()
            self._stop.wait(max(0.0, self.poll_s - (time.monotonic() - began)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
