"""Rendering host-side totals as Prometheus metric families (names and labels from the catalog).

Series identity is ``{model_name, layer, expert, rank}`` plus the target's ``job``/``instance``.
A restarted worker comes back on the same port with the same rank, so its series continue under
the same identity starting from 0: exactly a counter reset, which ``rate()`` and ``increase()``
handle. Nothing is persisted between processes, so nothing can be counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from infersight import catalog
from infersight.exporters.moe.counting import LayerSnapshot

EXPERT_TOKENS = catalog.get("infersight_moe_expert_tokens_total")
LAYER_EXPERTS = catalog.get("infersight_moe_layer_experts")
LAYER_TOP_K = catalog.get("infersight_moe_layer_top_k")


def _labels_in_catalog_order(metric: catalog.Metric, values: dict[str, str]) -> list[str]:
    missing = set(metric.labels) - values.keys()
    if missing:
        raise ValueError(f"{metric.name} needs labels {sorted(missing)}")
    return [values[label] for label in metric.labels]


def render(snapshots: Sequence[LayerSnapshot], rank: str) -> list[Metric]:
    """Metric families for ``snapshots`` (one entry per layer); empty families are still typed."""
    # prometheus_client appends _total to counter names itself.
    tokens = CounterMetricFamily(
        EXPERT_TOKENS.name.removesuffix("_total"), EXPERT_TOKENS.help, labels=EXPERT_TOKENS.labels
    )
    experts = GaugeMetricFamily(LAYER_EXPERTS.name, LAYER_EXPERTS.help, labels=LAYER_EXPERTS.labels)
    top_k = GaugeMetricFamily(LAYER_TOP_K.name, LAYER_TOP_K.help, labels=LAYER_TOP_K.labels)
    for snap in snapshots:
        layer = {"model_name": snap.key.model_name, "layer": snap.key.layer, "rank": rank}
        for expert, count in enumerate(snap.tokens):
            tokens.add_metric(_labels_in_catalog_order(EXPERT_TOKENS, {**layer, "expert": str(expert)}), float(count))
        experts.add_metric(_labels_in_catalog_order(LAYER_EXPERTS, layer), float(snap.num_experts))
        top_k.add_metric(_labels_in_catalog_order(LAYER_TOP_K, layer), float(snap.top_k))
    return [tokens, experts, top_k]


class ExpertLoadCollector(Collector):
    """Serves the sampler's latest totals; a scrape never touches the device."""

    def __init__(self, latest: Callable[[], Sequence[LayerSnapshot] | None], rank: str):
        self._latest = latest
        self.rank = rank

    def collect(self) -> Iterator[Metric]:
        yield from render(self._latest() or (), self.rank)
