"""The streaming OpenAI-compatible client (aiohttp): one POST per request, no retries, no redirects,
each with a W3C ``traceparent`` of its own.

aiohttp never retries a POST on its own, and this client adds no retry either: a failed request
is a measurement (errors by status code or kind), not something to hide. Every request ends in
exactly one outcome: ok, an HTTP status, or one of ``records.ERROR_KINDS``. Redirects are not
followed: load goes only where ``--target`` says (a redirect could lead off loopback).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from infersight.loadgen.records import RequestRecord, RequestSpec
from infersight.loadgen.stream_chunks import (
    EVENT_STREAM,
    MAX_EVENT_BYTES,
    BadResponse,
    Endpoint,
    ServerError,
    error_type,
    parse_event,
)
from infersight.loadgen.timings import StreamTimer
from infersight.traces.context import HEADER as TRACE_HEADER
from infersight.traces.context import new_traceparent

__all__ = ["Endpoint", "OpenAIStreamClient", "request_body"]

_MAX_ERROR_BODY = 64 * 1024


def request_body(endpoint: Endpoint, model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
    if endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    # continuous_usage_stats (vLLM) puts the running token count on every chunk: ITL from usage deltas.
    body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    if ignore_eos:
        body["ignore_eos"] = True  # vLLM extensions: produce exactly max_tokens
        body["min_tokens"] = max_tokens
    return body


class OpenAIStreamClient:
    """Sends one streaming request and fills its :class:`RequestRecord` as chunks arrive, so a
    request cancelled mid-stream (Ctrl-C, the run's deadline) keeps what was measured so far."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        model: str,
        endpoint: Endpoint,
        ignore_eos: bool,
        request_timeout_s: float,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self._session = session
        self._url = base_url.rstrip("/") + ("/v1/chat/completions" if endpoint == "chat" else "/v1/completions")
        self._model = model
        self._endpoint: Endpoint = endpoint
        self._ignore_eos = ignore_eos
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_s)
        self._clock = clock

    async def send(self, spec: RequestSpec, rec: RequestRecord) -> None:
        body = request_body(self._endpoint, self._model, spec.prompt, spec.max_tokens, self._ignore_eos)
        data = json.dumps(body).encode()
        clock = self._clock
        # A fresh trace per request: vLLM's span (--otlp-traces-endpoint) joins this row by it.
        rec.trace_id, traceparent = new_traceparent()
        sent = clock()  # TTFT/e2e base; the scheduler records the dispatch time (rec.sent) for lag
        timer = StreamTimer(sent)
        try:
            async with self._session.post(
                self._url,
                data=data,
                headers={"Content-Type": "application/json", TRACE_HEADER: traceparent},
                timeout=self._timeout,
                allow_redirects=False,
            ) as resp:
                rec.status = resp.status
                if 300 <= resp.status < 400:
                    rec.error = "redirect"
                    return
                if resp.status != 200:
                    rec.error = "http"
                    rec.error_type = error_type(await self._json_or_none(resp))
                    return
                if resp.content_type != EVENT_STREAM:
                    raise BadResponse("not_an_event_stream")
                await self._read_stream(resp, timer, rec, spec.max_tokens)
        except BadResponse as exc:
            rec.error, rec.error_type = "bad_response", exc.reason
        except TimeoutError:
            rec.error = "timeout"
        except aiohttp.InvalidURL:
            rec.error = "invalid_url"
        except aiohttp.ClientConnectorError:
            rec.error = "connect"
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError):
            rec.error = "disconnected"
        except aiohttp.ClientResponseError:  # raised before any status: the reply was not HTTP
            rec.error = "protocol_error"
        except aiohttp.ClientError as exc:
            rec.error, rec.error_type = "client_error", type(exc).__name__
        except asyncio.CancelledError:
            rec.error = "cancelled"
            raise
        finally:
            rec.e2e = clock() - sent
            rec.ttft = timer.ttft
            rec.itl, rec.itl_source = timer.itl(rec.completion_tokens)
            rec.first_chunk_tokens = timer.first_chunk_tokens
            rec.tpot = timer.tpot(rec.completion_tokens)

    @staticmethod
    async def _json_or_none(resp: aiohttp.ClientResponse) -> Any:
        try:
            return json.loads(await resp.content.read(_MAX_ERROR_BODY))
        except (ValueError, RecursionError, aiohttp.ClientError):
            return None

    async def _read_stream(
        self, resp: aiohttp.ClientResponse, timer: StreamTimer, rec: RequestRecord, max_tokens: int
    ) -> None:
        """Parse server-sent events as bytes arrive; events of one read share its arrival time."""
        clock, endpoint = self._clock, self._endpoint
        pending = b""
        chunks = 0
        async for data in resp.content.iter_any():
            t = clock()
            pending += data
            *events, pending = pending.split(b"\n\n")
            if len(pending) > MAX_EVENT_BYTES:
                raise BadResponse("event_too_large")
            for event in events:
                for line in event.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    parsed = parse_event(line[5:].strip(), endpoint)
                    if parsed is None:  # [DONE]
                        if not chunks:
                            raise BadResponse("no_chunks")
                        return
                    if isinstance(parsed, ServerError):
                        rec.error, rec.error_type = "stream_error", parsed.error_type
                        return
                    chunks += 1
                    if parsed.completion_tokens is not None:
                        if parsed.completion_tokens > max_tokens:  # and ITL would hold one float per claimed token
                            raise BadResponse("more_tokens_than_asked")
                        rec.completion_tokens = parsed.completion_tokens
                    if parsed.prompt_tokens is not None:
                        rec.prompt_tokens = parsed.prompt_tokens
                    timer.on_chunk(t, parsed.has_content, parsed.completion_tokens)
        rec.error = "incomplete"  # the stream ended without [DONE]
