"""The Prometheus config that scrapes a fleet server: one job per source (named after the bundle's
``job="..."`` selectors), one static target per engine, node or MoE exporter, each with its own
``__metrics_path__`` and ``instance`` so a thousand targets on one port stay a thousand targets.
``honor_labels`` keeps the exporters' own ``pod``/``namespace`` labels, as dcgm-exporter needs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from infersight.config import Config
from infersight.fleet import templates, topology

_JOB = re.compile(r'^\s*job\s*=\s*"([^"]+)"\s*$')


def job_name(matchers: Sequence[str], default: str) -> str:
    """The job a selector asks for (its ``job="..."`` matcher), else ``default``."""
    for m in matchers:
        found = _JOB.match(m)
        if found:
            return found[1]
    return default


def _static(address: str, path: str, instance: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {"targets": [address], "labels": {"__metrics_path__": path, "instance": instance, **(extra or {})}}


def scrape_configs(fleet: topology.Fleet, address: str, cfg: Config) -> list[dict[str, Any]]:
    def pod(s: topology.Server) -> dict[str, str]:
        return {"namespace": s.namespace, "pod": s.pod}

    jobs = [
        (
            job_name(cfg.selectors.vllm, "vllm"),
            [_static(address, templates.engine_path(s.index), s.instance, pod(s)) for s in fleet.servers],
        ),
        (
            job_name(cfg.selectors.dcgm, "dcgm-exporter"),
            [_static(address, templates.node_path(n.index), n.instance) for n in fleet.nodes],
        ),
        (
            job_name(cfg.selectors.moe_exporter, "infersight-moe"),
            [_static(address, templates.moe_path(s.index), f"{s.ip}:9464", pod(s)) for s in fleet.moe_servers],
        ),
    ]
    return [{"job_name": name, "honor_labels": True, "static_configs": static} for name, static in jobs if static]


def prometheus_yaml(fleet: topology.Fleet, address: str, cfg: Config, rule_files: Sequence[Path]) -> str:
    config = {
        "global": {
            "scrape_interval": str(cfg.scaled(cfg.intervals.scrape)),
            "scrape_timeout": str(cfg.scaled(cfg.intervals.scrape)),
            "evaluation_interval": str(cfg.scaled(cfg.intervals.evaluation)),
        },
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": scrape_configs(fleet, address, cfg),
    }
    return yaml.safe_dump(config, sort_keys=False)
