"""The shape of an OpenAI-compatible stream: each ``data:`` payload parsed into what the client
measures, or refused as :class:`BadResponse`.

The checks are strict on purpose: a server that answers 200 with something else (a proxy's page,
a different API, garbage) must not be counted as a successful request, or a run against the wrong
URL reports fine latencies for requests that never reached a model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Endpoint = Literal["completions", "chat"]

EVENT_STREAM = "text/event-stream"
# No real chunk comes near this; a server that never sends an event separator must not make the
# client buffer without bound.
MAX_EVENT_BYTES = 1024 * 1024

_ERROR_TYPE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class BadResponse(ValueError):
    """The response is not an OpenAI-compatible stream. ``reason`` is a fixed short code (it goes
    to requests.csv), never text from the response."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Chunk:
    has_content: bool  # the first choice carries generated text (not just a role)
    completion_tokens: int | None  # from usage, when the chunk has it
    prompt_tokens: int | None


@dataclass(frozen=True, slots=True)
class ServerError:
    """An error event in the stream (the server gave up mid-stream)."""

    error_type: str | None


def error_type(payload: Any) -> str | None:
    """The short error ``type`` of an OpenAI-style error object; never its message (it may quote input)."""
    if not isinstance(payload, dict):
        return None
    err = payload.get("error", payload)
    kind = err.get("type") if isinstance(err, dict) else None
    return kind if isinstance(kind, str) and _ERROR_TYPE.match(kind) else None


def _token_count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadResponse("bad_usage")
    return value


def _optional_text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadResponse("bad_choice")
    return value


def _has_content(choice: Any, endpoint: Endpoint) -> bool:
    if not isinstance(choice, dict):
        raise BadResponse("bad_choice")
    if endpoint == "completions":
        return bool(_optional_text(choice.get("text")))
    delta = choice.get("delta")
    if delta is None:
        return False
    if not isinstance(delta, dict):
        raise BadResponse("bad_choice")
    return any(_optional_text(delta.get(key)) for key in ("content", "reasoning_content", "reasoning"))


def parse_event(payload: bytes, endpoint: Endpoint) -> Chunk | ServerError | None:
    """One ``data:`` payload: a chunk, a server error, or None for ``[DONE]``."""
    if payload == b"[DONE]":
        return None
    try:
        obj = json.loads(payload)
    except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
        raise BadResponse("not_json") from None
    if not isinstance(obj, dict):
        raise BadResponse("not_an_object")
    if "error" in obj:
        return ServerError(error_type(obj))
    choices = obj.get("choices")
    if not isinstance(choices, list):
        raise BadResponse("no_choices")
    usage = obj.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise BadResponse("bad_usage")
    contents = [_has_content(choice, endpoint) for choice in choices]  # all checked, the first measured
    return Chunk(
        bool(contents) and contents[0],
        _token_count(usage, "completion_tokens") if usage else None,
        _token_count(usage, "prompt_tokens") if usage else None,
    )
