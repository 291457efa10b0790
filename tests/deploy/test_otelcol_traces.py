"""The collector's trace path, checked on its structure (no otelcol-contrib runs here): spans feed
span metrics and per-stage histograms before tail sampling, the histograms' boundaries are vLLM's
TTFT buckets (so the SLO threshold is one of them), and sampling keeps what the SLO calls slow."""

from __future__ import annotations

from typing import Any

import pytest

from infersight import bundle, catalog
from infersight.config import Config, ConfigError, parse_config
from infersight.deploy import otelcol
from infersight.lint import dashboard_queries
from infersight.traces.attributes import STAGES, TTFT


def pipelines(config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    return config["service"]["pipelines"]


def test_every_connector_joins_two_pipelines_and_sampling_comes_after_the_span_metrics() -> None:
    config = otelcol.config(Config())
    for name in config["connectors"]:
        assert [p for p, v in pipelines(config).items() if name in v["exporters"]], f"{name} receives nothing"
        assert [p for p, v in pipelines(config).items() if name in v["receivers"]], f"{name} feeds nothing"
    traces, sampled, spans = (pipelines(config)[p] for p in ("traces", "traces/sampled", "metrics/spans"))
    assert traces["exporters"] == ["spanmetrics", "signaltometrics", "forward"]  # every span, unsampled
    assert "tail_sampling" not in traces["processors"] and sampled["processors"] == ["tail_sampling"]
    assert (sampled["receivers"], sampled["exporters"]) == (["forward"], ["otlp"])
    assert spans["exporters"] == ["prometheusremotewrite"] and "deltatocumulative" in spans["processors"]


@pytest.mark.parametrize("threshold", [2.5, 0.5])
def test_histogram_boundaries_are_the_ttft_buckets_with_the_slo_threshold_among_them(threshold: float) -> None:
    cfg = parse_config({"slo": {"ttft": {"threshold_seconds": threshold}}})
    connectors = otelcol.config(cfg)["connectors"]
    span_buckets = [float(b.removesuffix("s")) for b in connectors["spanmetrics"]["histogram"]["explicit"]["buckets"]]
    assert span_buckets == list(cfg.buckets.ttft) and threshold in span_buckets
    stages = connectors["signaltometrics"]["spans"]
    assert [s["histogram"]["value"] for s in stages] == [f'Double(attributes["{attr}"])' for _, attr in STAGES]
    assert all(s["histogram"]["buckets"] == list(cfg.buckets.ttft) for s in stages)


def test_span_metrics_have_no_per_request_dimension() -> None:
    connectors = otelcol.config(Config())["connectors"]
    assert connectors["spanmetrics"]["dimensions"] == []
    for stage in connectors["signaltometrics"]["spans"]:
        assert "attributes" not in stage  # no span attribute becomes a label
        assert [a["key"] for a in stage["include_resource_attributes"]] == otelcol.SPAN_METRIC_RESOURCE_ATTRIBUTES


def test_tail_sampling_keeps_errors_requests_slow_for_the_strictest_slo_and_a_share_of_the_rest() -> None:
    cfg = parse_config(
        {
            "slo": {"overrides": {"fast-model": {"ttft_threshold_seconds": 1.0}}},
            "deploy": {"otelcol": {"trace_keep_percent": 2.5, "trace_decision_wait": "30s", "trace_buffer": 50000}},
        }
    )
    sampling = otelcol.config(cfg)["processors"]["tail_sampling"]
    policies = {p["name"]: p for p in sampling["policies"]}
    assert policies["errors"]["status_code"]["status_codes"] == ["ERROR"]
    assert policies["slow-first-token"]["ottl_condition"]["span"] == [
        f'name == "llm_request" and attributes["{TTFT}"] > 1'  # the override's 1 s, not the default 2.5 s
    ]
    assert policies["share-of-the-rest"]["probabilistic"]["sampling_percentage"] == 2.5
    assert (sampling["decision_wait"], sampling["num_traces"]) == ("30s", 50000)
    default = otelcol.config(Config())["processors"]["tail_sampling"]["policies"][1]["ottl_condition"]["span"][0]
    assert default.endswith("> 2.5")


@pytest.mark.parametrize(
    ("field", "value"), [("trace_keep_percent", 101), ("trace_keep_percent", -1), ("trace_buffer", 10)]
)
def test_bad_sampling_settings_are_named(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=rf"deploy\.otelcol\.{field}"):
        parse_config({"deploy": {"otelcol": {field: value}}})


def test_the_requests_dashboard_reads_every_stage_histogram_by_its_prometheus_name() -> None:
    """Each signaltometrics histogram, renamed as OpenTelemetry's Prometheus naming does ('.' to '_',
    unit s to the suffix _seconds), is a catalogued histogram with the collector's boundaries, and
    the requests dashboard reads its buckets (checked as PromQL only: no collector runs here)."""
    stages = otelcol.config(Config())["connectors"]["signaltometrics"]["spans"]
    board = bundle.build(Config()).dashboard("vllm-requests.json")
    exprs = "\n".join(expr for _, expr in dashboard_queries(board))
    assert len(stages) == len(STAGES)
    for stage in stages:
        assert stage["unit"] == "s"
        name = stage["name"].replace(".", "_") + "_seconds"
        entry = catalog.get(name)
        assert (entry.type, entry.source) == (catalog.MetricType.HISTOGRAM, catalog.Source.OTELCOL_SPANS)
        assert list(entry.buckets) == stage["histogram"]["buckets"]
        assert f"{name}_bucket{{" in exprs, f"no panel reads {name}"
