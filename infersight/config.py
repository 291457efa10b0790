"""The model of ``infersight.yaml``: one object that drives every selector, threshold,
window, SLO objective and dashboard UID in the bundle.

Every field has a default, so an empty file (or no file) is a complete config. Loading
fails with :class:`ConfigError`, which names each bad field's path, its value and what is
allowed; nothing else escapes :func:`load_config`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from infersight import catalog
from infersight.durations import Duration
from infersight.inputs import InputError, read_yaml, validate

Severity = Literal["critical", "warning", "info"]

_MATCHER = re.compile(r'^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*$')
_UID = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
_MODEL_LABEL_VALUE = re.compile(r"^[^\n\r]{1,200}$")


class ConfigError(InputError):
    """The config is invalid. ``problems`` lists (path, message) pairs."""

    what = "config"


class _Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _matchers_valid(v: list[str]) -> list[str]:
    for m in v:
        if not _MATCHER.match(m):
            raise ValueError(f'{m!r} is not a PromQL label matcher; write e.g. job="vllm" or namespace=~"llm-.*"')
    return v


Matchers = Annotated[list[str], Field(min_length=1)]


class Selectors(_Strict):
    """PromQL label matchers that pick each source's series."""

    vllm: Matchers = ['job="vllm"']
    dcgm: Matchers = ['job="dcgm-exporter"']
    gpu_exporter: Matchers = ['job="infersight-gpu"']
    moe_exporter: Matchers = ['job="infersight-moe"']

    _check = field_validator("vllm", "dcgm", "gpu_exporter", "moe_exporter")(_matchers_valid)


class Intervals(_Strict):
    scrape: Duration = Duration.parse("15s")
    evaluation: Duration = Duration.parse("30s")
    rate: Duration = Duration.parse("5m")  # window of the golden-signal recording rules

    @model_validator(mode="after")
    def _windows_hold_enough_scrapes(self) -> Intervals:
        if self.rate < self.scrape * 4:
            raise ValueError(f"rate: window {self.rate} must cover at least 4 scrapes ({self.scrape} each)")
        if self.scrape.ms == 0 or self.evaluation.ms == 0:
            raise ValueError("scrape and evaluation intervals must be positive")
        return self


class BurnWindow(_Strict):
    """One row of the multi-window multi-burn-rate policy (Google SRE workbook)."""

    severity: Severity
    long: Duration
    short: Duration
    factor: float = Field(gt=0)

    @model_validator(mode="after")
    def _short_inside_long(self) -> BurnWindow:
        if not self.short < self.long:
            raise ValueError(f"short: {self.short} must be shorter than the long window {self.long}")
        return self


def _default_burn_windows() -> list[BurnWindow]:
    rows = [
        ("critical", "1h", "5m", 14.4),
        ("critical", "6h", "30m", 6.0),
        ("warning", "1d", "2h", 3.0),
        ("warning", "3d", "6h", 1.0),
    ]
    return [
        BurnWindow(severity=s, long=Duration.parse(lg), short=Duration.parse(sh), factor=f) for s, lg, sh, f in rows
    ]


Objective = Annotated[float, Field(gt=0, lt=1, description="target fraction of good events, e.g. 0.99")]


class AvailabilitySLO(_Strict):
    enabled: bool = True
    objective: Objective = 0.99
    # finished_reason values counted as bad; "abort" covers client disconnects caused by slowness.
    bad_finished_reasons: list[Literal["stop", "length", "abort", "error", "repetition"]] = ["error", "abort"]


class LatencySLO(_Strict):
    enabled: bool = True
    objective: Objective = 0.95
    threshold_seconds: float = Field(default=1.0, gt=0)  # sections override it, see SLOs


class SLOOverride(_Strict):
    """Per-model objectives and thresholds; unset fields inherit the default."""

    availability_objective: Objective | None = None
    ttft_objective: Objective | None = None
    ttft_threshold_seconds: float | None = Field(default=None, gt=0)
    itl_objective: Objective | None = None
    itl_threshold_seconds: float | None = Field(default=None, gt=0)


