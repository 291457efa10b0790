"""Finding vLLM's engine core by session and name, and freezing it: on real processes that take
vLLM's process name (no vLLM needed), including one of the same name in another session."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infersight.stack.vllm_processes import engine_core_pids, signal_engine_core

# A session leader (as ManagedProcess starts vLLM) with one child named as vLLM names its engine core.
_LEADER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import time
open("/proc/self/comm", "w").write("VLLM::EngineCore")
print(flush=True)
time.sleep(120)
'''], stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(120)
"""


@contextmanager
def vllm_like_session() -> Iterator[tuple[int, int]]:
    """(session id, engine-core pid)."""
    leader = subprocess.Popen([sys.executable, "-c", _LEADER], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert leader.stdout is not None
        engine = int(leader.stdout.readline())
        yield leader.pid, engine
    finally:
        leader.send_signal(signal.SIGKILL)
        leader.wait(timeout=30)
        subprocess.run(["pkill", "-KILL", "-s", str(leader.pid)], check=False)


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def wait_state(pid: int, wanted: str, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while (now := state(pid)) != wanted and time.monotonic() < deadline:
        time.sleep(0.02)
    return now


def test_the_engine_core_of_a_session_is_frozen_and_continued() -> None:
    with vllm_like_session() as (session, engine), vllm_like_session() as (_, other_engine):
        assert engine_core_pids(session) == [engine]
        assert signal_engine_core(session, signal.SIGSTOP) == [engine]
        assert wait_state(engine, "T") == "T"
        assert state(other_engine) != "T"  # same name, another session: untouched
        assert signal_engine_core(session, signal.SIGCONT) == [engine]
        assert wait_state(engine, "S") == "S"


def test_a_session_without_an_engine_core_reaches_nothing() -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert signal_engine_core(sleeper.pid, signal.SIGSTOP) == []
        assert state(sleeper.pid) != "T"
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)
