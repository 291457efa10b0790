"""MoE expert-balance alerts: persistent imbalance, dead experts, and expert-load metrics
missing for a model configured as MoE."""

from __future__ import annotations

from infersight import promql
from infersight.alerts.common import num, tuned_alert
from infersight.config import Config
from infersight.recording_rules import moe as moe_rules
from infersight.rules import Alert, RuleGroup

IMBALANCE = "InfersightMoEExpertImbalance"
DEAD_EXPERT = "InfersightMoEDeadExpert"
METRICS_ABSENT = "InfersightMoEExpertLoadAbsent"


def _imbalance(cfg: Config) -> Alert:
    a = cfg.moe.alerts.imbalance
    return tuned_alert(
        cfg,
        "moe",
        IMBALANCE,
        a,
        f"{moe_rules.bridged(cfg, moe_rules.SHARE_VARIANCE_WORST)} > {num(a.variance_threshold)}",
        "Tokens are persistently routed unevenly across the experts of an MoE layer.",
        "Layer {{ $labels.layer }} of {{ $labels.model_name }} (job {{ $labels.job }}): the variance of "
        'per-expert load shares is {{ $value | printf "%.4f" }} beyond chance over the MoE exporter\'s window on '
        f"the most uneven replica (threshold {num(a.variance_threshold)}); the MoE dashboard's Most uneven "
        "replicas panel names it. Hot experts slow every step of the batch.",
    )


def _dead_expert(cfg: Config) -> Alert:
    a = cfg.moe.alerts.dead_expert
    return tuned_alert(
        cfg,
        "moe",
        DEAD_EXPERT,
        a,
        f"{moe_rules.bridged(cfg, moe_rules.DEAD_EXPERTS_MAX)} > 0",
        "MoE experts receive no tokens while their layer has traffic.",
        "{{ $value }} expert(s) of layer {{ $labels.layer }} ({{ $labels.model_name }}, job {{ $labels.job }}) "
        "received no tokens in the MoE exporter's window on a rank that routed enough to judge on its own "
        "(the worst such rank); the MoE dashboard's per-expert panels name them (not with "
        "INFERSIGHT_MOE_EXPORTER_PER_EXPERT=0, which drops the per-expert counters).",
    )


def _absent(cfg: Config) -> Alert:
    """Only models listed in moe.models: a dense model has no expert load and must stay quiet.
    A model that is not served at all is the serving alerts' business, so vLLM must expose it.
    Expert load counts as present if any sample of a layer's window tokens arrived within
    ``moe.window``: one scrape of the plugin's port that times out under load writes stale
    markers, and must not start the alert while the exporter still answers. (One series per
    layer, not the per-expert counters: the alert reads little at fleet size.) A plugin older
    than the balance gauges sends only counters and expert counts, which the other MoE alerts
    cannot read: it counts as absent."""
    a = cfg.moe.alerts.metrics_absent
    models = promql.label_matcher("model_name", "=~", promql.alternation(cfg.moe.models))
    served = promql.agg(
        "group", ("model_name",), promql.series("vllm:num_requests_running", [*cfg.selectors.vllm, models])
    )
    exported = promql.agg(
        "group",
        ("model_name",),
        promql.over_time("present", promql.series(moe_rules.WINDOW_TOKENS, cfg.selectors.moe_exporter), cfg.moe.window),
    )
    return tuned_alert(
        cfg,
        "moe",
        METRICS_ABSENT,
        a,
        f"{served}\nunless on (model_name)\n{exported}",
        "An MoE model is served but no expert-load metrics arrive for it.",
        "{{ $labels.model_name }} is configured as MoE and served by vLLM, but Prometheus has no expert-load "
        "balance series for it: the infersight MoE plugin is not loaded in vLLM, predates the balance gauges, "
        "or its exporter is not scraped.",
    )


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.moe.alerts
    alerts = []
    if a.imbalance.enabled:
        alerts.append(_imbalance(cfg))
    if a.dead_expert.enabled:
        alerts.append(_dead_expert(cfg))
    if a.metrics_absent.enabled and cfg.moe.models:
        alerts.append(_absent(cfg))
    return [RuleGroup("infersight-moe.alerts", cfg.scaled(cfg.intervals.evaluation), tuple(alerts))]