class SLOs(_Strict):
    period: Duration = Duration.parse("30d")
    burn_windows: list[BurnWindow] = Field(default_factory=_default_burn_windows, min_length=1)
    availability: AvailabilitySLO = AvailabilitySLO()
    ttft: LatencySLO = LatencySLO(threshold_seconds=2.5)
    itl: LatencySLO = LatencySLO(threshold_seconds=0.1)
    overrides: dict[str, SLOOverride] = {}

    @field_validator("overrides")
    @classmethod
    def _model_names_sane(cls, v: dict[str, SLOOverride]) -> dict[str, SLOOverride]:
        for name in v:
            if not _MODEL_LABEL_VALUE.match(name):
                raise ValueError(f"override key {name!r} must be a model_name of 1-200 printable characters")
        return v


class Buckets(_Strict):
    """Histogram boundaries of the vLLM in use. Change them only if you start vLLM with
    --custom-histogram-buckets; latency thresholds must be one of these."""

    ttft: list[float] = list(catalog.TTFT_BUCKETS)
    itl: list[float] = list(catalog.ITL_BUCKETS)

    @field_validator("ttft", "itl")
    @classmethod
    def _ascending(cls, v: list[float]) -> list[float]:
        if not v or any(not math.isfinite(b) or b <= 0 for b in v) or sorted(set(v)) != v:
            raise ValueError("must be a non-empty, strictly ascending list of positive finite numbers")
        return v


class AlertRule(_Strict):
    """A plain (non-SLO) alert's tunables."""

    enabled: bool = True
    for_: Duration = Field(default=Duration.parse("5m"), alias="for")
    severity: Severity = "warning"

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ServingAlerts(_Strict):
    target_down: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="critical")
    metrics_absent: AlertRule = AlertRule(for_=Duration.parse("10m"), severity="warning")


class Alerts(_Strict):
    serving: ServingAlerts = ServingAlerts()
    runbook_base_url: str = "https://github.com/infersight/infersight/blob/main/docs/runbook.md"


class Dashboards(_Strict):
    uid_prefix: str = "infersight"
    datasource_uid: str = "prometheus"  # default value of the datasource variable
    refresh: str = "30s"
    time_from: str = "now-3h"
    tags: list[str] = ["infersight", "vllm"]

    @field_validator("uid_prefix")
    @classmethod
    def _uid_ok(cls, v: str) -> str:
        if not re.match(r"^[a-zA-Z0-9_-]{1,20}$", v):
            raise ValueError("must be 1-20 characters of letters, digits, '-' or '_' (Grafana UIDs are short)")
        return v

    def uid(self, name: str) -> str:
        uid = f"{self.uid_prefix}-{name}"
        if not _UID.match(uid):
            raise ValueError(f"dashboard uid {uid!r} exceeds Grafana's 40-character limit")
        return uid


