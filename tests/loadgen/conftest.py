"""Fixtures for the load generator's tests: the streaming stub server on a free loopback port."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from infersight.loadgen.stub_server import StubConfig, StubServer


@pytest.fixture
def stub() -> Iterator[Callable[..., StubServer]]:
    """Start stub servers with given timings; every one is stopped after the test."""
    started: list[StubServer] = []

    def start(**kwargs: object) -> StubServer:
        server = StubServer(StubConfig(**kwargs)).start()  # type: ignore[arg-type]
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
