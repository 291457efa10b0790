"""Autoscaling signals: one series per scaled model and namespace, read by KEDA, the HPA (through
prometheus-adapter), the absent-signal alert and the dashboard alike.

Each scaled model gets four rules, pinned to its namespace and ``model_name`` so that no
autoscaler ever aggregates another workload's replicas:

- its signal (``namespace_model:vllm_autoscaling_signal:avg1m``, labels ``signal`` and
  ``scale_target``), smoothed over ``autoscaling.smoothing``;
- its target, as a series, so dashboards and the absent alert know which models must have one;
- the replicas serving it, counted from vLLM's own series;
- the replicas the HPA formula ``ceil(current x value / target)`` asks for, within min and max.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.config.autoscaling import ScaledModel
from infersight.promql import number as num
from infersight.rules import Alert, RecordingRule, RuleGroup

BY = ("namespace", "model_name")
WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_USAGE = "vllm:kv_cache_usage_perc"

TARGET = conventions.record_name("namespace_model", "vllm_autoscaling_target", "value")
REPLICAS = conventions.record_name("namespace_model", "vllm_replicas", "count")
DESIRED = conventions.record_name("namespace_model", "vllm_autoscaling_desired_replicas", "value")
# The workload's replicas as kube-state-metrics reports them (none for a LeaderWorkerSet).
WORKLOAD_REPLICAS = conventions.record_name("namespace_model", "kube_workload_status_replicas", "sum")
KSM_REPLICAS = {
    "Deployment": ("kube_deployment_status_replicas", "deployment"),
    "StatefulSet": ("kube_statefulset_status_replicas", "statefulset"),
}


def signal(cfg: Config) -> str:
    return conventions.record_name("namespace_model", "vllm_autoscaling_signal", f"avg{cfg.autoscaling.smoothing}")


def pinned(m: ScaledModel) -> list[str]:
    """The matchers that pin a query to one scaled model: its namespace and model_name."""
    return [
        promql.label_matcher("namespace", "=", m.workload.namespace),
        promql.label_matcher("model_name", "=", m.model_name),
    ]


def signal_query(cfg: Config, m: ScaledModel) -> str:
    """What an autoscaler asks Prometheus: exactly one series while the model is served."""
    return promql.recorded(signal(cfg), [*pinned(m), promql.label_matcher("signal", "=", m.signal)])


def _replicas(cfg: Config, m: ScaledModel) -> str:
    """Replicas serving the model, as vLLM reports them: one per scraped instance."""
    per_instance = promql.agg("group", (*BY, "instance"), promql.series(RUNNING, [*cfg.selectors.vllm, *pinned(m)]))
    return promql.agg("count", BY, per_instance)


def _per_replica(cfg: Config, m: ScaledModel, metric: str) -> str:
    """A gauge summed over the model's engines, smoothed, divided by its replicas."""
    smoothed = promql.range_fn(
        "avg_over_time", metric, cfg.scaled(cfg.autoscaling.smoothing), [*cfg.selectors.vllm, *pinned(m)]
    )
    return f"{promql.sum_by(BY, smoothed)}\n/ on ({', '.join(BY)})\n{promql.recorded(REPLICAS, pinned(m))}"


def _signal_expr(cfg: Config, m: ScaledModel) -> str:
    if m.signal == "waiting_per_replica":
        return _per_replica(cfg, m, WAITING)
    if m.signal == "batch_fill":
        return f"(\n{_per_replica(cfg, m, RUNNING)}\n) / {m.max_num_seqs}"
    # kv_usage: the fullest engine of each replica decides whether that replica preempts.
    smoothed = promql.range_fn(
        "avg_over_time", KV_USAGE, cfg.scaled(cfg.autoscaling.smoothing), [*cfg.selectors.vllm, *pinned(m)]
    )
    return promql.agg("avg", BY, promql.agg("max", (*BY, "instance"), smoothed))


def _model_rules(cfg: Config, m: ScaledModel) -> list[RecordingRule | Alert]:
    labels = {"signal": m.signal, "scale_target": m.workload.name}
    desired = (
        f"clamp(\n  ceil(\n    {promql.recorded(signal(cfg), pinned(m))}\n    * on ({', '.join(BY)}) "
        f"{promql.recorded(REPLICAS, pinned(m))}\n    / {num(m.effective_target)}\n  ),\n"
        f"  {m.min_replicas}, {m.max_replicas}\n)"
    )
    rules: list[RecordingRule | Alert] = [
        RecordingRule(
            TARGET, f"vector({num(m.effective_target)})", {**labels, **dict(zip(BY, _values(m), strict=True))}
        ),
        RecordingRule(REPLICAS, _replicas(cfg, m)),
        RecordingRule(signal(cfg), _signal_expr(cfg, m), labels),
        RecordingRule(DESIRED, desired, labels),
    ]
    if m.workload.kind in KSM_REPLICAS:
        metric, label = KSM_REPLICAS[m.workload.kind]
        workload = [
            promql.label_matcher("namespace", "=", m.workload.namespace),
            promql.label_matcher(label, "=", m.workload.name),
        ]
        rules.append(
            RecordingRule(
                WORKLOAD_REPLICAS,
                promql.sum_by(("namespace",), promql.series(metric, workload)),
                {"model_name": m.model_name, **labels},
            )
        )
    return rules


def _values(m: ScaledModel) -> tuple[str, str]:
    return (m.workload.namespace, m.model_name)


def groups(cfg: Config) -> list[RuleGroup]:
    """A model's rules (at most five) never straddle two groups, so its desired-replica rule reads
    this evaluation's signal, not the previous one's."""
    per_group = conventions.MAX_RULES_PER_GROUP // 5
    models = cfg.autoscaling.models
    chunks = [models[i : i + per_group] for i in range(0, len(models), per_group)]
    interval = cfg.scaled(cfg.intervals.evaluation)
    name = "infersight-autoscaling"
    return [
        RuleGroup(
            f"{name}.rules" if len(chunks) == 1 else f"{name}-{i}.rules",
            interval,
            tuple(r for m in chunk for r in _model_rules(cfg, m)),
            every_evaluation=True,  # KEDA or the HPA reads the desired replicas at every evaluation
        )
        for i, chunk in enumerate(chunks, start=1)
    ]
