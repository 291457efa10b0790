"""``deploy/grafana/provisioning/``: a dashboards provider and a datasource (``apiVersion: 1``)
for a Grafana that reads files, and the provider/datasource pieces the Helm overlay reuses.

The dashboards' ``datasource`` variable defaults to ``dashboards.datasource_uid``; the
provisioned datasource carries exactly that uid, and ``timeInterval`` set to the scrape
interval so ``$__rate_interval`` always spans enough scrapes.

The same writers provision the Grafana that ``infersight up`` starts (infersight.stack.grafana):
there the URLs and the dashboards' folder are the local stack's, passed in instead of the config's.
"""

from __future__ import annotations

from typing import Any

from infersight.config import Config

PROVISIONING_DIR = "deploy/grafana/provisioning"
PROVIDER_PATH = f"{PROVISIONING_DIR}/dashboards/infersight.yaml"
DATASOURCE_PATH = f"{PROVISIONING_DIR}/datasources/infersight.yaml"


def folder_uid(cfg: Config) -> str:
    """A stable folder uid, shared by the provider and ``infersight deploy dashboards``."""
    return cfg.dashboards.uid_prefix


def provider(cfg: Config, path: str) -> dict[str, Any]:
    return {
        "name": "infersight",
        "orgId": 1,
        "folder": cfg.deploy.grafana.folder,
        "folderUid": folder_uid(cfg),
        "type": "file",
        "disableDeletion": False,
        "allowUiUpdates": False,  # the build is the source of truth; edits belong in infersight.yaml
        "updateIntervalSeconds": 30,
        "options": {"path": path, "foldersFromFilesStructure": False},
    }


def provider_file(cfg: Config, dashboards_path: str | None = None) -> dict[str, Any]:
    """The dashboards provider; ``dashboards_path`` (default ``deploy.grafana.dashboards_path``) is
    the folder of dashboard JSON as that Grafana sees it."""
    return {"apiVersion": 1, "providers": [provider(cfg, dashboards_path or cfg.deploy.grafana.dashboards_path)]}


def alertmanager_datasource_uid(cfg: Config) -> str:
    return f"{cfg.dashboards.uid_prefix}-alertmanager"


def datasource_file(
    cfg: Config, prometheus_url: str | None = None, alertmanager_url: str | None = None, traces_url: str | None = None
) -> dict[str, Any]:
    """The Prometheus datasource (``prometheus_url``, default ``deploy.prometheus_url``); when
    ``alertmanager_url`` is given, an Alertmanager datasource beside it; and the tracing datasource
    the trace links name (``traces_url``, default ``deploy.grafana.traces_url``; "" = none)."""
    sources: list[dict[str, Any]] = [
        {
            "name": "infersight Prometheus",
            "type": "prometheus",
            "uid": cfg.dashboards.datasource_uid,
            "access": "proxy",
            "url": prometheus_url or cfg.deploy.prometheus_url,
            "isDefault": False,
            "editable": False,
            "jsonData": {"timeInterval": str(cfg.scaled(cfg.intervals.scrape)), "httpMethod": "POST"},
        }
    ]
    if alertmanager_url:
        sources.append(
            {
                "name": "infersight Alertmanager",
                "type": "alertmanager",
                "uid": alertmanager_datasource_uid(cfg),
                "access": "proxy",
                "url": alertmanager_url,
                "isDefault": False,
                "editable": False,
                # Prometheus's own Alertmanager (not Mimir's or Cortex's); Grafana's alerts stay in Grafana.
                "jsonData": {"implementation": "prometheus", "handleGrafanaManagedAlerts": False},
            }
        )
    traces = cfg.dashboards.traces
    url = cfg.deploy.grafana.traces_url if traces_url is None else traces_url
    if traces.backend != "none" and url:
        sources.append(
            {
                "name": f"infersight traces ({traces.backend})",
                "type": traces.backend,
                "uid": traces.datasource_uid,
                "access": "proxy",
                "url": url,
                "isDefault": False,
                "editable": False,
            }
        )
    return {"apiVersion": 1, "datasources": sources}
