"""Speculative decoding: how often the drafter's tokens are accepted (per model, per server, per
position in the draft), how many tokens each verification step yields, and the proposed, accepted
and rejected token flow against the tokens the model emits. Every panel says plainly, in place of
"No data", that its series need --speculative-config."""

from __future__ import annotations

from typing import Any

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, render, timeseries
from infersight.recording_rules import serving as serving_rules
from infersight.recording_rules import spec_decode as spec_rules
from infersight.recording_rules.ratios import positive

FILE = "vllm-spec-decode.json"
VARIABLES = ("job", "model_name", "instance")
MODEL_FILTERS = filters("job", "model_name")
INSTANCE_FILTERS = filters(*VARIABLES)
_WHO = "{{model_name}} @ {{instance}}"
# Shown in place of "No data": vLLM exports vllm:spec_decode_* only with a speculative config.
FLAG_OFF = "No speculative decoding here: vLLM exports vllm:spec_decode_* only when started with --speculative-config"


def _model_sum(name: str) -> str:
    """A per-server recorded rate summed per model, over the selected servers."""
    return promql.sum_by(("job", "model_name"), promql.recorded(name, INSTANCE_FILTERS))


def _acceptance(cfg: Config) -> Section:
    a = cfg.spec_decode.alerts.acceptance_collapse
    baseline = (
        f"{promql.recorded(spec_rules.acceptance(a.baseline_window), INSTANCE_FILTERS)} "
        f"offset {cfg.scaled(a.baseline_offset)}"
    )
    return Section(
        "Acceptance",
        [
            timeseries(
                "Draft acceptance rate per model",
                "Accepted over proposed draft tokens. The speedup comes from accepted tokens; a falling "
                "rate means the drafter's guesses stopped matching the model (new traffic, a changed "
                "model or draft model). Per model: the instance variable does not narrow it.",
                "percentunit",
                [
                    Query(
                        promql.recorded(spec_rules.acceptance(cfg.intervals.rate, "model"), MODEL_FILTERS),
                        "{{model_name}}",
                    )
                ],
                width=8,
                max_val=1,
                no_value=FLAG_OFF,
            ),
            timeseries(
                "Draft acceptance rate per server, and its baseline",
                f"Each server's rate, and the baseline InfersightVLLMDraftAcceptanceCollapse holds it to: its "
                f"rate over {cfg.scaled(a.baseline_window)} ending {cfg.scaled(a.baseline_offset)} ago. The alert "
                f"fires under {(1 - a.drop_fraction) * 100:g}% of the baseline.",
                "percentunit",
                [
                    Query(promql.recorded(spec_rules.acceptance(cfg.intervals.rate), INSTANCE_FILTERS), _WHO),
                    Query(baseline, _WHO + " baseline"),
                ],
                width=8,
                max_val=1,
                no_value=FLAG_OFF,
            ),
            timeseries(
                "Mean accepted length",
                "Tokens each verification step yields: 1 + accepted draft tokens per draft. 1 means "
                "the drafts bring nothing; the most is 1 + the draft length (num_speculative_tokens). Per "
                "model: the instance variable does not narrow it.",
                "short",
                [Query(promql.recorded(spec_rules.accepted_length(cfg), MODEL_FILTERS), "{{model_name}}")],
                width=8,
                no_value=FLAG_OFF,
            ),
            timeseries(
                "Acceptance by draft position",
                "How often the token at each position of the draft was accepted, per draft. Later "
                "positions are accepted only after every earlier one: a steep fall says a shorter "
                "draft (num_speculative_tokens) would waste less verification. Per model: the instance "
                "variable does not narrow it.",
                "percentunit",
                [
                    Query(
                        promql.recorded(spec_rules.position_acceptance(cfg), MODEL_FILTERS),
                        "{{model_name}} position {{position}}",
                    )
                ],
                width=24,
                max_val=1,
                no_value=FLAG_OFF,
            ),
        ],
    )


def _token_flow(cfg: Config) -> Section:
    accepted, proposed = _model_sum(spec_rules.accepted_tokens(cfg)), _model_sum(spec_rules.draft_tokens(cfg))
    emitted = _model_sum(serving_rules.tokens(cfg, "generation"))
    return Section(
        "Token flow",
        [
            timeseries(
                "Draft tokens against verified tokens",
                "Per model: tokens the drafter proposed, those the model accepted and rejected (each costs "
                "verification compute), and the tokens the model emitted (accepted drafts included).",
                "short",
                [
                    Query(proposed, "{{model_name}} proposed"),
                    Query(accepted, "{{model_name}} accepted"),
                    Query(f"{proposed}\n- {accepted}", "{{model_name}} rejected"),
                    Query(emitted + " and on (job, model_name) " + proposed, "{{model_name}} emitted"),
                ],
                no_value=FLAG_OFF,
            ),
            timeseries(
                "Output from accepted drafts",
                "Share of the tokens emitted that were accepted drafts: the part of the output the "
                "drafter saved a full forward step for.",
                "percentunit",
                [Query(promql.ratio(accepted, positive(emitted)), "{{model_name}}")],
                max_val=1,
                no_value=FLAG_OFF,
            ),
            timeseries(
                "Draft rounds",
                "Drafts proposed per second per server: one per running request per step while "
                "speculative decoding is on.",
                "short",
                [Query(promql.recorded(spec_rules.drafts(cfg), INSTANCE_FILTERS), _WHO)],
                no_value=FLAG_OFF,
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="vllm-spec-decode",
        title="vLLM / Speculative decoding",
        description="Draft acceptance and token flow of the vLLM servers started with --speculative-config.",
        variables_from=spec_rules.draft_tokens(cfg),
        variable_labels=VARIABLES,
        sections=[_acceptance(cfg), _token_flow(cfg)],
    )
    return {FILE: board}
