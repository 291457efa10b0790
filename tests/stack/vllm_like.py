"""Processes that take vLLM's process names without being vLLM: a session leader (as
ManagedProcess starts vLLM) with an engine core and a model worker under it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_CHILD = """
import sys, time
open("/proc/self/comm", "w").write(sys.argv[1])
print(flush=True)
time.sleep(120)
"""
_LEADER = """
import subprocess, sys, time
children = [
    subprocess.Popen([sys.executable, "-c", sys.argv[1], name], stdout=subprocess.PIPE)
    for name in ("VLLM::EngineCore", "VLLM::Worker_TP0")
]
for child in children:
    child.stdout.readline()
print(*(child.pid for child in children), flush=True)
time.sleep(120)
"""


@dataclass(frozen=True)
class VLLMLikeSession:
    session: int
    engine: int
    worker: int


@contextmanager
def vllm_like_session() -> Iterator[VLLMLikeSession]:
    leader = subprocess.Popen([sys.executable, "-c", _LEADER, _CHILD], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert leader.stdout is not None
        engine, worker = (int(pid) for pid in leader.stdout.readline().split())
        yield VLLMLikeSession(leader.pid, engine, worker)
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
