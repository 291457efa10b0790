"""MoE expert-balance recording rules: one figure per layer, model-wide.

They read the MoE exporter's per-layer balance gauges (exporters/moe/balance.py), which the
exporter computes over its own window, not the per-expert counters: a rule rating every
(layer, expert) counter of every rank grows with layers x experts and was the bundle's largest
rule cost at 1,000 engines (docs/scale.md). The per-expert counters are left to the
dashboard's per-expert panels, which read them for one selection when opened.

Every rank (a scrape target of its own) reports the tokens it routed. A layer's figure is that
of its worst rank among the ranks whose layer routed enough tokens in the window to judge
(``moe.min_expected_tokens_per_expert`` per expert): with too few tokens, shares are noise and
an expert without tokens is no evidence of a dead one. Tensor-parallel ranks route the same
tokens and only one of them counts; data-parallel ranks each route their own, so the worst
rank is the one an operator must look at.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import conventions, promql
from infersight.config import Config
from infersight.rules import RecordingRule, RuleGroup

TOKENS = "infersight_moe_expert_tokens_total"
EXPERTS = "infersight_moe_layer_experts"
WINDOW_SECONDS = "infersight_moe_layer_window_seconds"
WINDOW_TOKENS = "infersight_moe_layer_window_tokens"
SHARE_VARIANCE = "infersight_moe_layer_share_variance"
MAX_SHARE = "infersight_moe_layer_max_share"
DEAD_EXPERTS = "infersight_moe_layer_dead_experts"
LAYER = ("job", "model_name", "layer")
EXPERT = (*LAYER, "expert")


# Per layer, model-wide. The rate is of every layer (for traffic panels); the rest only of layers
# with enough tokens to judge.
LAYER_RATE = conventions.record_name("layer", WINDOW_TOKENS, "rate")  # expert-token counts/s, over ranks
SHARE_VARIANCE_MAX = conventions.record_name("layer", SHARE_VARIANCE, "max")
MAX_OVER_MEAN = conventions.record_name("layer", MAX_SHARE, "max_over_mean")  # busiest expert / layer mean
BALANCEDNESS = conventions.record_name("layer", MAX_SHARE, "balancedness")  # vLLM EPLB's mean / max
DEAD_EXPERTS_MAX = conventions.record_name("layer", DEAD_EXPERTS, "max")


def _gauge(cfg: Config, name: str) -> str:
    return promql.series(name, cfg.selectors.moe_exporter)


def judged(cfg: Config, expr: str) -> str:
    """``expr`` (per rank and layer) where that rank's layer routed enough tokens in the window."""
    expected = f"{_gauge(cfg, WINDOW_TOKENS)}\n/\n{_gauge(cfg, EXPERTS)}"
    return f"{expr}\nand\n({expected}\n>= {promql.number(cfg.moe.min_expected_tokens_per_expert)})"


def expert_rate(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """Tokens/s routed to each expert, from the raw counters: for dashboard panels over one
    selection, read when opened (never recorded; see the module docstring)."""
    return promql.sum_by(EXPERT, promql.rate(TOKENS, "$__rate_interval", [*cfg.selectors.moe_exporter, *matchers]))


def per_layer(expert_expr: str, layer_expr: str) -> str:
    """Divide each expert's series by its layer's."""
    return f"{expert_expr}\n/ on ({', '.join(LAYER)}) group_left\n{layer_expr}"


def share(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """Each expert's share of its layer's routed tokens (raw counters, read when opened)."""
    return per_layer(expert_rate(cfg, matchers), promql.sum_by(LAYER, expert_rate(cfg, matchers)))


def relative_load(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """Each expert's load over its layer's mean, 1 = fair share (raw counters, read when opened)."""
    return per_layer(expert_rate(cfg, matchers), promql.agg("avg", LAYER, expert_rate(cfg, matchers)))


def groups(cfg: Config) -> list[RuleGroup]:
    hot_factor = f"{_gauge(cfg, MAX_SHARE)} * {_gauge(cfg, EXPERTS)}"  # busiest expert over the layer's mean
    per_second = f"{_gauge(cfg, WINDOW_TOKENS)}\n/\n{_gauge(cfg, WINDOW_SECONDS)}"
    rules = (
        RecordingRule(LAYER_RATE, promql.sum_by(LAYER, per_second)),
        RecordingRule(SHARE_VARIANCE_MAX, promql.agg("max", LAYER, judged(cfg, _gauge(cfg, SHARE_VARIANCE)))),
        RecordingRule(MAX_OVER_MEAN, promql.agg("max", LAYER, judged(cfg, hot_factor))),
        # vLLM's EPLB balancedness: mean over max tokens per expert, so the worst rank is the lowest.
        RecordingRule(BALANCEDNESS, promql.agg("min", LAYER, judged(cfg, f"1 / ({hot_factor})"))),
        RecordingRule(DEAD_EXPERTS_MAX, promql.agg("max", LAYER, judged(cfg, _gauge(cfg, DEAD_EXPERTS)))),
    )
    return [RuleGroup("infersight-moe.rules", cfg.scaled(cfg.intervals.evaluation), rules)]
