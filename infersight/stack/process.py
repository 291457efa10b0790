"""A child process with a log file, a readiness wait and a stop that always happens."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

log = logging.getLogger(__name__)


class ServiceError(RuntimeError):
    """A service failed to start or become ready."""


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """GET a loopback URL without proxies; (status, body), status 0 when unreachable."""
    return _http(urllib.request.Request(url), timeout)


def http_post(url: str, timeout: float = 30.0) -> tuple[int, bytes]:
    """POST an empty body to a loopback URL without proxies; as :func:`http_get`."""
    return _http(urllib.request.Request(url, data=b"", method="POST"), timeout)


def _http(request: urllib.request.Request, timeout: float) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()
    except (urllib.error.URLError, OSError, TimeoutError):
        return 0, b""


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> None:
    """Poll ``check`` until it is true; raise ServiceError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if time.monotonic() > deadline:
            raise ServiceError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class ManagedProcess:
    """Start a command in its own process group; stop the whole group on exit."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log.info("starting %s: %s", self.name, " ".join(self.argv))
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # own process group: stop() reaches vLLM's workers too
            )
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise ServiceError(f"{self.name} was never started")
        return self.proc.pid

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_http_ready(self, url: str, timeout: float, ok: Callable[[int, bytes], bool] | None = None) -> None:
        """Wait for ``url`` to answer 200 (or satisfy ``ok``); fail early if the process died."""

        def ready() -> bool:
            if not self.alive:
                raise ServiceError(f"{self.name} exited with {self.proc and self.proc.returncode}:\n{self.log_tail()}")
            status, body = http_get(url, timeout=2)
            return ok(status, body) if ok else status == 200

        try:
            wait_until(ready, timeout, f"{self.name} at {url}")
        except ServiceError as exc:
            raise ServiceError(f"{exc}\n--- {self.name} log ---\n{self.log_tail()}") from None

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send a signal to the whole group (fault injection)."""
        if self.alive:
            assert self.proc is not None
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 15) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)
            except ProcessLookupError:
                pass
        # Reap stragglers of the group (e.g. vLLM engine-core children) even after a clean exit.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        log.info("stopped %s", self.name)

    def __enter__(self) -> ManagedProcess:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