Fraction = Annotated[float, Field(gt=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]


class KVSaturationAlert(AlertRule):
    usage_threshold: Fraction = 0.9  # average KV usage over intervals.rate, per engine
    preemptions_per_second: NonNegative = 0.0  # either more preemptions than this ...
    queue_growth_per_second: NonNegative = 0.0  # ... or a waiting queue growing faster than this


class KVPreemptionAlert(AlertRule):
    per_second: NonNegative = 0.1


class QueueBuildUpAlert(AlertRule):
    p95_seconds: float = Field(default=5.0, gt=0)  # queue-time p95 over intervals.rate


class PrefixCollapseAlert(AlertRule):
    drop_fraction: float = Field(default=0.5, gt=0, lt=1)  # fires below (1 - drop) x baseline
    baseline_window: Duration = Duration.parse("1h")
    baseline_offset: Duration = Duration.parse("1h")  # the baseline ends this long ago
    min_baseline_ratio: Fraction = 0.1  # a baseline this low has nothing left to collapse
    min_queries_per_second: NonNegative = 1.0  # prefix-cache lookups (tokens/s) needed to judge


class KVThrashAlert(AlertRule):
    window: Duration = Duration.parse("10m")
    usage_stddev: Fraction = 0.1  # stddev_over_time of KV usage
    preemptions_per_second: NonNegative = 0.0


class KVCacheAlerts(_Strict):
    saturation: KVSaturationAlert = KVSaturationAlert(for_=Duration.parse("5m"), severity="warning")
    preemptions: KVPreemptionAlert = KVPreemptionAlert(for_=Duration.parse("15m"), severity="warning")
    queue_build_up: QueueBuildUpAlert = QueueBuildUpAlert(for_=Duration.parse("10m"), severity="warning")
    prefix_collapse: PrefixCollapseAlert = PrefixCollapseAlert(for_=Duration.parse("15m"), severity="warning")
    thrash: KVThrashAlert = KVThrashAlert(for_=Duration.parse("10m"), severity="warning")


class KVCache(_Strict):
    """KV cache and scheduler pack; its rates use intervals.rate, like the serving pack."""

    fleet_quantiles: list[Fraction] = [0.5, 0.9, 0.99]  # KV usage across a model's engines
    alerts: KVCacheAlerts = KVCacheAlerts()


class MoEImbalanceAlert(AlertRule):
    # Variance of the per-expert load share within a layer; 0.0225 is a 0.15 standard deviation.
    variance_threshold: float = Field(default=0.0225, gt=0, lt=1)


class MoEAlerts(_Strict):
    imbalance: MoEImbalanceAlert = MoEImbalanceAlert(for_=Duration.parse("15m"), severity="warning")
    dead_expert: AlertRule = AlertRule(for_=Duration.parse("15m"), severity="warning")
    metrics_absent: AlertRule = AlertRule(for_=Duration.parse("10m"), severity="warning")


class MoE(_Strict):
    """MoE expert-balance pack, reading the infersight MoE exporter."""

    models: list[str] = []  # model_name values that are MoE; the absent alert watches only these
    window: Duration = Duration.parse("5m")  # rate window of the per-layer rules
    # A layer counts as having traffic when each expert would expect at least this many tokens
    # in the window; below it, shares are noise and a zero is no evidence of a dead expert.
    min_expected_tokens_per_expert: float = Field(default=100.0, gt=0)
    top_experts: int = Field(default=10, ge=1, le=100)  # rows of the dashboard's hot-expert panel
    alerts: MoEAlerts = MoEAlerts()

    @field_validator("models")
    @classmethod
    def _model_names_sane(cls, v: list[str]) -> list[str]:
        for name in v:
            if not _MODEL_LABEL_VALUE.match(name):
                raise ValueError(f"{name!r} must be a model_name of 1-200 printable characters")
        if len(set(v)) != len(v):
            raise ValueError("lists a model_name twice")
        return v


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _label_names_valid(names: list[str]) -> list[str]:
    for name in names:
        if not _LABEL_NAME.match(name):
            raise ValueError(f"{name!r} is not a Prometheus label name (letters, digits and '_', no leading digit)")
    return names


class LabelPair(_Strict):
    """A GPU-side label and the vLLM-side label that holds the same value."""

    gpu: str
    vllm: str

    _names = field_validator("gpu", "vllm")(lambda v: _label_names_valid([v])[0])


def _pod_pairs() -> list[LabelPair]:
    return [LabelPair(gpu="namespace", vllm="namespace"), LabelPair(gpu="pod", vllm="pod")]


class GPUJoin(_Strict):
    """How a GPU series finds the vLLM engines that use it (README: "Joining GPUs to vLLM instances").
    A GPU whose pod labels are all set joins by pod; any other GPU joins by host."""

    # Kubernetes: pairs of a GPU-side label and the vLLM-side label holding the same value.
    # dcgm-exporter labels each GPU with the pod using it; write gpu: exported_pod (and
    # exported_namespace) when the scrape does not honour the exporter's own labels.
    pod_labels: list[LabelPair] = Field(default_factory=_pod_pairs, min_length=1)
    # Same host: the GPU's host label, first non-empty wins (dcgm-exporter releases say Hostname,
    # its main branch hostname), compared with vllm_host_label after host_regex.
    gpu_host_labels: list[str] = Field(default_factory=lambda: ["Hostname", "hostname"], min_length=1)
    vllm_host_label: str = "instance"
    # Anchored RE2 applied to both host values; group 1 is the host ("node-1:8000" -> "node-1").
    host_regex: str = "([^:]+)(?::[0-9]+)?"

    _hosts = field_validator("gpu_host_labels")(_label_names_valid)

    @field_validator("vllm_host_label")
    @classmethod
    def _vllm_host_valid(cls, v: str) -> str:
        return _label_names_valid([v])[0]

    @field_validator("host_regex")
    @classmethod
    def _regex_valid(cls, v: str) -> str:
        try:
            groups = re.compile(v).groups
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if groups < 1:
            raise ValueError("needs a capture group: group 1 is the host")
        return v


class GPULeakAlert(AlertRule):
    """Used framebuffer grows steadily while the GPU's engines see flat load."""

    growth_mib: float = Field(default=150.0, gt=0)  # growth per window that counts as a leak
    window: Duration = Duration.parse("10m")  # deriv window; for: is how long the growth must last
    request_rate_rise: NonNegative = 0.2  # relative rise of the engines' request rate still counted as flat
    kv_usage_rise: Fraction = 0.1  # absolute rise of their KV-cache usage still counted as flat

    @model_validator(mode="after")
    def _outlasts_window(self) -> GPULeakAlert:
        if not self.for_ > self.window:
            raise ValueError(
                f"for: {self.for_} must be longer than window {self.window}: a warm-up or restart step "
                "stays inside one window, so only growth that outlasts it is a leak"
            )
        return self


class GPUPredictedOOMAlert(AlertRule):
    """Both the long and the short trend of free framebuffer reach zero within `within`."""

    within: Duration = Duration.parse("4h")
    long_window: Duration = Duration.parse("1h")
    short_window: Duration = Duration.parse("10m")

    @model_validator(mode="after")
    def _windows_ordered(self) -> GPUPredictedOOMAlert:
        if not self.short_window < self.long_window:
            raise ValueError(f"short_window: {self.short_window} must be shorter than long_window {self.long_window}")
        if not self.for_ > self.short_window:
            raise ValueError(
                f"for: {self.for_} must be longer than short_window {self.short_window}, so a warm-up step "
                "that only the short window sees cannot fire"
            )
        return self


class GPUWindowAlert(AlertRule):
    window: Duration = Duration.parse("15m")  # how long one new error (or a lost GPU) keeps the alert active

    @model_validator(mode="after")
    def _fires_inside_window(self) -> GPUWindowAlert:
        if not self.for_ < self.window:
            raise ValueError(
                f"for: {self.for_} must be shorter than window {self.window}: the condition ends with the "
                "window, so a longer for: never fires"
            )
        return self


class GPUThrottleAlert(AlertRule):
    window: Duration = Duration.parse("10m")
    thermal_ratio: Fraction = 0.1  # share of samples with a thermal or HW-slowdown clock-event reason
    power_ratio: Fraction = 0.5  # share of samples capped by power (SW power cap, HW power brake)


class GPUTemperatureAlert(AlertRule):
    celsius: float = Field(default=85.0, gt=0)


class GPUBandwidthThrashAlert(AlertRule):
    mem_copy_ratio: Fraction = 0.9  # average memory-copy utilization over intervals.rate
    preemptions_per_second: NonNegative = 0.0  # KV preemptions on the GPU's engines above this


class GPUIdleQueueAlert(AlertRule):
    util_ratio: Fraction = 0.05  # every sample of every GPU of the engine below this over intervals.rate
    min_waiting: float = Field(default=1.0, gt=0)  # requests waiting on the engine


class GPUAlerts(_Strict):
    memory_leak: GPULeakAlert = GPULeakAlert(for_=Duration.parse("30m"), severity="warning")
    predicted_oom: GPUPredictedOOMAlert = GPUPredictedOOMAlert(for_=Duration.parse("15m"), severity="warning")
    xid: GPUWindowAlert = GPUWindowAlert(for_=Duration.parse("1m"), severity="warning")
    ecc_double_bit: GPUWindowAlert = GPUWindowAlert(
        for_=Duration.parse("1m"), severity="critical", window=Duration.parse("1h")
    )
    throttling: GPUThrottleAlert = GPUThrottleAlert(for_=Duration.parse("10m"), severity="warning")
    temperature: GPUTemperatureAlert = GPUTemperatureAlert(for_=Duration.parse("10m"), severity="warning")
    bandwidth_kv_thrash: GPUBandwidthThrashAlert = GPUBandwidthThrashAlert(
        for_=Duration.parse("10m"), severity="warning"
    )
    idle_with_queue: GPUIdleQueueAlert = GPUIdleQueueAlert(for_=Duration.parse("5m"), severity="warning")
    telemetry_down: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="warning")
    lost: GPUWindowAlert = GPUWindowAlert(for_=Duration.parse("2m"), severity="critical", window=Duration.parse("1h"))


