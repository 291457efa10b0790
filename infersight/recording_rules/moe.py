"""MoE expert-balance recording rules, per layer over ``moe.window``.

They read the MoE exporter's counter of tokens routed to each (layer, expert). Every rank
(a scrape target of its own) counts the tokens it routes, so the rules sum over ranks and
instances: routing is a property of the model and its traffic, and one rank alone sees only
a slice of it. A layer's *share* of an expert is the expert's tokens over the tokens routed in
that layer, so shares sum to 1 per layer and uniform routing gives every expert 1/E.
"""

from __future__ import annotations

from collections.abc import Sequence

from infersight import conventions, promql
from infersight.config import Config
from infersight.rules import RecordingRule, RuleGroup

TOKENS = "infersight_moe_expert_tokens_total"
LAYER = ("job", "model_name", "layer")
EXPERT = (*LAYER, "expert")


def _operation(cfg: Config, prefix: str = "") -> str:
    return f"{prefix}rate{cfg.moe.window}"


def expert_rate(cfg: Config) -> str:
    """Tokens/s routed to each expert."""
    return conventions.record_name("expert", "infersight_moe_expert_tokens", _operation(cfg))


def layer_rate(cfg: Config) -> str:
    """Tokens/s routed in each layer (top-k routing counts a token k times)."""
    return conventions.record_name("layer", "infersight_moe_expert_tokens", _operation(cfg))


def layer_mean(cfg: Config) -> str:
    """Mean tokens/s per expert of a layer: what every expert would get if routing were uniform."""
    return conventions.record_name("layer", "infersight_moe_expert_tokens", _operation(cfg, "mean_"))


# Per-expert ratios are expressions over the recorded per-expert rate, not recordings: three
# series per expert per model were a sixth of the bundle's recorded series at 1,000 engines
# (docs/scale.md), and a ratio of two recorded series costs a panel nothing more.
def share(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """Each expert's share of its layer's routed tokens."""
    return per_layer(promql.recorded(expert_rate(cfg), matchers), promql.recorded(layer_rate(cfg), matchers))


def relative_load(cfg: Config, matchers: Sequence[str] = ()) -> str:
    """Each expert's load over its layer's mean (1 = fair share)."""
    return per_layer(promql.recorded(expert_rate(cfg), matchers), promql.recorded(layer_mean(cfg), matchers))


def coefficient_of_variation(cfg: Config) -> str:
    return conventions.record_name("layer", "infersight_moe_expert_load", _operation(cfg, "cv_"))


def max_over_mean(cfg: Config) -> str:
    return conventions.record_name("layer", "infersight_moe_expert_load", _operation(cfg, "max_over_mean_"))


def balancedness(cfg: Config) -> str:
    return conventions.record_name("layer", "infersight_moe_expert_load", _operation(cfg, "balancedness_"))


def share_variance(cfg: Config) -> str:
    return conventions.record_name("layer", "infersight_moe_expert_load_share", _operation(cfg, "variance_"))


def per_layer(expert_expr: str, layer_expr: str) -> str:
    """Divide each expert's series by its layer's."""
    return f"{expert_expr}\n/ on ({', '.join(LAYER)}) group_left\n{layer_expr}"


def groups(cfg: Config) -> list[RuleGroup]:
    w = cfg.scaled(cfg.moe.window)
    experts = promql.recorded(expert_rate(cfg))
    mean = promql.recorded(layer_mean(cfg))
    rules = [
        RecordingRule(expert_rate(cfg), promql.sum_by(EXPERT, promql.rate(TOKENS, w, cfg.selectors.moe_exporter))),
        RecordingRule(layer_rate(cfg), promql.sum_by(LAYER, experts)),
        RecordingRule(layer_mean(cfg), promql.agg("avg", LAYER, experts)),
        # A layer without traffic divides 0 by 0: NaN, which no alert threshold matches.
        RecordingRule(coefficient_of_variation(cfg), f"{promql.agg('stddev', LAYER, experts)}\n/\n{mean}"),
        RecordingRule(max_over_mean(cfg), f"{promql.agg('max', LAYER, experts)}\n/\n{mean}"),
        RecordingRule(balancedness(cfg), f"{mean}\n/\n{promql.agg('max', LAYER, experts)}"),
        RecordingRule(share_variance(cfg), promql.agg("stdvar", LAYER, share(cfg))),
    ]
    return [RuleGroup("infersight-moe.rules", cfg.scaled(cfg.intervals.evaluation), tuple(rules))]
