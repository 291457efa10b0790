"""The MoE plugin's device-side count on a real GPU, without vLLM: ``LayerCounter.add`` recorded
into a CUDA graph and replayed with new top-k ids each step must count exactly what the same adds
count in eager mode, padding rows must land in the sink, and ``reset`` must zero the buffer the
graph writes to (the address a captured graph holds). This is the part of
test_moe_cuda_graphs.py that needs no CUDA build of vLLM. Run with `pytest tests/gpu -m gpu`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infersight.exporters.moe.counting import LayerCounter  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs PyTorch with CUDA"),
]

EXPERTS, TOP_K, ROWS, STEPS = 128, 8, 64, 50  # a Qwen3-30B-A3B-shaped router at a 64-token graph


def routed(generator: torch.Generator) -> torch.Tensor:
    """(ROWS, TOP_K) distinct expert ids per row, as a router's top-k gives them."""
    logits = torch.rand(ROWS, EXPERTS, generator=generator, device="cuda")
    return torch.topk(logits, TOP_K, dim=-1).indices


def test_counts_replayed_with_a_cuda_graph_equal_eager_counts() -> None:
    generator = torch.Generator(device="cuda").manual_seed(7)
    ids = torch.zeros(ROWS, TOP_K, dtype=torch.int64, device="cuda")  # the graph's static inputs
    padding = torch.zeros(ROWS, dtype=torch.bool, device="cuda")
    in_graph = LayerCounter(EXPERTS, TOP_K, "cuda", max_rows=ROWS)
    eager = LayerCounter(EXPERTS, TOP_K, "cuda", max_rows=ROWS)

    side = torch.cuda.Stream()  # warm up on a side stream before capture, as PyTorch asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        in_graph.add(ids, padding)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        in_graph.add(ids, padding)
    in_graph.reset()

    real_rows = 0
    for step in range(STEPS):
        n = 1 + (step * 13) % ROWS  # 1..64 real tokens; the rest of the captured batch is padding
        step_ids = routed(generator)
        ids.copy_(step_ids)
        padding.copy_(torch.arange(ROWS, device="cuda") >= n)
        graph.replay()
        eager.add(step_ids[:n])
        real_rows += n
    torch.cuda.synchronize()

    assert torch.equal(in_graph.counts[:EXPERTS].cpu(), eager.counts[:EXPERTS].cpu())
    assert int(in_graph.counts[:EXPERTS].sum()) == TOP_K * real_rows
    assert int(in_graph.counts[EXPERTS]) == TOP_K * (STEPS * ROWS - real_rows), "padding rows go to the sink"

    in_graph.reset()
    padding.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert int(in_graph.counts.sum()) == TOP_K * ROWS, "reset zeroed the buffer the graph writes to"
