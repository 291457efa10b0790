"""The OTLP/HTTP span receiver against the real OpenTelemetry SDK exporter (the one vLLM uses with
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf), and against bad requests."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from infersight.stack.ports import free_port
from infersight.traces import spans as sp
from infersight.traces.context import new_traceparent
from infersight.traces.receiver import JSON, MAX_BODY_BYTES, PATH, PROTOBUF, SpanReceiver


@pytest.fixture
def receiver() -> Iterator[SpanReceiver]:
    with SpanReceiver() as r:
        yield r


def exporting_to(url: str) -> TracerProvider:
    """The SDK set up as vLLM sets it up, exporting every span at once."""
    provider = TracerProvider(resource=Resource.create({"service.name": "vllm"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=url, timeout=10)))
    return provider


def emit(provider: TracerProvider, traceparent: str, attributes: dict[str, object]) -> None:
    """One span as vLLM's output processor makes it: under the request's incoming trace context."""
    context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    span = provider.get_tracer("vllm").start_span(sp.REQUEST_SPAN, context=context, attributes=attributes)  # type: ignore[arg-type]
    span.end()


def send_like_vllm(url: str, traceparent: str, attributes: dict[str, object]) -> None:
    provider = exporting_to(url)
    emit(provider, traceparent, attributes)
    provider.shutdown()


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_span_from_the_real_exporter_keeps_its_trace_and_numbers_only(receiver: SpanReceiver) -> None:
    trace_id, traceparent = new_traceparent()
    attributes = {
        sp.TTFT: 0.125,
        sp.QUEUE: 0.01,
        sp.COMPLETION_TOKENS: 32,
        "gen_ai.request.id": "cmpl-1234",  # a string: dropped
        "gen_ai.latency.note": "free text",  # a string under a kept prefix: dropped all the same
        "gen_ai.request.temperature": 0.7,  # a number outside the kept prefixes: dropped
    }
    send_like_vllm(receiver.url, traceparent, attributes)
    (span,) = receiver.spans()
    assert span.trace_id == trace_id and span.parent_span_id == traceparent.split("-")[2]
    assert span.name == sp.REQUEST_SPAN and span.end >= span.start > 1.6e9
    assert dict(span.attributes) == {sp.TTFT: 0.125, sp.QUEUE: 0.01, sp.COMPLETION_TOKENS: 32.0}
    assert receiver.stats.exports == 1 and receiver.stats.refused == 0


def test_json_and_gzip_bodies_are_read_as_the_otlp_spec_allows(receiver: SpanReceiver) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    export = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "b7ad6b7169203331",
                                "name": "llm_request",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                                "attributes": [{"key": sp.E2E, "value": {"doubleValue": 1.0}}],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    status, _ = post(receiver.url, json.dumps(export).encode(), {"Content-Type": "application/json"})
    assert status == 200
    assert [(s.trace_id, s.span_id, s.get(sp.E2E)) for s in receiver.spans()] == [(trace_id, "b7ad6b7169203331", 1.0)]
    protobuf = ExportTraceServiceRequest()
    protobuf.resource_spans.add().scope_spans.add().spans.add(
        trace_id=bytes.fromhex(trace_id), span_id=bytes(8), name="llm_request"
    )
    gz = gzip.compress(protobuf.SerializeToString())
    status, _ = post(receiver.url, gz, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert status == 200
    assert len(receiver.spans()) == 2 and receiver.spans()[1].trace_id == trace_id


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "says"),
    [
        ("/v1/metrics", b"", {"Content-Type": "application/x-protobuf"}, 404, "OTLP traces go to /v1/traces"),
        ("/v1/traces", b"x", {"Content-Type": "text/plain"}, 415, "allowed: application/x-protobuf"),
        ("/v1/traces", b"\xff\xff\xff", {"Content-Type": "application/x-protobuf"}, 400, "not an OTLP trace export"),
        ("/v1/traces", b"{not json", {"Content-Type": "application/json"}, 400, "not an OTLP trace export"),
        ("/v1/traces", b"[1, 2]", {"Content-Type": "application/json"}, 400, "not an OTLP trace export"),
        ("/v1/traces", b"[" * 100_000, {"Content-Type": JSON}, 400, "not an OTLP trace export"),  # past recursion
        ("/v1/traces", b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', {"Content-Type": JSON},
         400, "not an OTLP trace export"),
        ("/v1/traces", b"not gzip", {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"}, 400, "gzip"),
        ("/v1/traces", b"", {"Content-Type": PROTOBUF, "Content-Encoding": "br"}, 415, "allowed: gzip"),
    ],
)  # fmt: skip
def test_bad_requests_get_a_one_line_reason_and_the_receiver_goes_on(
    receiver: SpanReceiver, path: str, body: bytes, headers: dict[str, str], status: int, says: str
) -> None:
    base = receiver.url.removesuffix("/v1/traces")
    got, text = post(base + path, body, headers)
    assert got == status and says in text and text.count("\n") == 1, text
    assert receiver.spans() == [] and receiver.stats.refused == 1
    _, traceparent = new_traceparent()
    send_like_vllm(receiver.url, traceparent, {sp.TTFT: 0.1})
    assert len(receiver.spans()) == 1


def test_a_body_over_the_limit_is_refused_unread(receiver: SpanReceiver) -> None:
    # Only the headers are sent: the receiver answers from Content-Length, before any body.
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(receiver.url).netloc, timeout=10)
    conn.putrequest("POST", "/v1/traces")
    conn.putheader("Content-Type", "application/x-protobuf")
    conn.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 413 and "over" in resp.read().decode()
    conn.close()
    bomb = gzip.compress(b"\0" * (MAX_BODY_BYTES + 1024))  # small on the wire, too big unzipped
    got, text = post(receiver.url, bomb, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert got == 413 and "unzipped" in text


def _raw_export(url: str, declared: int, sent: bytes) -> socket.socket:
    """A POST that declares ``declared`` body bytes and sends ``sent``, its connection left open."""
    parts = urllib.parse.urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\nContent-Length: {declared}\r\n\r\n"
    sock.sendall(head.encode() + sent)
    return sock


def _answer_of(sock: socket.socket) -> str:
    """Everything the receiver sends before it closes (each recv bounded by the socket's 10 s)."""
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks).decode(errors="replace")


