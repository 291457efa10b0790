"""One load run end to end: plan, connect, play the scenario, summarise, write results.

Results are written whatever happens after the first request is planned: on completion, on
Ctrl-C/SIGTERM (partial results, ``ended: interrupted``) and at the scenario's deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from infersight.loadgen.client import OpenAIStreamClient
from infersight.loadgen.plan import Planner
from infersight.loadgen.progress import LiveProgress
from infersight.loadgen.prompts import PromptFactory, Vocabulary
from infersight.loadgen.results import write_results
from infersight.loadgen.scenario import Scenario
from infersight.loadgen.scheduler import Scheduler, Sender
from infersight.loadgen.stats import summarize
from infersight.loadgen.target import served_model

RESULTS_FORMAT = 1
START_LEAD_S = 0.05  # the first request is due this long after setup, not already late


@dataclass
class RunOptions:
    target: str  # base URL, already checked by target.check_target
    out_dir: Path
    vocabulary: Vocabulary
    model: str | None = None
    progress: bool = False
    handle_signals: bool = True
    # Tests inject a sender (no HTTP) to drive the scheduler; None means the streaming client.
    sender: Sender | None = None
    clock: Callable[[], float] = field(default=time.perf_counter)
    # Called once as the clock starts, with the run's start as a Unix time and a thread-safe
    # stop: `infersight validate` times its fault actions from it and stops the run on Ctrl-C.
    on_start: Callable[[float, Callable[[], None]], None] | None = None


@dataclass
class RunOutcome:
    run: dict[str, Any]
    json_path: Path
    csv_path: Path

    @property
    def valid(self) -> bool:
        return bool(self.run["summary"]["valid"])

    @property
    def ended(self) -> str:
        return str(self.run["summary"]["ended"])


def _install_stop_signals(scheduler: Scheduler) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, scheduler.stop, "interrupted")
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals
            pass
    return installed


def _threadsafe_stop(scheduler: Scheduler) -> Callable[[], None]:
    loop = asyncio.get_running_loop()

    def stop() -> None:
        with contextlib.suppress(RuntimeError):  # the run already ended and its loop closed
            loop.call_soon_threadsafe(scheduler.stop, "interrupted")

    return stop


async def run_async(scenario: Scenario, opts: RunOptions) -> RunOutcome:
    planner = Planner(scenario, PromptFactory(opts.vocabulary, scenario.seed))
    plan, truncated = planner.open_loop()
    planned_by_stage = [0] * len(scenario.stages)
    for spec in plan:
        planned_by_stage[spec.stage] += 1
    # The plan (every prompt) is long-lived: move it out of the collector's way, so a full
    # collection during the run does not walk it and stall the event loop (visible as lag).
    gc.collect()
    gc.freeze()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    limits = scenario.limits
    # A fresh connection per request: a reused keep-alive connection races the server's idle
    # timer (uvicorn closes after 5 s, sooner in wall time after a stall) and the request fails
    # as "disconnected" although it never reached the server (how often: docs/results.md). A
    # loopback connect costs far less than the TTFT it is part of.
    connector = aiohttp.TCPConnector(limit=limits.max_in_flight, limit_per_host=limits.max_in_flight, force_close=True)
    # No cookies, no decompression: neither applies to an inference API, and both cost per request.
    jar = aiohttp.DummyCookieJar()
    async with aiohttp.ClientSession(connector=connector, cookie_jar=jar, auto_decompress=False) as session:
        model = opts.model or scenario.model
        if opts.sender is not None:
            send, model = opts.sender, model or "injected"
        else:
            model = model or await served_model(session, opts.target)
            client = OpenAIStreamClient(
                session,
                opts.target,
                model,
                scenario.endpoint,
                scenario.ignore_eos,
                limits.request_timeout.total_seconds,
                clock=opts.clock,
            )
            send = client.send
        scheduler = Scheduler(planner, plan, send, clock=opts.clock)
        signals = _install_stop_signals(scheduler) if opts.handle_signals else []
        t0 = opts.clock() + START_LEAD_S
        if opts.on_start is not None:
            opts.on_start(time.time() + (t0 - opts.clock()), _threadsafe_stop(scheduler))
        live = (
            asyncio.create_task(LiveProgress(scenario, scheduler.state).run(t0, opts.clock)) if opts.progress else None
        )
        try:
            await scheduler.run(t0)
        finally:
            if live is not None:
                live.cancel()
                await asyncio.gather(live, return_exceptions=True)
            for sig in signals:
                asyncio.get_running_loop().remove_signal_handler(sig)
            gc.unfreeze()
            elapsed = opts.clock() - t0
            run = {
                "format": RESULTS_FORMAT,
                "scenario": {"name": scenario.name, "description": scenario.description, "seed": scenario.seed},
                "target": opts.target,
                "model": model,
                "endpoint": scenario.endpoint,
                "prompt_source": opts.vocabulary.source,
                "started_at": started_at,
                "elapsed_s": elapsed,
                "summary": summarize(
                    scenario, scheduler.records, planned_by_stage, scheduler.ended, scheduler.stopped_at, truncated
                ),
            }
            json_path, csv_path = write_results(opts.out_dir, run, scheduler.records, [s.name for s in scenario.stages])
    return RunOutcome(run, json_path, csv_path)


def run(scenario: Scenario, opts: RunOptions) -> RunOutcome:
    """Run on uvloop where it is installed: its lower per-I/O cost shows directly as lower schedule lag."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(run_async(scenario, opts))
    return uvloop.run(run_async(scenario, opts))
