"""``deploy/otelcol/config.yaml`` for opentelemetry-collector-contrib: the same scrape configs as
prometheus.yml in a prometheus receiver, Kubernetes and host resource attributes, remote write
to Prometheus, Mimir or Thanos, and an OTLP path for vLLM's traces (``--otlp-traces-endpoint``).

Every request span first feeds two connectors: ``spanmetrics`` (the span's duration, which for
vLLM's ``llm_request`` is arrival to finish) and ``signaltometrics`` (one histogram per stage from
the span's own timings: queue, prefill, decode, first token; spanmetrics can only measure a span's
duration). Both use vLLM's TTFT bucket boundaries, so the SLO threshold is a boundary of each.
Only then does tail sampling choose what reaches the traces backend: every error, every request
slower than the TTFT SLO threshold, and ``trace_keep_percent`` of the rest.

The collector expands ``$VAR``/``${VAR}`` in its config, so every ``$`` of the embedded
Prometheus config is written ``$$`` (:func:`escape`); :func:`unescape` is the inverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infersight.config import Config
from infersight.deploy import targets
from infersight.traces.attributes import REQUEST_SPAN, STAGES, TTFT, stage_metric

PATH = "deploy/otelcol/config.yaml"

# The collector's standard ports; deploy.otelcol.listen_address says on which address.
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318
HEALTH_CHECK_PORT = 13133

PROCESSORS = ["memory_limiter", "k8sattributes", "resourcedetection", "batch"]
# Span-derived metrics keep only who sent the span: never a span attribute (a request ID would
# make a series per request).
SPAN_METRIC_RESOURCE_ATTRIBUTES = ["service.name", "service.instance.id", "k8s.namespace.name"]


def _map_strings(data: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(data, str):
        return fn(data)
    if isinstance(data, dict):
        return {k: _map_strings(v, fn) for k, v in data.items()}
    if isinstance(data, list):
        return [_map_strings(v, fn) for v in data]
    return data


def escape(data: Any) -> Any:
    """Every string of a structure with ``$`` doubled, as the collector's config expansion needs."""
    return _map_strings(data, lambda s: s.replace("$", "$$"))


def unescape(data: Any) -> Any:
    return _map_strings(data, lambda s: s.replace("$$", "$"))


def remote_write_endpoint(cfg: Config) -> str:
    """Mimir/Thanos/Prometheus when set; otherwise the local Prometheus's receiver."""
    return cfg.deploy.remote_write_url or cfg.deploy.prometheus_url.rstrip("/") + "/api/v1/write"


def slow_ttft_seconds(cfg: Config) -> float:
    """The smallest TTFT SLO threshold of any model: spans do not name their model, so a request is
    kept as slow when it is slow for the strictest one."""
    overrides = [o.ttft_threshold_seconds for o in cfg.slo.overrides.values() if o.ttft_threshold_seconds]
    return min([cfg.slo.ttft.threshold_seconds, *overrides])


def _connectors(cfg: Config) -> dict[str, Any]:
    buckets = list(cfg.buckets.ttft)
    stages = [
        {
            "name": stage_metric(stage),
            "description": f"vLLM request {stage.replace('_', ' ')} time, from its llm_request span ({attr})",
            "unit": "s",
            "include_resource_attributes": [{"key": k} for k in SPAN_METRIC_RESOURCE_ATTRIBUTES],
            "conditions": [f'name == "{REQUEST_SPAN}" and attributes["{attr}"] != nil'],
            "histogram": {"buckets": list(buckets), "value": f'Double(attributes["{attr}"])'},
        }
        for stage, attr in STAGES
    ]
    return {
        "spanmetrics": {
            "histogram": {"unit": "s", "explicit": {"buckets": [f"{b:g}s" for b in buckets]}},
            "dimensions": [],
            "metrics_flush_interval": "15s",
        },
        "signaltometrics": {"spans": stages},
        "forward": {},
    }


