"""Deploy artefacts: the bundle's rules and dashboards wrapped for each place that consumes them.

``write_deploy`` is registered in :data:`infersight.bundle.EXTRA_WRITERS`; it reads the files the
build just produced (every pack's rule files and dashboards, whatever they are) and returns the
``deploy/`` tree: the kube-prometheus-stack overlay, plain Kubernetes manifests, Grafana
provisioning, prometheus.yml, alertmanager.yml, an otelcol-contrib config and a jsonnet mixin.
One module per consumer; this one only assembles them.
"""

from __future__ import annotations

import json
from typing import Any

from infersight.config import Config
from infersight.output import dump_yaml


def _yaml(data: Any, header: str) -> str:
    # A JSON round trip drops shared references, which YAML would print as anchors and aliases.
    return dump_yaml(json.loads(json.dumps(data)), header)


def _yaml_documents(docs: list[dict[str, Any]], header: str) -> str:
    return _yaml(docs[0], header) + "".join("---\n" + _yaml(doc, "") for doc in docs[1:]) if docs else ""


def write_deploy(cfg: Config, files: dict[str, str]) -> dict[str, str]:
    from infersight import bundle  # imported here: bundle imports this package
    from infersight.deploy import alertmanager, grafana, helm, kubernetes, mixin, otelcol, prometheus
    from infersight.deploy.view import BundleView

    view = BundleView.of(files)
    header = bundle._header(cfg)
    texts = {name: files[f"dashboards/{name}"] for name in view.dashboards}
    am_config = alertmanager.config(cfg, view)
    out = {
        helm.VALUES_PATH: _yaml(helm.values(cfg, view, texts), header),
        helm.ALERTMANAGER_VALUES_PATH: _yaml(helm.alertmanager_values(am_config), header),
        kubernetes.RULES_PATH: _yaml_documents(kubernetes.prometheus_rules(cfg, view), header),
        kubernetes.DASHBOARDS_PATH: _yaml_documents(kubernetes.dashboard_config_maps(cfg, view, texts), header),
        kubernetes.POD_MONITORS_PATH: _yaml_documents(kubernetes.pod_monitors(cfg), header),
        grafana.PROVIDER_PATH: _yaml(grafana.provider_file(cfg), header),
        grafana.DATASOURCE_PATH: _yaml(grafana.datasource_file(cfg), header),
        prometheus.PATH: _yaml(prometheus.config(cfg, view), header),
        alertmanager.PATH: _yaml(am_config, header),
        otelcol.PATH: _yaml(otelcol.config(cfg), header),
        **mixin.files(cfg, header),
    }
    return {path: text for path, text in out.items() if text}
