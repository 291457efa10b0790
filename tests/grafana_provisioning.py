"""The rules every Grafana provisioning infersight writes must follow, wherever it is written (the
bundle's deploy/grafana/provisioning/, the Grafana `infersight up` starts, the docker command's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.grafana_schema import schema_problems


def provisioning_problems(
    provider_file: Mapping[str, Any], datasource_file: Mapping[str, Any], dashboards: Mapping[str, dict[str, Any]]
) -> list[str]:
    """Both files are provisioning version 1; one file provider; a Prometheus datasource whose uid is
    the default of every dashboard's datasource variable; every dashboard valid against Grafana's
    schemas. ``dashboards``: file name -> model."""
    files = {"provider": provider_file, "datasource": datasource_file}
    problems = [f"{name} file: apiVersion is not 1" for name, f in files.items() if f.get("apiVersion") != 1]
    providers = provider_file.get("providers", [])
    if len(providers) != 1 or providers[0].get("type") != "file":
        problems.append(f"expected one provider of type file, got {providers}")
    prometheus = [s for s in datasource_file.get("datasources", []) if s.get("type") == "prometheus"]
    if len(prometheus) != 1:
        return [*problems, f"expected one Prometheus datasource, got {len(prometheus)}"]
    if not dashboards:
        problems.append("no dashboards")
    for name, board in dashboards.items():
        variable = next((v for v in board["templating"]["list"] if v["type"] == "datasource"), None)
        if variable is None or variable["current"]["value"] != prometheus[0]["uid"]:
            problems.append(f"{name}: its datasource variable does not default to {prometheus[0]['uid']!r}")
        problems += [f"{name}: {p}" for p in schema_problems(board)]
    return problems
