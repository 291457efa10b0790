"""Counting routed tokens on the device, inside the model step.

Each MoE layer owns a persistent ``int64`` buffer of ``num_experts + 1`` slots. The router's
top-k ids are added into it with one ``index_add_``, so the count is ordinary tensor work: it is
traced by torch.compile and recorded into CUDA graphs, and runs on every graph replay, where a
Python forward hook would not. The buffer never moves (``reset`` zeroes it in place), so a graph
captured once keeps writing into the right memory.

The last slot is a sink: rows flagged as padding (CUDA-graph padding, warm-up and DP-idle dummy
batches) are redirected there, as is any id outside ``[0, num_experts)`` (clamped, so a bad id can
never write out of bounds). The sink is never exported.

Nothing here touches vLLM, so it is unit-tested on CPU tensors.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

_ones_lock = threading.Lock()
_ones: dict[tuple[str, int], torch.Tensor] = {}


def shared_ones(size: int, device: torch.device) -> torch.Tensor:
    """A constant ones vector, one per device and size, shared by every layer: preallocated so the
    step adds no fill kernel (it is sliced, a view, to the batch), and shared so 60 layers do not
    hold 60 copies."""
    key = (str(device), size)
    with _ones_lock:
        ones = _ones.get(key)
        if ones is None:
            ones = _ones[key] = torch.ones(size, dtype=torch.int64, device=device)
        return ones


@dataclass(frozen=True)
class LayerKey:
    """One MoE layer of one served model: the identity of its series within a process."""

    model_name: str
    layer: str


class LayerCounter:
    """The device-side count of one MoE layer."""

    def __init__(self, num_experts: int, top_k: int, device: torch.device | str, max_rows: int):
        if num_experts < 1 or top_k < 1 or max_rows < 1:
            raise ValueError(f"need num_experts, top_k and max_rows >= 1, got {num_experts}, {top_k}, {max_rows}")
        self.num_experts = num_experts
        self.top_k = top_k
        self.counts = torch.zeros(num_experts + 1, dtype=torch.int64, device=device)
        self._ones = shared_ones(max_rows * top_k, self.counts.device)

    @property
    def sink(self) -> int:
        return self.num_experts

    def add(self, topk_ids: torch.Tensor, is_padding: torch.Tensor | None = None) -> None:
        """Count one routing decision: ``topk_ids`` is (tokens, top_k); ``is_padding`` (tokens,)
        marks rows that are not real tokens. Two or three small kernels, no host sync."""
        ids = topk_ids.clamp(0, self.sink)
        if is_padding is not None:
            ids = torch.where(is_padding.unsqueeze(1), self.sink, ids)
        flat = ids.reshape(-1)
        n = flat.shape[0]
        ones = self._ones[:n] if n <= self._ones.shape[0] else torch.ones(n, dtype=torch.int64, device=flat.device)
        self.counts.index_add_(0, flat, ones)

    def reset(self) -> None:
        """Zero in place (the address captured graphs write to must not change)."""
        self.counts.zero_()


@dataclass(frozen=True)
class LayerSnapshot:
    """Host-side totals of one layer: tokens routed to each expert since the process started."""

    key: LayerKey
    tokens: tuple[int, ...]  # per expert, sink excluded
    top_k: int

    @property
    def num_experts(self) -> int:
        return len(self.tokens)


class CounterSet:
    """Every layer counter of this process, and the host-side totals the exporter serves.

    A layer registered again under the same key (the model re-built in the same process, e.g. a
    weight reload) keeps one series: the old buffer's last reading becomes a host-side base that
    the new buffer's count is added to, so the exported counter never goes down.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[LayerKey, LayerCounter] = {}
        self._base: dict[LayerKey, tuple[int, ...]] = {}
        self._last: dict[LayerKey, tuple[int, ...]] = {}

    def register(self, key: LayerKey, counter: LayerCounter) -> None:
        with self._lock:
            old = self._counters.get(key)
            if old is not None:
                if old.num_experts != counter.num_experts:
                    raise ValueError(
                        f"layer {key.layer} of {key.model_name} re-registered with {counter.num_experts} experts, "
                        f"was {old.num_experts}"
                    )
                self._base[key] = self._last.get(key, self._base.get(key, (0,) * old.num_experts))
                self._last.pop(key, None)
            self._counters[key] = counter

    def __len__(self) -> int:
        with self._lock:
            return len(self._counters)

    def counters(self) -> dict[LayerKey, LayerCounter]:
        with self._lock:
            return dict(self._counters)

    def reset(self) -> None:
        """Forget everything counted so far (used once, after vLLM's memory-profiling pass)."""
        with self._lock:
            for counter in self._counters.values():
                counter.reset()
            self._base.clear()
            self._last.clear()

    def totals(self, readings: dict[LayerKey, list[int]]) -> list[LayerSnapshot]:
        """Turn raw buffer readings (sink included) into exported totals, in a stable order.

        Readings of a layer that was replaced since they were taken are dropped; a reading lower
        than the previous one (taken across a ``reset``) is what it is: a counter reset.
        """
        out = []
        with self._lock:
            for key in sorted(readings, key=lambda k: (k.model_name, _layer_order(k.layer))):
                counter = self._counters.get(key)
                raw = readings[key]
                if counter is None or len(raw) != counter.num_experts + 1:
                    continue
                per_expert = tuple(raw[: counter.num_experts])
                base = self._base.get(key)
                if base is not None:
                    per_expert = tuple(b + v for b, v in zip(base, per_expert, strict=True))
                self._last[key] = per_expert
                out.append(LayerSnapshot(key, per_expert, counter.top_k))
        return out


def _layer_order(layer: str) -> tuple[int, int, str]:
    """Numeric layers first, in numeric order; named ones (no index in the module path) after."""
    return (0, int(layer), "") if layer.isdigit() else (1, 0, layer)