def _one_export() -> bytes:
    export = ExportTraceServiceRequest()
    export.resource_spans.add().scope_spans.add().spans.add(trace_id=bytes(range(16)), span_id=bytes(8), name="x")
    return export.SerializeToString()


def test_a_body_cut_short_is_refused_not_kept(receiver: SpanReceiver) -> None:
    """The sender hangs up before its declared length: half an export is not a success."""
    body = _one_export()
    sock = _raw_export(receiver.url, len(body) + 40, body)
    sock.shutdown(socket.SHUT_WR)
    answer = _answer_of(sock)
    assert answer.startswith("HTTP/1.0 400") and "cut short" in answer, answer
    assert receiver.spans() == [] and receiver.stats.exports == 0 and receiver.stats.refused == 1


def test_a_sender_that_stalls_mid_body_is_dropped_after_the_read_timeout() -> None:
    with SpanReceiver(read_timeout_s=0.5) as receiver:
        sock = _raw_export(receiver.url, 100, b"\x0a")
        answer = _answer_of(sock)
        assert answer.startswith("HTTP/1.0 408") and "no byte of the body for 0.5 s" in answer, answer
        assert receiver.stats.refused == 1 and receiver.spans() == []


def test_a_sender_that_stays_connected_reaches_the_next_receiver_on_its_port() -> None:
    # A CI failure this guards: vLLM's exporter kept its connection to a stopped receiver alive,
    # and its next export landed there, not in the receiver started on the same port after it.
    port = free_port()
    provider = exporting_to(f"http://127.0.0.1:{port}/v1/traces")
    try:
        with SpanReceiver(port=port) as first:
            emit(provider, new_traceparent()[1], {sp.TTFT: 0.1})
        with SpanReceiver(port=port) as second:
            emit(provider, new_traceparent()[1], {sp.TTFT: 0.2})
            assert [s.get(sp.TTFT) for s in second.spans()] == [0.2]
        assert len(first.spans()) == 1
    finally:
        provider.shutdown()


def test_spans_past_the_cap_are_counted_not_kept() -> None:
    with SpanReceiver(max_spans=2) as r:
        for _ in range(3):
            send_like_vllm(r.url, new_traceparent()[1], {sp.TTFT: 0.1})
        assert len(r.spans()) == 2 and r.stats.dropped_spans == 1
