"""``deploy/otelcol/config.yaml`` for opentelemetry-collector-contrib: the same scrape configs as
prometheus.yml in a prometheus receiver, Kubernetes and host resource attributes, remote write
to Prometheus, Mimir or Thanos, and an OTLP path for vLLM's traces (``--otlp-traces-endpoint``).

The collector expands ``$VAR``/``${VAR}`` in its config, so every ``$`` of the embedded
Prometheus config is written ``$$`` (:func:`escape`); :func:`unescape` is the inverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infersight.config import Config
from infersight.deploy import targets

PATH = "deploy/otelcol/config.yaml"

# The collector's standard ports; deploy.otelcol.listen_address says on which address.
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318
HEALTH_CHECK_PORT = 13133

PROCESSORS = ["memory_limiter", "k8sattributes", "resourcedetection", "batch"]


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
        },
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
                "traces": {"receivers": ["otlp"], "processors": list(PROCESSORS), "exporters": ["otlp"]},
            },
        },
    }
