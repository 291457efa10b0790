"""One vLLM request span as kept here: IDs, times and the numeric timing and usage attributes.

Only numbers under ``gen_ai.latency.`` and ``gen_ai.usage.`` are kept. String attributes are
dropped whatever their key, so text that a future vLLM put into a span could not reach a report.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from infersight.traces.attributes import (  # noqa: F401 (re-exported: callers read names from here)
    COMPLETION_TOKENS,
    DECODE,
    E2E,
    PREFILL,
    PROMPT_TOKENS,
    QUEUE,
    REQUEST_SPAN,
    TTFT,
)

KEPT_PREFIXES = ("gen_ai.latency.", "gen_ai.usage.")


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str  # 32 hex digits
    span_id: str
    parent_span_id: str
    name: str
    start: float  # unix seconds; vLLM starts its span at the request's arrival
    end: float
    attributes: Mapping[str, float]

    def get(self, key: str) -> float | None:
        return self.attributes.get(key)


def _number(value: object) -> float | None:
    which = value.WhichOneof("value")  # type: ignore[attr-defined]
    if which in ("int_value", "double_value"):
        return float(getattr(value, which))
    return None


def decode(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                attrs = {
                    a.key: n
                    for a in s.attributes
                    if a.key.startswith(KEPT_PREFIXES) and (n := _number(a.value)) is not None
                }
                yield Span(
                    trace_id=s.trace_id.hex(),
                    span_id=s.span_id.hex(),
                    parent_span_id=s.parent_span_id.hex(),
                    name=s.name,
                    start=s.start_time_unix_nano / 1e9,
                    end=s.end_time_unix_nano / 1e9,
                    attributes=attrs,
                )
