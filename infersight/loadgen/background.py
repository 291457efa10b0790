"""A load-generator run in a background thread, so the caller can watch monitoring meanwhile.

``infersight validate`` times its fault actions from the run's start and stops the run on Ctrl-C;
the end-to-end tests watch Prometheus while it runs. An error in the run is kept for the caller's
thread, never lost in the background one."""

from __future__ import annotations

import threading
from collections.abc import Callable

from infersight.loadgen import runner
from infersight.loadgen.scenario import Scenario


class BackgroundRun:
    """Its start time (Unix) and a thread-safe stop arrive through ``RunOptions.on_start``."""

    def __init__(
        self, scenario: Scenario, opts: runner.RunOptions, on_start: Callable[[float], None] | None = None
    ) -> None:
        self.start_time = 0.0
        self.stop: Callable[[], None] = lambda: None  # a no-op until the run has started
        self.outcome: runner.RunOutcome | None = None
        self.error: BaseException | None = None
        self._on_start = on_start
        opts.on_start = self._started
        self._thread = threading.Thread(target=self._run, args=(scenario, opts), name="loadgen", daemon=True)

    def _started(self, t0: float, stop: Callable[[], None]) -> None:
        self.start_time, self.stop = t0, stop
        if self._on_start is not None:
            self._on_start(t0)

    def _run(self, scenario: Scenario, opts: runner.RunOptions) -> None:
        try:
            self.outcome = runner.run(scenario, opts)
        except BaseException as exc:  # handed to the caller's thread by result()
            self.error = exc

    def begin(self) -> BackgroundRun:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def result(self) -> runner.RunOutcome:
        """The finished run's outcome; an error of the run is raised here, in the caller's thread."""
        if self.running:
            raise RuntimeError("the load generator is still running")
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome
