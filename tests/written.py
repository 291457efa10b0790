"""Read a rendered bundle back the way its consumers do: from the text of its files. Tests use
this to check what is written, not the typed bundle it was written from."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from infersight.packs import RULE_KINDS


def rule_files(files: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """{"alerts/serving.yaml": {"groups": [...]}, ...} in path order."""
    return {
        rel: yaml.safe_load(files[rel])
        for rel in sorted(files)
        if PurePosixPath(rel).parts[0] in RULE_KINDS and rel.endswith(".yaml") and rel.count("/") == 1
    }


def dashboards(files: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """{"vllm-overview.json": model, ...} in name order."""
    return {
        PurePosixPath(rel).name: json.loads(files[rel])
        for rel in sorted(files)
        if rel.startswith("dashboards/") and rel.endswith(".json")
    }


def alerts(files: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        r
        for rel, data in rule_files(files).items()
        if rel.startswith("alerts/")
        for g in data["groups"]
        for r in g["rules"]
    ]


def alert_names(files: Mapping[str, str]) -> frozenset[str]:
    return frozenset(r["alert"] for r in alerts(files))
