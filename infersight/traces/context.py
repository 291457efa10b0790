"""W3C trace context for one request: a fresh random trace ID, sent as ``traceparent``."""

from __future__ import annotations

import secrets

HEADER = "traceparent"
TRACE_ID_HEX = 32
SPAN_ID_HEX = 16


def new_traceparent() -> tuple[str, str]:
    """(trace ID, header value): version 00, a random parent span ID, sampled (flags 01) so that the
    server records its span. Random IDs carry nothing about the request or its prompt."""
    trace_id = secrets.token_hex(TRACE_ID_HEX // 2)
    span_id = secrets.token_hex(SPAN_ID_HEX // 2)
    return trace_id, f"00-{trace_id}-{span_id}-01"
