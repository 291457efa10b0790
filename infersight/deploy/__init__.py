"""The deploy stage: a built bundle wrapped for each place that consumes it.

``artefacts`` takes the typed :class:`~infersight.bundle.Bundle` (every pack's rule groups and
dashboards, whatever they are) and returns the ``deploy/`` tree as text: the
kube-prometheus-stack overlay, plain Kubernetes manifests, Grafana provisioning, prometheus.yml,
alertmanager.yml, an otelcol-contrib config, dcgm-exporter's counters file (with a ConfigMap, chart
values and a GPU Operator patch), the autoscaling pack's KEDA ScaledObjects, HPAs and
prometheus-adapter values and, on request, the jsonnet mixin. One module per consumer; this one
only assembles them. The stage depends on the bundle, never the reverse.
"""

from __future__ import annotations

import json
from typing import Any

from infersight.bundle import Bundle
from infersight.deploy import (
    alertmanager,
    autoscaling,
    dcgm_exporter,
    grafana,
    helm,
    kubernetes,
    mixin,
    otelcol,
    prometheus,
)
from infersight.output import comment, dump_yaml

# Files of the deploy/ tree that hold secrets (Alertmanager's webhook URLs): written 0600.
SECRET_PATHS = frozenset({alertmanager.PATH, helm.ALERTMANAGER_VALUES_PATH})


def _yaml(data: Any, header: str) -> str:
    # A JSON round trip drops shared references, which YAML would print as anchors and aliases.
    return dump_yaml(json.loads(json.dumps(data)), header)


def _yaml_documents(docs: list[dict[str, Any]], header: str) -> str:
    return _yaml(docs[0], header) + "".join("---\n" + _yaml(doc, "") for doc in docs[1:]) if docs else ""


def artefacts(bundle: Bundle, *, with_mixin: bool = False) -> dict[str, str]:
    """The deploy/ files by relative path. The mixin is traced from the packs (it rebuilds each
    several times), so only a build that writes it asks for it."""
    cfg, header = bundle.cfg, bundle.header
    am_config = alertmanager.config(bundle)
    scaled = cfg.autoscaling.models
    counters = comment(header) + dcgm_exporter.counters_csv()
    out = {
        helm.VALUES_PATH: _yaml(helm.values(bundle), header),
        helm.ALERTMANAGER_VALUES_PATH: _yaml(helm.alertmanager_values(am_config), header),
        kubernetes.RULES_PATH: _yaml_documents(kubernetes.prometheus_rules(bundle), header),
        kubernetes.DASHBOARDS_PATH: _yaml_documents(kubernetes.dashboard_config_maps(bundle), header),
        kubernetes.POD_MONITORS_PATH: _yaml_documents(kubernetes.pod_monitors(cfg), header),
        grafana.PROVIDER_PATH: _yaml(grafana.provider_file(cfg), header),
        grafana.DATASOURCE_PATH: _yaml(grafana.datasource_file(cfg), header),
        prometheus.PATH: _yaml(prometheus.config(bundle), header),
        alertmanager.PATH: _yaml(am_config, header),
        otelcol.PATH: _yaml(otelcol.config(cfg), header),
        autoscaling.KEDA_PATH: _yaml_documents([autoscaling.scaled_object(cfg, m) for m in scaled], header),
        autoscaling.HPA_PATH: _yaml_documents([autoscaling.hpa(cfg, m) for m in scaled], header),
        dcgm_exporter.COUNTERS_PATH: counters,
        dcgm_exporter.CONFIG_MAP_PATH: _yaml(dcgm_exporter.config_map(cfg, counters), header),
        dcgm_exporter.CHART_VALUES_PATH: _yaml(dcgm_exporter.chart_values(), header),
        dcgm_exporter.OPERATOR_PATCH_PATH: _yaml(dcgm_exporter.operator_patch(), header),
        autoscaling.ADAPTER_VALUES_PATH: _yaml(autoscaling.adapter_values(cfg), header) if scaled else "",
        **(mixin.files(cfg, header) if with_mixin else {}),
    }
    return {path: text for path, text in out.items() if text}
