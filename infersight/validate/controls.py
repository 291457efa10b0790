"""The hooks that act on the stack for a scenario's ``actions:``.

A hook is a plain callable; a missing one means the action is skipped, and its ``why`` says why
(the report shows it). Three kinds exist:
- shell commands given on the command line (``--target-down-cmd 'systemctl stop vllm'``): run to
  completion with a timeout; ``target_up`` then waits for the target to list its models again;
- a vLLM server this process started (``infersight up``): stop, SIGKILL, start, SIGSTOP /
  SIGCONT of its engine-core process (a hung engine whose API server still answers), and a duty
  cycle of them (a throttled engine, infersight.stack.engine_throttle);
- the fake GPU backend's control file (``infersight exporter gpu --control-file``).
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from infersight.deploy import http
from infersight.exporters.gpu.fake_control import LeakSetting, write_setting
from infersight.stack.engine_throttle import EngineThrottle, ThrottleError
from infersight.stack.process import ServiceError, wait_until
from infersight.stack.vllm_processes import signal_engine_core
from infersight.stack.vllm_server import VLLMServer

Hook = Callable[[], None]
LeakHook = Callable[[float], None]  # MiB/s; 0 stops the growth
ThrottleHook = Callable[[float, float], None]  # the share of each period the engine is stopped; period, s

COMMAND_TIMEOUT_S = 120.0
READY_TIMEOUT_S = 300.0  # room for vLLM's start on a busy 2-core host (its times: docs/results.md)


class ControlError(RuntimeError):
    """A hook failed; the message says what ran and how it ended (never a traceback)."""


@dataclass
class Controls:
    server_kill: Hook | None = None
    target_down: Hook | None = None
    target_up: Hook | None = None
    gpu_leak: LeakHook | None = None
    engine_pause: Hook | None = None
    engine_resume: Hook | None = None
    engine_throttle: ThrottleHook | None = None
    engine_unthrottle: Hook | None = None
    # Why a hook is missing, per action kind; the default reason names the flag to pass.
    why: dict[str, str] = field(default_factory=dict)

    def reason_missing(self, kind: str) -> str:
        flags = {
            "server_kill": "--server-kill-cmd",
            "target_down": "--target-down-cmd",
            "target_up": "--target-up-cmd",
            "gpu_leak_start": "--gpu-control-file",
            "gpu_leak_stop": "--gpu-control-file",
            "engine_pause": "--engine-pause-cmd",
            "engine_resume": "--engine-resume-cmd",
            "engine_throttle": "a vLLM that infersight up started",
            "engine_unthrottle": "a vLLM that infersight up started",
        }
        return self.why.get(kind, f"no hook for {kind}: pass {flags.get(kind, 'a hook')}")


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def command_hook(command: str, timeout_s: float = COMMAND_TIMEOUT_S) -> Hook:
    """Run ``command`` with the shell; a non-zero exit or a timeout is a ControlError."""

    def run() -> None:
        try:
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise ControlError(f"`{command}` did not finish within {timeout_s:.0f}s") from None
        except OSError as exc:
            raise ControlError(f"`{command}` could not run: {exc}") from None
        if done.returncode != 0:
            raise ControlError(f"`{command}` exited with {done.returncode}: {_tail(done.stderr or done.stdout)}")

    return run


def wait_for_models(target: str, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until ``GET target/v1/models`` answers 200 itself: a redirect is not followed, since
    another server answering is not the target serving again."""

    def serving() -> bool:
        try:
            return http.request("GET", f"{target}/v1/models", deadline=http.Deadline.after(5)).status == 200
        except http.RequestFailed:
            return False

    try:
        wait_until(serving, timeout_s, f"{target}/v1/models")
    except ServiceError as exc:
        raise ControlError(str(exc)) from None


def command_controls(
    target: str,
    server_kill: str | None = None,
    target_down: str | None = None,
    target_up: str | None = None,
    gpu_control_file: Path | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
    engine_pause: str | None = None,
    engine_resume: str | None = None,
) -> Controls:
    """Controls from command-line hooks; ``target_up`` also waits for the target to serve again."""
    up: Hook | None = None
    if target_up is not None:
        start = command_hook(target_up)

        def up_and_ready() -> None:
            start()
            wait_for_models(target, ready_timeout_s)

        up = up_and_ready
    return Controls(
        server_kill=command_hook(server_kill) if server_kill else None,
        target_down=command_hook(target_down) if target_down else None,
        target_up=up,
        gpu_leak=leak_file_hook(gpu_control_file) if gpu_control_file is not None else None,
        engine_pause=command_hook(engine_pause) if engine_pause else None,
        engine_resume=command_hook(engine_resume) if engine_resume else None,
    )


def managed_server_controls(
    server: VLLMServer, ready_timeout_s: float = READY_TIMEOUT_S, after_start: Hook | None = None
) -> Controls:
    """Controls for a vLLM server this process started: SIGTERM stop, SIGKILL, start again (then
    ``after_start``, e.g. to lower its priority as at the first start), its engine core stopped
    and continued, and its engine throttled and let go."""
    throttles: list[EngineThrottle] = []  # the one running, if any

    def kill() -> None:
        if not server.alive:
            raise ControlError(f"{server.process.name} is not running")
        server.process.kill(signal.SIGKILL)

    def down() -> None:
        if not server.alive:
            raise ControlError(f"{server.process.name} is not running")
        server.stop()

    def up() -> None:
        server.stop()  # reap what a kill left behind; a no-op when already stopped
        try:
            server.start(timeout=ready_timeout_s)
        except ServiceError as exc:
            raise ControlError(f"{server.process.name} did not start again: {_tail(str(exc), 3)}") from None
        if after_start is not None:
            after_start()

    def engine_signal(sig: signal.Signals) -> Hook:
        def send() -> None:
            if not server.alive:
                raise ControlError(f"{server.process.name} is not running")
            if not signal_engine_core(server.process.pid, sig):
                raise ControlError(f"{server.process.name} has no engine-core process to send {sig.name} to")

        return send

    def throttle(stopped_share: float, period_s: float) -> None:
        if throttles:
            raise ControlError(f"{server.process.name} is already throttled")
        if not server.alive:
            raise ControlError(f"{server.process.name} is not running")
        try:
            throttles.append(EngineThrottle(server.process.pid, stopped_share, period_s).start())
        except ThrottleError as exc:
            raise ControlError(f"{server.process.name}: {exc}") from None

    def unthrottle() -> None:
        if not throttles:
            raise ControlError(f"{server.process.name} is not throttled")
        throttles.pop().stop()

    return Controls(
        server_kill=kill,
        target_down=down,
        target_up=up,
        engine_pause=engine_signal(signal.SIGSTOP),
        engine_resume=engine_signal(signal.SIGCONT),
        engine_throttle=throttle,
        engine_unthrottle=unthrottle,
    )


def leak_file_hook(path: Path, gpu: int = 0) -> LeakHook:
    def set_rate(mib_per_second: float) -> None:
        try:
            write_setting(path, LeakSetting(gpu=gpu, mib_per_second=mib_per_second))
        except OSError as exc:
            raise ControlError(f"cannot write the fake GPU control file {path}: {exc}") from None

    return set_rate
