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


_JUDGED = "Layers whose ranks together routed too few tokens in the window to judge are left out."


def _balance(cfg: Config) -> Section:
    return Section(
        "Load balance per layer (the ranks' figures weighted by their tokens, over the MoE exporter's window)",
        [
            timeseries(
                "Share variance per layer",
                "Variance of per-expert load shares within each layer, the expert activation rate variance "
                f"(alert threshold {cfg.moe.alerts.imbalance.variance_threshold:g}). {_JUDGED}",
                "short",
                [Query(promql.recorded(moe_rules.SHARE_VARIANCE_AVG, LAYER_FILTERS), _LAYER)],
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
                "Most uneven ranks",
                "The ranks (one replica's worker each) whose layers route most unevenly, by their own share "
                "variance: the per-layer figures above pool every rank of a model, so one skewed replica among "
                "many even ones shows here first. Read from the exporter's gauges when the dashboard opens.",
                "short",
                [
                    Query(
                        f"topk({cfg.moe.top_experts}, {moe_rules.gauge(cfg, moe_rules.SHARE_VARIANCE, LAYER_FILTERS)})",
                        "{{model_name}} L{{layer}} rank {{rank}} {{instance}}",
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
    """The span the exporters' figures cover, against the bundle's moe.window: the token gate and
    the alerts' timing assume that window, and nothing else notices an exporter set otherwise."""
    window_s = cfg.scaled(cfg.moe.window).total_seconds
    spans = promql.series(moe_rules.WINDOW_SECONDS, [*cfg.selectors.moe_exporter, *LAYER_FILTERS])
    return stat(
        "Exporter window",
        f"The longest span the MoE exporters' balance figures cover, per model. It should read {window_s:g} s "
        "(the bundle's moe.window) to a twentieth and a copy interval more, after the first window since a start; "
        "orange means INFERSIGHT_MOE_EXPORTER_WINDOW differs from moe.window.",
        "s",
        [Query(promql.agg("max", ("model_name",), spans), "{{model_name}}", instant=True)],
        height=8,
        thresholds=((None, "orange"), (0.95 * window_s, "green"), (1.2 * window_s, "orange")),
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
