"""MoE expert-balance recording rules: one figure per layer of each model.

They read the MoE exporter's per-layer balance gauges (exporters/moe/balance.py), which the
exporter computes over its own window, not the per-expert counters: a rule rating every
(layer, expert) counter of every rank grows with layers x experts and was the bundle's largest
rule cost at 1,000 engines (docs/scale.md). The per-expert counters are left to the
dashboard's per-expert panels, which read them for one selection when opened.

Every rank (a scrape target of its own) reports the tokens it routed; only one of a
tensor-parallel group counts, data-parallel ranks each route their own.

- Imbalance is judged per replica (``moe.replica_labels``, namespace and pod by default), and
  the layer's figure is the worst replica's: pooled with many even peers, one replica's hot
  expert would be diluted below any threshold. A replica is judged when its ranks together
  routed enough tokens in the window (``moe.min_expected_tokens_per_expert`` per expert). A job's
  ranks are also judged all together, and that figure counts where it reads higher: a fleet of
  one-rank pods, each too thin to judge alone, would otherwise never be judged.
- A figure is its ranks' share variances weighted by their tokens, less what chance alone gives
  an even router on each rank's tokens, and unbiased however thin the ranks (:func:`_excess`):
  without that, a thousand nearly idle ranks add up to an imbalance nobody routed. Weighted
  ranks bound the variance of the pooled (expert-parallel) shares from above, on average.
- The hot-expert factor and balancedness have no such chance term (a maximum has no simple
  one), so only ranks that routed enough on their own count there.
- A dead expert counts only on ranks that routed enough on their own (a thin rank misses
  experts by chance, a judged one next to never); the worst rank counts, so a dead expert
  behind one replica (a bad shard on one pod) is not hidden by healthy peers.

The figures read the gauges' latest samples; the alerts read a figure's highest value over a
few scrapes (:func:`bridged`): one scrape of the exporter that times out under load writes stale
markers, which must not restart an alert's ``for:``.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import conventions, promql
from infersight.config import Config
from infersight.durations import Duration
from infersight.rules import RecordingRule, RuleGroup

TOKENS = "infersight_moe_expert_tokens_total"
EXPERTS = "infersight_moe_layer_experts"
TOP_K = "infersight_moe_layer_top_k"
EXPORTER_WINDOW = "infersight_moe_exporter_window_seconds"  # as configured, per rank
WINDOW_SECONDS = "infersight_moe_layer_window_seconds"
WINDOW_TOKENS = "infersight_moe_layer_window_tokens"
SHARE_VARIANCE = "infersight_moe_layer_share_variance"
MAX_SHARE = "infersight_moe_layer_max_share"
DEAD_EXPERTS = "infersight_moe_layer_dead_experts"
LAYER = ("job", "model_name", "layer")
EXPERT = (*LAYER, "expert")
# The alerts read a recorded figure's highest value over this many scrape intervals
# (intervals.scrape), and at least BRIDGE_MIN: a failed scrape of the exporter writes stale
# markers, its ranks drop out of the figures until the next good scrape, and that gap must not
# restart an alert's for:. The floor covers an exporter scraped every minute (a 60 s
# PodMonitor) with one failed scrape and the next one late. The figures themselves read the
# gauges' latest samples: a hold per gauge (last_over_time) read every sample of every rank's
# gauges in its window, ten times the cost at fleet size (docs/scale.md).
BRIDGE_SCRAPES = 3
BRIDGE_MIN = Duration.parse("3m")


# Per layer of each model. The rate is of every layer (for traffic panels); the rest only where
# enough tokens were routed to judge (per replica, per job or per rank, as each says).
LAYER_RATE = conventions.record_name("layer", WINDOW_TOKENS, "rate")  # expert-token counts/s, over ranks
SHARE_VARIANCE_WORST = conventions.record_name("layer", SHARE_VARIANCE, "replica_max")  # beyond chance, worst replica
MAX_OVER_MEAN = conventions.record_name("layer", MAX_SHARE, "max_over_mean")  # busiest expert / layer mean
BALANCEDNESS = conventions.record_name("layer", MAX_SHARE, "balancedness")  # vLLM EPLB's mean / max
DEAD_EXPERTS_MAX = conventions.record_name("layer", DEAD_EXPERTS, "max")  # the worst rank judged alone


def gauge(cfg: Config, name: str, matchers: Sequence[str] = ()) -> str:
    """The exporter's gauge ``name`` per rank and layer: its latest sample."""
    return promql.series(name, [*cfg.selectors.moe_exporter, *matchers])


def bridged(cfg: Config, recorded: str) -> str:
    """A recorded figure's highest value over the last few scrapes (BRIDGE_SCRAPES)."""
    window = cfg.scaled(max(cfg.intervals.scrape * BRIDGE_SCRAPES, BRIDGE_MIN))
    return promql.over_time("max", recorded, window)


def _enough(cfg: Config, tokens: str, experts: str) -> str:
    return f"{tokens}\n/\n{experts}\n>= {promql.number(cfg.moe.min_expected_tokens_per_expert)}"


