"""The MoE plugin counts under CUDA graphs: the same workload with ``--enforce-eager`` (no graphs,
no torch.compile) and without (piecewise/full CUDA graphs replayed for decode), compared.

In both modes every layer's count must equal top_k x tokens forwarded exactly (probe.py): under
graphs that proves the add is replayed with the graph, and that the padding rows of a batch
padded up to a capture size (3 concurrent decodes run in the 4-token graph) are not counted.
The expert distributions of a prefill-only workload (same tokens in both modes; decode would
sample different continuations) must agree closely: kernels differ, so a near-tie may flip.

Run with ``pytest tests/gpu -m gpu`` on a machine with an NVIDIA GPU and a CUDA build of vLLM.
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from infersight.stack.ports import free_port
from infersight.stack.tiny_models import SERVED_NAMES
from infersight.stack.vllm_server import VLLMServer
from tests.exporters.moe import probe

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs a CUDA build of vLLM on this GPU host"),
]

MODEL = SERVED_NAMES["moe"]
TOP_K, LAYERS = 2, {"0", "1"}
GPU_ARGS = ["--dtype", "bfloat16", "--no-enable-prefix-caching", "--gpu-memory-utilization", "0.2"]


@dataclass
class Mode:
    decode: probe.Counts  # prefill + decode, 3 concurrent streams
    decode_tokens: probe.Tokens
    prefill: probe.Counts  # max_tokens=1: prompt tokens only, identical in both modes
    prefill_tokens: probe.Tokens
    log: str


def run_mode(workdir: Path, model_dir: Path, eager: bool) -> Mode:
    port = free_port()
    args = [*GPU_ARGS, "--max-model-len", "512", *(["--enforce-eager"] if eager else [])]
    with VLLMServer(model_dir, MODEL, workdir, extra_args=args, env=probe.plugin_env(port)) as server:
        plugged = probe.PluggedVLLM(server, MODEL, port)
        rng = random.Random(7)
        prompts = [probe.random_token_prompt(rng, 40) for _ in range(9)]
        decode = probe.measured(plugged, lambda: probe.run_requests(plugged, prompts, 24, concurrency=3), 9, TOP_K)
        prefill = probe.measured(plugged, lambda: probe.run_requests(plugged, prompts, 1, concurrency=3), 9, TOP_K)
        return Mode(*decode, *prefill, server.process.log_path.read_text(errors="replace"))


def shares(counts: probe.Counts, layer: str) -> list[float]:
    values = [v for (lay, _), v in sorted(counts.items()) if lay == layer]
    total = sum(values)
    return [v / total for v in values]


def test_counts_under_cuda_graphs_match_eager(tmp_path: Path, tiny_moe_model: Path) -> None:
    eager = run_mode(tmp_path / "eager", tiny_moe_model, eager=True)
    graphs = run_mode(tmp_path / "graphs", tiny_moe_model, eager=False)
    assert "cuda graph" in graphs.log.lower(), "the non-eager server captured no CUDA graphs"

    for mode in (eager, graphs):
        for counts, tokens in ((mode.decode, mode.decode_tokens), (mode.prefill, mode.prefill_tokens)):
            assert tokens.requests == 9
            assert probe.per_layer(counts) == {layer: TOP_K * tokens.forwarded for layer in LAYERS}, tokens
        assert mode.decode_tokens.generation > 9  # decode steps ran (under graphs: replays)
    assert eager.prefill_tokens == graphs.prefill_tokens
    for layer in LAYERS:
        pairs = zip(shares(eager.prefill, layer), shares(graphs.prefill, layer), strict=True)
        assert sum(abs(a - b) for a, b in pairs) < 0.1, (layer, eager.prefill, graphs.prefill)
