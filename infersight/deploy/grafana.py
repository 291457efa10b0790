"""``deploy/grafana/provisioning/``: a dashboards provider and a datasource (``apiVersion: 1``)
for a Grafana that reads files, and the provider/datasource pieces the Helm overlay reuses.

The dashboards' ``datasource`` variable defaults to ``dashboards.datasource_uid``; the
provisioned datasource carries exactly that uid, and ``timeInterval`` set to the scrape
interval so ``$__rate_interval`` always spans enough scrapes.
"""

from __future__ import annotations

from typing import Any

from infersight.config import Config

PROVIDER_PATH = "deploy/grafana/provisioning/dashboards/infersight.yaml"
DATASOURCE_PATH = "deploy/grafana/provisioning/datasources/infersight.yaml"


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


def provider_file(cfg: Config) -> dict[str, Any]:
    return {"apiVersion": 1, "providers": [provider(cfg, cfg.deploy.grafana.dashboards_path)]}


def datasource_file(cfg: Config) -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "infersight Prometheus",
                "type": "prometheus",
                "uid": cfg.dashboards.datasource_uid,
                "access": "proxy",
                "url": cfg.deploy.prometheus_url,
                "isDefault": False,
                "editable": False,
                "jsonData": {"timeInterval": str(cfg.scaled(cfg.intervals.scrape)), "httpMethod": "POST"},
            }
        ],
    }
