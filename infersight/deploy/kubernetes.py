"""``deploy/kubernetes/``: plain manifests for clusters that run the Prometheus Operator and a
Grafana dashboard sidecar but not kube-prometheus-stack's values: one PrometheusRule per rule
file, one ConfigMap per dashboard (sidecar label and folder annotation), one PodMonitor per
scrape target. Apply with ``kubectl apply --server-side`` (dashboards exceed the 256 KiB
last-applied annotation of client-side apply)."""

from __future__ import annotations

from typing import Any

from infersight.bundle import Bundle
from infersight.config import Config
from infersight.deploy import targets
from infersight.deploy.naming import resource_name
from infersight.output import dump_json

RULES_PATH = "deploy/kubernetes/prometheus-rules.yaml"
DASHBOARDS_PATH = "deploy/kubernetes/grafana-dashboards.yaml"
POD_MONITORS_PATH = "deploy/kubernetes/pod-monitors.yaml"

# The sidecar's defaults in the Grafana chart and kube-prometheus-stack.
SIDECAR_LABEL = "grafana_dashboard"
FOLDER_ANNOTATION = "grafana_folder"


def _metadata(cfg: Config, name: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "infersight", **cfg.deploy.kubernetes.labels}
    return {"name": name, "namespace": cfg.deploy.kubernetes.namespace, "labels": labels}


def prometheus_rules(bundle: Bundle) -> list[dict[str, Any]]:
    cfg = bundle.cfg
    return [
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": _metadata(cfg, resource_name(rule_file.path)),
            "spec": {"groups": rule_file.data()["groups"]},
        }
        for rule_file in bundle.rule_files
    ]


def dashboard_config_maps(bundle: Bundle) -> list[dict[str, Any]]:
    cfg = bundle.cfg
    out = []
    for d in bundle.dashboards:
        meta = _metadata(cfg, resource_name(d.path))
        meta["labels"][SIDECAR_LABEL] = "1"
        meta["annotations"] = {FOLDER_ANNOTATION: cfg.deploy.grafana.folder}
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {d.file: dump_json(d.model)}})
    return out


def pod_monitors(cfg: Config) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": _metadata(cfg, t.name),
            "spec": targets.pod_monitor_spec(cfg, t),
        }
        for t in targets.targets(cfg)
    ]
