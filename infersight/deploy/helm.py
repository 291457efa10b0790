"""``deploy/helm/values-infersight.yaml``: an overlay for kube-prometheus-stack
(``helm upgrade -f values-infersight.yaml``), keys as the chart documents them.

- ``additionalPrometheusRulesMap``: one PrometheusRule per bundle rule file;
- ``prometheus.additionalPodMonitors``: vLLM pods, dcgm-exporter, the GPU and MoE exporters;
- ``prometheus.prometheusSpec.*SelectorNilUsesHelmValues: false``: Prometheus also picks up
  rules and monitors created outside the release (deploy/kubernetes);
- ``prometheus.prometheusSpec.remoteWrite``: Mimir/Thanos is a values change
  (``deploy.remote_write_url``);
- Grafana: dashboards through ``grafana.dashboards`` and ``grafana.dashboardProviders`` into the
  folder, and the datasource uid the dashboards default to (``grafana.sidecar.datasources.uid``).

Why ``grafana.dashboards`` and not sidecar ConfigMaps: the chart's only way to ship extra
ConfigMaps from values is ``extraManifests``, which runs through Helm's ``tpl`` and would execute
the dashboards' ``{{model_name}}`` legends as templates. ``grafana.dashboards.<provider>.<name>.json``
is rendered verbatim, keeps the overlay self-contained (one ``helm upgrade``), and its provider
sets the folder without changing how the sidecar files the chart's own dashboards. Clusters that
prefer the sidecar use deploy/kubernetes/grafana-dashboards.yaml instead.

``values-alertmanager.yaml`` is a separate, optional overlay: ``alertmanager.config`` replaces
the release's whole Alertmanager configuration, which most clusters already own.
"""

from __future__ import annotations

from typing import Any

from infersight.bundle import Bundle
from infersight.deploy import autoscaling, grafana, targets
from infersight.deploy.naming import resource_name
from infersight.output import dump_json

VALUES_PATH = "deploy/helm/values-infersight.yaml"
ALERTMANAGER_VALUES_PATH = "deploy/helm/values-alertmanager.yaml"

PROVIDER = "infersight"  # grafana.dashboards key; the chart mounts it here:
CHART_DASHBOARDS_DIR = f"/var/lib/grafana/dashboards/{PROVIDER}"


def values(bundle: Bundle) -> dict[str, Any]:
    cfg = bundle.cfg
    spec: dict[str, Any] = {
        "ruleSelectorNilUsesHelmValues": False,
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "probeSelectorNilUsesHelmValues": False,
        "scrapeConfigSelectorNilUsesHelmValues": False,
        "scrapeInterval": str(cfg.scaled(cfg.intervals.scrape)),
        "evaluationInterval": str(cfg.scaled(cfg.intervals.evaluation)),
        "remoteWrite": [{"url": cfg.deploy.remote_write_url}] if cfg.deploy.remote_write_url else [],
    }
    extra_labels = dict(cfg.deploy.kubernetes.labels)
    rules: dict[str, Any] = {}
    for rule_file in bundle.rule_files:
        entry: dict[str, Any] = {"additionalLabels": extra_labels} if extra_labels else {}
        entry["groups"] = rule_file.data()["groups"]
        rules[resource_name(rule_file.path)] = entry
    monitors = []
    for t in targets.targets(cfg):
        monitor: dict[str, Any] = {"name": t.name}
        if extra_labels:
            monitor["additionalLabels"] = dict(extra_labels)
        monitor.update(targets.pod_monitor_spec(cfg, t))
        monitors.append(monitor)
    values: dict[str, Any] = {
        "additionalPrometheusRulesMap": rules,
        "prometheus": {"prometheusSpec": spec, "additionalPodMonitors": monitors},
        "grafana": {
            "sidecar": {"datasources": {"uid": cfg.dashboards.datasource_uid}},
            "dashboardProviders": {
                "dashboardproviders.yaml": {"apiVersion": 1, "providers": [grafana.provider(cfg, CHART_DASHBOARDS_DIR)]}
            },
            "dashboards": {
                PROVIDER: {d.file.removesuffix(".json"): {"json": dump_json(d.model)} for d in bundle.dashboards}
            },
        },
    }
    if cfg.autoscaling.models:
        # The chart applies extraManifests as they are: the chosen engine's autoscalers.
        values["extraManifests"] = autoscaling.manifests(cfg)
    return values


def alertmanager_values(alertmanager_config: dict[str, Any]) -> dict[str, Any]:
    return {"alertmanager": {"config": alertmanager_config}}
