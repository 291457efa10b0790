"""Speculative-decoding recording rules: drafts, proposed and accepted draft tokens per server,
the acceptance rate (accepted / proposed) and mean accepted length (1 + accepted / drafts) per
server and per model, acceptance by position in the draft per model, and the baseline acceptance
rate the collapse alert compares against.

These are the formulas of vLLM's own ``SpecDecodingProm`` docstring and its Speculative Decoding
dashboard, taken from rates and never from the cumulative counters. A ratio is recorded only
where drafts were proposed (``> 0``), so an idle server records no NaN.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.durations import Duration
from infersight.recording_rules.ratios import counter_ratio, positive
from infersight.rules import RecordingRule, RuleGroup

INSTANCE, MODEL = conventions.INSTANCE, conventions.MODEL
POSITION = (*MODEL, "position")
DRAFTS_METRIC = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS_METRIC = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED_METRIC = "vllm:spec_decode_num_accepted_tokens_total"
PER_POSITION_METRIC = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


def drafts(cfg: Config) -> str:
    """Draft rounds per second, per server and model."""
    return conventions.record_name("instance", "vllm:spec_decode_num_drafts", conventions.op_rate(cfg))


def draft_tokens(cfg: Config) -> str:
    """Tokens the drafter proposed per second."""
    return conventions.record_name("instance", "vllm:spec_decode_num_draft_tokens", conventions.op_rate(cfg))


def accepted_tokens(cfg: Config) -> str:
    """Proposed tokens the target model accepted per second."""
    return conventions.record_name("instance", "vllm:spec_decode_num_accepted_tokens", conventions.op_rate(cfg))


def acceptance(window: Duration, level: str = "instance") -> str:
    return conventions.record_name(level, "vllm:spec_decode_acceptance", f"ratio_rate{window}")


def accepted_length(cfg: Config) -> str:
    """Per model, the tokens each verification step yields: the accepted drafts plus the one the
    target model adds."""
    return conventions.record_name("model", "vllm:spec_decode_accepted_length", f"mean_{conventions.op_rate(cfg)}")


def position_acceptance(cfg: Config) -> str:
    """Per model and draft position: how often the token at that position was accepted."""
    return conventions.record_name("model_position", "vllm:spec_decode_acceptance", f"ratio_{conventions.op_rate(cfg)}")


def _rules(cfg: Config) -> list[RecordingRule]:
    sel, w = cfg.selectors.vllm, cfg.scaled(cfg.intervals.rate)
    rates = [
        (drafts(cfg), DRAFTS_METRIC),
        (draft_tokens(cfg), DRAFT_TOKENS_METRIC),
        (accepted_tokens(cfg), ACCEPTED_METRIC),
    ]
    rules = [RecordingRule(name, promql.sum_by(INSTANCE, promql.rate(metric, w, sel))) for name, metric in rates]
    per_model = {name: promql.sum_by(MODEL, promql.recorded(name)) for name, _ in rates}
    rules += [
        RecordingRule(
            acceptance(cfg.intervals.rate),
            promql.ratio(promql.recorded(accepted_tokens(cfg)), positive(promql.recorded(draft_tokens(cfg)))),
        ),
        RecordingRule(
            acceptance(cfg.intervals.rate, "model"),
            promql.ratio(per_model[accepted_tokens(cfg)], positive(per_model[draft_tokens(cfg)])),
        ),
        RecordingRule(
            accepted_length(cfg),
            "1 + " + promql.ratio(per_model[accepted_tokens(cfg)], positive(per_model[drafts(cfg)])),
        ),
        RecordingRule(
            position_acceptance(cfg),
            f"{promql.sum_by(POSITION, promql.rate(PER_POSITION_METRIC, w, sel))}\n"
            f"/ on ({', '.join(MODEL)}) group_left ()\n({positive(per_model[drafts(cfg)])})",
        ),
    ]
    baseline = cfg.spec_decode.alerts.acceptance_collapse.baseline_window
    if baseline != cfg.intervals.rate:
        rules.append(counter_ratio(cfg, acceptance(baseline), ACCEPTED_METRIC, DRAFT_TOKENS_METRIC, baseline, INSTANCE))
    return rules


def groups(cfg: Config) -> list[RuleGroup]:
    """One group: the ratios read this evaluation's rates, recorded before them in the same group."""
    return conventions.split_groups("infersight-spec-decode", cfg.scaled(cfg.intervals.evaluation), _rules(cfg))
