"""Golden-signal and SLO recording rules for vLLM serving.

Levels: ``instance`` aggregates by (job, instance, model_name); ``model`` by (job,
model_name); ``engine`` keeps vLLM's data-parallel rank. Names carry the nominal window
(``rate5m``) even in a time-scaled profile, so dashboards and alerts are identical text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from infersight import promql
from infersight.config import Config, SLOOverride
from infersight.conventions import (
    ENGINE,
    INSTANCE,
    MODEL,
    QUANTILES,
    gauge_sum,
    op_rate,
    record_name,
    split_groups,
)
from infersight.durations import Duration
from infersight.recording_rules import lora, mfu
from infersight.recording_rules.histograms import quantile_rules
from infersight.rules import Alert, RecordingRule, RuleGroup

TTFT = "vllm:time_to_first_token_seconds"
# Histograms whose quantiles the overview shows; (catalog name, short name used in titles).
LATENCY_HISTOGRAMS = (
    (TTFT, "TTFT"),
    ("vllm:inter_token_latency_seconds", "ITL"),
    ("vllm:e2e_request_latency_seconds", "E2E"),
)


# The per-instance quantiles a panel or alert reads; the rest are recorded per model only.
# The outlier-replica alert and the instances table read TTFT p99 per instance.
INSTANCE_QUANTILES: dict[str, tuple[float, ...]] = {TTFT: (0.99,)}


def requests_by_reason(cfg: Config) -> str:
    """Per model and finished_reason: five reasons per engine are too many series per instance."""
    return record_name("model", "vllm:request_success", op_rate(cfg))


def requests(cfg: Config, level: str = "instance") -> str:
    return record_name(level, "vllm:requests", op_rate(cfg))


def requests_started(cfg: Config) -> str:
    """Per instance: requests that got a first token per second (the TTFT histogram's count). The
    outlier-replica alert judges replicas by it, about nine times per evaluation."""
    return record_name("instance", "vllm:requests_started", op_rate(cfg))


def error_ratio(cfg: Config, level: str = "instance") -> str:
    return record_name(level, "vllm:request_errors", "ratio_" + op_rate(cfg))


def http_5xx_ratio(cfg: Config) -> str:
    return record_name("instance", "vllm:http_5xx", "ratio_" + op_rate(cfg))


def tokens(cfg: Config, kind: str) -> str:
    return record_name("instance", f"vllm:{kind}_tokens", op_rate(cfg))


KV_USAGE_ENGINE = record_name("engine", "vllm:kv_cache_usage", "ratio")


def preemptions(cfg: Config) -> str:
    return record_name("instance", "vllm:num_preemptions", op_rate(cfg))


# --- SLO series ------------------------------------------------------------------------------
SLO_OBJECTIVE = record_name("model", "vllm_slo_objective", "ratio")


def slo_errors(window: Duration) -> str:
    return record_name("model", "vllm_slo_errors", f"ratio_rate{window}")


def slo_requests(window: Duration, kind: str = "") -> str:
    """Per model and ``slo``: requests per second (``kind`` "") or bad ones (``kind`` "bad")."""
    return record_name("model", f"vllm_slo_{kind + '_' if kind else ''}requests", f"rate{window}")


@dataclass(frozen=True)
class Cohort:
    """Models sharing one objective and threshold: the default, or one override."""

    matcher: str | None  # on model_name; None = every model
    objective: float
    threshold: float | None  # seconds, for latency SLOs


@dataclass(frozen=True)
class SLOSpec:
    name: str  # availability, ttft, itl
    title: str
    metric: str  # catalog metric the SLI reads
    cohorts: tuple[Cohort, ...]


def bad_reasons(cfg: Config) -> str:
    return promql.label_matcher("finished_reason", "=~", promql.alternation(cfg.slo.availability.bad_finished_reasons))


@dataclass(frozen=True)
class _SLODefinition:
    """One SLO as configured: its default objective and threshold, and what a model's override sets."""

    name: str
    title: str
    metric: str
    enabled: bool
    objective: float
    threshold: float | None  # seconds, for latency SLOs
    # (objective, threshold) a model's override sets; None inherits the default.
    overridden: Callable[[SLOOverride], tuple[float | None, float | None]]


def _definitions(cfg: Config) -> tuple[_SLODefinition, ...]:
    availability, ttft, itl = cfg.slo.availability, cfg.slo.ttft, cfg.slo.itl
    return (
        _SLODefinition(
            "availability",
            "Availability",
            "vllm:request_success_total",
            availability.enabled,
            availability.objective,
            None,
            lambda override: (override.availability_objective, None),
        ),
        _SLODefinition(
            "ttft",
            "TTFT",
            "vllm:time_to_first_token_seconds",
            ttft.enabled,
            ttft.objective,
            ttft.threshold_seconds,
            lambda override: (override.ttft_objective, override.ttft_threshold_seconds),
        ),
        _SLODefinition(
            "itl",
            "ITL",
            "vllm:inter_token_latency_seconds",
            itl.enabled,
            itl.objective,
            itl.threshold_seconds,
            lambda override: (override.itl_objective, override.itl_threshold_seconds),
        ),
    )


def slo_specs(cfg: Config, include_disabled: bool = False) -> list[SLOSpec]:
    """The enabled SLOs (every one with ``include_disabled``), each split into cohorts by per-model
    overrides."""
    overrides = cfg.slo.overrides
    default_matcher = promql.label_matcher("model_name", "!~", promql.alternation(overrides)) if overrides else None
    specs: list[SLOSpec] = []
    for slo in _definitions(cfg):
        if not (slo.enabled or include_disabled):
            continue
        cohorts = [Cohort(default_matcher, slo.objective, slo.threshold)]
        for model, override in sorted(overrides.items()):
            objective, threshold = slo.overridden(override)
            cohorts.append(
                Cohort(
                    promql.label_matcher("model_name", "=", model),
                    objective or slo.objective,
                    threshold or slo.threshold,
                )
            )
        specs.append(SLOSpec(slo.name, slo.title, slo.metric, tuple(cohorts)))
    return specs


def slo_windows(cfg: Config) -> list[Duration]:
    """Every window a burn-rate alert or the dashboard reads, shortest first."""
    return sorted({w for bw in cfg.slo.burn_windows for w in (bw.long, bw.short)})


def _sli_rates(cfg: Config, spec: SLOSpec, cohort: Cohort, window: Duration) -> tuple[str, str]:
    """(bad, total) requests per second per model over ``window``, from the raw series."""
    sel = [*cfg.selectors.vllm, *([cohort.matcher] if cohort.matcher else [])]
    w = cfg.scaled(window)
    if spec.name == "availability":
        bad = [*sel, bad_reasons(cfg)]
        return (
            promql.sum_by(MODEL, promql.rate(spec.metric, w, bad)),
            promql.sum_by(MODEL, promql.rate(spec.metric, w, sel)),
        )
    assert cohort.threshold is not None
    total = promql.sum_by(MODEL, promql.rate(spec.metric, w, sel, "_count"))
    good = promql.sum_by(
        MODEL,
        promql.rate(
            spec.metric, w, [*sel, promql.label_matcher("le", "=~", promql.le_value(cohort.threshold))], "_bucket"
        ),
    )
    return f"{total}\n-\n{good}", total


def _slo_rules(cfg: Config, spec: SLOSpec) -> list[RecordingRule | Alert]:
    """The shortest window's bad and total rates are recorded per model from the raw series; every
    longer window (1h to 3d) sums those recordings over time. Rating the raw series over 3 days on
    every evaluation would read about 17,000 samples per series of every engine (docs/scale.md);
    the sums read one series per model. A ratio of sums weighs each moment by its traffic, as a
    rate over the whole window does."""
    rules: list[RecordingRule | Alert] = []
    shortest, longer = slo_windows(cfg)[0], slo_windows(cfg)[1:]
    labels = {"slo": spec.name}
    for cohort in spec.cohorts:
        sel = [*cfg.selectors.vllm, *([cohort.matcher] if cohort.matcher else [])]
        own = [promql.label_matcher("slo", "=", spec.name), *([cohort.matcher] if cohort.matcher else [])]
        # One series per model that exists, holding its objective: alerts and panels divide by it.
        presence = promql.agg("group", MODEL, promql.series("vllm:num_requests_running", sel))
        rules.append(RecordingRule(SLO_OBJECTIVE, f"{cohort.objective} * {presence}", labels))
        bad, total = _sli_rates(cfg, spec, cohort, shortest)
        bad_name, total_name = slo_requests(shortest, "bad"), slo_requests(shortest)
        rules += [
            RecordingRule(bad_name, bad, labels),
            RecordingRule(total_name, total, labels),
            RecordingRule(
                slo_errors(shortest),
                promql.ratio(promql.recorded(bad_name, own), promql.recorded(total_name, own)),
                labels,
            ),
        ]
        for window in longer:
            w = cfg.scaled(window)
            summed = (promql.over_time("sum", promql.recorded(n, own), w) for n in (bad_name, total_name))
            rules.append(RecordingRule(slo_errors(window), promql.ratio(*summed), labels))
    # The period is too long to rate() cheaply; average the shortest window instead (as Sloth does).
    rules.append(
        RecordingRule(
            slo_errors(cfg.slo.period),
            promql.over_time(
                "avg",
                promql.recorded(slo_errors(shortest), [promql.label_matcher("slo", "=", spec.name)]),
                cfg.scaled(cfg.slo.period),
            ),
            labels,
        )
    )
    return rules


def _golden_rules(cfg: Config) -> list[RecordingRule | Alert]:
    sel = cfg.selectors.vllm
    w = cfg.scaled(cfg.intervals.rate)
    bad = bad_reasons(cfg)
    success = promql.rate("vllm:request_success_total", w, sel)
    rules: list[RecordingRule | Alert] = [
        RecordingRule(requests_by_reason(cfg), promql.sum_by((*MODEL, "finished_reason"), success)),
        RecordingRule(requests(cfg), promql.sum_by(INSTANCE, success)),
        RecordingRule(requests(cfg, "model"), promql.sum_by(MODEL, promql.recorded(requests(cfg)))),
        RecordingRule(
            requests_started(cfg), promql.sum_by(INSTANCE, promql.rate(TTFT, w, [*sel, 'le="+Inf"'], "_bucket"))
        ),
        RecordingRule(
            error_ratio(cfg),
            promql.ratio(
                promql.sum_by(INSTANCE, promql.rate("vllm:request_success_total", w, [*sel, bad])),
                promql.recorded(requests(cfg)),
            ),
        ),
        RecordingRule(
            error_ratio(cfg, "model"),
            promql.ratio(
                promql.sum_by(MODEL, promql.recorded(requests_by_reason(cfg), [bad])),
                promql.recorded(requests(cfg, "model")),
            ),
        ),
        # The API server's status is grouped (2xx/4xx/5xx) and has no model_name. "or 0 *" keeps a
        # zero series while no 5xx has happened, so the panel shows 0 rather than "No data".
        RecordingRule(
            http_5xx_ratio(cfg),
            promql.ratio(
                promql.sum_by(("job", "instance"), promql.rate("http_requests_total", w, [*sel, 'status="5xx"']))
                + "\nor\n0 * "
                + promql.sum_by(("job", "instance"), promql.rate("http_requests_total", w, sel)),
                promql.sum_by(("job", "instance"), promql.rate("http_requests_total", w, sel)),
            ),
        ),
        RecordingRule(tokens(cfg, "prompt"), promql.sum_by(INSTANCE, promql.rate("vllm:prompt_tokens_total", w, sel))),
        RecordingRule(
            tokens(cfg, "generation"), promql.sum_by(INSTANCE, promql.rate("vllm:generation_tokens_total", w, sel))
        ),
        RecordingRule(preemptions(cfg), promql.sum_by(INSTANCE, promql.rate("vllm:num_preemptions_total", w, sel))),
        RecordingRule(
            gauge_sum("vllm:num_requests_running"),
            promql.sum_by(INSTANCE, promql.series("vllm:num_requests_running", sel)),
        ),
        RecordingRule(
            gauge_sum("vllm:num_requests_waiting"),
            promql.sum_by(INSTANCE, promql.series("vllm:num_requests_waiting", sel)),
        ),
        RecordingRule(KV_USAGE_ENGINE, promql.agg("max", ENGINE, promql.series("vllm:kv_cache_usage_perc", sel))),
    ]
    return rules


def groups(cfg: Config) -> list[RuleGroup]:
    interval = cfg.scaled(cfg.intervals.evaluation)
    out = split_groups("infersight-serving", interval, _golden_rules(cfg))
    for metric, short in LATENCY_HISTOGRAMS:
        instance_quantiles = INSTANCE_QUANTILES.get(metric, ())
        out += split_groups(
            f"infersight-serving-{short.lower()}", interval, quantile_rules(cfg, metric, QUANTILES, instance_quantiles)
        )
    for spec in slo_specs(cfg):
        out += split_groups(f"infersight-serving-slo-{spec.name}", interval, _slo_rules(cfg, spec))
    out += split_groups("infersight-serving-lora", interval, lora.rules(cfg))
    out += split_groups("infersight-serving-mfu", interval, mfu.rules(cfg))
    return out
