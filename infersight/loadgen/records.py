"""What one request is (its spec, made before the run) and what happened to it (its record).

Records hold counts and times only: the prompt text lives in the spec and is never written out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infersight.loadgen.timings import ItlSource


@dataclass(frozen=True, slots=True)
class RequestSpec:
    index: int
    stage: int  # index into scenario.stages
    scheduled: float | None  # offset from run start (s); None for closed-loop requests
    prompt: str = field(repr=False)
    prompt_tokens: int  # planned; the server's usage count is recorded separately
    max_tokens: int


# The target is not an OpenAI-compatible server: a 200 whose body is not an OpenAI stream, a reply
# that is not HTTP at all, or a redirect (never followed: it could lead off loopback, and an OpenAI
# server answers where it is asked). A run with any of these is invalid: its latencies are not a model's.
NOT_OPENAI_KINDS = ("bad_response", "protocol_error", "redirect")
# The client failed, not the server: the request may never have left. A run with any is invalid.
CLIENT_FAILURE_KINDS = ("invalid_url", "client_error", "unexpected_error")
# Every client-side error kind; HTTP errors are kept by status code instead.
ERROR_KINDS = (
    "timeout",
    "connect",
    "disconnected",
    "stream_error",
    "incomplete",
    "cancelled",
    *NOT_OPENAI_KINDS,
    *CLIENT_FAILURE_KINDS,
)


@dataclass(slots=True)
class RequestRecord:
    index: int
    stage: int
    scheduled: float | None
    sent: float | None = None  # offset from run start (s), taken just before the request is written
    status: int | None = None  # HTTP status, None if no response arrived
    error: str | None = None  # None, "http", or one of ERROR_KINDS
    # The server's short error type (e.g. BadRequestError), a fixed code saying what was not
    # OpenAI-shaped (bad_response), or the exception's class (client failures); never a message.
    error_type: str | None = None
    ttft: float | None = None
    e2e: float | None = None
    tpot: float | None = None
    itl: list[float] = field(default_factory=list, repr=False)
    itl_source: ItlSource = "none"
    first_chunk_tokens: int | None = None  # from usage: tokens that came with the first content chunk
    prompt_tokens_planned: int = 0
    prompt_tokens: int | None = None  # from the server's usage
    completion_tokens: int | None = None
    trace_id: str | None = None  # the W3C trace ID sent with the request (random; 32 hex digits)

    @property
    def lag(self) -> float | None:
        """How late the client sent this request against its schedule (open loop only)."""
        if self.scheduled is None or self.sent is None:
            return None
        return self.sent - self.scheduled

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200
