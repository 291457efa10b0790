"""The action executor: performs a scenario's ``actions:`` at their offsets from the run's start,
one after another in a thread of its own, and records how each went.

An action whose hook is missing is ``skipped`` (with the reason); a hook that raises is ``failed``
(with its message); an action the run ended before is ``skipped``. A GPU leak still growing, or
an engine still paused or throttled, when the scenario ends is undone by :meth:`ActionExecutor.finish`, so one
scenario's fault never becomes the next one's false positive.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from infersight.loadgen.scenario import Action, EngineThrottleStart, GpuLeakStart
from infersight.validate.controls import ControlError, Controls, Hook
from infersight.validate.timeline import ActionOutcome

log = logging.getLogger(__name__)


class ActionExecutor:
    def __init__(self, actions: Sequence[Action], controls: Controls, clock: Callable[[], float] = time.time):
        self.actions = sorted(actions, key=lambda a: a.at)
        self.controls = controls
        self._clock = clock
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._outcomes: list[ActionOutcome] = []
        self._leaking = False
        self._paused = False
        self._throttled = False
        self._running: tuple[Action, float, float] | None = None

    @property
    def outcomes(self) -> list[ActionOutcome]:
        with self._lock:
            return list(self._outcomes)

    def _hook(self, action: Action) -> Hook | None:
        c = self.controls
        leak = c.gpu_leak
        if action.do in ("gpu_leak_start", "gpu_leak_stop"):
            if leak is None:
                return None
            rate = action.mib_per_second if isinstance(action, GpuLeakStart) else 0.0
            return lambda: leak(rate)
        throttle = c.engine_throttle
        if isinstance(action, EngineThrottleStart):
            return None if throttle is None else lambda: throttle(action.stopped_share, action.period.total_seconds)
        hooks: dict[str, Hook | None] = {
            "server_kill": c.server_kill,
            "target_down": c.target_down,
            "target_up": c.target_up,
            "engine_pause": c.engine_pause,
            "engine_resume": c.engine_resume,
            "engine_unthrottle": c.engine_unthrottle,
        }
        return hooks[action.do]

    def perform(self, action: Action, planned_at: float) -> ActionOutcome:
        """Run one action now (no waiting); never raises for a hook's failure."""
        hook = self._hook(action)
        if hook is None:
            return ActionOutcome(
                action.name, action.do, planned_at, "skipped", detail=self.controls.reason_missing(action.do)
            )
        started = self._clock()
        self._running = (action, planned_at, started)
        log.info("action %s (%s)", action.name, action.do)
        try:
            hook()
        except ControlError as exc:
            return ActionOutcome(action.name, action.do, planned_at, "failed", started, self._clock(), str(exc))
        finally:
            self._running = None
        if action.do == "gpu_leak_start":
            self._leaking = True
        elif action.do == "gpu_leak_stop":
            self._leaking = False
        elif action.do in ("engine_pause", "engine_resume"):
            self._paused = action.do == "engine_pause"
        elif action.do in ("engine_throttle", "engine_unthrottle"):
            self._throttled = action.do == "engine_throttle"
        return ActionOutcome(action.name, action.do, planned_at, "done", started, self._clock())

    def _record(self, outcome: ActionOutcome) -> None:
        with self._lock:
            self._outcomes.append(outcome)

    def _run(self, run_start: float) -> None:
        for action in self.actions:
            planned = run_start + action.at.total_seconds
            if self._cancel.wait(max(0.0, planned - self._clock())):
                self._record(ActionOutcome(action.name, action.do, planned, "skipped", detail="the run ended first"))
                continue
            self._record(self.perform(action, planned))

    def start(self, run_start: float) -> None:
        """Start performing the actions, timed from ``run_start`` (Unix time)."""
        if self.actions:
            self._thread = threading.Thread(target=self._run, args=(run_start,), name="fault-actions", daemon=True)
            self._thread.start()

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float) -> bool:
        """Wait for every action to be performed; False if still busy after ``timeout`` s."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.busy

    def finish(self, timeout: float = 0.0) -> list[ActionOutcome]:
        """Skip what has not started, wait up to ``timeout`` s for a running hook, stop a leak left
        growing and let go of an engine left paused or throttled; every outcome so far."""
        self._cancel.set()
        self.wait(timeout)
        running = self._running
        if self.busy and running is not None:
            action, planned, started = running
            detail = f"still running {self._clock() - started:.0f}s after it started, when the scenario ended"
            self._record(ActionOutcome(action.name, action.do, planned, "failed", started, None, detail))
        c = self.controls
        leak = c.gpu_leak
        if self._leaking and leak is not None:
            self._leaking = not _undone(lambda: leak(0.0), "stop the GPU leak")
        if self._paused and c.engine_resume is not None:
            self._paused = not _undone(c.engine_resume, "resume the paused engine")
        if self._throttled and c.engine_unthrottle is not None:
            self._throttled = not _undone(c.engine_unthrottle, "let go of the throttled engine")
        return self.outcomes


def _undone(undo: Hook, what: str) -> bool:
    """Run a fault's undo after the scenario; False (and a warning) when it failed."""
    try:
        undo()
    except ControlError as exc:
        log.warning("could not %s after the scenario: %s", what, exc)
        return False
    return True
