"""The duty-cycle throttle that makes one vLLM replica an outlier, also as infersight up's
engine_throttle control: on real processes that take vLLM's process names (no vLLM needed). Its
effect on a real vLLM's latency is proven by tests/e2e/test_outlier_replica_e2e.py and by the
outlier_replica scenario of infersight up."""

from __future__ import annotations

import subprocess
import time
from types import SimpleNamespace

import pytest

from infersight.stack.engine_throttle import EngineThrottle, ThrottleError
from infersight.validate.controls import ControlError, managed_server_controls
from tests.stack.vllm_like import state, vllm_like_session, wait_state


def _states_seen(pid: int, seconds: float) -> set[str]:
    seen, deadline = set(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.add(state(pid))
        time.sleep(0.005)
    return seen


def test_the_engine_side_is_stopped_and_continued_in_turn_and_left_running() -> None:
    with vllm_like_session() as mine, vllm_like_session() as other:
        with EngineThrottle(mine.session, stopped_share=0.5, period_s=0.1) as throttle:
            engine_states = _states_seen(mine.engine, 1.0)
            worker_states = _states_seen(mine.worker, 1.0)
            other_states = _states_seen(other.engine, 0.3)
        assert {"T", "S"} <= engine_states, engine_states
        assert {"T", "S"} <= worker_states, worker_states
        assert "T" not in other_states  # another session's engine of the same name: untouched
        assert throttle.cycles >= 5
        assert wait_state(mine.engine, "S") == "S" and wait_state(mine.worker, "S") == "S"


def test_an_error_inside_the_throttle_still_continues_the_engine() -> None:
    with vllm_like_session() as mine:
        with pytest.raises(KeyError), EngineThrottle(mine.session, stopped_share=0.9, period_s=0.5):
            wait_state(mine.engine, "T")
            raise KeyError("the caller failed while the engine was stopped")
        assert wait_state(mine.engine, "S") == "S" and wait_state(mine.worker, "S") == "S"


@pytest.mark.parametrize(
    ("share", "period", "wrong"),
    [(0.0, 0.25, "stopped share 0.0"), (1.0, 0.25, "stopped share 1.0"), (0.5, 0.0, "period 0.0 s")],
)
def test_settings_outside_their_range_are_refused(share: float, period: float, wrong: str) -> None:
    with pytest.raises(ThrottleError, match=wrong):
        EngineThrottle(1, stopped_share=share, period_s=period)


def test_a_session_without_an_engine_is_refused_and_nothing_is_stopped() -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        with pytest.raises(ThrottleError, match=f"no vLLM engine core or worker in session {sleeper.pid}"):
            EngineThrottle(sleeper.pid, stopped_share=0.5).start()
        assert state(sleeper.pid) != "T"
    finally:
        sleeper.kill()
        sleeper.wait(timeout=30)


class _StartedServer:
    """What managed_server_controls reads of a VLLMServer: its process's pid and whether it runs."""

    def __init__(self, session: int) -> None:
        self.process = SimpleNamespace(pid=session, name="vllm[like]")
        self.alive = True


def test_up_throttles_a_server_it_started_once_and_lets_it_go() -> None:
    with vllm_like_session() as mine:
        controls = managed_server_controls(_StartedServer(mine.session))  # type: ignore[arg-type]
        assert controls.engine_throttle is not None and controls.engine_unthrottle is not None
        with pytest.raises(ControlError, match=r"vllm\[like\] is not throttled"):
            controls.engine_unthrottle()
        controls.engine_throttle(0.9, 0.5)
        try:
            assert wait_state(mine.engine, "T") == "T"
            with pytest.raises(ControlError, match="already throttled"):
                controls.engine_throttle(0.5, 0.25)
        finally:
            controls.engine_unthrottle()
        assert wait_state(mine.engine, "S") == "S" and wait_state(mine.worker, "S") == "S"


def test_throttling_a_server_without_an_engine_is_a_control_error() -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        controls = managed_server_controls(_StartedServer(sleeper.pid))  # type: ignore[arg-type]
        assert controls.engine_throttle is not None
        with pytest.raises(ControlError, match=r"vllm\[like\]: no vLLM engine core or worker"):
            controls.engine_throttle(0.5, 0.25)
    finally:
        sleeper.kill()
        sleeper.wait()
