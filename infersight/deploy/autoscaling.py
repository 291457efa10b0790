"""``deploy/autoscaling/``: KEDA ScaledObjects, autoscaling/v2 HPAs and prometheus-adapter values
for every model in ``autoscaling.models``, all reading the autoscaling pack's signal series.

What they get right that public examples do not:
- every query is pinned to the model's namespace and ``model_name`` (vLLM's label; ``model``
  matches nothing) and reads one recorded series, so it returns exactly one element, as KEDA
  requires, and never sums another workload's replicas;
- KEDA's ``ignoreNullValues`` is ``false``: a missing signal is an error the autoscaler reports,
  not a 0 that scales the model down;
- the signal is already per replica, so the metric type is ``Value``: the HPA applies
  ``ceil(current x value / target)`` to it as is.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from infersight.config import Config
from infersight.config.autoscaling import ScaledModel
from infersight.recording_rules import autoscaling as autoscaling_rules

DIR = "deploy/autoscaling"
KEDA_PATH = f"{DIR}/keda-scaledobjects.yaml"
HPA_PATH = f"{DIR}/hpa.yaml"
ADAPTER_VALUES_PATH = f"{DIR}/prometheus-adapter-values.yaml"

# The external metric prometheus-adapter serves the signal as; HPAs select one model's series by
# the labels below (model_name may hold '/', which a label selector cannot).
EXTERNAL_METRIC = "infersight_vllm_autoscaling_signal"

API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
}


def _seconds(cfg: Config, nominal: Any, minimum: int = 0) -> int:
    return max(minimum, round(cfg.scaled(nominal).total_seconds))


def _quantity(x: float) -> str:
    """A Kubernetes quantity: plain decimal text."""
    return format(x, ".6g")


def _metadata(cfg: Config, m: ScaledModel) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "infersight", **cfg.deploy.kubernetes.labels}
    return {"name": m.workload.name, "namespace": m.workload.namespace, "labels": labels}


def _target_ref(m: ScaledModel) -> dict[str, str]:
    return {"apiVersion": API_VERSIONS[m.workload.kind], "kind": m.workload.kind, "name": m.workload.name}


def _behavior(cfg: Config, m: ScaledModel) -> dict[str, Any]:
    down = m.scale_down
    return {
        "scaleDown": {
            "stabilizationWindowSeconds": _seconds(cfg, down.stabilization),
            "policies": [
                {"type": "Percent", "value": down.max_percent, "periodSeconds": _seconds(cfg, down.period, 1)}
            ],
        }
    }


def scaled_object(cfg: Config, m: ScaledModel) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": _metadata(cfg, m),
        "spec": {
            "scaleTargetRef": _target_ref(m),
            "minReplicaCount": m.min_replicas,
            "maxReplicaCount": m.max_replicas,
            "pollingInterval": _seconds(cfg, cfg.autoscaling.polling_interval, 1),
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(cfg, m)}},
            "triggers": [
                {
                    "type": "prometheus",
                    "name": m.signal.replace("_", "-"),
                    "metricType": "Value",
                    "metadata": {
                        "serverAddress": cfg.deploy.prometheus_url,
                        "query": autoscaling_rules.signal_query(cfg, m),
                        "threshold": _quantity(m.effective_target),
                        "ignoreNullValues": "false",
                    },
                }
            ],
        },
    }


def hpa(cfg: Config, m: ScaledModel) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(cfg, m),
        "spec": {
            "scaleTargetRef": _target_ref(m),
            "minReplicas": m.min_replicas,
            "maxReplicas": m.max_replicas,
            "behavior": _behavior(cfg, m),
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": EXTERNAL_METRIC,
                            "selector": {"matchLabels": {"scale_target": m.workload.name, "signal": m.signal}},
                        },
                        "target": {"type": "Value", "value": _quantity(m.effective_target)},
                    },
                }
            ],
        },
    }


def adapter_values(cfg: Config) -> dict[str, Any]:
    """Values for the prometheus-community/prometheus-adapter chart: the signal as one external
    metric, namespaced by the series' namespace label (an HPA sees only its own namespace)."""
    url = urlsplit(cfg.deploy.prometheus_url)
    port = url.port or (443 if url.scheme == "https" else 80)
    signal = autoscaling_rules.signal(cfg)
    return {
        "prometheus": {"url": f"{url.scheme}://{url.hostname}", "port": port, "path": url.path.rstrip("/")},
        "rules": {
            "default": False,
            "external": [
                {
                    "seriesQuery": f'{signal}{{namespace!="",scale_target!="",signal!=""}}',
                    "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
                    "name": {"matches": f"^{signal}$", "as": EXTERNAL_METRIC},
                    "metricsQuery": "<<.Series>>{<<.LabelMatchers>>}",
                }
            ],
        },
    }


def manifests(cfg: Config) -> list[dict[str, Any]]:
    """What the Helm overlay deploys: the objects of the chosen engine."""
    make = scaled_object if cfg.autoscaling.engine == "keda" else hpa
    return [make(cfg, m) for m in cfg.autoscaling.models]