def replica(cfg: Config) -> tuple[str, ...]:
    """The labels of one layer of one replica (moe.replica_labels)."""
    return (*LAYER, *cfg.moe.replica_labels)


def judged(cfg: Config, expr: str, by: Sequence[str], matchers: Sequence[str] = ()) -> str:
    """``expr`` (grouped ``by``) where the ranks of its group together routed enough tokens."""
    together = _enough(
        cfg,
        promql.sum_by(by, gauge(cfg, WINDOW_TOKENS, matchers)),
        promql.agg("max", by, gauge(cfg, EXPERTS, matchers)),
    )
    return f"{expr}\nand\n({together})"


def _excess(cfg: Config, matchers: Sequence[str]) -> tuple[str, str]:
    """Per rank and layer, the two terms of an unbiased share variance over several ranks.

    A rank's router with true share variance v, spreading n expert-token counts over E experts (k
    distinct per token, so each expert's count is binomial), shows on average v (1 - k/n) + c,
    where c = (1 - k/E) / (E n) is what chance alone gives an even router. Summed over ranks,
    n V - (1 - k/E)/E (the first term) therefore averages v (n - k) (the second): their sums'
    ratio is v, however thin the ranks. Without the correction a thin rank adds about (1 - k/E)/E
    to the sum whatever its n, and a thousand nearly idle ranks add up to an imbalance nobody
    routed. Only ranks that routed tokens in the window count: an idle rank sends no share
    figure. A rank without top_k drops out of both sums."""
    tokens, experts = gauge(cfg, WINDOW_TOKENS, matchers), gauge(cfg, EXPERTS, matchers)
    top_k, variance = gauge(cfg, TOP_K, matchers), gauge(cfg, SHARE_VARIANCE, matchers)
    excess = f"{variance} * {tokens}\n- (1 - {top_k} / {experts}) / {experts}"
    # n - k > 0 leaves out ranks of one token (their excess averages 0) and idle ones.
    return excess, f"({tokens} - {top_k} > 0)\nand\n{variance}"


def rank_enough(cfg: Config) -> str:
    """Per rank and layer: the rank alone routed enough tokens in the window to judge."""
    return _enough(cfg, gauge(cfg, WINDOW_TOKENS), gauge(cfg, EXPERTS))


def token_weighted(cfg: Config, rank_expr: str, by: Sequence[str], only: str) -> str:
    """The mean of ``rank_expr`` (per rank and layer) over the ranks of each group ``by`` where
    ``only`` holds, weighted by the tokens each routed in the window."""
    tokens = gauge(cfg, WINDOW_TOKENS)
    weighted = promql.sum_by(by, f"({rank_expr}\nand\n({only}))\n* {tokens}")
    weights = promql.sum_by(by, f"{tokens}\nand\n({only})")
    return f"{weighted}\n/\n{weights}"


def variance_beyond_chance(cfg: Config, by: Sequence[str], matchers: Sequence[str] = ()) -> str:
    """Per group ``by`` and layer, where its ranks together routed enough to judge: the share
    variance their routers show beyond chance (:func:`_excess`). Weighted by tokens, the ranks'
    variances bound the variance of their pooled shares (the expert-parallel load, which no single
    exporter sees) from above, on average."""
    excess, weights = _excess(cfg, matchers)
    ratio = f"{promql.sum_by(by, excess)}\n/\n({promql.sum_by(by, weights)} > 0)"
    return judged(cfg, f"clamp_min(\n{ratio},\n0\n)", by, matchers)


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
    tokens = gauge(cfg, WINDOW_TOKENS)
    hot_factor = f"{gauge(cfg, MAX_SHARE)} * {gauge(cfg, EXPERTS)}"  # busiest expert over the layer's mean, per rank
    per_second = f"{tokens}\n/\n{gauge(cfg, WINDOW_SECONDS)}"
    rules = (
        RecordingRule(LAYER_RATE, promql.sum_by(LAYER, per_second)),
        # The worst replica, or all of a job's ranks together where that reads higher: a fleet of
        # one-rank pods, each too thin to judge alone, is still judged.
        RecordingRule(
            SHARE_VARIANCE_WORST,
            promql.agg(
                "max", LAYER, f"{variance_beyond_chance(cfg, replica(cfg))}\nor\n{variance_beyond_chance(cfg, LAYER)}"
            ),
        ),
        # A thin rank's busiest expert is mostly chance, and no simple term corrects a maximum:
        # only ranks that routed enough on their own count here.
        RecordingRule(MAX_OVER_MEAN, token_weighted(cfg, hot_factor, LAYER, rank_enough(cfg))),
        # vLLM's EPLB balancedness: mean over max tokens per expert (this group's rules evaluate in
        # order, so it reads the figure just recorded).
        RecordingRule(BALANCEDNESS, f"1 / {promql.recorded(MAX_OVER_MEAN)}"),
        RecordingRule(
            DEAD_EXPERTS_MAX, promql.agg("max", LAYER, f"{gauge(cfg, DEAD_EXPERTS)}\nand\n({rank_enough(cfg)})")
        ),
    )
    return [RuleGroup("infersight-moe.rules", cfg.scaled(cfg.intervals.evaluation), rules)]
