"""Settings of the deploy stage (``deploy:``): where each source is scraped, the Kubernetes
manifests, Grafana provisioning, Alertmanager routing and the OpenTelemetry collector."""

# Pydantic copies mutable field defaults per instance; ruff cannot see across modules that
# these models' base (config.common.Strict) is a BaseModel.
# ruff: noqa: RUF012

from __future__ import annotations

import ipaddress
import re

from pydantic import Field, field_validator

from infersight.config.common import MODEL_LABEL_VALUE, Strict
from infersight.durations import Duration
from infersight.inputs import SecretValueError, brief

_K8S_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_K8S_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$")  # IANA_SVC_NAME: at most 15 characters
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_HTTP_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$")


def _http_url_or_empty(v: str) -> str:
    """An http(s) URL without credentials, or "": the bundle writes these into files that are not
    secret (world-readable, committed, put in ConfigMaps)."""
    authority = re.split(r"[/?#]", v.split("://", 1)[-1], maxsplit=1)[0]
    if "@" in authority:  # checked first: no other error may echo the password either
        raise SecretValueError(
            "must not hold credentials (user:password@): the bundle's files are not secret; give them to "
            "Prometheus, Grafana or Alertmanager through their own secret files"
        )
    if v and not _HTTP_URL.match(v):
        raise ValueError("must be an http(s) URL or empty")
    return v


def _host_ports_valid(v: list[str]) -> list[str]:
    for t in v:
        if not _HOST_PORT.match(t):
            raise ValueError(f"{brief(t)} is not host:port")
    return v


def _k8s_labels_valid(v: dict[str, str]) -> dict[str, str]:
    for key, value in v.items():
        if not _K8S_LABEL_KEY.match(key):
            raise ValueError(f"{brief(key)} is not a Kubernetes label key (e.g. app.kubernetes.io/name)")
        if not _K8S_LABEL_VALUE.match(value):
            raise ValueError(
                f"{brief(value)} (label {brief(key)}) is not a Kubernetes label value (63 of A-Za-z0-9-_.)"
            )
    return v


class DeployTarget(Strict):
    """Where one source's /metrics is scraped: prometheus.yml and otelcol use ``static_targets``,
    the PodMonitors select pods by ``pod_labels`` and scrape the named container ``ports``."""

    enabled: bool = True
    job: str = ""  # the job label to give the series; "" = the job="..." matcher of selectors.<source>
    static_targets: list[str] = Field(min_length=1)
    # PodMonitor selector as key=value labels (a list, so yours replaces the default). Never empty:
    # an empty selector would scrape every pod.
    pod_labels: list[str] = Field(min_length=1)
    namespaces: list[str] = []  # PodMonitor namespaceSelector; [] = every namespace
    ports: list[str] = Field(min_length=1)  # container port names, one podMetricsEndpoint each
    path: str = "/metrics"
    honor_labels: bool = False  # true for dcgm-exporter: its pod/namespace name the GPU's user, not itself

    _host_ports = field_validator("static_targets")(_host_ports_valid)

    @field_validator("pod_labels")
    @classmethod
    def _labels(cls, v: list[str]) -> list[str]:
        for item in v:
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"{brief(item)} is not key=value, e.g. app.kubernetes.io/name=vllm")
            _k8s_labels_valid({key: value})
        return v

    def match_labels(self) -> dict[str, str]:
        return dict(item.partition("=")[::2] for item in self.pod_labels)

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, v: list[str]) -> list[str]:
        for ns in v:
            if not _K8S_NAME.match(ns):
                raise ValueError(f"{brief(ns)} is not a Kubernetes namespace name")
        return v

    @field_validator("ports")
    @classmethod
    def _port_names(cls, v: list[str]) -> list[str]:
        for port in v:
            if not _PORT_NAME.match(port):
                raise ValueError(f"{brief(port)} is not a container port name (lowercase, digits, '-', 15 at most)")
        return v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not v.startswith("/") or any(c.isspace() for c in v):
            raise ValueError("must be an absolute URL path such as /metrics")
        return v

    @field_validator("job")
    @classmethod
    def _job(cls, v: str) -> str:
        if not MODEL_LABEL_VALUE.match(v) and v != "":
            raise ValueError("must be 1-200 printable characters, or empty to take it from the selector")
        return v


def _target(static: str, pod_label: str, ports: list[str], honor: bool = False) -> DeployTarget:
    return DeployTarget(static_targets=[static], pod_labels=[pod_label], ports=ports, honor_labels=honor)


class DeployTargets(Strict):
    """One entry per source of selectors: (same keys)."""

    vllm: DeployTarget = _target("127.0.0.1:8000", "app.kubernetes.io/name=vllm", ["http"])
    dcgm: DeployTarget = _target("127.0.0.1:9400", "app.kubernetes.io/name=dcgm-exporter", ["metrics"], honor=True)
    gpu_exporter: DeployTarget = _target(
        "127.0.0.1:9835", "app.kubernetes.io/name=infersight-gpu-exporter", ["metrics"]
    )
    moe_exporter: DeployTarget = _target("127.0.0.1:9836", "app.kubernetes.io/name=vllm", ["infersight-moe"])


