"""Reading the MoE exporter and vLLM's token counters, for the end-to-end and GPU tests.

Accounting: a request's prompt tokens all go through the model once (prefill, possibly in
chunks); each generated token except the last is fed back once (decode). So, without prefix
caching (cached prompt tokens skip the forward pass) and without preemption (recomputation
repeats tokens), tokens forwarded = prompt + generated - finished requests, and every MoE layer
routes top_k times that many tokens. Padding and warm-up/dummy batches are not counted.
"""

from __future__ import annotations

import os
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client.parser import text_string_to_metric_families

from infersight.exporters.moe.settings import ENABLE_VAR, PORT_VAR, WINDOW_VAR
from infersight.stack.ports import free_port
from infersight.stack.process import http_get
from infersight.stack.vllm_server import VLLMServer
from tests.e2e.traffic import complete
from tests.packs.e2e_support import profile

EXPERT_TOKENS = "infersight_moe_expert_tokens_total"
T = TypeVar("T")


VOCAB = range(4, 450)  # the tiny tokenizer's ids past its special tokens


def random_token_prompt(rng: random.Random, length: int = 48) -> list[int]:
    """Random token ids: the tiny model's random router spreads them over all experts (a handful of
    words would not: with random weights a few experts take most common words)."""
    return [rng.choice(VOCAB) for _ in range(length)]


# The exporter's balance window: the MoE pack's end-to-end profile (tests/packs/e2e_support), 5m / 20.
WINDOW_S = profile().scaled(profile().moe.window).total_seconds


def plugin_env(port: int) -> dict[str, str]:
    return {ENABLE_VAR: "1", PORT_VAR: str(port), WINDOW_VAR: format(WINDOW_S, "g")}


# Test instrumentation, not part of the plugin: every Python process vLLM starts imports this
# sitecustomize, which wraps the entry point to record which process called it and how it ended.
# (The API server calls it before vLLM configures logging, so its log line would be lost.)
REGISTER_RECORDER = """
import multiprocessing, os
import infersight.exporters.moe.plugin as _plugin

_register = _plugin.register


def register():
    outcome = "ok"
    try:
        _register()
    except BaseException as exc:
        outcome = f"raised {type(exc).__name__}"
        raise
    finally:
        with open(os.environ["INFERSIGHT_TEST_REGISTER_LOG"], "a") as f:
            f.write(f"{os.getpid()} {multiprocessing.current_process().name} {outcome}\\n")


_plugin.register = register
"""


@contextmanager
def plugged_vllm(workdir: Path, model_dir: Path, model: str) -> Iterator[PluggedVLLM]:
    """The tiny MoE model served with the plugin on and every process's register() recorded.
    Prefix caching off: cached prompt tokens skip the forward pass, so they would be neither
    routed nor counted."""
    port = free_port()
    recorder = workdir / "moe-register-recorder"
    recorder.mkdir(exist_ok=True)
    (recorder / "sitecustomize.py").write_text(REGISTER_RECORDER)
    env = {
        **plugin_env(port),
        "PYTHONPATH": os.pathsep.join(p for p in (str(recorder), os.environ.get("PYTHONPATH", "")) if p),
        "INFERSIGHT_TEST_REGISTER_LOG": str(recorder / "calls.txt"),
    }
    args = ["--no-enable-prefix-caching"]
    with VLLMServer(model_dir, model, workdir / "vllm-moe-plugin", extra_args=args, env=env) as server:
        yield PluggedVLLM(server, model, port, recorder / "calls.txt")


def samples(url: str) -> list[tuple[str, dict[str, str], float]]:
    status, body = http_get(url)
    if status != 200:
        raise AssertionError(f"{url} answered {status}")
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(body.decode()) for s in f.samples]


def expert_tokens(url: str, model: str) -> dict[tuple[str, int], float]:
    """{(layer, expert): tokens} of one model from the exporter."""
    return {
        (labels["layer"], int(labels["expert"])): value
        for name, labels, value in samples(url)
        if name == EXPERT_TOKENS and labels["model_name"] == model
    }


