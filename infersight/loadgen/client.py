"""The streaming OpenAI-compatible client (aiohttp): one POST per request, no retries.

aiohttp never retries a POST on its own, and this client adds no retry either: a failed request
is a measurement (errors by status code), not something to hide.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any, Literal

import aiohttp

from infersight.loadgen.records import RequestRecord, RequestSpec
from infersight.loadgen.timings import StreamTimer

Endpoint = Literal["completions", "chat"]
_ERROR_TYPE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
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


def _error_type(payload: Any) -> str | None:
    """The short error ``type`` of an OpenAI-style error object; never its message (it may quote input)."""
    if not isinstance(payload, dict):
        return None
    err = payload.get("error", payload)
    kind = err.get("type") if isinstance(err, dict) else None
    return kind if isinstance(kind, str) and _ERROR_TYPE.match(kind) else None


def _content(choice: dict[str, Any], endpoint: Endpoint) -> bool:
    if endpoint == "chat":
        delta = choice.get("delta") or {}
        return bool(delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"))
    return bool(choice.get("text"))


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
        sent = clock()  # TTFT/e2e base; the scheduler records the dispatch time (rec.sent) for lag
        timer = StreamTimer(sent)
        try:
            async with self._session.post(
                self._url, data=data, headers={"Content-Type": "application/json"}, timeout=self._timeout
            ) as resp:
                rec.status = resp.status
                if resp.status != 200:
                    rec.error = "http"
                    rec.error_type = _error_type(await self._json_or_none(resp))
                    return
                await self._read_stream(resp, timer, rec)
        except TimeoutError:
            rec.error = "timeout"
        except aiohttp.ClientConnectorError:
            rec.error = "connect"
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError):
            rec.error = "disconnected"
        except asyncio.CancelledError:
            rec.error = "cancelled"
            raise
        finally:
            rec.e2e = clock() - sent
            rec.ttft = timer.ttft
            rec.itl, rec.itl_source = timer.itl(rec.completion_tokens)
            rec.tpot = timer.tpot(rec.completion_tokens)

    @staticmethod
    async def _json_or_none(resp: aiohttp.ClientResponse) -> Any:
        try:
            return json.loads(await resp.content.read(_MAX_ERROR_BODY))
        except (ValueError, aiohttp.ClientError):
            return None

    async def _read_stream(self, resp: aiohttp.ClientResponse, timer: StreamTimer, rec: RequestRecord) -> None:
        """Parse server-sent events as bytes arrive; events of one read share its arrival time."""
        clock, endpoint = self._clock, self._endpoint
        pending = b""
        async for data in resp.content.iter_any():
            t = clock()
            pending += data
            *events, pending = pending.split(b"\n\n")
            for event in events:
                for line in event.split(b"\n"):
                    if line.startswith(b"data:") and self._on_data(line[5:].strip(), t, timer, rec, endpoint):
                        return
        rec.error = "incomplete"  # the stream ended without [DONE]

    @staticmethod
    def _on_data(payload: bytes, t: float, timer: StreamTimer, rec: RequestRecord, endpoint: Endpoint) -> bool:
        """Handle one ``data:`` payload; True when the stream is over ([DONE] or an error)."""
        if payload == b"[DONE]":
            return True
        try:
            obj = json.loads(payload)
        except ValueError:
            rec.error = "stream_error"
            return True
        if "error" in obj:
            rec.error, rec.error_type = "stream_error", _error_type(obj)
            return True
        usage = obj.get("usage")
        completion = None
        if usage:
            completion = usage.get("completion_tokens")
            rec.completion_tokens = completion
            rec.prompt_tokens = usage.get("prompt_tokens", rec.prompt_tokens)
        choices = obj.get("choices")
        timer.on_chunk(t, bool(choices) and _content(choices[0], endpoint), completion)
        return False
