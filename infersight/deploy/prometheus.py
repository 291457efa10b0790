"""``deploy/prometheus/prometheus.yml``: a single Prometheus that scrapes vLLM, dcgm-exporter and
the infersight exporters and loads the bundle's rule files (the embedded default; beyond one
machine, see the Helm overlay and remote write)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from infersight.config import Config
from infersight.deploy import targets
from infersight.deploy.view import BundleView

PATH = "deploy/prometheus/prometheus.yml"


def rule_file_refs(view: BundleView) -> list[str]:
    """The bundle's rule files, relative to prometheus.yml (Prometheus resolves them from its directory)."""
    depth = len(PurePosixPath(PATH).parent.parts)
    return ["../" * depth + rel for rel in view.rule_files]


def config(cfg: Config, view: BundleView) -> dict[str, Any]:
    data: dict[str, Any] = {"global": targets.global_scrape(cfg)}
    data["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(cfg.deploy.alertmanager.targets)}]}]}
    data["rule_files"] = rule_file_refs(view)
    data["scrape_configs"] = targets.scrape_configs(cfg)
    if cfg.deploy.remote_write_url:
        data["remote_write"] = [{"url": cfg.deploy.remote_write_url}]
    return data
