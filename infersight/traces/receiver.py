"""A small OTLP/HTTP trace receiver on loopback for validation runs, where no otelcol-contrib runs.

vLLM exports with ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`` to ``url``; each export is
decoded as it arrives and only its spans' kept attributes stay (:mod:`.spans`). Bounded: a body
over ``MAX_BODY_BYTES`` is refused and spans past ``max_spans`` are counted, not kept. Bad
requests get a 4xx with a one-line reason; nothing is logged, since a body may hold anything.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from infersight.traces.spans import Span, decode

PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SPANS = 200_000
DEFAULT_READ_TIMEOUT_S = 30.0  # per read of a request; an exporter sends a whole export at once


class BadExport(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


@dataclass
class ReceiverStats:
    exports: int = 0
    refused: int = 0  # requests answered 4xx
    dropped_spans: int = 0  # past max_spans


def parse_export(body: bytes, content_type: str, content_encoding: str) -> ExportTraceServiceRequest:
    """One OTLP/HTTP export body as the spec allows it: protobuf or JSON, plain or gzip."""
    if content_encoding == "gzip":
        try:
            body = gzip.GzipFile(fileobj=io.BytesIO(body)).read(MAX_BODY_BYTES + 1)
        except (OSError, EOFError, zlib.error):
            raise BadExport(400, "body is not valid gzip") from None
        if len(body) > MAX_BODY_BYTES:
            raise BadExport(413, f"body over {MAX_BODY_BYTES} bytes once unzipped")
    elif content_encoding not in ("", "identity"):
        raise BadExport(415, f"Content-Encoding {content_encoding!r} not supported; allowed: gzip or none")
    request = ExportTraceServiceRequest()
    try:
        if content_type == PROTOBUF:
            request.ParseFromString(body)
        elif content_type == JSON:
            json_format.ParseDict(_hex_ids_as_base64(json.loads(body)), request, ignore_unknown_fields=True)
        else:
            raise BadExport(415, f"Content-Type {content_type or 'none'!r} not supported; allowed: {PROTOBUF}, {JSON}")
    except (DecodeError, json_format.ParseError, ValueError, AttributeError, TypeError, RecursionError):
        raise BadExport(400, f"body is not an OTLP trace export ({content_type})") from None
    return request


_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids_as_base64(export: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON writes trace and span IDs in hex, where protobuf's JSON mapping reads bytes as base64."""
    for resource_spans in export.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in _ID_FIELDS:
                    if isinstance(span.get(key), str):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return export


class SpanReceiver:
    """Start with ``with SpanReceiver() as r:``; ``r.url`` is what vLLM's --otlp-traces-endpoint takes."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        max_spans: int = DEFAULT_MAX_SPANS,
        on_export: Callable[[ExportTraceServiceRequest], None] | None = None,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    ):
        self._host = host
        self._read_timeout_s = read_timeout_s
        self._lock = threading.Lock()
        self._spans: list[Span] = []
        self._max_spans = max_spans
        self._on_export = on_export
        self.stats = ReceiverStats()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}{PATH}"

    def start(self) -> SpanReceiver:
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(10)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> SpanReceiver:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        if self._on_export is not None:
            self._on_export(request)
        new = list(decode(request))
        with self._lock:
            self.stats.exports += 1
            room = max(0, self._max_spans - len(self._spans))
            self._spans.extend(new[:room])
            self.stats.dropped_spans += len(new) - min(room, len(new))

    def _refused(self) -> None:
        with self._lock:
            self.stats.refused += 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # One export per connection: a kept-alive connection would outlive stop() in its handler
            # thread, and the sender's next export would land in a receiver nobody reads any more.
            protocol_version = "HTTP/1.0"
            # A sender that stops mid-request must not hold its handler thread for ever.
            timeout = receiver._read_timeout_s

            def do_POST(self) -> None:
                try:
                    if self.path.split("?", 1)[0] != PATH:
                        raise BadExport(404, f"no such path; OTLP traces go to {PATH}")
                    body = self._body()
                    content_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
                    encoding = self.headers.get("Content-Encoding", "").strip().lower()
                    request = parse_export(body, content_type, encoding)
                except BadExport as exc:
                    receiver._refused()
                    self._answer(exc.status, "text/plain", (str(exc) + "\n").encode())
                    return
                receiver._keep(request)
                reply = ExportTraceServiceResponse()
                if content_type == JSON:
                    self._answer(200, JSON, json_format.MessageToJson(reply).encode())
                else:
                    self._answer(200, PROTOBUF, reply.SerializeToString())

            def _body(self) -> bytes:
                length = self.headers.get("Content-Length")
                if length is None or not length.isdigit():
                    raise BadExport(411, "Content-Length required")
                if int(length) > MAX_BODY_BYTES:
                    raise BadExport(413, f"body over {MAX_BODY_BYTES} bytes")
                try:
                    body = self.rfile.read(int(length))
                except TimeoutError:
                    raise BadExport(408, f"no byte of the body for {receiver._read_timeout_s:g} s") from None
                if len(body) < int(length):
                    raise BadExport(400, f"body cut short: {len(body)} of the {length} bytes Content-Length declares")
                return body

            def _answer(self, status: int, content_type: str, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the sender hung up first: nothing to tell it

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: a request line is no business of a validation report

        return Handler
