"""Metric rendering: catalog names and labels, one sample per series, counters that parse."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from infersight import catalog
from infersight.exporters.moe.counting import LayerKey, LayerSnapshot
from infersight.exporters.moe.rendering import ExpertLoadCollector

SNAPSHOTS = [
    LayerSnapshot(LayerKey("tiny-moe", "0"), (5, 0, 3), top_k=2),
    LayerSnapshot(LayerKey("tiny-moe", "1"), (1, 1, 6), top_k=2),
]


def scrape(snapshots: list[LayerSnapshot] | None, rank: str = "3") -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExpertLoadCollector(lambda: snapshots, rank))
    return generate_latest(registry).decode()


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def test_expert_tokens_counter_matches_the_catalog() -> None:
    entry = catalog.get("infersight_moe_expert_tokens_total")
    text = scrape(SNAPSHOTS)
    assert "# TYPE infersight_moe_expert_tokens_total counter" in text
    tokens = [(labels, v) for name, labels, v in samples(text) if name == entry.name]
    assert len(tokens) == 6
    for labels, _ in tokens:
        assert set(labels) == set(entry.labels)
    assert ({"model_name": "tiny-moe", "layer": "1", "expert": "2", "rank": "3"}, 6.0) in tokens


def test_layer_gauges() -> None:
    got = {(name, labels["layer"]): v for name, labels, v in samples(scrape(SNAPSHOTS)) if "layer_" in name}
    assert got == {
        ("infersight_moe_layer_experts", "0"): 3.0,
        ("infersight_moe_layer_experts", "1"): 3.0,
        ("infersight_moe_layer_top_k", "0"): 2.0,
        ("infersight_moe_layer_top_k", "1"): 2.0,
    }
    for name in ("infersight_moe_layer_experts", "infersight_moe_layer_top_k"):
        assert catalog.get(name).labels == ("model_name", "layer", "rank")


def test_every_series_appears_once_and_only_catalogued_names() -> None:
    seen = [(name, tuple(sorted(labels.items()))) for name, labels, _ in samples(scrape(SNAPSHOTS))]
    assert len(seen) == len(set(seen))
    assert {name for name, _ in seen} <= catalog.known_series_names()


def test_nothing_sampled_yet_renders_no_series() -> None:
    assert samples(scrape(None)) == []
