"""Validate dashboards against Grafana's JSON Schemas (tests/data/reference/grafana-schema):
the whole dashboard, then each panel's options and custom field config against its
panel type's schema."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

# A copy of shared/reference (measured vLLM output, Grafana's schemas), so a clean clone tests alone.
REFERENCE_DIR = Path(__file__).parent / "data" / "reference"
SCHEMA_DIR = REFERENCE_DIR / "grafana-schema"


def schema_dir() -> Path:
    return SCHEMA_DIR


# Grafana declares a field matcher's options and an override property's value as any value (the
# SDK types them ``object`` and its own override_by_name writes a string, as Grafana does); the
# exported JSON Schema narrows both to JSON objects, which every by-name override would fail.
_ANY_VALUE = {"dashboard": (("MatcherConfig", "options"), ("DynamicConfigValue", "value"))}


@cache
def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((schema_dir() / f"{name}.jsonschema.json").read_text())
    for definition, field in _ANY_VALUE.get(name, ()):
        data["definitions"][definition]["properties"][field] = {}
    return data


def _errors(doc: Any, file: str, definition: str) -> list[str]:
    schema = {**_schema(file), "$ref": f"#/definitions/{definition}"}
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(doc)]


def schema_problems(board: dict[str, Any]) -> list[str]:
    problems = [f"dashboard: {e}" for e in _errors(board, "dashboard", "Dashboard")]
    for panel in board.get("panels", []):
        kind = panel.get("type")
        if kind == "row":
            continue
        if not (schema_dir() / f"{kind}.jsonschema.json").is_file():
            problems.append(f"panel {panel.get('title')!r}: no schema for panel type {kind!r}")
            continue
        where = f"panel {panel.get('title')!r} ({kind})"
        problems += [f"{where} options: {e}" for e in _errors(panel.get("options", {}), kind, "Options")]
        custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom")
        if custom is not None and "FieldConfig" in _schema(kind).get("definitions", {}):
            problems += [f"{where} custom: {e}" for e in _errors(custom, kind, "FieldConfig")]
    return problems