class GPU(_Strict):
    """GPU and memory-leak pack, reading dcgm-exporter (selectors.dcgm)."""

    join: GPUJoin = GPUJoin()
    # Engines started less than this ago are warming up (loading weights, allocating the KV cache,
    # capturing graphs): no leak or OOM verdict on their GPUs.
    warmup: Duration = Duration.parse("15m")
    alerts: GPUAlerts = GPUAlerts()


class ExporterStaleAlert(AlertRule):
    after: Duration = Duration.parse("5m")  # last successful collection older than this


class ExporterErrorsAlert(AlertRule):
    window: Duration = Duration.parse("10m")
    min_errors: NonNegative = 0.0  # errors of one kind in the window above this, for the whole for:


class ExporterAlerts(_Strict):
    down: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="warning")
    stale: ExporterStaleAlert = ExporterStaleAlert(for_=Duration.parse("2m"), severity="warning")
    errors: ExporterErrorsAlert = ExporterErrorsAlert(for_=Duration.parse("15m"), severity="warning")


class Exporters(_Strict):
    """Health of infersight's own exporters (selectors.gpu_exporter, selectors.moe_exporter)."""

    alerts: ExporterAlerts = ExporterAlerts()


_K8S_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_K8S_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$")  # IANA_SVC_NAME: at most 15 characters
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
_HTTP_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$")


