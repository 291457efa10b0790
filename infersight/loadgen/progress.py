"""Live progress (rich): a bar over the scenario's timeline, the current stage, the send rate of
the last few seconds against the requested one, requests in flight and errors.

It redraws from the event loop at a fixed, low rate (no refresh thread), so the cost of drawing
is small, predictable and itself visible in the schedule lag it could cause.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from infersight.loadgen.scenario import Scenario
from infersight.loadgen.scheduler import RunState

TICK_S = 0.5
RATE_WINDOW_S = 2.0


class LiveProgress:
    def __init__(self, scenario: Scenario, state: RunState, console: Console | None = None):
        self._scenario = scenario
        self._state = state
        self._total = scenario.scheduled_duration.total_seconds
        self._progress = Progress(
            TextColumn("[bold]{task.fields[stage]}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
            console=console or Console(stderr=True),
            auto_refresh=False,
            transient=False,
        )
        self._task = self._progress.add_task("run", total=self._total, stage="", detail="")
        self._samples: deque[tuple[float, int]] = deque()

    def _stage_at(self, elapsed: float) -> tuple[str, str]:
        for stage, start in zip(self._scenario.stages, self._scenario.stage_starts(), strict=True):
            if elapsed < start.total_seconds + stage.duration.total_seconds:
                return stage.name, stage.load_text
        return "drain", "-"

    def render(self, elapsed: float, now: float) -> None:
        state = self._state
        self._samples.append((now, state.sent))
        while len(self._samples) > 1 and now - self._samples[0][0] > RATE_WINDOW_S:
            self._samples.popleft()
        (t_first, n_first) = self._samples[0]
        rate = (state.sent - n_first) / (now - t_first) if now > t_first else 0.0
        stage, target = self._stage_at(elapsed)
        detail = (
            f"rate {rate:6.1f}/s (target {target})  in-flight {state.in_flight}  "
            f"sent {state.sent}  errors {state.errors}"
        )
        self._progress.update(self._task, completed=min(elapsed, self._total), stage=stage, detail=detail)
        self._progress.refresh()

    async def run(self, t0: float, clock: Callable[[], float] = time.perf_counter) -> None:
        """Redraw every tick until cancelled."""
        self._progress.start()
        try:
            while True:
                now = clock()
                self.render(max(0.0, now - t0), now)
                await asyncio.sleep(TICK_S)
        finally:
            now = clock()
            self.render(max(0.0, now - t0), now)
            self._progress.stop()
