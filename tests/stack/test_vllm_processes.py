"""Finding vLLM's engine core by session and name, and freezing it: on real processes that take
vLLM's process name (no vLLM needed), including one of the same name in another session."""

from __future__ import annotations

import signal
import subprocess

from infersight.stack.vllm_processes import engine_core_pids, engine_side_pids, signal_engine_core
from tests.stack.vllm_like import state, vllm_like_session, wait_state


def test_the_engine_core_of_a_session_is_frozen_and_continued() -> None:
    with vllm_like_session() as mine, vllm_like_session() as other:
        assert engine_core_pids(mine.session) == [mine.engine]
        assert signal_engine_core(mine.session, signal.SIGSTOP) == [mine.engine]
        assert wait_state(mine.engine, "T") == "T"
        assert state(mine.worker) != "T"  # the engine core only
        assert state(other.engine) != "T"  # same name, another session: untouched
        assert signal_engine_core(mine.session, signal.SIGCONT) == [mine.engine]
        assert wait_state(mine.engine, "S") == "S"


def test_the_engine_side_is_the_engine_core_and_its_workers_of_that_session() -> None:
    with vllm_like_session() as mine, vllm_like_session():
        assert sorted(engine_side_pids(mine.session)) == sorted([mine.engine, mine.worker])


def test_a_session_without_an_engine_core_reaches_nothing() -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert signal_engine_core(sleeper.pid, signal.SIGSTOP) == []
        assert state(sleeper.pid) != "T"
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)
