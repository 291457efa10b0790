"""Ratios of two counters' rates, shared by the packs that compare a rate with its own baseline."""

from __future__ import annotations

from collections.abc import Sequence

from infersight import promql
from infersight.config import Config
from infersight.durations import Duration
from infersight.rules import RecordingRule


def positive(expr: str) -> str:
    """Only where it flows: a ratio over it then records nothing, rather than NaN, while idle."""
    return f"({expr}) > 0"


def counter_ratio(
    cfg: Config, name: str, numerator: str, denominator: str, window: Duration, by: Sequence[str]
) -> RecordingRule:
    """``rate(numerator) / rate(denominator)`` over ``window`` (nominal; scaled here), summed ``by``,
    from the vLLM selectors; never a ratio of the cumulative counters."""
    sel, w = cfg.selectors.vllm, cfg.scaled(window)
    return RecordingRule(
        name,
        promql.ratio(
            promql.sum_by(by, promql.rate(numerator, w, sel)),
            positive(promql.sum_by(by, promql.rate(denominator, w, sel))),
        ),
    )
