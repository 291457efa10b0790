"""A small JSON-over-HTTP client for the deploy commands and validate's servers (stdlib only).

- An HTTP status never raises: callers decide what a 403 or 404 means.
- A request that gets no usable answer raises :class:`RequestFailed`, naming the request and why:
  the server cannot be reached, answers something that is not HTTP, answers with a redirect, or
  sends no complete answer before the deadline.
- Redirects are never followed: requests carry credentials, and following one would hand them to
  whichever server the redirect names.
- A :class:`Deadline` bounds a whole operation: each request within it ends by then, from connect to
  the last byte, however slowly the server sends (a socket timeout bounds each read, not the sum).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from infersight.loopback import is_loopback

DEFAULT_TIMEOUT = 15.0  # seconds, for a request made without an operation's deadline
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # far above any rules listing; a bound on what a server can make us hold


class RequestFailed(OSError):
    """No usable HTTP answer: unreachable, not HTTP, a redirect, or too slow."""


@dataclass(frozen=True)
class Deadline:
    """The moment an operation must have ended by, and the limit it was given (for messages)."""

    seconds: float
    at: float  # on time.monotonic()'s clock

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0


@dataclass(frozen=True)
class Response:
    status: int
    body: Any  # parsed JSON, or the text when the answer is not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """What the server said, on one line, for an error message."""
        if isinstance(self.body, dict):
            said = self.body.get("message") or self.body.get("error") or self.body
        else:
            said = self.body
        return " ".join(str(said).split())[:300]


class _Watchdog:
    """Shuts the request's sockets at the deadline, so a read blocked on a server that drips bytes
    returns at once; the request then fails as too slow."""

    def __init__(self, seconds: float):
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also under TLS: it wakes the reader without touching TLS state.
    # OSError: already closed, the request ended on its own.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _HTTPConnection(http.client.HTTPConnection):
    """Hands its connected socket (the TLS one, for the HTTPS subclass) to the watchdog."""

    def __init__(self, host: str, *, watchdog: _Watchdog, **kwargs: Any):
        super().__init__(host, **kwargs)
        self.watchdog = watchdog

    def connect(self) -> None:
        super().connect()
        self.watchdog.watch(self.sock)


class _HTTPSConnection(_HTTPConnection, http.client.HTTPSConnection):
    """HTTPSConnection.connect wraps the socket in TLS after the plain connect; the MRO runs it
    inside _HTTPConnection.connect's super().connect(), so the watchdog gets the TLS socket."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog):
        super().__init__()
        self.watchdog = watchdog

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req, watchdog=self.watchdog)  # type: ignore[arg-type]


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog):
        super().__init__()
        self.watchdog = watchdog

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            _HTTPSConnection,  # type: ignore[arg-type]
            req,
            context=self._context,  # type: ignore[attr-defined]
            watchdog=self.watchdog,
        )


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx then surfaces as an HTTPError, which request() turns into RequestFailed


def request(
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    deadline: Deadline | None = None,
) -> Response:
    """One request, ended by ``deadline`` (default: :data:`DEFAULT_TIMEOUT` from now)."""
    deadline = deadline or Deadline.after(DEFAULT_TIMEOUT)
    what = f"{method} {url}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestFailed(f"{url!r} is not an http:// or https:// URL with a host")
    remaining = deadline.remaining()
    if remaining <= 0:
        raise RequestFailed(f"{what}: the {deadline.seconds:g}s timeout ran out before this request")
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    with _Watchdog(remaining) as watchdog:
        handlers: list[urllib.request.BaseHandler] = [
            _HTTPHandler(watchdog),
            _HTTPSHandler(watchdog),
            _RefuseRedirects(),
        ]
        if is_loopback(parts.hostname):
            handlers.append(urllib.request.ProxyHandler({}))  # loopback never goes through a proxy
        opener = urllib.request.build_opener(*handlers)
        try:
            status, raw = _exchange(opener, req, remaining, what)
        except RequestFailed:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if watchdog.fired or _timed_out(exc):
                raise RequestFailed(f"{what}: no complete answer within the {deadline.seconds:g}s timeout") from None
            raise RequestFailed(_failure(what, url, exc)) from None
    if watchdog.fired:  # an answer cut short at the deadline can look complete
        raise RequestFailed(f"{what}: no complete answer within the {deadline.seconds:g}s timeout")
    return Response(status, _parse(raw))


def _exchange(
    opener: urllib.request.OpenerDirector, req: urllib.request.Request, timeout: float, what: str
) -> tuple[int, bytes]:
    try:
        with opener.open(req, timeout=timeout) as resp:
            return int(resp.status), _read(resp, what)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            location = exc.headers.get("Location", "(no Location header)")
            raise RequestFailed(
                f"{what} answered {exc.code}, a redirect to {location}; redirects are never followed, "
                "since the request may carry credentials: use the address it redirects to if you trust it"
            ) from None
        return exc.code, _read(exc, what)


def _read(resp: Any, what: str) -> bytes:
    raw: bytes = resp.read(MAX_ANSWER_BYTES + 1)
    if len(raw) > MAX_ANSWER_BYTES:
        raise RequestFailed(f"{what}: the answer is larger than {MAX_ANSWER_BYTES // 2**20} MiB")
    return raw


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError)


def _failure(what: str, url: str, exc: BaseException) -> str:
    if isinstance(exc, http.client.RemoteDisconnected):
        return f"{what}: the server closed the connection without answering"
    if isinstance(exc, http.client.HTTPException):
        detail = " ".join(repr(str(exc))[:80].split())
        return f"{what}: the answer is not HTTP ({type(exc).__name__}: {detail})"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot reach {url}: {exc.reason}"
    return f"cannot reach {url}: {exc}"


def _parse(raw: bytes) -> Any:
    """The answer's JSON, or its text when it is not JSON (callers name what they expected)."""
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text) if text.strip() else None
    except (json.JSONDecodeError, RecursionError):  # nested past Python's recursion limit: not an API's answer
        return text
