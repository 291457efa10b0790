"""Autoscaling alert: a model that has an autoscaler has lost its scaling signal."""

from __future__ import annotations

from infersight.alerts.common import tuned_alert
from infersight.config import Config
from infersight.recording_rules import autoscaling as autoscaling_rules
from infersight.rules import RuleGroup

SIGNAL_ABSENT = "InfersightAutoscalingSignalAbsent"


def groups(cfg: Config) -> list[RuleGroup]:
    a = cfg.autoscaling.alerts.signal_absent
    if not (a.enabled and cfg.autoscaling.models):
        return []
    by = ", ".join(autoscaling_rules.BY)
    # The target series exists for every scaled model whatever vLLM does; the signal only while
    # vLLM serves the model and Prometheus scrapes it.
    alert = tuned_alert(
        cfg,
        "serving",
        SIGNAL_ABSENT,
        a,
        f"{autoscaling_rules.TARGET}\nunless on ({by})\n{autoscaling_rules.signal(cfg)}",
        "A model with an autoscaler has no scaling signal.",
        "{{ $labels.model_name }} in namespace {{ $labels.namespace }} scales {{ $labels.scale_target }} on "
        "{{ $labels.signal }}, but Prometheus has no such signal for it: its vLLM replicas are down or not "
        "scraped, so KEDA or the HPA cannot resize it.",
    )
    return [RuleGroup("infersight-autoscaling.alerts", cfg.scaled(cfg.intervals.evaluation), (alert,))]
