"""Quantiles of a vLLM histogram, the one way every pack records them.

Fleet scale decides the shape (docs/scale.md). A histogram has 10 to 23 buckets per engine, so
recording its bucket rates per ``instance`` would add more series than a recording rule may cost.
Bucket rates are recorded per ``model`` only, straight from the raw buckets; model quantiles read
that recording. A per-``instance`` quantile is recorded only where a panel or alert names it, as
one series per instance computed from the raw buckets in the same rule. Names follow
:func:`infersight.conventions.bucket_rate` and :func:`infersight.conventions.quantile`.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import promql
from infersight.config import Config
from infersight.conventions import INSTANCE, MODEL, bucket_rate, quantile
from infersight.rules import RecordingRule


def quantile_rules(
    cfg: Config, metric: str, quantiles: Sequence[float], instance_quantiles: Sequence[float] = ()
) -> list[RecordingRule]:
    """Model bucket rates over ``intervals.rate`` and each model quantile; then each of
    ``instance_quantiles`` per instance."""
    window = cfg.scaled(cfg.intervals.rate)
    raw_buckets = promql.rate(metric, window, cfg.selectors.vllm, "_bucket")
    model_buckets = bucket_rate(cfg, metric, "model")
    rules = [RecordingRule(model_buckets, promql.sum_by((*MODEL, "le"), raw_buckets))]
    rules += [
        RecordingRule(
            quantile(cfg, metric, "model", qv), promql.quantile_from_buckets(qv, MODEL, promql.recorded(model_buckets))
        )
        for qv in quantiles
    ]
    rules += [
        RecordingRule(quantile(cfg, metric, "instance", qv), promql.quantile_from_buckets(qv, INSTANCE, raw_buckets))
        for qv in instance_quantiles
    ]
    return rules
