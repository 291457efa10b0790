"""vLLM's processes on this host, found by session and by the names vLLM gives them
(``VLLM::EngineCore``, ``VLLM::Worker...``): what the engine-affinity fix and the hung-engine
fault act on."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

WORKER_PREFIX = "VLLM::Worker"
ENGINE_PREFIX = "VLLM::EngineCor"  # comm is cut to 15 characters


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    comm: str
    session: int


def read_process(stat_path: Path) -> ProcessInfo | None:
    """pid, name and session from /proc/PID/stat; None for a process that is gone."""
    try:
        text = stat_path.read_text()
    except OSError:
        return None
    # The name is in parentheses and may hold spaces or ')': split at the last ')'.
    head, _, tail = text.rpartition(")")
    pid_text, _, comm = head.partition(" (")
    fields = tail.split()
    try:
        return ProcessInfo(int(pid_text), comm, int(fields[3]))  # state, ppid, pgrp, session
    except (ValueError, IndexError):
        return None


def session_processes(session: int, proc: Path = Path("/proc")) -> list[ProcessInfo]:
    found = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            info = read_process(entry / "stat")
            if info is not None and info.session == session:
                found.append(info)
    return found


def engine_core_pids(session: int, proc: Path = Path("/proc")) -> list[int]:
    return [p.pid for p in session_processes(session, proc) if p.comm.startswith(ENGINE_PREFIX)]


def engine_side_pids(session: int, proc: Path = Path("/proc")) -> list[int]:
    """The engine core and its model workers: everything of the session that computes tokens, not
    the API server that answers /metrics."""
    prefixes = (ENGINE_PREFIX, WORKER_PREFIX)
    return [p.pid for p in session_processes(session, proc) if p.comm.startswith(prefixes)]


def signal_pids(pids: list[int], sig: signal.Signals) -> list[int]:
    """Send ``sig`` to each process; the pids it reached (one may end after it was listed)."""
    reached = []
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # ended between the listing and the signal
            continue
        reached.append(pid)
    return reached


def signal_engine_core(session: int, sig: signal.Signals, proc: Path = Path("/proc")) -> list[int]:
    """Send ``sig`` to the session's engine-core processes (SIGSTOP: the engine hangs while the
    API server, another process, keeps answering /metrics and /health). The pids it reached."""
    return signal_pids(engine_core_pids(session, proc), sig)
