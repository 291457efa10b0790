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


# Client-side error kinds; HTTP errors are kept by status code instead.
ERROR_KINDS = ("timeout", "connect", "disconnected", "stream_error", "incomplete", "cancelled")


@dataclass(slots=True)
class RequestRecord:
    index: int
    stage: int
    scheduled: float | None
    sent: float | None = None  # offset from run start (s), taken just before the request is written
    status: int | None = None  # HTTP status, None if no response arrived
    error: str | None = None  # None, "http", or one of ERROR_KINDS
    error_type: str | None = None  # the server's short error type (e.g. BadRequestError), never a message
    ttft: float | None = None
    e2e: float | None = None
    tpot: float | None = None
    itl: list[float] = field(default_factory=list, repr=False)
    itl_source: ItlSource = "none"
    prompt_tokens_planned: int = 0
    prompt_tokens: int | None = None  # from the server's usage
    completion_tokens: int | None = None

    @property
    def lag(self) -> float | None:
        """How late the client sent this request against its schedule (open loop only)."""
        if self.scheduled is None or self.sent is None:
            return None
        return self.sent - self.scheduled

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200
