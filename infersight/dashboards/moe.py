"""MoE expert balance: load share per layer and expert, imbalance per layer, hot experts
and tokens per expert, from the infersight MoE exporter's counters."""

from __future__ import annotations

from typing import Any

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, heatmap, render, stat, timeseries
from infersight.recording_rules import moe as moe_rules

FILE = "vllm-moe.json"
VARIABLES = ("job", "model_name", "layer")
LAYER_FILTERS = filters(*VARIABLES)
_LAYER = "{{model_name}} L{{layer}}"
_EXPERT = "{{model_name}} L{{layer}} E{{expert}}"


def _balance(cfg: Config) -> Section:
    window = cfg.moe.window
    return Section(
        "Load balance",
        [
            heatmap(
                "Load share, layer x expert",
                f"Each row is one expert of one layer; colour is its share of the layer's routed tokens over "
                f"{window}. Uniform routing gives every expert 1/E; a hot row stands out, a dead one is blank.",
                "percentunit",
                [Query(moe_rules.share(cfg, LAYER_FILTERS), "L{{layer}} E{{expert}}")],
                height=12,
            ),
            timeseries(
                "Share variance per layer",
                "Variance of per-expert load shares within each layer, the expert activation rate variance "
                f"(alert threshold {cfg.moe.alerts.imbalance.variance_threshold:g}).",
                "short",
                [Query(promql.recorded(moe_rules.share_variance(cfg), LAYER_FILTERS), _LAYER)],
            ),
            timeseries(
                "Coefficient of variation per layer",
                "Standard deviation over mean of tokens per expert; 0 is perfectly balanced.",
                "short",
                [Query(promql.recorded(moe_rules.coefficient_of_variation(cfg), LAYER_FILTERS), _LAYER)],
            ),
            timeseries(
                "Hot-expert factor per layer",
                "Busiest expert's tokens over the layer's mean (max/mean); the batch step waits for it.",
                "short",
                [Query(promql.recorded(moe_rules.max_over_mean(cfg), LAYER_FILTERS), _LAYER)],
            ),
            timeseries(
                "Balancedness per layer",
                "vLLM's EPLB balancedness: mean over max tokens per expert; 1 is perfectly balanced.",
                "percentunit",
                [Query(promql.recorded(moe_rules.balancedness(cfg), LAYER_FILTERS), _LAYER)],
                max_val=1,
            ),
        ],
    )


def _experts(cfg: Config) -> Section:
    top = cfg.moe.top_experts
    return Section(
        "Experts",
        [
            stat(
                f"Top {top} hot experts",
                f"Experts with the highest load relative to their layer's mean over {cfg.moe.window} (1 = fair share).",
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
                "Tokens routed to each expert per second (top-k routing counts a token once per chosen expert).",
                "short",
                [Query(promql.recorded(moe_rules.expert_rate(cfg), LAYER_FILTERS), _EXPERT)],
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
        variables_from=moe_rules.expert_rate(cfg),
        variable_labels=VARIABLES,
        sections=[_balance(cfg), _experts(cfg)],
    )
    return {FILE: board}
