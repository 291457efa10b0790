"""The action executor and its hooks: timing, and every error path (missing hook, failing or
hanging command, a target that never comes back, the run ending first, a leak left running)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from infersight.loadgen.scenario import parse_scenario
from infersight.validate.actions import ActionExecutor
from infersight.validate.controls import ControlError, Controls, command_controls, command_hook, leak_file_hook


def actions(*entries: dict[str, object]) -> list:  # type: ignore[type-arg]
    data = {
        "name": "a",
        "limits": {"max_duration": "10m", "max_requests": 10},
        "stages": [{"name": "s", "duration": "5m", "rate": 0.01}],
        "actions": list(entries),
    }
    return list(parse_scenario(data).actions)


def run_now(executor: ActionExecutor) -> list:  # type: ignore[type-arg]
    executor.start(time.time())
    assert executor.wait(timeout=30)
    return executor.finish()


def test_actions_run_in_order_at_their_offsets() -> None:
    calls: list[tuple[str, float]] = []
    t0 = time.time()
    controls = Controls(
        target_down=lambda: calls.append(("down", time.time() - t0)),
        target_up=lambda: calls.append(("up", time.time() - t0)),
    )
    ex = ActionExecutor(
        actions({"name": "up", "at": "300ms", "do": "target_up"}, {"name": "down", "at": "100ms", "do": "target_down"}),
        controls,
    )
    ex.start(t0)
    assert ex.wait(timeout=10)
    outcomes = ex.finish()
    assert [c[0] for c in calls] == ["down", "up"]
    assert calls[0][1] >= 0.1 and calls[1][1] >= 0.3
    assert [(o.name, o.status) for o in outcomes] == [("down", "done"), ("up", "done")]
    assert outcomes[0].planned_at == pytest.approx(t0 + 0.1)
    assert outcomes[0].started_at is not None and outcomes[0].started_at >= t0 + 0.1


def test_missing_hook_is_skipped_with_the_flag_to_pass() -> None:
    outcomes = run_now(ActionExecutor(actions({"name": "kill", "at": "0s", "do": "server_kill"}), Controls()))
    assert outcomes[0].status == "skipped"
    assert "--server-kill-cmd" in outcomes[0].detail


def test_missing_hook_reason_can_be_given() -> None:
    controls = Controls(why={"target_down": "the target was not started here"})
    outcomes = run_now(ActionExecutor(actions({"name": "d", "at": "0s", "do": "target_down"}), controls))
    assert (outcomes[0].status, outcomes[0].detail) == ("skipped", "the target was not started here")


def test_failing_command_is_a_failed_action_with_its_exit_code_and_stderr() -> None:
    controls = command_controls("http://127.0.0.1:9", target_down="echo refusing >&2; exit 3")
    outcomes = run_now(ActionExecutor(actions({"name": "d", "at": "0s", "do": "target_down"}), controls))
    assert outcomes[0].status == "failed"
    assert "exited with 3" in outcomes[0].detail and "refusing" in outcomes[0].detail


def test_hanging_command_times_out() -> None:
    with pytest.raises(ControlError, match="did not finish within 1s"):
        command_hook("sleep 30", timeout_s=1)()


def test_target_up_waits_for_the_models_endpoint_and_fails_when_it_never_answers() -> None:
    controls = command_controls("http://127.0.0.1:9", target_down="true", target_up="true", ready_timeout_s=1)
    pair = actions({"name": "d", "at": "0s", "do": "target_down"}, {"name": "u", "at": "0s", "do": "target_up"})
    outcomes = run_now(ActionExecutor(pair, controls))
    assert [o.status for o in outcomes] == ["done", "failed"]
    assert "timed out" in outcomes[1].detail and "127.0.0.1:9/v1/models" in outcomes[1].detail


def test_actions_after_the_run_ended_are_skipped() -> None:
    ex = ActionExecutor(actions({"name": "d", "at": "5m", "do": "target_down"}), Controls(target_down=lambda: None))
    ex.start(time.time())
    outcomes = ex.finish(timeout=5)
    assert [(o.status, o.detail) for o in outcomes] == [("skipped", "the run ended first")]


def test_an_action_still_running_when_the_scenario_ends_is_reported() -> None:
    release = threading.Event()
    ex = ActionExecutor(actions({"name": "k", "at": "0s", "do": "server_kill"}), Controls(server_kill=release.wait))
    ex.start(time.time())
    time.sleep(0.2)
    outcomes = ex.finish(timeout=0.1)
    release.set()
    assert outcomes[-1].status == "failed" and "still running" in outcomes[-1].detail


def test_leak_is_written_to_the_control_file_and_stopped_when_the_scenario_ends(tmp_path: Path) -> None:
    control = tmp_path / "control.json"
    ex = ActionExecutor(
        actions({"name": "leak", "at": "0s", "do": "gpu_leak_start", "mib_per_second": 64}),
        Controls(gpu_leak=leak_file_hook(control)),
    )
    ex.start(time.time())
    assert ex.wait(timeout=10)
    assert json.loads(control.read_text())["leak_mib_per_second"] == 64
    ex.finish()
    assert json.loads(control.read_text())["leak_mib_per_second"] == 0  # never leaks into the next scenario


def test_unwritable_control_file_fails_the_action(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    controls = Controls(gpu_leak=leak_file_hook(blocker / "control.json"))  # a folder that is a file
    outcomes = run_now(ActionExecutor(actions({"name": "stop", "at": "0s", "do": "gpu_leak_stop"}), controls))
    assert outcomes[0].status == "failed" and "cannot write the fake GPU control file" in outcomes[0].detail


def test_an_engine_left_paused_is_resumed_when_the_scenario_ends() -> None:
    calls: list[str] = []
    controls = Controls(engine_pause=lambda: calls.append("pause"), engine_resume=lambda: calls.append("resume"))
    ex = ActionExecutor(
        actions({"name": "f", "at": "0s", "do": "engine_pause"}, {"name": "t", "at": "10m", "do": "engine_resume"}),
        controls,
    )
    ex.start(time.time())
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    outcomes = ex.finish(timeout=10)  # before the thaw: it is skipped, and the engine continued all the same
    assert calls == ["pause", "resume"]
    assert [(o.name, o.status) for o in outcomes] == [("f", "done"), ("t", "skipped")]


def test_a_missing_engine_hook_is_skipped_with_the_flag_to_pass() -> None:
    outcomes = run_now(ActionExecutor(actions({"name": "f", "at": "0s", "do": "engine_pause"}), Controls()))
    assert outcomes[0].status == "skipped"
    assert "--engine-pause-cmd" in outcomes[0].detail


def test_a_throttle_gets_its_share_and_an_engine_left_throttled_is_let_go_when_the_scenario_ends() -> None:
    calls: list[object] = []
    controls = Controls(
        engine_throttle=lambda share, period: calls.append((share, period)),
        engine_unthrottle=lambda: calls.append("let go"),
    )
    ex = ActionExecutor(
        actions(
            {"name": "t", "at": "0s", "do": "engine_throttle", "stopped_share": 0.95, "period": "1s"},
            {"name": "g", "at": "10m", "do": "engine_unthrottle"},
        ),
        controls,
    )
    ex.start(time.time())
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    outcomes = ex.finish(timeout=10)
    assert calls == [(0.95, 1.0), "let go"]
    assert [(o.name, o.status) for o in outcomes] == [("t", "done"), ("g", "skipped")]


def test_a_throttle_without_a_started_vllm_is_skipped_saying_so() -> None:
    throttle = {"name": "t", "at": "0s", "do": "engine_throttle", "stopped_share": 0.5}
    outcomes = run_now(ActionExecutor(actions(throttle), Controls()))
    assert outcomes[0].status == "skipped"
    assert "a vLLM that infersight up started" in outcomes[0].detail