def _k8s_labels_valid(v: dict[str, str]) -> dict[str, str]:
    for key, value in v.items():
        if not _K8S_LABEL_KEY.match(key):
            raise ValueError(f"{key!r} is not a Kubernetes label key (e.g. app.kubernetes.io/name)")
        if not _K8S_LABEL_VALUE.match(value):
            raise ValueError(f"{value!r} (label {key}) is not a Kubernetes label value (63 of A-Za-z0-9-_.)")
    return v


class DeployTarget(_Strict):
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

    @field_validator("static_targets")
    @classmethod
    def _host_ports(cls, v: list[str]) -> list[str]:
        for t in v:
            if not _HOST_PORT.match(t):
                raise ValueError(f"{t!r} is not host:port")
        return v

    @field_validator("pod_labels")
    @classmethod
    def _labels(cls, v: list[str]) -> list[str]:
        for item in v:
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"{item!r} is not key=value, e.g. app.kubernetes.io/name=vllm")
            _k8s_labels_valid({key: value})
        return v

    def match_labels(self) -> dict[str, str]:
        return dict(item.partition("=")[::2] for item in self.pod_labels)

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, v: list[str]) -> list[str]:
        for ns in v:
            if not _K8S_NAME.match(ns):
                raise ValueError(f"{ns!r} is not a Kubernetes namespace name")
        return v

    @field_validator("ports")
    @classmethod
    def _port_names(cls, v: list[str]) -> list[str]:
        for port in v:
            if not _PORT_NAME.match(port):
                raise ValueError(f"{port!r} is not a container port name (lowercase, digits, '-', 15 at most)")
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
        if not _MODEL_LABEL_VALUE.match(v) and v != "":
            raise ValueError("must be 1-200 printable characters, or empty to take it from the selector")
        return v