class DeployKubernetes(Strict):
    namespace: str = "monitoring"  # of the PrometheusRule, PodMonitor and ConfigMap manifests
    labels: dict[str, str] = {}  # added to each; match your Prometheus's ruleSelector/podMonitorSelector
    # Of the dcgm-exporter counters ConfigMap: the exporter's namespace (the GPU Operator's, or
    # the dcgm-exporter chart's release).
    dcgm_namespace: str = "gpu-operator"

    @field_validator("namespace", "dcgm_namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        if not _K8S_NAME.match(v):
            raise ValueError("must be a Kubernetes namespace name")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return _k8s_labels_valid(v)


class DeployGrafana(Strict):
    folder: str = Field(default="infersight", min_length=1, max_length=100)  # Grafana folder of the dashboards
    dashboards_path: str = "/var/lib/grafana/dashboards/infersight"  # where the file provider reads them
    # The tracing datasource provisioned beside Prometheus (dashboards.traces names its kind and
    # uid); "" = none provisioned, the uid then names one the Grafana already has.
    traces_url: str = "http://tempo:3200"

    @field_validator("dashboards_path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("must be an absolute path inside the Grafana container or host")
        return v

    _traces_url = field_validator("traces_url")(_http_url_or_empty)


class DeployAlertmanager(Strict):
    targets: list[str] = ["127.0.0.1:9093"]  # where prometheus.yml sends alerts
    group_wait: Duration = Duration.parse("30s")
    group_interval: Duration = Duration.parse("5m")
    repeat_interval: Duration = Duration.parse("4h")
    # Webhook receivers by severity; "" keeps the receiver without an integration (alerts are
    # visible in Alertmanager but not sent) until you add yours.
    page_webhook_url: str = ""  # severity=critical
    ticket_webhook_url: str = ""  # severity=warning

    _host_ports = field_validator("targets")(_host_ports_valid)

    _url = field_validator("page_webhook_url", "ticket_webhook_url")(_http_url_or_empty)


class DeployOtelcol(Strict):
    # Where the collector's OTLP receivers and health check listen. The default accepts only
    # senders on the collector's own host; a collector pod that vLLM pods send traces to (and
    # that the kubelet probes) needs 0.0.0.0.
    listen_address: str = "127.0.0.1"
    # "" = listen_address with the OTLP port (4317 gRPC, 4318 HTTP); vLLM's
    # --otlp-traces-endpoint points at the gRPC one.
    otlp_grpc_endpoint: str = ""
    otlp_http_endpoint: str = ""
    traces_endpoint: str = "tempo:4317"  # OTLP/gRPC backend the collector forwards traces to
    traces_insecure: bool = True  # plaintext to the traces backend (in-cluster); false = TLS
    # Tail sampling of what goes to traces_endpoint (span metrics have seen every span before):
    # every error and every request slower than the TTFT SLO threshold is kept, and this share of
    # the rest. The collector holds up to trace_buffer traces for trace_decision_wait each; see
    # docs/traces.md for the memory this takes.
    trace_keep_percent: float = Field(default=10.0, ge=0, le=100)
    trace_decision_wait: Duration = Duration.parse("10s")
    trace_buffer: int = Field(default=100_000, ge=1000, le=100_000_000)  # num_traces; ~1 KiB and more each

    @field_validator("listen_address")
    @classmethod
    def _address(cls, v: str) -> str:
        try:
            ipaddress.ip_address(v)
        except ValueError:
            if not _HOST_NAME.match(v):
                raise ValueError("must be an IP address or host name without a port, e.g. 0.0.0.0") from None
        return v

    @field_validator("otlp_grpc_endpoint", "otlp_http_endpoint")
    @classmethod
    def _host_port_or_empty(cls, v: str) -> str:
        return _host_ports_valid([v])[0] if v else v

    @field_validator("traces_endpoint")
    @classmethod
    def _host_port(cls, v: str) -> str:
        return _host_ports_valid([v])[0]

    def listen(self, port: int) -> str:
        """host:port on listen_address (an IPv6 address in brackets)."""
        host = f"[{self.listen_address}]" if ":" in self.listen_address else self.listen_address
        return f"{host}:{port}"


class Deploy(Strict):
    """How the bundle's deploy/ files reach Prometheus, Alertmanager, Grafana and collectors."""

    targets: DeployTargets = DeployTargets()
    kubernetes: DeployKubernetes = DeployKubernetes()
    grafana: DeployGrafana = DeployGrafana()
    alertmanager: DeployAlertmanager = DeployAlertmanager()
    otelcol: DeployOtelcol = DeployOtelcol()
    # The Prometheus that Grafana's provisioned datasource queries (and otelcol writes to when
    # remote_write_url is empty; it then needs --web.enable-remote-write-receiver).
    prometheus_url: str = "http://127.0.0.1:9090"
    # Mimir, Thanos Receive or another Prometheus: "" keeps one Prometheus (no remote write).
    remote_write_url: str = ""

    _url = field_validator("prometheus_url", "remote_write_url")(_http_url_or_empty)
