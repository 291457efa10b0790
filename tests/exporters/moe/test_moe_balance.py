"""The exporter's per-layer balance over its window: figures, window span, resets."""

from __future__ import annotations

import pytest

from infersight.exporters.moe.balance import BalanceWindow, balance
from infersight.exporters.moe.counting import LayerKey, LayerSnapshot

KEY = LayerKey("tiny-moe", "0")


def snap(*tokens: int, key: LayerKey = KEY) -> LayerSnapshot:
    return LayerSnapshot(key, tokens, top_k=2)


def test_figures_of_a_skewed_layer() -> None:
    # 60 % to expert 0, the rest spread over three: shares 0.6, 0.1, 0.2, 0.1 (fair 0.25).
    b = balance(KEY, 300.0, (10, 10, 10, 10), (70, 20, 30, 20))
    assert b.tokens == 100
    assert b.max_share == pytest.approx(0.6)
    assert b.share_variance == pytest.approx((0.35**2 + 0.15**2 + 0.05**2 + 0.15**2) / 4)
    assert b.dead_experts == 0


def test_dead_experts_and_a_layer_without_tokens() -> None:
    assert balance(KEY, 60.0, (0, 0, 0), (0, 9, 0)).dead_experts == 2
    idle = balance(KEY, 60.0, (5, 5, 5), (5, 5, 5))
    assert (idle.tokens, idle.share_variance, idle.max_share, idle.dead_experts) == (0, None, None, None)


def test_figures_cover_the_window_and_no_more_than_a_step_beyond() -> None:
    window = BalanceWindow(100.0, steps=10)  # keeps totals every 10 s
    counts = 0
    for t in range(0, 301):  # one reading a second, 1 token a second to expert 0
        counts = t
        (b,) = window.update(float(t), [snap(counts, 0)])
        if t >= 110:
            assert 100.0 <= b.span_s <= 110.0, (t, b.span_s)
            assert b.tokens == pytest.approx(b.span_s)
        else:
            assert b.span_s == t  # right after a start: everything since the first reading
    assert b.dead_experts == 1


def test_old_skew_leaves_the_window() -> None:
    window = BalanceWindow(60.0, steps=6)
    hot = 0
    for t in range(0, 121):  # skewed for the first minute, balanced after it
        hot += 9 if t < 60 else 1
        (b,) = window.update(float(t), [snap(hot, t)])
    assert b.share_variance is not None and b.share_variance == pytest.approx(0.0, abs=1e-3)


def test_counters_zeroed_start_the_window_again() -> None:
    window = BalanceWindow(60.0, steps=6)
    window.update(0.0, [snap(500, 0)])
    window.update(30.0, [snap(900, 0)])
    (b,) = window.update(31.0, [snap(1, 1)])  # vLLM's profiling pass is over: counters zeroed
    assert (b.span_s, b.tokens) == (0.0, 0)
    (b,) = window.update(40.0, [snap(11, 11)])
    assert (b.span_s, b.tokens, b.share_variance) == (9.0, 20, 0.0)


def test_each_layer_has_its_own_window_and_a_vanished_layer_is_forgotten() -> None:
    other = LayerKey("tiny-moe", "1")
    window = BalanceWindow(60.0)
    window.update(0.0, [snap(0, 0), snap(0, 0, key=other)])
    got = window.update(10.0, [snap(10, 0), snap(5, 5, key=other)])
    assert [(b.key.layer, b.max_share) for b in got] == [("0", 1.0), ("1", 0.5)]
    window.update(20.0, [snap(20, 0)])
    (b,) = window.update(30.0, [snap(30, 0), snap(5, 5, key=other)])[1:]
    assert (b.span_s, b.tokens) == (0.0, 0)  # layer 1 came back: a new window, not a stale one


def test_a_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive window"):
        BalanceWindow(0.0)
