"""MoE expert balance: imbalance, hot-expert factor, balancedness and dead experts per layer
(recorded from the MoE exporter's per-layer gauges), then load share, hot experts and tokens per
expert from the raw per-expert counters, read when the dashboard is opened: recording them
cost more than any other rule at fleet size (recording_rules/moe.py)."""

from __future__ import annotations

from typing import Any

from grafana_foundation_sdk.builders.stat import Panel as StatPanel

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, heatmap, render, stat, timeseries
from infersight.recording_rules import moe as moe_rules

FILE = "vllm-moe.json"
VARIABLES = ("job", "model_name", "layer")
LAYER_FILTERS = filters(*VARIABLES)
_LAYER = "{{model_name}} L{{layer}}"
_EXPERT = "{{model_name}} L{{layer}} E{{expert}}"


_JUDGED = (
    "The ranks' figures weighted by their tokens, over ranks that routed enough tokens in the window on their own "
    "(a thin rank's busiest expert is mostly chance)."
)


def _replica(cfg: Config) -> str:
    """Legend of one layer of one replica: the replica's labels where the series have them."""
    return " ".join([_LAYER, *(f"{{{{{label}}}}}" for label in cfg.moe.replica_labels)])


def _balance(cfg: Config) -> Section:
    per_replica = moe_rules.variance_beyond_chance(cfg, moe_rules.replica(cfg), LAYER_FILTERS)
    return Section(
        "Load balance per layer (over the MoE exporter's window)",
        [
            timeseries(
                "Share variance per layer",
                "Variance of per-expert load shares within each layer, the expert activation rate variance, beyond "
                "what chance gives an even router on few tokens: the worst replica's, or all of a job's ranks "
                f"together where that reads higher (alert threshold {cfg.moe.alerts.imbalance.variance_threshold:g}). "
                "Replicas whose ranks together routed too few tokens in the window to judge are left out.",
                "short",
                [Query(promql.recorded(moe_rules.SHARE_VARIANCE_WORST, LAYER_FILTERS), _LAYER)],
            ),
            timeseries(
                "Hot-expert factor per layer",
                f"Busiest expert's tokens over the layer's mean (max/mean); the batch step waits for it. {_JUDGED}",
                "short",
                [Query(promql.recorded(moe_rules.MAX_OVER_MEAN, LAYER_FILTERS), _LAYER)],
            ),
            timeseries(
                "Balancedness per layer",
                f"vLLM's EPLB balancedness: mean over max tokens per expert; 1 is perfectly balanced. {_JUDGED}",
                "percentunit",
                [Query(promql.recorded(moe_rules.BALANCEDNESS, LAYER_FILTERS), _LAYER)],
                max_val=1,
            ),
            timeseries(
                "Dead experts per layer",
                "Experts that received no tokens in the window, on the worst rank that routed enough tokens on "
                "its own to judge.",
                "short",
                [Query(promql.recorded(moe_rules.DEAD_EXPERTS_MAX, LAYER_FILTERS), _LAYER)],
            ),
            stat(
                "Most uneven replicas",
                "The replicas (moe.replica_labels) whose layers route most unevenly: each one's share variance "
                "beyond chance, its ranks weighted by their tokens. The per-layer variance above is the worst of "
                "these (or the job's ranks together, where higher); this names the replica. Replicas whose ranks "
                "together routed too few tokens to judge are left out. Read from the exporter's gauges when the "
                "dashboard opens.",
                "short",
                [
                    Query(
                        f"topk({cfg.moe.top_experts}, {per_replica})",
                        _replica(cfg),
                        instant=True,
                    )
                ],
                width=24,
                height=6,
                thresholds=((None, "green"), (cfg.moe.alerts.imbalance.variance_threshold, "orange")),
                decimals=4,
            ),
            _exporter_window(cfg),
            timeseries(
                "Routed tokens/s per layer",
                "Expert-token counts per second in each layer, summed over ranks (top-k routing counts a token "
                "once per chosen expert).",
                "short",
                [Query(promql.recorded(moe_rules.LAYER_RATE, LAYER_FILTERS), _LAYER)],
                width=18,
            ),
        ],
    )


def _exporter_window(cfg: Config) -> StatPanel:
    """The window each exporter was started with, against the bundle's moe.window: the token gate
    and the alerts' timing assume that window, and nothing else notices an exporter set otherwise.
    The configured value, not the span its figures cover (which runs up to a twentieth and a
    sampling interval longer), so any difference shows and none is a false one."""
    window = cfg.scaled(cfg.moe.window)
    started = promql.series(moe_rules.EXPORTER_WINDOW, [*cfg.selectors.moe_exporter, *filters("job")])
    # A ratio, so the threshold is the same for every moe.window: 100 % is the bundle's own.
    seconds = promql.number(window.total_seconds)
    queries = [
        Query(f"{promql.agg(op, ('job',), started)}\n/ {seconds}", f"{{{{job}}}} {name}", instant=True)
        for op, name in (("min", "shortest"), ("max", "longest"))
    ]
    return stat(
        "Exporter window",
        "The balance window the MoE exporters were started with (INFERSIGHT_MOE_EXPORTER_WINDOW), shortest and "
        f"longest per job, over the bundle's moe.window ({window}). Anything but 100 % (orange) means an exporter "
        "judges another window than the token gate and the alerts assume.",
        "percentunit",
        queries,
        height=8,
        thresholds=((None, "orange"), (0.999, "green"), (1.001, "orange")),
    )


def _experts(cfg: Config) -> Section:
    top = cfg.moe.top_experts
    raw = "Read from the per-expert counters when the dashboard opens; narrow model and layer on a large fleet."
    return Section(
        "Experts",
        [
            heatmap(
                "Load share, layer x expert",
                "Each row is one expert of one layer; colour is its share of the layer's routed tokens. Uniform "
                f"routing gives every expert 1/E; a hot row stands out, a dead one is blank. {raw}",
                "percentunit",
                [Query(moe_rules.share(cfg, LAYER_FILTERS), "L{{layer}} E{{expert}}")],
                height=12,
            ),
            stat(
                f"Top {top} hot experts",
                f"Experts with the highest load relative to their layer's mean (1 = fair share). {raw}",
                "short",
                [
                    Query(
                        f"topk({top}, {moe_rules.relative_load(cfg, LAYER_FILTERS)})",
                        _EXPERT,
                        instant=True,
                    )
                ],
                width=24,
                height=6,
                thresholds=((None, "green"), (2, "orange"), (4, "red")),
                decimals=2,
            ),
            timeseries(
                "Tokens/s per expert",
                "Tokens routed to each expert per second (top-k routing counts a token once per chosen expert). " + raw,
                "short",
                [Query(moe_rules.expert_rate(cfg, LAYER_FILTERS), _EXPERT)],
                width=24,
                height=10,
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="vllm-moe",
        title="vLLM / MoE expert balance",
        description="How evenly MoE layers route tokens to their experts (infersight MoE exporter).",
        variables_from=moe_rules.LAYER_RATE,
        variable_labels=VARIABLES,
        sections=[_balance(cfg), _experts(cfg)],
    )
    return {FILE: board}
