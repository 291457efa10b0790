"""The streaming client against the stub server with known timings: TTFT at the first content
chunk, ITL per token from usage deltas (not chunk gaps), token counts, errors by status.

Timing bounds are one-sided where the server guarantees them (a token is never early) and wide
on the other side: they separate "per token" from "per chunk", they do not benchmark."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aiohttp
import pytest

from infersight.loadgen.client import Endpoint, request_body
from infersight.loadgen.stub_server import StubServer
from infersight.stack.ports import free_port
from tests.loadgen.helpers import send_one


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_ttft_and_itl_match_the_servers_timings(stub: Callable[..., StubServer], endpoint: Endpoint) -> None:
    ttft, itl = 0.15, 0.02
    server = stub(ttft=ttft, itl=itl, tokens_per_chunk=4)  # a chunk every 80 ms carries 4 tokens
    rec = send_one(server.url, endpoint, max_tokens=16)
    assert rec.ok, (rec.status, rec.error)
    assert rec.completion_tokens == 16
    assert rec.prompt_tokens == 3
    assert rec.itl_source == "usage"
    assert len(rec.itl) == 12  # tokens after the first chunk's 4
    # The first content chunk holds tokens 0-3, due at ttft + 3 * itl; the chat role chunk comes earlier.
    assert rec.ttft is not None
    assert rec.ttft >= 0.9 * (ttft + 3 * itl)
    assert rec.ttft < ttft + 3 * itl + 1.0
    mean_itl = sum(rec.itl) / len(rec.itl)
    assert 0.9 * itl <= mean_itl < 2 * itl, "ITL must be per token (20 ms), not per chunk (80 ms)"
    assert rec.tpot is not None and 0.5 * itl < rec.tpot < 2 * itl
    assert rec.e2e is not None and rec.e2e >= ttft + 15 * itl * 0.9


def test_role_only_chunk_does_not_count_as_first_token(stub: Callable[..., StubServer]) -> None:
    server = stub(ttft=0.3, itl=0.001)
    rec = send_one(server.url, "chat", max_tokens=2)
    assert rec.ttft is not None and rec.ttft >= 0.27  # the role chunk left at once


def test_over_long_prompt_counts_as_http_400_with_error_type(stub: Callable[..., StubServer]) -> None:
    server = stub(max_prompt_words=5)
    rec = send_one(server.url, "completions", prompt="a b c d e f g")
    assert rec.status == 400
    assert rec.error == "http"
    assert rec.error_type == "BadRequestError"
    assert not rec.ok
    assert rec.ttft is None


def test_refused_connection_is_a_connect_error() -> None:
    rec = send_one(f"http://127.0.0.1:{free_port()}", "completions")
    assert rec.error == "connect"
    assert rec.status is None


def test_request_asks_for_usage_on_every_chunk_and_exact_output() -> None:
    body = request_body("completions", "m", "hi", 7, ignore_eos=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["max_tokens"] == body["min_tokens"] == 7 and body["ignore_eos"] is True
    chat = request_body("chat", "m", "hi", 7, ignore_eos=False)
    assert chat["messages"] == [{"role": "user", "content": "hi"}]
    assert "ignore_eos" not in chat and "prompt" not in chat


def test_stub_server_refuses_non_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="loopback"):
        StubServer(host="0.0.0.0").start()


def test_stub_timings_hold_without_the_client(stub: Callable[..., StubServer]) -> None:
    """The stub is the reference: check its own pacing with a plain reader."""
    server = stub(ttft=0.1, itl=0.02)

    async def arrivals() -> list[float]:
        async with aiohttp.ClientSession() as session:
            t0 = time.perf_counter()
            body = {"model": "m", "prompt": "x", "max_tokens": 5, "stream": True}
            async with session.post(server.url + "/v1/completions", json=body) as resp:
                return [time.perf_counter() - t0 async for line in resp.content if line.startswith(b"data: {")]

    times = asyncio.run(arrivals())
    assert len(times) == 5
    assert times[0] >= 0.09
    assert times[-1] - times[0] >= 4 * 0.02 * 0.9
