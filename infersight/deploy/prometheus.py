"""``deploy/prometheus/prometheus.yml``: a single Prometheus that scrapes vLLM, dcgm-exporter and
the infersight exporters and loads the bundle's rule files (the embedded default; beyond one
machine, see the Helm overlay and remote write)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from infersight.bundle import Bundle
from infersight.deploy import targets

PATH = "deploy/prometheus/prometheus.yml"


def rule_file_refs(bundle: Bundle) -> list[str]:
    """The bundle's rule files, relative to prometheus.yml (Prometheus resolves them from its directory)."""
    depth = len(PurePosixPath(PATH).parent.parts)
    return ["../" * depth + f.path for f in bundle.rule_files]


def config(bundle: Bundle) -> dict[str, Any]:
    cfg = bundle.cfg
    data: dict[str, Any] = {"global": targets.global_scrape(cfg)}
    data["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(cfg.deploy.alertmanager.targets)}]}]}
    data["rule_files"] = rule_file_refs(bundle)
    data["scrape_configs"] = targets.scrape_configs(cfg)
    if cfg.deploy.remote_write_url:
        data["remote_write"] = [{"url": cfg.deploy.remote_write_url}]
    return data
