"""Per-layer balance figures over a sliding window, computed in the exporter.

Why here and not in Prometheus: a rule that rates every (layer, expert) counter of every rank
costs per series read, and a real MoE has 48 layers x 128 experts (6,144 counters) per rank. At
1,000 engines that rate was the bundle's largest single rule cost, and it doubled once the
head chunks filled (docs/scale.md). The exporter already holds the totals, so it keeps a few of
them back and publishes a handful of gauges per layer: all the alerts need. The per-expert
counters stay on the endpoint for the dashboard's per-expert panels, read when opened.

The window: totals are kept at the first update at least ``window / STEPS`` seconds after the
last kept ones. The figures compare the newest totals with the newest kept ones that are at
least ``window`` old (right after a start, the oldest kept), so they cover between ``window`` and
``window + window / STEPS`` seconds plus one sampling interval, and the span they cover is
published with them (nothing while it is 0). Totals lower than the previous ones (the counters are
zeroed once, after vLLM's profiling pass) start that layer's window again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from infersight.exporters.moe.counting import LayerKey, LayerSnapshot

STEPS = 20


@dataclass(frozen=True)
class LayerBalance:
    """How one layer routed its tokens within the window. Without tokens in the window there is
    no share to judge, so the share figures are ``None`` (not published)."""

    key: LayerKey
    span_s: float  # seconds the figures cover
    tokens: int  # expert-token counts routed in the layer within the span (top-k counts k each)
    share_variance: float | None  # population variance of the experts' shares of those tokens
    max_share: float | None  # the busiest expert's share
    dead_experts: int | None  # experts that got none of them


def balance(key: LayerKey, span_s: float, before: Sequence[int], now: Sequence[int]) -> LayerBalance:
    routed = [n - b for n, b in zip(now, before, strict=True)]
    total = sum(routed)
    if total <= 0:
        return LayerBalance(key, span_s, 0, None, None, None)
    experts = len(routed)
    fair = 1.0 / experts
    shares = [r / total for r in routed]
    variance = sum((s - fair) ** 2 for s in shares) / experts
    return LayerBalance(key, span_s, total, variance, max(shares), sum(1 for r in routed if r == 0))


def _went_back(before: Sequence[int], now: Sequence[int]) -> bool:
    return len(before) != len(now) or any(n < b for n, b in zip(now, before, strict=True))


class BalanceWindow:
    """The kept totals of every layer, and the figures of the latest update. Used by the sampler
    thread only."""

    def __init__(self, window_s: float, steps: int = STEPS):
        if window_s <= 0 or steps < 1:
            raise ValueError(f"need a positive window and steps >= 1, got {window_s}, {steps}")
        self.window_s = window_s
        self.step_s = window_s / steps
        self._kept: dict[LayerKey, deque[tuple[float, tuple[int, ...]]]] = {}
        self._last: dict[LayerKey, tuple[int, ...]] = {}

    def update(self, now: float, snapshots: Sequence[LayerSnapshot]) -> list[LayerBalance]:
        """Keep ``snapshots`` (taken at monotonic time ``now``) where due; figures for each layer."""
        out = []
        for snap in snapshots:
            kept = self._kept.setdefault(snap.key, deque())
            last = self._last.get(snap.key)
            if last is not None and _went_back(last, snap.tokens):
                kept.clear()  # zeroed or re-shaped: what was kept no longer adds up
            self._last[snap.key] = snap.tokens
            if not kept or now - kept[-1][0] >= self.step_s:
                kept.append((now, snap.tokens))
            # Drop what is older than the newest kept totals that already cover the window.
            while len(kept) >= 2 and now - kept[1][0] >= self.window_s:
                kept.popleft()
            since, before = kept[0]
            out.append(balance(snap.key, now - since, before, snap.tokens))
        gone = self._kept.keys() - {s.key for s in snapshots}
        for key in gone:  # a layer no longer reported keeps nothing
            del self._kept[key]
            self._last.pop(key, None)
        return out
