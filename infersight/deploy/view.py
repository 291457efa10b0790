"""The bundle as the deploy writers see it: the rule files and dashboards the build just made,
parsed back. Writers iterate over whatever the build produced (every concern's rule files and
dashboards), never over a fixed list, so a new pack reaches every consumer untouched."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

RULE_KINDS = ("recording_rules", "alerts")


@dataclass(frozen=True)
class BundleView:
    rule_files: dict[str, dict[str, Any]]  # "alerts/serving.yaml" -> {"groups": [...]}, in path order
    dashboards: dict[str, dict[str, Any]]  # "vllm-overview.json" -> dashboard model, in name order

    @classmethod
    def of(cls, files: Mapping[str, str]) -> BundleView:
        rule_files: dict[str, dict[str, Any]] = {}
        dashboards: dict[str, dict[str, Any]] = {}
        for rel in sorted(files):
            path = PurePosixPath(rel)
            if len(path.parts) != 2:
                continue
            if path.parts[0] in RULE_KINDS and path.suffix == ".yaml":
                rule_files[rel] = yaml.safe_load(files[rel])
            elif path.parts[0] == "dashboards" and path.suffix == ".json":
                dashboards[path.name] = json.loads(files[rel])
        return cls(rule_files, dashboards)

    def files_of(self, kind: str) -> dict[str, dict[str, Any]]:
        return {rel: data for rel, data in self.rule_files.items() if rel.startswith(kind + "/")}

    def groups(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            g
            for rel, data in self.rule_files.items()
            if kind is None or rel.startswith(kind + "/")
            for g in data["groups"]
        ]

    def alerts(self) -> list[dict[str, Any]]:
        return [r for g in self.groups("alerts") for r in g["rules"] if "alert" in r]

    def alert_names(self) -> frozenset[str]:
        return frozenset(r["alert"] for r in self.alerts())


def resource_name(rel: str) -> str:
    """A Kubernetes-safe name for a bundle file: alerts/kv_cache.yaml -> infersight-alerts-kv-cache."""
    path = PurePosixPath(rel)
    return "infersight-" + "-".join([*path.parts[:-1], path.stem]).replace("_", "-").lower()
