"""The latency panels' data links to a trace search, checked on the built dashboard JSON: with
Grafana's variables filled in as Grafana does (percent-encoded), each link opens Explore on the
configured Tempo or Jaeger datasource, searching vLLM's request spans of the clicked model and
instance over the dashboard's time range. No Grafana runs here; the URL format is Explore's
``panes`` JSON of Grafana 10 and later."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest

from infersight import bundle, bundle_files
from infersight.config import Config, parse_config
from infersight.dashboards.trace_links import grafana_variable
from infersight.deploy import grafana

MODEL = "meta-llama/Llama-3.1-8B-Instruct"  # a slash, as real model names have
INSTANCE = "10.0.0.1:8000"
FROM, TO = 1_700_000_000_000, 1_700_003_600_000
LINKED = {
    "TTFT latency",
    "ITL latency",
    "E2E latency",
    "TTFT p99 by instance",
    "Instances",
    "E2E latency p95 by instance",
    "ITL p95 by instance",
    "Mean queue time by instance",
    "Queue time latency",
    "Prefill time latency",
    "Decode time latency",
}


def boards(cfg: Config) -> dict[str, dict[str, Any]]:
    files = bundle_files.render(bundle.build(cfg), with_deploy=False)
    return {path: json.loads(text) for path, text in files.items() if path.endswith(".json")}


def linked_panels(cfg: Config) -> dict[str, dict[str, Any]]:
    return {
        p["title"]: p
        for board in boards(cfg).values()
        for p in board["panels"]
        if p.get("fieldConfig", {}).get("defaults", {}).get("links")
    }


def follow(panel: dict[str, Any]) -> dict[str, Any]:
    """Fill the link's variables as Grafana would for a click on MODEL @ INSTANCE; Explore's pane."""
    (link,) = panel["fieldConfig"]["defaults"]["links"]
    source = "row" if panel["type"] == "table" else "series"
    url = link["url"]
    for label, value in (("model_name", MODEL), ("instance", INSTANCE)):
        url = url.replace(grafana_variable(label, source), urllib.parse.quote(value, safe=""))
    url = url.replace("${__from}", str(FROM)).replace("${__to}", str(TO))
    assert "${" not in url, url  # every variable the link uses is one Grafana fills from the click
    parts = urllib.parse.urlsplit(url)
    assert parts.path == "/explore" and link["targetBlank"] is True
    (panes,) = urllib.parse.parse_qs(parts.query)["panes"]
    (pane,) = json.loads(panes).values()
    assert pane["range"] == {"from": str(FROM), "to": str(TO)}
    return pane  # type: ignore[no-any-return]


def test_latency_panels_and_the_instances_table_link_to_tempo_for_the_clicked_model_and_instance() -> None:
    panels = linked_panels(Config())
    assert set(panels) == LINKED
    for title, panel in panels.items():
        pane = follow(panel)
        (query,) = pane["queries"]
        assert pane["datasource"] == "tempo" and query["datasource"] == {"type": "tempo", "uid": "tempo"}
        expected = f'{{ name = "llm_request" && resource.service.name = "{MODEL}"'
        # A series per model has no instance to pass on; one per instance (and a table row) has.
        per_instance = any("{{instance}}" in t.get("legendFormat", "") for t in panel["targets"])
        if per_instance or panel["type"] == "table":
            expected += f' && resource.service.instance.id = "{INSTANCE}"'
        assert query["queryType"] == "traceql" and query["query"] == expected + " }", title
        (link,) = panel["fieldConfig"]["defaults"]["links"]
        assert link["title"] == "Traces of this model" + (" and instance" if expected.count("&&") == 2 else "")
        assert "traces" in panel["description"]


def test_jaeger_links_search_by_service_operation_and_instance_tag() -> None:
    cfg = parse_config({"dashboards": {"traces": {"backend": "jaeger", "datasource_uid": "jaeger-prod"}}})
    pane = follow(linked_panels(cfg)["TTFT p99 by instance"])
    (query,) = pane["queries"]
    assert pane["datasource"] == "jaeger-prod" and query["datasource"] == {"type": "jaeger", "uid": "jaeger-prod"}
    assert (query["queryType"], query["service"], query["operation"]) == ("search", MODEL, "llm_request")
    assert query["tags"] == f"service.instance.id={INSTANCE}"


def test_no_backend_no_links_and_no_tracing_datasource() -> None:
    cfg = parse_config({"dashboards": {"traces": {"backend": "none"}}})
    assert linked_panels(cfg) == {}
    assert not [p for b in boards(cfg).values() for p in b["panels"] if "traces" in p.get("description", "")]
    assert [d["type"] for d in grafana.datasource_file(cfg)["datasources"]] == ["prometheus"]


@pytest.mark.parametrize(("backend", "url"), [("tempo", "http://tempo:3200"), ("jaeger", "http://jaeger:16686")])
def test_the_tracing_datasource_is_provisioned_with_the_uid_the_links_name(backend: str, url: str) -> None:
    cfg = parse_config(
        {
            "dashboards": {"traces": {"backend": backend, "datasource_uid": "traces"}},
            "deploy": {"grafana": {"traces_url": url}},
        }
    )
    (tracing,) = [d for d in grafana.datasource_file(cfg)["datasources"] if d["type"] == backend]
    assert (tracing["uid"], tracing["url"]) == ("traces", url)
    assert follow(linked_panels(cfg)["Instances"])["datasource"] == tracing["uid"]
    unprovisioned = parse_config({"deploy": {"grafana": {"traces_url": ""}}})
    assert [d["type"] for d in grafana.datasource_file(unprovisioned)["datasources"]] == ["prometheus"]