def per_layer(counts: dict[tuple[str, int], float]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for (layer, _), value in counts.items():
        out[layer] += value
    return dict(out)


def delta(after: dict[tuple[str, int], float], before: dict[tuple[str, int], float]) -> dict[tuple[str, int], float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def top_share(counts: dict[tuple[str, int], float], layer: str, n: int) -> float:
    """Share of a layer's routed tokens taken by its ``n`` busiest experts."""
    values = sorted((v for (lay, _), v in counts.items() if lay == layer), reverse=True)
    total = sum(values)
    return sum(values[:n]) / total if total else 0.0


def active_experts(counts: dict[tuple[str, int], float], layer: str) -> int:
    return sum(1 for (lay, _), v in counts.items() if lay == layer and v > 0)


@dataclass(frozen=True)
class Tokens:
    prompt: float
    generation: float
    requests: float

    @property
    def forwarded(self) -> float:
        return self.prompt + self.generation - self.requests

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(self.prompt - other.prompt, self.generation - other.generation, self.requests - other.requests)


def vllm_tokens(metrics_url: str, model: str) -> Tokens:
    totals: dict[str, float] = defaultdict(float)
    for name, labels, value in samples(metrics_url):
        if labels.get("model_name") == model and name in (
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
            "vllm:request_success_total",
        ):
            totals[name] += value
    return Tokens(
        totals["vllm:prompt_tokens_total"], totals["vllm:generation_tokens_total"], totals["vllm:request_success_total"]
    )


def poll(read: Callable[[], T], done: Callable[[T], bool], timeout: float = 60.0, interval: float = 0.5) -> T:
    """Read until ``done(reading)`` (the 1 Hz copy and vLLM's stats have caught up) or the timeout;
    the last reading either way, so the caller's assertion shows the numbers."""
    deadline = time.monotonic() + timeout
    reading = read()
    while not done(reading) and time.monotonic() < deadline:
        time.sleep(interval)
        reading = read()
    return reading


@dataclass
class PluggedVLLM:
    """A vLLM server started with the plugin on, and where its (rank 0) exporter listens."""

    server: VLLMServer
    model: str
    exporter_port: int
    register_calls: Path | None = None

    @property
    def exporter_url(self) -> str:
        return f"http://127.0.0.1:{self.exporter_port}/metrics"

    @property
    def exporter_target(self) -> str:
        return f"127.0.0.1:{self.exporter_port}"

    def counts(self) -> dict[tuple[str, int], float]:
        return expert_tokens(self.exporter_url, self.model)

    def tokens(self) -> Tokens:
        return vllm_tokens(self.server.metrics_url, self.model)


def run_requests(plugged: PluggedVLLM, prompts: list[Any], max_tokens: int, concurrency: int = 4) -> None:
    """Send ``prompts`` (text or token-id lists: the completions API takes both), ``concurrency`` at a time."""
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(lambda p: complete(plugged.server.url, plugged.model, p, max_tokens), prompts))


Counts = dict[tuple[str, int], float]


def measured(
    plugged: PluggedVLLM, send: Callable[[], None], requests: int, top_k: int, timeout: float = 60
) -> tuple[Counts, Tokens]:
    """Counts and vLLM token totals added by ``send``, once both have caught up (or the timeout)."""
    counts0, tokens0 = plugged.counts(), plugged.tokens()
    send()

    def read() -> tuple[Counts, Tokens]:
        return delta(plugged.counts(), counts0), plugged.tokens() - tokens0

    def caught_up(reading: tuple[Counts, Tokens]) -> bool:
        counts, tokens = reading
        return tokens.requests >= requests and all(v == top_k * tokens.forwarded for v in per_layer(counts).values())

    return poll(read, caught_up, timeout=timeout)
