"""Rendering host-side totals as Prometheus metric families (names and labels from the catalog).

Series identity is ``{model_name, layer, expert, rank}`` plus the target's ``job``/``instance``.
A restarted worker comes back on the same port with the same rank, so its series continue under
the same identity starting from 0: exactly a counter reset, which ``rate()`` and ``increase()``
handle. Nothing is persisted between processes, so nothing can be counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from infersight import catalog
from infersight.exporters.moe.balance import LayerBalance
from infersight.exporters.moe.counting import LayerSnapshot

EXPERT_TOKENS = catalog.get("infersight_moe_expert_tokens_total")
LAYER_EXPERTS = catalog.get("infersight_moe_layer_experts")
LAYER_TOP_K = catalog.get("infersight_moe_layer_top_k")
EXPORTER_WINDOW = catalog.get("infersight_moe_exporter_window_seconds")
WINDOW_SECONDS = catalog.get("infersight_moe_layer_window_seconds")
WINDOW_TOKENS = catalog.get("infersight_moe_layer_window_tokens")
SHARE_VARIANCE = catalog.get("infersight_moe_layer_share_variance")
MAX_SHARE = catalog.get("infersight_moe_layer_max_share")
DEAD_EXPERTS = catalog.get("infersight_moe_layer_dead_experts")


@dataclass(frozen=True)
class Exported:
    """One sampler reading: every layer's totals and its balance over the window."""

    totals: Sequence[LayerSnapshot]
    balances: Sequence[LayerBalance]


def _labels_in_catalog_order(metric: catalog.Metric, values: dict[str, str]) -> list[str]:
    missing = set(metric.labels) - values.keys()
    if missing:
        raise ValueError(f"{metric.name} needs labels {sorted(missing)}")
    return [values[label] for label in metric.labels]


def _gauge(metric: catalog.Metric) -> GaugeMetricFamily:
    return GaugeMetricFamily(metric.name, metric.help, labels=metric.labels)


def render(
    snapshots: Sequence[LayerSnapshot], rank: str, balances: Sequence[LayerBalance] = (), per_expert: bool = True
) -> list[Metric]:
    """Metric families for ``snapshots`` and ``balances`` (one entry per layer); empty families
    are still typed. Without ``per_expert``, no per-expert counter at all."""
    # prometheus_client appends _total to counter names itself.
    tokens = CounterMetricFamily(
        EXPERT_TOKENS.name.removesuffix("_total"), EXPERT_TOKENS.help, labels=EXPERT_TOKENS.labels
    )
    experts, top_k = _gauge(LAYER_EXPERTS), _gauge(LAYER_TOP_K)
    for snap in snapshots:
        layer = {"model_name": snap.key.model_name, "layer": snap.key.layer, "rank": rank}
        for expert, count in enumerate(snap.tokens if per_expert else ()):
            tokens.add_metric(_labels_in_catalog_order(EXPERT_TOKENS, {**layer, "expert": str(expert)}), float(count))
        experts.add_metric(_labels_in_catalog_order(LAYER_EXPERTS, layer), float(snap.num_experts))
        top_k.add_metric(_labels_in_catalog_order(LAYER_TOP_K, layer), float(snap.top_k))
    families = [tokens] if per_expert else []
    return [*families, experts, top_k, *_render_balances(balances, rank)]


def _render_balances(balances: Sequence[LayerBalance], rank: str) -> list[Metric]:
    span, routed, variance, max_share, dead = (
        _gauge(m) for m in (WINDOW_SECONDS, WINDOW_TOKENS, SHARE_VARIANCE, MAX_SHARE, DEAD_EXPERTS)
    )
    for b in balances:
        if b.span_s <= 0:  # just (re)started: no time covered, nothing to divide by
            continue
        layer = {"model_name": b.key.model_name, "layer": b.key.layer, "rank": rank}
        labels = _labels_in_catalog_order(WINDOW_SECONDS, layer)
        span.add_metric(labels, round(b.span_s, 3))
        routed.add_metric(labels, float(b.tokens))
        if b.share_variance is not None and b.max_share is not None and b.dead_experts is not None:
            variance.add_metric(labels, b.share_variance)
            max_share.add_metric(labels, b.max_share)
            dead.add_metric(labels, float(b.dead_experts))
    return [span, routed, variance, max_share, dead]


class ExpertLoadCollector(Collector):
    """Serves the sampler's latest totals and the window it was started with; a scrape never
    touches the device."""

    def __init__(self, latest: Callable[[], Exported | None], rank: str, window_s: float, per_expert: bool = True):
        self._latest = latest
        self.rank = rank
        self.window_s = window_s
        self.per_expert = per_expert

    def collect(self) -> Iterator[Metric]:
        window = _gauge(EXPORTER_WINDOW)
        window.add_metric(_labels_in_catalog_order(EXPORTER_WINDOW, {"rank": self.rank}), self.window_s)
        yield window
        latest = self._latest()
        if latest is None:
            yield from render((), self.rank, per_expert=self.per_expert)
        else:
            yield from render(latest.totals, self.rank, latest.balances, self.per_expert)
