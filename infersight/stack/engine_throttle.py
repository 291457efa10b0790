"""Make one vLLM slower than its peers on purpose, as a power- or clock-capped accelerator is:
its engine core and model workers are stopped (SIGSTOP) for a fixed share of every short period
and continued (SIGCONT) for the rest, while its API server keeps answering /metrics and /health.

This is how the outlier-replica alert is proven on real vLLM replicas that share two CPUs: a
replica slowed by its configuration or a neighbour would slow its peers too, whereas a duty cycle
slows exactly one, by a known factor (a replica that is busy throughout generates tokens only in
its running share, so its inter-token latency grows by 1 / (1 - stopped share)).

The processes are always continued on the way out, also after an error: a throttle left stopped
would be a hung engine."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import TracebackType

from infersight.stack.vllm_processes import engine_side_pids, signal_pids

log = logging.getLogger(__name__)


class ThrottleError(RuntimeError):
    """The throttle could not start: bad settings, or no engine process to slow."""


class EngineThrottle:
    """``with EngineThrottle(session, stopped_share=0.8):`` the session's engine runs a fifth of the time."""

    def __init__(self, session: int, stopped_share: float, period_s: float = 0.25, proc: Path = Path("/proc")) -> None:
        if not 0 < stopped_share < 1:
            raise ThrottleError(f"stopped share {stopped_share} is not between 0 and 1 (exclusive)")
        if not 0.01 <= period_s <= 10:
            raise ThrottleError(f"throttle period {period_s} s is not between 0.01 and 10 s")
        self.session = session
        self.stopped_s = stopped_share * period_s
        self.running_s = period_s - self.stopped_s
        self._proc = proc
        self._pids: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.cycles = 0  # for the caller's log: how many stop/continue periods ran

    def _signal(self, sig: signal.Signals) -> None:
        signal_pids(self._pids, sig)  # an engine that ended has nothing left to slow or to continue

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._signal(signal.SIGSTOP)
                self._stop.wait(self.stopped_s)
                self._signal(signal.SIGCONT)
                self.cycles += 1
                self._stop.wait(self.running_s)
        finally:
            self._signal(signal.SIGCONT)

    def start(self) -> EngineThrottle:
        self._pids = engine_side_pids(self.session, self._proc)
        if not self._pids:
            raise ThrottleError(f"no vLLM engine core or worker in session {self.session} to throttle")
        log.info("throttling vLLM engine %s: stopped %.3f s of every %.3f s", self._pids, self.stopped_s,
                 self.stopped_s + self.running_s)  # fmt: skip
        self._thread = threading.Thread(target=self._run, name="engine-throttle", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the duty cycle; every process is continued before this returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10 + self.stopped_s)
        self._signal(signal.SIGCONT)  # also if the thread could not be joined

    def __enter__(self) -> EngineThrottle:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
