"""The load generator's connections: a server that closes a kept-alive connection just as the next
request arrives (uvicorn's idle timer does that after a VM stall) must not fail requests that never
reached it. Against vLLM under KV pressure such races failed up to a third of the requests as "disconnected".

The server here is raw asyncio, not the stub: it answers the first request of every connection
(with ``Connection: keep-alive``) and closes on the second, unanswered, every time."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight.stack.ports import LOOPBACK, free_port
from tests.loadgen.helpers import run_scenario, scenario

REQUESTS = 4


def _sse_body() -> bytes:
    chunk = {"choices": [{"index": 0, "text": "hi"}], "usage": {"prompt_tokens": 2, "completion_tokens": 1}}
    return f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()


class OneRequestPerConnectionServer:
    """Answers one request per connection, then drops the connection when the next one comes."""

    def __init__(self) -> None:
        self.port = free_port()
        self.connections = 0
        self.answered = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="one-request-server", daemon=True)

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self._read_request(reader)
            body = _sse_body()
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
            self.answered += 1
            await reader.readuntil(b"\r\n\r\n")  # the next request on this connection: dropped
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed first: what a fresh-connection client does
        finally:
            writer.close()

    def _run(self) -> None:
        async def main() -> None:
            self._stop = asyncio.Event()
            server = await asyncio.start_server(self._serve, LOOPBACK, self.port)
            self._ready.set()
            async with server:
                await self._stop.wait()

        self._loop.run_until_complete(main())

    def __enter__(self) -> OneRequestPerConnectionServer:
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise RuntimeError("the one-request server did not start within 10 s")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


@pytest.fixture
def server() -> Iterator[OneRequestPerConnectionServer]:
    with OneRequestPerConnectionServer() as s:
        yield s


def test_a_kept_alive_connection_closed_by_the_server_fails_no_request(
    server: OneRequestPerConnectionServer, tmp_path: Path
) -> None:
    # One request every 0.2 s, each done long before the next: a pooling client would reuse the
    # first connection for every later request and lose them all.
    stage = {"name": "s", "duration": "800ms", "rate": 5, "arrival": "constant", "prompt_tokens": 2}
    sc = scenario([stage | {"output_tokens": 1}], model="m")
    summary = run_scenario(sc, tmp_path, target=server.url).run["summary"]
    assert summary["overall"]["sent"] == REQUESTS
    assert summary["overall"]["errors"] == {}, summary["overall"]
    assert summary["overall"]["succeeded"] == server.answered == server.connections == REQUESTS