def _tail_sampling(cfg: Config) -> dict[str, Any]:
    o = cfg.deploy.otelcol
    slow = f'name == "{REQUEST_SPAN}" and attributes["{TTFT}"] > {slow_ttft_seconds(cfg):g}'
    return {
        "decision_wait": str(o.trace_decision_wait),
        "num_traces": o.trace_buffer,
        "policies": [
            {"name": "errors", "type": "status_code", "status_code": {"status_codes": ["ERROR"]}},
            {"name": "slow-first-token", "type": "ottl_condition",
             "ottl_condition": {"error_mode": "ignore", "span": [slow]}},
            {"name": "share-of-the-rest", "type": "probabilistic",
             "probabilistic": {"sampling_percentage": o.trace_keep_percent}},
        ],
    }  # fmt: skip


def config(cfg: Config) -> dict[str, Any]:
    o = cfg.deploy.otelcol
    scrape_global = targets.global_scrape(cfg)
    del scrape_global["evaluation_interval"]  # the receiver evaluates no rules
    scrape = {"global": scrape_global, "scrape_configs": targets.scrape_configs(cfg)}
    return {
        "receivers": {
            "prometheus": {"config": escape(scrape)},
            "otlp": {
                "protocols": {
                    "grpc": {"endpoint": o.otlp_grpc_endpoint or o.listen(OTLP_GRPC_PORT)},
                    "http": {"endpoint": o.otlp_http_endpoint or o.listen(OTLP_HTTP_PORT)},
                }
            },
        },
        "processors": {
            "memory_limiter": {"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20},
            "k8sattributes": {
                "auth_type": "serviceAccount",
                "passthrough": False,
                "extract": {
                    "metadata": [
                        "k8s.namespace.name",
                        "k8s.pod.name",
                        "k8s.pod.uid",
                        "k8s.deployment.name",
                        "k8s.node.name",
                    ]
                },
                # Traces: the sending pod's address. Scraped metrics: the target's address.
                "pod_association": [
                    {"sources": [{"from": "resource_attribute", "name": "k8s.pod.ip"}]},
                    {"sources": [{"from": "resource_attribute", "name": "server.address"}]},
                    {"sources": [{"from": "connection"}]},
                ],
            },
            # override false: the job/instance that the rules select (service.name,
            # service.instance.id from the scrape) must never be replaced by host attributes.
            "resourcedetection": {"detectors": ["env", "system"], "timeout": "2s", "override": False},
            "batch": {},
            # signaltometrics emits each batch's histograms as deltas; remote write takes cumulative ones.
            "deltatocumulative": {},
            "tail_sampling": _tail_sampling(cfg),
        },
        "connectors": _connectors(cfg),
        "exporters": {
            # Resource attributes stay in target_info instead of becoming labels on every
            # series: the rules aggregate by job/instance/model_name and need no more cardinality.
            "prometheusremotewrite": {
                "endpoint": remote_write_endpoint(cfg),
                "resource_to_telemetry_conversion": {"enabled": False},
            },
            "otlp": {"endpoint": o.traces_endpoint, "tls": {"insecure": o.traces_insecure}},
        },
        "extensions": {"health_check": {"endpoint": o.listen(HEALTH_CHECK_PORT)}},
        "service": {
            "extensions": ["health_check"],
            "pipelines": {
                "metrics": {
                    "receivers": ["prometheus"],
                    "processors": list(PROCESSORS),
                    "exporters": ["prometheusremotewrite"],
                },
                "traces": {
                    "receivers": ["otlp"],
                    "processors": list(PROCESSORS),
                    "exporters": ["spanmetrics", "signaltometrics", "forward"],
                },
                "traces/sampled": {"receivers": ["forward"], "processors": ["tail_sampling"], "exporters": ["otlp"]},
                "metrics/spans": {
                    "receivers": ["spanmetrics", "signaltometrics"],
                    "processors": ["deltatocumulative", "batch"],
                    "exporters": ["prometheusremotewrite"],
                },
            },
        },
    }
