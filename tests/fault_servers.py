"""Misbehaving HTTP servers on loopback, for fault tests of any client in the project.

Each is a context manager that binds 127.0.0.1 on a port the kernel picks, serves from a
background thread, records every request it parses and always stops on exit:

- :func:`routes_server`: fixed replies by path (a stand-in whose one endpoint answers HTML);
- :func:`html_server`: 200 with an HTML page for every request (a login page, a proxy's error page);
- :func:`redirect_server`: a redirect for every request, to wherever the test says;
- :func:`drip_server`: a complete, valid reply, sent one byte every ``interval`` seconds;
- :func:`garbage_server`: bytes that are not HTTP at all.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from infersight.loopback import LOOPBACK

HTML_PAGE = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body><form>login</form></body></html>\n"


@dataclass(frozen=True)
class Request:
    """What a fault server was sent: header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Reply:
    """A complete HTTP/1.1 answer; ``encode`` gives the bytes on the wire (with Content-Length)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(data).encode())

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Reply:
        return cls(status, text.encode(), content_type)

    def encode(self) -> bytes:
        try:
            reason = http.HTTPStatus(self.status).phrase
        except ValueError:
            reason = "Unknown"
        head = [f"HTTP/1.1 {self.status} {reason}", f"Content-Type: {self.content_type}"]
        head += [f"{name}: {value}" for name, value in self.headers.items()]
        head += [f"Content-Length: {len(self.body)}", "Connection: close"]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + self.body


# How a server answers one parsed request: it writes to the client's stream and may wait on the
# server's stop event (a drip must end when the server stops, or shutting down would wait for it).
Answer = Callable[[Request, Any, threading.Event], None]


class FaultServer:
    """A threaded loopback HTTP listener that answers every request through ``answer``."""

    def __init__(self, answer: Answer):
        self.requests: list[Request] = []
        self.url = ""
        self._stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(request)
                self.close_connection = True
                # The client may give up mid-answer, which is what many fault tests expect it to do.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    answer(request, self.wfile, server._stop)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fault-server", daemon=True)

    @property
    def authorizations(self) -> list[str]:
        """Every Authorization header this server received."""
        return [r.headers["authorization"] for r in self.requests if "authorization" in r.headers]

    def __enter__(self) -> FaultServer:
        # The socket listens from construction on, so a client that connects now is queued, not refused.
        self.url = f"http://{LOOPBACK}:{self._httpd.server_address[1]}"
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()  # joins the handler threads; each ends within one drip interval
        self._thread.join(timeout=10)


def _send(reply: Reply) -> Answer:
    def answer(request: Request, out: Any, stop: threading.Event) -> None:
        out.write(reply.encode())

    return answer


NOT_FOUND = Reply.json({"error": "not found"}, 404)


def routes_server(routes: Mapping[str, Reply], default: Reply = NOT_FOUND) -> FaultServer:
    """``routes`` maps a path (without its query) to the reply; any other path gets ``default``."""

    def answer(request: Request, out: Any, stop: threading.Event) -> None:
        out.write(routes.get(request.path.split("?", 1)[0], default).encode())

    return FaultServer(answer)


def html_server(status: int = 200) -> FaultServer:
    return FaultServer(_send(Reply.text(HTML_PAGE, status, "text/html; charset=utf-8")))


def redirect_server(location: str, status: int = 302) -> FaultServer:
    """Every request is redirected to ``location`` (e.g. another fault server's URL)."""
    return FaultServer(_send(Reply(status, b"", "text/html", {"Location": location})))


def drip_server(reply: Reply, interval: float) -> FaultServer:
    """``reply``, one byte every ``interval`` seconds: each read gets a byte long before any
    per-read timeout, yet the whole answer takes ``len(reply.encode()) * interval`` seconds."""

    def answer(request: Request, out: Any, stop: threading.Event) -> None:
        for byte in reply.encode():
            out.write(bytes([byte]))
            out.flush()
            if stop.wait(interval):
                return

    return FaultServer(answer)


def garbage_server(data: bytes = b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\xfe garbage\r\n\r\n") -> FaultServer:
    """Every request is answered with ``data``, which has no HTTP status line."""

    def answer(request: Request, out: Any, stop: threading.Event) -> None:
        out.write(data)

    return FaultServer(answer)
