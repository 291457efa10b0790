"""A real Prometheus (Debian's package) on loopback, with a small HTTP API client."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess, ServiceError, wait_until
from infersight.stack.service import ConfiguredService


def binary(name: str, *alternatives: str) -> str:
    for candidate in (name, *alternatives):
        path = shutil.which(candidate)
        if path:
            return path
    raise ServiceError(f"{name} is not installed; run ./scripts/setup (Debian package {name})")


@dataclass(frozen=True)
class ScrapeJob:
    job_name: str
    targets: Sequence[str]
    metrics_path: str = "/metrics"
    labels: dict[str, str] = field(default_factory=dict)
    scrape_interval: str | None = None

    def to_dict(self) -> dict[str, Any]:
        static: dict[str, Any] = {"targets": list(self.targets)}
        if self.labels:
            static["labels"] = dict(self.labels)
        out: dict[str, Any] = {"job_name": self.job_name, "metrics_path": self.metrics_path, "static_configs": [static]}
        if self.scrape_interval:
            out["scrape_interval"] = self.scrape_interval
        return out


class Prometheus(ConfiguredService):
    """Prometheus with the given scrape jobs and rule files, or a complete config text."""

    identity_path = "/api/v1/status/buildinfo"

    def __init__(
        self,
        workdir: Path,
        jobs: Sequence[ScrapeJob] = (),
        rule_files: Sequence[Path] = (),
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        alertmanager_url: str | None = None,
        config_yaml: str | None = None,
        port: int | None = None,
    ):
        self.workdir = workdir
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.config_path = workdir / "prometheus.yml"
        if config_yaml is None:
            config: dict[str, Any] = {
                "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
                "rule_files": [str(p) for p in rule_files],
                "scrape_configs": [j.to_dict() for j in jobs],
            }
            if alertmanager_url:
                target = urllib.parse.urlparse(alertmanager_url).netloc
                config["alerting"] = {
                    "alertmanagers": [{"api_version": "v2", "static_configs": [{"targets": [target]}]}]
                }
            config_yaml = yaml.safe_dump(config, sort_keys=False)
        self.config_yaml = config_yaml
        self.process = ManagedProcess(
            "prometheus",
            [
                binary("prometheus"),
                f"--config.file={self.config_path}",
                f"--storage.tsdb.path={workdir / 'prometheus-data'}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                "--web.enable-lifecycle",
                "--storage.tsdb.retention.time=1d",
            ],
            workdir / "prometheus.log",
        )

    # --- API ---------------------------------------------------------------------------------
    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the result vector (raises ServiceError on a query error)."""
        answer = self._get("/api/v1/query", {"query": expr})
        if answer.get("status") != "success":
            raise ServiceError(f"query failed: {answer.get('error')}: {expr}")
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        params = {"query": expr, "start": str(start), "end": str(end), "step": str(step)}
        answer = self._get("/api/v1/query_range", params)
        if answer.get("status") != "success":
            raise ServiceError(f"query_range failed: {answer.get('error')}: {expr}")
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts as Prometheus sees them."""
        alerts: list[dict[str, Any]] = self._get("/api/v1/alerts")["data"]["alerts"]
        return alerts

    def rules(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self._get("/api/v1/rules")["data"]["groups"]
        return groups

    def targets(self) -> list[dict[str, Any]]:
        active: list[dict[str, Any]] = self._get("/api/v1/targets")["data"]["activeTargets"]
        return active

    def reload(self) -> None:
        self._post("/-/reload")

    def wait_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        wait_until(check, timeout, what, interval=0.5)

    def wait_for_targets_up(self, timeout: float = 60) -> None:
        self.wait_until(
            lambda: bool(self.targets()) and all(t.get("health") == "up" for t in self.targets()),
            timeout,
            "every scrape target to be up",
        )
