"""A streaming OpenAI-compatible stub server with known timings, for tests and benchmarks.

It serves ``/v1/completions``, ``/v1/chat/completions`` (streaming, like vLLM: a chat stream opens
with a role-only chunk; ``stream_options.include_usage`` adds a final usage chunk and vLLM's
``continuous_usage_stats`` puts the running count on every chunk), ``/v1/models`` and ``/health``.

Token i (0-based) of a response is due at ``ttft + i * itl`` after the request arrived; tokens are
sent ``tokens_per_chunk`` at a time, when the chunk's last token is due. Prompt length is counted
in whitespace-separated words; ``max_prompt_words`` makes longer prompts fail with 400, like a
prompt over vLLM's ``max_model_len``. It binds loopback addresses only.

Run it alone: ``python -m infersight.loadgen.stub_server --port 0 --ttft 0.05 --itl 0.01``
(prints ``listening on http://127.0.0.1:PORT`` once ready).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from infersight.loopback import LOOPBACK, is_loopback

MAX_DELAY_S = 60.0  # past a client's usual request timeout: the stub would only ever time out


@dataclass(frozen=True)
class StubConfig:
    ttft: float = 0.05
    itl: float = 0.01
    tokens: int = 16  # when the request has no max_tokens
    max_tokens_cap: int = 4096
    tokens_per_chunk: int = 1
    model: str = "stub-model"
    max_prompt_words: int | None = None

    def __post_init__(self) -> None:
        for name in ("ttft", "itl"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= MAX_DELAY_S):  # inf hung every request; nan read as 0
                raise ValueError(f"{name} {value!r} is not allowed: give seconds from 0 to {MAX_DELAY_S:g}")
        if self.tokens < 1 or self.tokens_per_chunk < 1 or self.max_tokens_cap < 1:
            raise ValueError("tokens, tokens_per_chunk and max_tokens_cap below 1 are not allowed")
        if self.max_prompt_words is not None and self.max_prompt_words < 1:
            raise ValueError(
                f"max_prompt_words {self.max_prompt_words} is not allowed: give 1 or more, or leave it out"
            )


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind, "code": status}}, status=status)


def _prompt_words(body: dict[str, Any], chat: bool) -> int | None:
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        return sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
    prompt = body.get("prompt")
    return len(prompt.split()) if isinstance(prompt, str) else None


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


class _Handlers:
    def __init__(self, cfg: StubConfig):
        self.cfg = cfg
        self.requests = 0
        self.traceparents: list[str] = []  # as received, so tests can join them to requests.csv

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.cfg.model, "object": "model"}]})

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def generate(self, request: web.Request) -> web.StreamResponse:
        cfg = self.cfg
        loop = asyncio.get_running_loop()
        start = loop.time()
        self.requests += 1
        if (traceparent := request.headers.get("traceparent")) is not None and len(self.traceparents) < 100_000:
            self.traceparents.append(traceparent)
        chat = request.path.endswith("/chat/completions")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "body is not JSON", "BadRequestError")
        if not isinstance(body, dict):
            return _error(400, "body is not a JSON object", "BadRequestError")
        words = _prompt_words(body, chat)
        if words is None:
            return _error(400, "missing prompt/messages", "BadRequestError")
        if cfg.max_prompt_words is not None and words > cfg.max_prompt_words:
            return _error(400, f"prompt has {words} words, more than {cfg.max_prompt_words}", "BadRequestError")
        n = body.get("max_tokens") or body.get("max_completion_tokens") or cfg.tokens
        if not isinstance(n, int) or n < 1:
            return _error(400, "max_tokens must be a positive integer", "BadRequestError")
        n = min(n, cfg.max_tokens_cap)
        options = body.get("stream_options") or {}
        head = {
            "id": f"stub-{self.requests}",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": int(time.time()),
            "model": cfg.model,
        }
        if not body.get("stream"):
            await asyncio.sleep(max(0.0, start + cfg.ttft + (n - 1) * cfg.itl - loop.time()))
            text = " tok" * n
            choice = {"index": 0, "finish_reason": "length"} | (
                {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
            )
            usage = {"prompt_tokens": words, "completion_tokens": n, "total_tokens": words + n}
            return web.json_response(head | {"choices": [choice], "usage": usage})

        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        # A client that goes away mid-stream (a cancelled request) is not an error to report.
        with contextlib.suppress(ConnectionResetError):
            await self._stream(resp, head, chat, n, words, options, start)
        return resp

    async def _stream(
        self,
        resp: web.StreamResponse,
        head: dict[str, Any],
        chat: bool,
        n: int,
        words: int,
        options: dict[str, Any],
        start: float,
    ) -> None:
        cfg = self.cfg
        loop = asyncio.get_running_loop()
        if chat:  # like vLLM: the role arrives first, with no content; TTFT must not count it
            await resp.write(_sse(head | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}))
        emitted = 0
        while emitted < n:
            k = min(cfg.tokens_per_chunk, n - emitted)
            delay = start + cfg.ttft + (emitted + k - 1) * cfg.itl - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            emitted += k
            finish = "length" if emitted == n else None
            text = " tok" * k
            choice = {"index": 0, "finish_reason": finish} | (
                {"delta": {"content": text}} if chat else {"text": text, "logprobs": None}
            )
            chunk: dict[str, Any] = head | {"choices": [choice]}
            if options.get("continuous_usage_stats"):
                chunk["usage"] = {"prompt_tokens": words, "completion_tokens": emitted, "total_tokens": words + emitted}
            await resp.write(_sse(chunk))
        if options.get("include_usage"):
            usage = {"prompt_tokens": words, "completion_tokens": n, "total_tokens": words + n}
            await resp.write(_sse(head | {"choices": [], "usage": usage}))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()


_HANDLERS = web.AppKey("handlers", _Handlers)


def make_app(cfg: StubConfig) -> web.Application:
    handlers = _Handlers(cfg)
    app = web.Application()
    app[_HANDLERS] = handlers
    app.router.add_post("/v1/completions", handlers.generate)
    app.router.add_post("/v1/chat/completions", handlers.generate)
    app.router.add_get("/v1/models", handlers.models)
    app.router.add_get("/health", handlers.health)
    return app


def check_loopback(host: str) -> None:
    if not is_loopback(host):
        raise ValueError(f"the stub server binds loopback addresses only (127.0.0.0/8, ::1, localhost), not {host!r}")


async def start_site(cfg: StubConfig, host: str = LOOPBACK, port: int = 0) -> tuple[web.AppRunner, str]:
    """Start serving on the running loop; returns the runner (cleanup() stops it) and the base URL."""
    check_loopback(host)
    runner = web.AppRunner(make_app(cfg), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=4096)
    try:
        await site.start()
    except BaseException:  # e.g. the port is in use: release what setup() opened
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    return runner, f"http://{bound_host}:{bound_port}"


class StubServer:
    """The stub in a background thread with its own event loop (for tests). Always stop it:
    use it as a context manager."""

    def __init__(self, cfg: StubConfig | None = None, host: str = LOOPBACK):
        self.cfg = cfg or StubConfig()
        self._host = host
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self, timeout: float = 10.0) -> StubServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._runner, self.url = loop.run_until_complete(start_site(self.cfg, self._host))
            except BaseException as exc:  # reported to start()'s caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="stub-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"stub server did not start within {timeout}s")
        if failure:
            raise failure[0]
        return self

    @property
    def requests(self) -> int:
        """Generation requests received so far (tests use it to prove that nothing was sent)."""
        return self._runner.app[_HANDLERS].requests if self._runner is not None else 0

    @property
    def traceparents(self) -> list[str]:
        return list(self._runner.app[_HANDLERS].traceparents) if self._runner is not None else []

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535; 0 picks a free port)")
    return port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = StubConfig()
    parser.add_argument("--host", default=LOOPBACK, help=f"a loopback address (default {LOOPBACK})")
    parser.add_argument("--port", type=port_number, default=0, help="0 picks a free port (default)")
    parser.add_argument("--ttft", type=float, default=d.ttft, help=f"seconds to the first token (default {d.ttft})")
    parser.add_argument("--itl", type=float, default=d.itl, help=f"seconds between tokens (default {d.itl})")
    parser.add_argument("--tokens", type=int, default=d.tokens, help="output tokens when max_tokens is absent")
    parser.add_argument("--tokens-per-chunk", type=int, default=d.tokens_per_chunk)
    parser.add_argument("--max-prompt-words", type=int, default=None, help="longer prompts get 400")
    parser.add_argument("--model", default=d.model)


def config_from_args(args: argparse.Namespace) -> StubConfig:
    return StubConfig(
        ttft=args.ttft,
        itl=args.itl,
        tokens=args.tokens,
        tokens_per_chunk=args.tokens_per_chunk,
        max_prompt_words=args.max_prompt_words,
        model=args.model,
    )


class ListenError(RuntimeError):
    """The stub could not listen on the address asked for (e.g. the port is in use)."""


async def serve_until_signalled(cfg: StubConfig, host: str, port: int) -> None:
    try:
        runner, url = await start_site(cfg, host, port)
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None
    print(f"listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def run_from_args(args: argparse.Namespace, prog: str) -> int:
    try:
        cfg = config_from_args(args)
        check_loopback(args.host)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve_until_signalled(cfg, args.host, args.port))
    except ListenError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infersight.loadgen.stub_server", description=__doc__.split("\n")[0]
    )
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser.prog)


if __name__ == "__main__":
    sys.exit(main())
