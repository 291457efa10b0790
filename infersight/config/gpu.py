"""Settings of the GPU and memory-leak pack (``gpu:``), which reads dcgm-exporter and joins each GPU
to the vLLM engines that use it."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from infersight import catalog
from infersight.config.common import AlertRule, Fraction, NonNegative, PackSection, Strict, label_names_valid
from infersight.durations import Duration
from infersight.inputs import brief


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
    """Used framebuffer grows steadily while the GPU's engines see flat load.

    The defaults come from what vLLM's used framebuffer does (runbook, InfersightGPUMemoryLeak):
    flat in steady state (the KV cache is allocated up front), steps at start (weights, profiling,
    KV cache, CUDA graphs), and at a restart a fall then those steps again. A leak is the one shape
    that keeps rising. The slowest leak to catch is 150 MiB per 10m (15 MiB/min).
    - The trend is a least-squares slope (deriv) over `window`. A step, of any size, lifts it for at
      most one window and a restart's fall-then-step for about half of one, so `for:` longer than
      `window` rejects both by time, not size (the validator below insists).
    - `window` 30m, not 10m: a single 100 MiB allocator step reads as 150 MiB per 10m over a 10m
      window (a step S peaks at 1.5 S per window) but as 50 MiB per 10m over 30m.
    - Threshold half the slowest leak, 7.5 MiB/min = 225 MiB per 30m: a 15 MiB/min leak's trend
      passes it half a window after the leak starts and settles at twice it.
    - `for:` 45m = 1.5 windows: a margin past the longest a step keeps the trend up. The 150 MiB per
      10m leak fires about 60 minutes (window/2 + for:) after it starts, ~900 MiB in.
    """

    growth_mib: float = Field(default=225.0, gt=0)  # growth per window that counts as a leak
    window: Duration = Duration.parse("30m")  # deriv window; for: is how long the growth must last
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
    power_ratio: Fraction = 0.5  # share of samples capped by power (HW power brake; SW power cap, below)
    # A SW power cap counts only while the enforced power limit is below this share of the GPU's
    # default limit: at the default limit a busy GPU sits at its cap by design (an H200 under a
    # matrix-product burn did in every sample); under a lowered one, something is holding it down.
    lowered_limit_ratio: Fraction = 0.95


class GPUTemperatureAlert(AlertRule):
    celsius: float = Field(default=85.0, gt=0)


class GPUBandwidthThrashAlert(AlertRule):
    mem_copy_ratio: Fraction = 0.9  # average memory-copy utilization over intervals.rate
    preemptions_per_second: NonNegative = 0.0  # KV preemptions on the GPU's engines above this


class GPUIdleQueueAlert(AlertRule):
    util_ratio: Fraction = 0.05  # every sample of every GPU of the engine below this over intervals.rate
    min_waiting: float = Field(default=1.0, gt=0)  # requests waiting on the engine


# The dcgm-exporter fields the pack's rules read with no fallback (DCGM_FI_DEV_FB_TOTAL and
# _FB_RESERVED have one: the total is used + free without them). tests/packs/test_gpu_bundle.py
# holds this to the pack's declared reads.
NEEDED_DCGM_FIELDS = (
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_XID_ERRORS",
)


class GPUFieldMissingAlert(AlertRule):
    """A GPU reports DCGM_FI_DEV_FB_USED but not one of `fields`: its exporter's counters file
    leaves the field out, so the alerts reading it can never fire there."""

    # Drop a field your GPUs cannot report (e.g. DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS before
    # Ampere, the ECC counters with ECC off) rather than silence the alert.
    fields: list[str] = Field(default_factory=lambda: list(NEEDED_DCGM_FIELDS))

    @field_validator("fields")
    @classmethod
    def _dcgm_fields(cls, v: list[str]) -> list[str]:
        known = {m.name for m in catalog.CATALOG.values() if m.source is catalog.Source.DCGM}
        for name in v:
            if name not in known:
                raise ValueError(f"{brief(name)} is not a dcgm-exporter field of the metric catalog")
        return v


class GPUAlerts(Strict):
    memory_leak: GPULeakAlert = GPULeakAlert(for_=Duration.parse("45m"), severity="warning")
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
    field_missing: GPUFieldMissingAlert = GPUFieldMissingAlert(for_=Duration.parse("15m"), severity="warning")


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
