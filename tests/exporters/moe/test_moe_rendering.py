"""Metric rendering: catalog names and labels, one sample per series, counters that parse."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from infersight import catalog
from infersight.exporters.moe.balance import LayerBalance
from infersight.exporters.moe.counting import LayerKey, LayerSnapshot
from infersight.exporters.moe.rendering import ExpertLoadCollector, Exported

SNAPSHOTS = [
    LayerSnapshot(LayerKey("tiny-moe", "0"), (5, 0, 3), top_k=2),
    LayerSnapshot(LayerKey("tiny-moe", "1"), (1, 1, 6), top_k=2),
]
BALANCES = [
    LayerBalance(LayerKey("tiny-moe", "0"), 300.0, 8, 0.0417, 0.625, 1),
    LayerBalance(LayerKey("tiny-moe", "1"), 300.0, 0, None, None, None),  # routed nothing in the window
]
BALANCE_GAUGES = (
    "infersight_moe_layer_window_seconds",
    "infersight_moe_layer_window_tokens",
    "infersight_moe_layer_share_variance",
    "infersight_moe_layer_max_share",
    "infersight_moe_layer_dead_experts",
)


def scrape(snapshots: list[LayerSnapshot] | None, rank: str = "3", balances: list[LayerBalance] = BALANCES) -> str:
    exported = None if snapshots is None else Exported(snapshots, balances)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExpertLoadCollector(lambda: exported, rank, window_s=300.0))
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
    got = {
        (name, labels["layer"]): v
        for name, labels, v in samples(scrape(SNAPSHOTS, balances=[]))
        if name in ("infersight_moe_layer_experts", "infersight_moe_layer_top_k")
    }
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


def test_nothing_sampled_yet_renders_only_the_exporters_window() -> None:
    """The configured window is known from the start: the dashboard compares it with moe.window."""
    assert samples(scrape(None)) == [("infersight_moe_exporter_window_seconds", {"rank": "3"}, 300.0)]
    assert catalog.get("infersight_moe_exporter_window_seconds").labels == ("rank",)


def test_balance_gauges_per_layer_and_no_shares_for_a_layer_without_tokens() -> None:
    got = {(name, labels["layer"]): v for name, labels, v in samples(scrape(SNAPSHOTS)) if name in BALANCE_GAUGES}
    assert got == {
        ("infersight_moe_layer_window_seconds", "0"): 300.0,
        ("infersight_moe_layer_window_tokens", "0"): 8.0,
        ("infersight_moe_layer_share_variance", "0"): 0.0417,
        ("infersight_moe_layer_max_share", "0"): 0.625,
        ("infersight_moe_layer_dead_experts", "0"): 1.0,
        ("infersight_moe_layer_window_seconds", "1"): 300.0,
        ("infersight_moe_layer_window_tokens", "1"): 0.0,
    }
    for name in BALANCE_GAUGES:
        assert catalog.get(name).labels == ("model_name", "layer", "rank")


def test_without_per_expert_counters_the_layer_gauges_remain() -> None:
    """A large fleet may drop the 6,144 counters per rank (48 x 128); the alerts never read them."""
    exported = Exported(SNAPSHOTS, BALANCES)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExpertLoadCollector(lambda: exported, "3", window_s=300.0, per_expert=False))
    names = {name for name, _, _ in samples(generate_latest(registry).decode())}
    assert "infersight_moe_expert_tokens_total" not in names
    assert {"infersight_moe_layer_experts", "infersight_moe_layer_top_k", *BALANCE_GAUGES} <= names


def test_a_layer_whose_window_has_no_span_yet_sends_no_balance_gauges() -> None:
    """Right after a start (or a reset) the window spans no time: tokens per second would be 0/0."""
    just_started = [LayerBalance(LayerKey("tiny-moe", "0"), 0.0, 0, None, None, None)]
    got = [name for name, _, _ in samples(scrape(SNAPSHOTS[:1], balances=just_started)) if name in BALANCE_GAUGES]
    assert got == []
