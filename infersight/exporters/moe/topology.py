"""Which worker counts, under which ``rank`` label, on which port.

- ``rank`` is the worker's global rank in vLLM's world group (data-parallel ranks included), so
  it is unique across a deployment and the same again after a restart.
- Tensor-parallel ranks route the same tokens to the same experts (the router runs on
  replicated hidden states), so only TP rank 0 counts; counting on all of them would multiply
  every sum by the TP size. The exception is a sequence-parallel MoE, where each TP rank routes
  its own slice of the tokens: then every rank counts. Pipeline stages own disjoint layers and
  data-parallel ranks own disjoint tokens, so they all count.
- Every worker serves on ``base port + local rank``, counting or not (a non-counting TP rank
  serves only the exporter's health), so a scrape config over a port range sees every target up.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankInfo:
    rank: int  # global rank in the world group
    local_rank: int  # rank on this host: the port offset
    tp_rank: int

    @property
    def label(self) -> str:
        return str(self.rank)

    def counts_routing(self, moe_sequence_parallel: bool) -> bool:
        return moe_sequence_parallel or self.tp_rank == 0


def layer_label(module_path: str) -> str:
    """``model.layers.7.mlp.experts`` -> ``7``. A path without exactly one index keeps the path,
    so two layers never share a label (it is code-defined, never user text)."""
    found = [part for part in module_path.split(".") if part.isdigit()]
    return found[0] if len(found) == 1 else module_path


def from_vllm() -> RankInfo:
    """The calling worker's ranks; single-process defaults where vLLM's groups are not set up."""
    try:
        from vllm.distributed import parallel_state as ps

        world = ps.get_world_group()
        return RankInfo(rank=world.rank, local_rank=world.local_rank, tp_rank=ps.get_tensor_model_parallel_rank())
    except (AssertionError, AttributeError, ImportError):
        return RankInfo(rank=0, local_rank=0, tp_rank=0)
