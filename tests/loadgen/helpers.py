"""Small builders shared by the load generator's tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from infersight.loadgen.client import Endpoint, OpenAIStreamClient
from infersight.loadgen.prompts import WordVocabulary
from infersight.loadgen.records import RequestRecord, RequestSpec
from infersight.loadgen.runner import RunOptions, RunOutcome, run
from infersight.loadgen.scenario import Scenario, parse_scenario
from infersight.loadgen.scheduler import Sender


def scenario(stages: list[dict[str, Any]], **top: Any) -> Scenario:
    data: dict[str, Any] = {"name": "t", "limits": {"max_duration": "30s", "max_requests": 10_000}, "stages": stages}
    for key, value in top.items():
        data[key] = data[key] | value if isinstance(data.get(key), dict) else value
    return parse_scenario(data)


def run_scenario(
    sc: Scenario, out: Path, target: str = "http://127.0.0.1:9", sender: Sender | None = None
) -> RunOutcome:
    opts = RunOptions(target=target, out_dir=out, vocabulary=WordVocabulary(), sender=sender, handle_signals=False)
    return run(sc, opts)


def send_one(
    url: str, endpoint: Endpoint, prompt: str = "one two three", max_tokens: int = 8, timeout_s: float = 10.0
) -> RequestRecord:
    async def go() -> RequestRecord:
        async with aiohttp.ClientSession() as session:
            client = OpenAIStreamClient(session, url, "stub-model", endpoint, True, timeout_s)
            spec = RequestSpec(0, 0, 0.0, prompt, len(prompt.split()), max_tokens)
            rec = RequestRecord(0, 0, 0.0)
            await client.send(spec, rec)
            return rec

    return asyncio.run(go())
