"""Settings of the GPU and memory-leak pack (``gpu:``), which reads dcgm-exporter and joins each GPU
to the vLLM engines that use it."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from infersight.config.common import AlertRule, Fraction, NonNegative, PackSection, Strict, label_names_valid
from infersight.durations import Duration


class LabelPair(Strict):
    """A GPU-side label and the vLLM-side label that holds the same value."""

    gpu: str
    vllm: str

    _names = field_validator("gpu", "vllm")(lambda v: label_names_valid([v])[0])


def _pod_pairs() -> list[LabelPair]:
    return [LabelPair(gpu="namespace", vllm="namespace"), LabelPair(gpu="pod", vllm="pod")]


class GPUJoin(Strict):
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

    _hosts = field_validator("gpu_host_labels")(label_names_valid)

    @field_validator("vllm_host_label")
    @classmethod
    def _vllm_host_valid(cls, v: str) -> str:
        return label_names_valid([v])[0]

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


class GPUAlerts(Strict):
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


class GPU(PackSection):
    """GPU and memory-leak pack, reading dcgm-exporter (selectors.dcgm)."""

    join: GPUJoin = GPUJoin()
    # Engines started less than this ago are warming up (loading weights, allocating the KV cache,
    # capturing graphs): no leak or OOM verdict on their GPUs.
    warmup: Duration = Duration.parse("15m")
    alerts: GPUAlerts = GPUAlerts()

    def windows(self) -> dict[str, Duration]:
        return {
            "alerts.memory_leak.window": self.alerts.memory_leak.window,
            "alerts.predicted_oom.short_window": self.alerts.predicted_oom.short_window,
            "alerts.throttling.window": self.alerts.throttling.window,
        }
