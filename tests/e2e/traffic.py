"""A little bounded traffic for end-to-end tests (the load generator proper is
infersight.loadgen; this only needs to make vLLM's counters move)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def complete(
    base_url: str,
    model: str,
    prompt: str,
    max_tokens: int,
    timeout: float = 120,
    temperature: float | None = None,
    n: int = 1,
) -> int:
    """``temperature`` 0 decodes greedily: a tiny random model then falls into short cycles, which
    n-gram speculative decoding drafts and the model accepts. ``n`` > 1 samples in parallel."""
    fields: dict[str, object] = {"model": model, "prompt": prompt, "max_tokens": max_tokens}
    fields |= {} if temperature is None else {"temperature": temperature}
    body = json.dumps(fields | ({"n": n} if n != 1 else {})).encode()
    req = urllib.request.Request(f"{base_url}/v1/completions", data=body, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0  # the engine went away (fault tests stop it on purpose)


def burst(base_url: str, model: str, requests: int, concurrency: int, max_tokens: int = 32) -> list[int]:
    """Send ``requests`` completions, ``concurrency`` at a time; the HTTP statuses."""
    prompts = [f"the model serves request number {i} with a small batch" for i in range(requests)]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(lambda p: complete(base_url, model, p, max_tokens), prompts))
