"""Data links from latency panels to a trace search in Grafana's Explore: the clicked series' (or
table row's) model and instance, over the dashboard's time range, on the Tempo or Jaeger
datasource of ``dashboards.traces``. Built from Grafana's own variables, so no exemplar is needed.

The search finds vLLM's ``llm_request`` spans by their resource: ``service.name`` is the model and
``service.instance.id`` the Prometheus instance (how vLLM is to be started: docs/traces.md).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from typing import Any, Literal

from grafana_foundation_sdk.builders import dashboard as dashboard_builders

from infersight.config import Config
from infersight.traces.attributes import REQUEST_SPAN

# The span resource attribute that carries each label the links can pass on.
RESOURCE_ATTRIBUTES = {"model_name": "service.name", "instance": "service.instance.id"}
# The link's title names what it searches by.
TITLES = {("model_name",): "Traces of this model", ("model_name", "instance"): "Traces of this model and instance"}
Source = Literal["series", "row"]  # a timeseries' clicked series, or a table's clicked row


def grafana_variable(label: str, source: Source) -> str:
    """Grafana interpolates this in the link, percent-encoded, from the clicked series or row."""
    scope = "__field.labels" if source == "series" else "__data.fields"
    return f"${{{scope}.{label}:percentencode}}"


def _token(label: str) -> str:
    """A placeholder that percent-encoding leaves alone, swapped for the Grafana variable after."""
    return f"INFERSIGHTVAR{label.replace('_', '')}"


def _query(cfg: Config, values: dict[str, str]) -> dict[str, Any]:
    t = cfg.dashboards.traces
    datasource = {"type": t.backend, "uid": t.datasource_uid}
    if t.backend == "tempo":
        clauses = [f'name = "{REQUEST_SPAN}"']
        clauses += [f'resource.{RESOURCE_ATTRIBUTES[k]} = "{v}"' for k, v in values.items()]
        return {
            "refId": "A",
            "datasource": datasource,
            "queryType": "traceql",
            "query": "{ " + " && ".join(clauses) + " }",
        }
    tags = " ".join(f"{RESOURCE_ATTRIBUTES[k]}={v}" for k, v in values.items() if k != "model_name")
    query = {"refId": "A", "datasource": datasource, "queryType": "search", "operation": REQUEST_SPAN}
    return query | {"service": values.get("model_name", ""), "tags": tags}


def explore_url(cfg: Config, values: dict[str, str], time_from: str, time_to: str) -> str:
    """The Explore URL for these values (literal, or Grafana variables once swapped in)."""
    pane = {
        "datasource": cfg.dashboards.traces.datasource_uid,
        "queries": [_query(cfg, values)],
        "range": {"from": time_from, "to": time_to},
    }
    panes = json.dumps({"traces": pane}, separators=(",", ":"))
    return "/explore?schemaVersion=1&orgId=1&panes=" + urllib.parse.quote(panes, safe="")


def hint(cfg: Config) -> str:
    """The sentence a panel with a trace link adds to its description (none without links)."""
    if cfg.dashboards.traces.backend == "none":
        return ""
    return f" Click a series or row for its requests' traces ({cfg.dashboards.traces.backend})."


def links(cfg: Config, labels: Sequence[str], source: Source) -> list[dashboard_builders.DashboardLink]:
    """The data link for panels whose series (or rows) carry ``labels``; none when backend is none."""
    if cfg.dashboards.traces.backend == "none":
        return []
    url = explore_url(cfg, {k: _token(k) for k in labels}, "INFERSIGHTFROM", "INFERSIGHTTO")
    for k in labels:
        url = url.replace(_token(k), grafana_variable(k, source))
    url = url.replace("INFERSIGHTFROM", "${__from}").replace("INFERSIGHTTO", "${__to}")
    return [dashboard_builders.DashboardLink(TITLES[tuple(labels)]).url(url).target_blank(True)]