def _target(static: str, pod_label: str, ports: list[str], honor: bool = False) -> DeployTarget:
    return DeployTarget(static_targets=[static], pod_labels=[pod_label], ports=ports, honor_labels=honor)


class DeployTargets(_Strict):
    """One entry per source of selectors: (same keys)."""

    vllm: DeployTarget = _target("127.0.0.1:8000", "app.kubernetes.io/name=vllm", ["http"])
    dcgm: DeployTarget = _target("127.0.0.1:9400", "app.kubernetes.io/name=dcgm-exporter", ["metrics"], honor=True)
    gpu_exporter: DeployTarget = _target(
        "127.0.0.1:9835", "app.kubernetes.io/name=infersight-gpu-exporter", ["metrics"]
    )
    moe_exporter: DeployTarget = _target("127.0.0.1:9836", "app.kubernetes.io/name=vllm", ["infersight-moe"])


class DeployKubernetes(_Strict):
    namespace: str = "monitoring"  # of the PrometheusRule, PodMonitor and ConfigMap manifests
    labels: dict[str, str] = {}  # added to each; match your Prometheus's ruleSelector/podMonitorSelector

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        if not _K8S_NAME.match(v):
            raise ValueError("must be a Kubernetes namespace name")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return _k8s_labels_valid(v)


