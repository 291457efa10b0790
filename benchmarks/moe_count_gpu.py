"""What the MoE plugin's count costs on a real GPU, without vLLM: ``LayerCounter.add`` timed per
call in eager mode and replayed inside a CUDA graph (how vLLM runs decode), next to an RMSNorm of
the same batch captured the same way (vLLM runs two per layer), at decode and prefill batch sizes.

    python benchmarks/moe_count_gpu.py [--experts 128] [--top-k 8] [--hidden 2048]

Each graph holds LAYERS back-to-back calls (one per MoE layer of a 48-layer model); its replay is
timed with CUDA events over REPLAYS replays after a warm-up, and divided per call. The ratio
column is the count's cost over the RMSNorm's, measured in the same run. The end-to-end share of
a decode step needs a CUDA build of vLLM (benchmarks/moe_plugin_overhead.py). Prints numbers and
asserts nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch

from infersight.exporters.moe.counting import LayerCounter

LAYERS, REPLAYS, EAGER_CALLS = 48, 200, 2000


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + 1e-6)).to(x.dtype) * weight


def graph_us(step: Callable[[], object]) -> float:
    """Microseconds per call of ``step``, LAYERS calls per captured graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(LAYERS):
            step()
    for _ in range(10):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPLAYS):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / (REPLAYS * LAYERS)


def eager_us(step: Callable[[], object]) -> float:
    for _ in range(50):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(EAGER_CALLS):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / EAGER_CALLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experts", type=int, default=128)
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=2048)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs PyTorch with CUDA and an NVIDIA GPU")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {args.experts} experts, top-{args.top_k}")
    print(f"{'tokens':>7} {'count eager us':>15} {'count graph us':>15} {'rmsnorm graph us':>17} {'count/rmsnorm':>14}")
    for rows in (1, 8, 64, 256, 2048, 8192):
        ids = torch.randint(0, args.experts, (rows, args.top_k), device="cuda")
        padding = torch.zeros(rows, dtype=torch.bool, device="cuda")
        counter = LayerCounter(args.experts, args.top_k, "cuda", max_rows=rows)
        x = torch.randn(rows, args.hidden, device="cuda", dtype=torch.bfloat16)
        weight = torch.ones(args.hidden, device="cuda", dtype=torch.bfloat16)
        count_eager = eager_us(lambda: counter.add(ids, padding))  # noqa: B023 - used in this iteration
        count_graph = graph_us(lambda: counter.add(ids, padding))  # noqa: B023
        norm_graph = graph_us(lambda: rms_norm(x, weight))  # noqa: B023
        print(
            f"{rows:>7} {count_eager:>15.2f} {count_graph:>15.2f} {norm_graph:>17.2f} {count_graph / norm_graph:>14.2f}"
        )


if __name__ == "__main__":
    main()
