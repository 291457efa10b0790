"""Autoscaling: each scaled model's signal against its target, and the replicas it asks for
beside the replicas that serve it."""

from __future__ import annotations

from typing import Any

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, render, timeseries
from infersight.recording_rules import autoscaling as autoscaling_rules

FILE = "vllm-autoscaling.json"
VARIABLES = ("namespace", "model_name")
MODEL_FILTERS = filters(*VARIABLES)
_WHO = "{{namespace}}/{{model_name}}"


def _scaling(cfg: Config) -> Section:
    return Section(
        "Autoscaling",
        [
            timeseries(
                "Scaling signal against its target",
                "The series KEDA or the HPA reads for each scaled model, smoothed over "
                f"{cfg.scaled(cfg.autoscaling.smoothing)}, and the target it is held to. Above the target "
                "the autoscaler adds replicas; a gap means the autoscaler has nothing to act on.",
                "short",
                [
                    Query(promql.recorded(autoscaling_rules.signal(cfg), MODEL_FILTERS), _WHO + " {{signal}}"),
                    Query(promql.recorded(autoscaling_rules.TARGET, MODEL_FILTERS), _WHO + " target"),
                ],
            ),
            timeseries(
                "Replicas: asked for and running",
                "Replicas the HPA formula ceil(current x signal / target) asks for (within min and max), "
                "replicas vLLM reports serving, and the workload's replicas from kube-state-metrics "
                "(empty without kube-state-metrics, and for a LeaderWorkerSet).",
                "short",
                [
                    Query(promql.recorded(autoscaling_rules.DESIRED, MODEL_FILTERS), _WHO + " asked for"),
                    Query(promql.recorded(autoscaling_rules.REPLICAS, MODEL_FILTERS), _WHO + " serving (vLLM)"),
                    Query(
                        promql.recorded(autoscaling_rules.WORKLOAD_REPLICAS, MODEL_FILTERS),
                        _WHO + " workload (kube-state-metrics)",
                    ),
                ],
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    if not cfg.autoscaling.models:
        return {}
    board = render(
        cfg,
        name="vllm-autoscaling",
        title="vLLM / Autoscaling",
        description="Scaling signals of the models infersight generates KEDA and HPA objects for.",
        variables_from=autoscaling_rules.TARGET,
        variable_labels=VARIABLES,
        sections=[_scaling(cfg)],
    )
    return {FILE: board}