class DeployGrafana(_Strict):
    folder: str = Field(default="infersight", min_length=1, max_length=100)  # Grafana folder of the dashboards
    dashboards_path: str = "/var/lib/grafana/dashboards/infersight"  # where the file provider reads them

    @field_validator("dashboards_path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("must be an absolute path inside the Grafana container or host")
        return v


class DeployAlertmanager(_Strict):
    targets: list[str] = ["127.0.0.1:9093"]  # where prometheus.yml sends alerts
    group_wait: Duration = Duration.parse("30s")
    group_interval: Duration = Duration.parse("5m")
    repeat_interval: Duration = Duration.parse("4h")
    # Webhook receivers by severity; "" keeps the receiver without an integration (alerts are
    # visible in Alertmanager but not sent) until you add yours.
    page_webhook_url: str = ""  # severity=critical
    ticket_webhook_url: str = ""  # severity=warning

    @field_validator("targets")
    @classmethod
    def _host_ports(cls, v: list[str]) -> list[str]:
        return DeployTarget._host_ports(v)

    @field_validator("page_webhook_url", "ticket_webhook_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v and not _HTTP_URL.match(v):
            raise ValueError("must be an http(s) URL or empty")
        return v


class DeployOtelcol(_Strict):
    otlp_grpc_endpoint: str = "0.0.0.0:4317"  # where vLLM's --otlp-traces-endpoint sends traces
    otlp_http_endpoint: str = "0.0.0.0:4318"
    traces_endpoint: str = "tempo:4317"  # OTLP/gRPC backend the collector forwards traces to
    traces_insecure: bool = True  # plaintext to the traces backend (in-cluster); false = TLS

    @field_validator("otlp_grpc_endpoint", "otlp_http_endpoint", "traces_endpoint")
    @classmethod
    def _host_port(cls, v: str) -> str:
        return DeployTarget._host_ports([v])[0]


class Deploy(_Strict):
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

    @field_validator("prometheus_url", "remote_write_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v and not _HTTP_URL.match(v):
            raise ValueError("must be an http(s) URL" + ("" if v else " or empty"))
        return v


class Config(_Strict):
    """Root of infersight.yaml."""

    # Divide every scrape, evaluation, window and for: by this factor (1 in production). The
    # validation profile uses e.g. 60, so an hour of alerting behaviour takes a minute.
    time_scale: float = Field(default=1.0, ge=1, le=3600)
    selectors: Selectors = Selectors()
    intervals: Intervals = Intervals()
    buckets: Buckets = Buckets()
    slo: SLOs = SLOs()
    alerts: Alerts = Alerts()
    dashboards: Dashboards = Dashboards()
    kv_cache: KVCache = KVCache()
    moe: MoE = MoE()
    deploy: Deploy = Deploy()
    gpu: GPU = GPU()
    exporters: Exporters = Exporters()

    @model_validator(mode="after")
    def _thresholds_are_buckets(self) -> Config:
        problems: list[str] = []
        checks: list[tuple[str, float | None, list[float]]] = [
            ("slo.ttft.threshold_seconds", self.slo.ttft.threshold_seconds, self.buckets.ttft),
            ("slo.itl.threshold_seconds", self.slo.itl.threshold_seconds, self.buckets.itl),
        ]
        for model, o in self.slo.overrides.items():
            checks.append(
                (f"slo.overrides.{model}.ttft_threshold_seconds", o.ttft_threshold_seconds, self.buckets.ttft)
            )
            checks.append((f"slo.overrides.{model}.itl_threshold_seconds", o.itl_threshold_seconds, self.buckets.itl))
        for path, value, buckets in checks:
            if value is not None and value not in buckets:
                problems.append(
                    f"{path}: {value} is not a histogram bucket boundary; latency SLIs count "
                    f"requests under a bucket edge, so pick one of {buckets}"
                )
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self

    @model_validator(mode="after")
    def _pack_windows_hold_enough_scrapes(self) -> Config:
        windows = {
            "kv_cache.alerts.thrash.window": self.kv_cache.alerts.thrash.window,
            "kv_cache.alerts.prefix_collapse.baseline_window": self.kv_cache.alerts.prefix_collapse.baseline_window,
            "moe.window": self.moe.window,
            "gpu.alerts.memory_leak.window": self.gpu.alerts.memory_leak.window,
            "gpu.alerts.predicted_oom.short_window": self.gpu.alerts.predicted_oom.short_window,
            "gpu.alerts.throttling.window": self.gpu.alerts.throttling.window,
            "exporters.alerts.errors.window": self.exporters.alerts.errors.window,
        }
        problems = [
            f"{path}: window {w} must cover at least 4 scrapes ({self.intervals.scrape} each)"
            for path, w in windows.items()
            if w < self.intervals.scrape * 4
        ]
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self

    def scaled(self, nominal: Duration) -> Duration:
        """A nominal duration as it goes into the bundle, after time scaling."""
        return nominal.scaled(self.time_scale)


def _overlay(default: Any, given: Any) -> Any:
    """Lay the user's mappings over the defaults key by key, so a partial section (say, only
    ``for:`` of one alert) keeps the other defaults of that section. Lists are replaced."""
    if isinstance(default, dict) and isinstance(given, dict):
        merged = dict(default)
        for k, v in given.items():
            merged[k] = _overlay(default.get(k), v) if k in default else v
        return merged
    return given


def default_data() -> dict[str, Any]:
    """The embedded defaults, as plain YAML-able data."""
    return Config().model_dump(mode="json", by_alias=True)


def parse_config(data: Any, source: str = "<config>") -> Config:
    """Validate already-parsed YAML data. Raises only ConfigError."""
    if data is None:
        data = {}
    if isinstance(data, dict):
        data = _overlay(default_data(), data)
    return validate(
        Config, data, source, ConfigError,
        mapping_hint="a mapping of settings", unknown_key_hint="check the spelling against `infersight init`",
    )  # fmt: skip


def load_config(path: Path | None) -> Config:
    """Load infersight.yaml; ``None`` gives the embedded defaults."""
    if path is None:
        return Config()
    return parse_config(read_yaml(path, ConfigError), str(path))
