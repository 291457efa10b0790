"""The scheduler: sends the plan's open-loop requests when they are due, runs closed-loop
stages' streams back to back, and stops cleanly (Ctrl-C, deadline) without losing records.

Open loop means a request is sent at its due time whatever happened to earlier ones; the
client never waits for responses before sending. Each record keeps its due time and the moment
it was actually dispatched, so lag (and a run that fell behind) is measured, not assumed away.
The in-flight cap (``limits.max_in_flight``) protects the client's sockets; waiting on it shows
up as lag, never as a silently lower rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from infersight.loadgen.plan import Planner
from infersight.loadgen.records import RequestRecord, RequestSpec

Sender = Callable[[RequestSpec, RequestRecord], Awaitable[None]]
StopReason = Literal["completed", "interrupted", "max_duration"]


@dataclass
class RunState:
    """Live counters, read by the progress display."""

    sent: int = 0
    finished: int = 0
    errors: int = 0
    in_flight: int = 0


class Scheduler:
    def __init__(
        self,
        planner: Planner,
        plan: list[RequestSpec],
        send: Sender,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self._planner = planner
        self._scenario = planner.scenario
        self._plan = plan
        self._send = send
        self._clock = clock
        self._budget = self._scenario.limits.max_requests
        self._next_index = len(plan)  # closed-loop requests are numbered after the plan
        self._sem = asyncio.Semaphore(self._scenario.limits.max_in_flight)
        self._in_flight: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()
        self._t0 = 0.0
        self.records: list[RequestRecord] = []
        self.state = RunState()
        self.ended: StopReason = "completed"
        self.stopped_at: float | None = None  # offset from run start

    def stop(self, reason: StopReason) -> None:
        """Stop sending and cancel what is in flight; safe to call from a signal handler, twice."""
        if not self._stop.is_set():
            self.ended = reason
            self.stopped_at = self._clock() - self._t0
            self._stop.set()

    async def run(self, t0: float) -> None:
        """Play the scenario with the run's start at ``t0`` (on ``clock``); returns when every request
        has finished, or at the first stop (cancelled requests are recorded as such)."""
        self._t0 = t0
        loop = asyncio.get_running_loop()
        deadline = loop.call_later(
            max(0.0, t0 + self._scenario.limits.max_duration.total_seconds - self._clock()), self.stop, "max_duration"
        )
        drivers = [asyncio.create_task(self._open_loop())]
        starts = self._scenario.stage_starts()
        for i, stage in enumerate(self._scenario.stages):
            if stage.concurrency is not None:
                begin = starts[i].total_seconds
                drivers.append(asyncio.create_task(self._closed_stage(i, begin, begin + stage.duration.total_seconds)))
        work = asyncio.create_task(self._all_done(drivers))
        gate = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({work, gate}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            deadline.cancel()
            pending = [work, gate, *drivers, *self._in_flight]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _all_done(self, drivers: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*drivers)
        while self._in_flight:
            await asyncio.wait(set(self._in_flight))

    def _take(self) -> bool:
        if self._budget <= 0:
            return False
        self._budget -= 1
        return True

    async def _one(self, spec: RequestSpec) -> None:
        rec = RequestRecord(spec.index, spec.stage, spec.scheduled, prompt_tokens_planned=spec.prompt_tokens)
        rec.sent = self._clock() - self._t0
        self.records.append(rec)
        state = self.state
        state.sent += 1
        state.in_flight += 1
        try:
            await self._send(spec, rec)
        except asyncio.CancelledError:
            rec.error = "cancelled"
            raise
        except Exception as exc:  # a sender bug: still one named outcome, never an unretrieved task error
            rec.error, rec.error_type = "unexpected_error", type(exc).__name__
        finally:
            state.in_flight -= 1
            state.finished += 1
            if not rec.ok:
                state.errors += 1
            self._sem.release()

    async def _open_loop(self) -> None:
        clock, t0, sem = self._clock, self._t0, self._sem
        for spec in self._plan:
            assert spec.scheduled is not None
            delay = t0 + spec.scheduled - clock()
            if delay > 0:
                await asyncio.sleep(delay)
            if self._stop.is_set() or not self._take():
                return
            await sem.acquire()  # only waits at the in-flight cap; the wait is counted as lag
            task = asyncio.create_task(self._one(spec))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _closed_stage(self, stage: int, begin: float, end: float) -> None:
        delay = self._t0 + begin - self._clock()
        if delay > 0:
            await asyncio.sleep(delay)
        count = self._scenario.stages[stage].concurrency or 0
        await asyncio.gather(*(self._stream(stage, self._t0 + end) for _ in range(count)))

    async def _stream(self, stage: int, end: float) -> None:
        """One closed-loop stream: the next request goes when the previous one is done."""
        while self._clock() < end and not self._stop.is_set() and self._take():
            await self._sem.acquire()
            index, self._next_index = self._next_index, self._next_index + 1
            await self._one(self._planner.spec(stage, index, None))
