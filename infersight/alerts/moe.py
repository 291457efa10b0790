"""MoE expert-balance alerts: persistent imbalance, dead experts, and expert-load metrics
missing for a model configured as MoE."""

from __future__ import annotations

from infersight import promql
from infersight.alerts.common import num, on, tuned_alert
from infersight.config import Config
from infersight.recording_rules import moe as moe_rules
from infersight.rules import Alert, RuleGroup

IMBALANCE = "InfersightMoEExpertImbalance"
DEAD_EXPERT = "InfersightMoEDeadExpert"
METRICS_ABSENT = "InfersightMoEExpertLoadAbsent"


def layer_has_traffic(cfg: Config) -> str:
    """Layers where each expert would expect enough tokens in the window to judge its share."""
    seconds = cfg.scaled(cfg.moe.window).total_seconds
    expected_tokens = f"{moe_rules.layer_mean(cfg)} * {num(seconds)}"
    return f"and {on(moe_rules.LAYER)}\n{expected_tokens} >= {num(cfg.moe.min_expected_tokens_per_expert)}"


def _imbalance(cfg: Config) -> Alert:
    a = cfg.moe.alerts.imbalance
    return tuned_alert(
        cfg,
        "moe",
        IMBALANCE,
        a,
        f"{moe_rules.share_variance(cfg)} > {num(a.variance_threshold)}\n{layer_has_traffic(cfg)}",
        "Tokens are persistently routed unevenly across the experts of an MoE layer.",
        "Layer {{ $labels.layer }} of {{ $labels.model_name }} (job {{ $labels.job }}): the variance of "
        f'per-expert load shares is {{{{ $value | printf "%.4f" }}}} over {cfg.scaled(cfg.moe.window)} '
        f"(threshold {num(a.variance_threshold)}); hot experts slow every step of the batch.",
    )


def _dead_expert(cfg: Config) -> Alert:
    a = cfg.moe.alerts.dead_expert
    return tuned_alert(
        cfg,
        "moe",
        DEAD_EXPERT,
        a,
        f"{moe_rules.expert_rate(cfg)} == 0\n{layer_has_traffic(cfg)}",
        "An MoE expert receives no tokens while its layer has traffic.",
        "Expert {{ $labels.expert }} of layer {{ $labels.layer }} ({{ $labels.model_name }}, job "
        f"{{{{ $labels.job }}}}) received no tokens in {cfg.scaled(cfg.moe.window)} while the layer's other experts "
        "did.",
    )


def _absent(cfg: Config) -> Alert:
    """Only models listed in moe.models: a dense model has no expert load and must stay quiet.
    A model that is not served at all is the serving alerts' business, so vLLM must expose it.
    Expert load counts as present if any sample arrived within the rate window: one scrape of
    the plugin's port that times out under load writes stale markers, and must not start the
    alert while the rate rules still have data."""
    a = cfg.moe.alerts.metrics_absent
    models = promql.label_matcher("model_name", "=~", promql.alternation(cfg.moe.models))
    served = promql.agg(
        "group", ("model_name",), promql.series("vllm:num_requests_running", [*cfg.selectors.vllm, models])
    )
    exported = promql.agg(
        "group",
        ("model_name",),
        promql.over_time("present", promql.series(moe_rules.TOKENS, cfg.selectors.moe_exporter), cfg.moe.window),
    )
    return tuned_alert(
        cfg,
        "moe",
        METRICS_ABSENT,
        a,
        f"{served}\nunless on (model_name)\n{exported}",
        "An MoE model is served but no expert-load metrics arrive for it.",
        "{{ $labels.model_name }} is configured as MoE and served by vLLM, but Prometheus has no expert-load "
        "series for it: the infersight MoE plugin is not loaded in vLLM, or its exporter is not scraped.",
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
