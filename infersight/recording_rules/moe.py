"""MoE expert-balance recording rules: one figure per layer, model-wide.

They read the MoE exporter's per-layer balance gauges (exporters/moe/balance.py), which the
exporter computes over its own window, not the per-expert counters: a rule rating every
(layer, expert) counter of every rank grows with layers x experts and was the bundle's largest
rule cost at 1,000 engines (docs/scale.md). The per-expert counters are left to the
dashboard's per-expert panels, which read them for one selection when opened.

Every rank (a scrape target of its own) reports the tokens it routed; only one of a
tensor-parallel group counts, data-parallel ranks each route their own. A layer is judged when
the model's ranks together routed enough tokens in the window (``moe.min_expected_tokens_per_
expert`` per expert): with too few, shares are noise. Many data-parallel ranks may each route
few tokens, so judging rank by rank would silence exactly the widest deployments. The share
figures are the ranks' own, averaged weighted by their tokens: expert-parallel load follows the
pooled shares, which the exporter cannot see, and this mean bounds their variance from above
(the noise a thin rank adds is weighted by its few tokens). A dead expert is another matter: a
thin rank misses experts by chance, so it counts only on ranks that routed enough on their own,
where a live expert has next to no chance of getting none; the worst of them counts, so a dead
expert behind one replica (a bad shard on one pod) is not hidden by healthy peers.

The gauges are read as their last sample within a few scrapes: one scrape of the exporter that
times out under load writes stale markers, which must not restart an alert's ``for:``.
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
# A gauge's last sample counts for this many scrape intervals: two failed scrapes in a row are
# bridged, a rank gone for longer drops out.
GAUGE_HOLD_SCRAPES = 3


# Per layer, model-wide. The rate is of every layer (for traffic panels); the rest only of layers
# whose ranks together routed enough tokens to judge.
LAYER_RATE = conventions.record_name("layer", WINDOW_TOKENS, "rate")  # expert-token counts/s, over ranks
SHARE_VARIANCE_AVG = conventions.record_name("layer", SHARE_VARIANCE, "weighted_avg")  # by the ranks' tokens
MAX_OVER_MEAN = conventions.record_name("layer", MAX_SHARE, "max_over_mean")  # busiest expert / layer mean
BALANCEDNESS = conventions.record_name("layer", MAX_SHARE, "balancedness")  # vLLM EPLB's mean / max
DEAD_EXPERTS_MAX = conventions.record_name("layer", DEAD_EXPERTS, "max")  # the worst rank judged alone


def gauge(cfg: Config, name: str, matchers: Sequence[str] = ()) -> str:
    """The exporter's gauge ``name`` per rank and layer: its last sample within a few scrapes."""
    hold = cfg.scaled(cfg.intervals.scrape * GAUGE_HOLD_SCRAPES)
    return promql.range_fn("last_over_time", name, hold, [*cfg.selectors.moe_exporter, *matchers])


def _enough(cfg: Config, tokens: str, experts: str) -> str:
    return f"{tokens}\n/\n{experts}\n>= {promql.number(cfg.moe.min_expected_tokens_per_expert)}"


def judged(cfg: Config, layer_expr: str) -> str:
    """``layer_expr`` (per layer) where the model's ranks together routed enough tokens."""
    model_wide = _enough(
        cfg,
        promql.sum_by(LAYER, gauge(cfg, WINDOW_TOKENS)),
        promql.agg("max", LAYER, gauge(cfg, EXPERTS)),
    )
    return f"{layer_expr}\nand\n({model_wide})"


def token_weighted(cfg: Config, rank_expr: str) -> str:
    """The mean of ``rank_expr`` (per rank and layer) over a layer's ranks, weighted by the
    tokens each routed in the window."""
    tokens = gauge(cfg, WINDOW_TOKENS)
    weighted = promql.sum_by(LAYER, f"({rank_expr})\n* {tokens}")
    return f"{weighted}\n/\n{promql.sum_by(LAYER, tokens)}"


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
    tokens, experts = gauge(cfg, WINDOW_TOKENS), gauge(cfg, EXPERTS)
    hot_factor = f"{gauge(cfg, MAX_SHARE)} * {experts}"  # busiest expert over the layer's mean, per rank
    per_second = f"{tokens}\n/\n{gauge(cfg, WINDOW_SECONDS)}"
    rank_judged = f"{gauge(cfg, DEAD_EXPERTS)}\nand\n({_enough(cfg, tokens, experts)})"
    rules = (
        RecordingRule(LAYER_RATE, promql.sum_by(LAYER, per_second)),
        RecordingRule(SHARE_VARIANCE_AVG, judged(cfg, token_weighted(cfg, gauge(cfg, SHARE_VARIANCE)))),
        RecordingRule(MAX_OVER_MEAN, judged(cfg, token_weighted(cfg, hot_factor))),
        # vLLM's EPLB balancedness: mean over max tokens per expert (this group's rules evaluate in
        # order, so it reads the figure just recorded).
        RecordingRule(BALANCEDNESS, f"1 / {promql.recorded(MAX_OVER_MEAN)}"),
        RecordingRule(DEAD_EXPERTS_MAX, promql.agg("max", LAYER, rank_judged)),
    )
    return [RuleGroup("infersight-moe.rules", cfg.scaled(cfg.intervals.evaluation), rules)]
