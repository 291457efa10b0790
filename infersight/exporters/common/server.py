"""Serve a prometheus_client registry on ``/metrics`` with an exporter-toolkit web config: TLS,
basic auth and response headers.

The TLS handshake runs in the per-connection thread, not in ``accept()`` (as prometheus_client's own
server does), so one slow or bogus client cannot stall every other scrape.
"""

from __future__ import annotations

import errno
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.registry import Collector

from infersight.exporters.common.auth import BasicAuth
from infersight.exporters.common.webconfig import WebConfig
from infersight.loopback import is_loopback

log = logging.getLogger(__name__)
HANDSHAKE_TIMEOUT_S = 10.0
_StartResponse = Callable[..., Any]
_App = Callable[[dict[str, Any], _StartResponse], Iterable[bytes]]


class ServeError(RuntimeError):
    """The server could not listen (address in use, not local, not an address)."""


def exposure_warnings(host: str, web: WebConfig) -> list[str]:
    """What an operator should hear about when the exporter listens beyond loopback."""
    if is_loopback(host):
        return []
    where = f"{host or '0.0.0.0'}"
    warnings = []
    if not web.auth_enabled:
        warnings.append(
            f"listening on {where} without authentication: anyone who can reach this port can read this "
            "exporter's metrics; set basic_auth_users (and tls_server_config) in --web-config-file"
        )
    if web.basic_auth_users and web.tls is None:
        warnings.append(f"basic auth on {where} without TLS sends passwords in clear text; add tls_server_config")
    return warnings


class _QuietHandler(WSGIRequestHandler):
    timeout = 30.0  # a client that connects and says nothing must not hold a thread forever

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    ssl_context: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(HANDSHAKE_TIMEOUT_S)
        tls = self.ssl_context.wrap_socket(request, server_side=True)
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Failed handshakes and dropped connections are the client's problem, not a traceback on stderr.
        log.debug("connection from %s failed", client_address, exc_info=True)


def _address_family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def make_app(registry: Collector, web: WebConfig, title: str) -> _App:
    """The WSGI app: basic auth, then ``/metrics`` (and a small landing page at ``/``)."""
    auth = BasicAuth(web.basic_auth_users)
    metrics = make_wsgi_app(registry)
    extra = list(web.headers.items())
    landing = (
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
        '<p><a href="/metrics">Metrics</a></p></body></html>'
    ).encode()

    def app(environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        def respond(status: str, headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
            start_response(status, [*headers, *extra, ("Content-Length", str(len(body)))])
            return [body]

        if not auth.check(environ.get("HTTP_AUTHORIZATION")):
            return respond(
                "401 Unauthorized",
                [("WWW-Authenticate", 'Basic realm="infersight"'), ("Content-Type", "text/plain")],
                b"Unauthorized\n",
            )
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics(environ, lambda status, headers, *a: start_response(status, [*headers, *extra], *a))
        if path == "/":
            return respond("200 OK", [("Content-Type", "text/html; charset=utf-8")], landing)
        return respond("404 Not Found", [("Content-Type", "text/plain")], b"Not Found; metrics are at /metrics\n")

    return app


class MetricsServer:
    def __init__(self, registry: Collector, host: str, port: int, web: WebConfig, title: str):
        self.host, self.requested_port, self.web, self.title = host, port, web, title
        self._app = make_app(registry, web, title)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise ServeError("server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.web.tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/metrics"

    def start(self) -> MetricsServer:
        server_cls = type("_BoundServer", (_Server,), {"address_family": _address_family(self.host)})
        try:
            httpd: _Server = make_server(
                self.host, self.requested_port, self._app, server_cls, handler_class=_QuietHandler
            )
        except socket.gaierror as exc:
            raise ServeError(f"cannot listen on {self.host!r}: not an IP address or resolvable name ({exc})") from None
        except OSError as exc:
            where = f"{self.host}:{self.requested_port}"
            if exc.errno == errno.EADDRINUSE:
                raise ServeError(f"cannot listen on {where}: address already in use; choose another --port") from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise ServeError(f"cannot listen on {where}: not an address of this machine") from None
            if exc.errno == errno.EACCES:
                raise ServeError(f"cannot listen on {where}: permission denied (ports below 1024 need root)") from None
            raise ServeError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        if self.web.tls is not None:
            httpd.ssl_context = self.web.tls.ssl_context()
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name=f"{self.title}-http", daemon=True)
        self._thread.start()
        for warning in exposure_warnings(self.host, self.web):
            log.warning("%s", warning)
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
