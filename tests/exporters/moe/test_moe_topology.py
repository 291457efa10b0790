"""Which rank counts and how layers are labelled."""

from __future__ import annotations

import pytest

from infersight.exporters.moe.hooks import own_rows
from infersight.exporters.moe.topology import RankInfo, layer_label


@pytest.mark.parametrize(
    ("tp_rank", "sequence_parallel", "counts"),
    [(0, False, True), (1, False, False), (1, True, True), (0, True, True)],
)
def test_only_tp_rank_0_counts_unless_the_moe_is_sequence_parallel(
    tp_rank: int, sequence_parallel: bool, counts: bool
) -> None:
    assert RankInfo(rank=5, local_rank=1, tp_rank=tp_rank).counts_routing(sequence_parallel) is counts


def test_rank_label_is_the_global_rank() -> None:
    assert RankInfo(rank=12, local_rank=4, tp_rank=0).label == "12"


@pytest.mark.parametrize(
    ("path", "label"),
    [
        ("model.layers.7.mlp.experts", "7"),
        ("layers.0", "0"),
        ("model.layers.1.mlp.2.experts", "model.layers.1.mlp.2.experts"),  # ambiguous: keep the path
        ("mtp.experts", "mtp.experts"),
    ],
)
def test_layer_label(path: str, label: str) -> None:
    assert layer_label(path) == label


@pytest.mark.parametrize(
    ("rows", "padding_rows", "per_dp_rank", "dp_rank", "expected"),
    [
        (8, 8, None, 0, (slice(0, 8), True)),  # the rank's padded batch: mask applies
        (8, None, None, 0, (slice(0, 8), False)),  # no mask (CPU, eager tests)
        (12, 4, [4, 8], 0, (slice(0, 4), True)),  # DP all-gather: this rank's span first
        (12, 8, [4, 8], 1, (slice(4, 12), True)),
        (12, 6, [4, 8], 1, (slice(4, 12), False)),  # span found, mask of another shape
        (3, 8, [8, 8], 0, (slice(0, 3), False)),  # sequence-parallel shard: counted whole
    ],
)
def test_own_rows(
    rows: int, padding_rows: int | None, per_dp_rank: list[int] | None, dp_rank: int, expected: tuple[slice, bool]
) -> None:
    assert own_rows(rows, padding_rows, per_dp_rank, dp_rank) == expected
