"""Quantiles of a vLLM histogram, the one way every pack records them.

Bucket rates are recorded per ``instance``, then summed to ``model`` from that recorded series
(not from the raw buckets again), and each level's quantiles read its own recorded buckets, so a
quantile panel or alert never re-rates the raw histogram. Names follow
:func:`infersight.conventions.bucket_rate` and :func:`infersight.conventions.quantile`.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import promql
from infersight.config import Config
from infersight.conventions import INSTANCE, MODEL, bucket_rate, quantile
from infersight.rules import RecordingRule


def quantile_rules(cfg: Config, metric: str, quantiles: Sequence[float]) -> list[RecordingRule]:
    """Bucket rates per instance and model over ``intervals.rate``, then each quantile per level."""
    window = cfg.scaled(cfg.intervals.rate)
    instance_buckets = bucket_rate(cfg, metric, "instance")
    model_buckets = bucket_rate(cfg, metric, "model")
    rules = [
        RecordingRule(
            instance_buckets,
            promql.sum_by((*INSTANCE, "le"), promql.rate(metric, window, cfg.selectors.vllm, "_bucket")),
        ),
        RecordingRule(model_buckets, promql.sum_by((*MODEL, "le"), promql.recorded(instance_buckets))),
    ]
    for level, by, buckets in (("instance", INSTANCE, instance_buckets), ("model", MODEL, model_buckets)):
        rules += [
            RecordingRule(
                quantile(cfg, metric, level, qv), promql.quantile_from_buckets(qv, by, promql.recorded(buckets))
            )
            for qv in quantiles
        ]
    return rules
