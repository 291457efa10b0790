"""Settings of the autoscaling pack (``autoscaling:``): which vLLM workloads scale, on which of
vLLM's own scheduler signals, and how fast they may scale down.

The pack records one signal series per model and namespace; KEDA ScaledObjects, HPAs and the
prometheus-adapter rules under ``deploy/autoscaling/`` all read that series, so the expression
lives in one place. README "Autoscaling" says why the defaults are what they are.
"""

# Pydantic copies mutable field defaults per instance; ruff cannot see across modules that
# these models' base (config.common.Strict) is a BaseModel.
# ruff: noqa: RUF012

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from infersight.config.common import MODEL_LABEL_VALUE, AlertRule, PackSection, Strict
from infersight.durations import Duration

WorkloadKind = Literal["Deployment", "StatefulSet", "LeaderWorkerSet"]
Signal = Literal["waiting_per_replica", "batch_fill", "kv_usage"]

# What each signal is, and the target a production SRE starts from:
# - waiting_per_replica: requests queued in vLLM's scheduler per replica. Two waiting requests per
#   replica is the first sign of saturation, well before queue time burns the TTFT SLO.
# - batch_fill: requests running per replica over vLLM's --max-num-seqs. 0.75 leaves a quarter of
#   the batch for bursts while a new replica starts (minutes, for weights and graphs).
# - kv_usage: KV-cache usage of the replica's fullest engine. 0.8 scales out before preemptions
#   (which start near 1.0) recompute work.
DEFAULT_TARGETS: dict[str, float] = {"waiting_per_replica": 2.0, "batch_fill": 0.75, "kv_usage": 0.8}
_RATIO_SIGNALS = ("batch_fill", "kv_usage")

_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class Workload(Strict):
    """The object the autoscaler resizes. Its namespace is also the ``namespace`` label of its
    vLLM pods' series (the PodMonitor sets it), which pins the signal to this workload."""

    kind: WorkloadKind = "Deployment"
    name: str
    namespace: str

    @field_validator("name", "namespace")
    @classmethod
    def _k8s_name(cls, v: str) -> str:
        if not _K8S_NAME.match(v):
            raise ValueError(f"{v!r} is not a Kubernetes name (lowercase letters, digits and '-', 63 at most)")
        return v


class ScaleDown(Strict):
    """HPA scale-down behaviour. vLLM replicas are slow to come back (weights, graphs, a cold
    prefix cache), so the defaults give back capacity slowly: the highest recommendation of the
    last 10 minutes wins, and at most half the replicas go per 2 minutes."""

    stabilization: Duration = Duration.parse("10m")
    max_percent: int = Field(default=50, ge=1, le=100)
    period: Duration = Duration.parse("2m")

    @model_validator(mode="after")
    def _within_hpa_limits(self) -> ScaleDown:
        if self.stabilization > Duration.parse("1h"):
            raise ValueError(f"stabilization: {self.stabilization} exceeds the HPA's limit of 1h")
        if not Duration.parse("1s") <= self.period <= Duration.parse("30m"):
            raise ValueError(f"period: {self.period} must be between 1s and 30m (the HPA's policy limits)")
        return self


class ScaledModel(Strict):
    model_name: str
    workload: Workload
    # The HPA's and KEDA's replica counts are int32; a million replicas of one model is past any fleet.
    min_replicas: int = Field(default=1, ge=1, le=1_000_000)  # the signal comes from the replicas: zero never wakes
    max_replicas: int = Field(default=4, ge=1, le=1_000_000)
    signal: Signal = "waiting_per_replica"
    target: float | None = Field(default=None, gt=0)  # None: DEFAULT_TARGETS[signal]
    max_num_seqs: int = Field(default=256, ge=1, le=1_000_000)  # vLLM's --max-num-seqs, for batch_fill
    scale_down: ScaleDown = ScaleDown()

    @field_validator("model_name")
    @classmethod
    def _model_name(cls, v: str) -> str:
        if not MODEL_LABEL_VALUE.match(v):
            raise ValueError(f"{v!r} must be a model_name of 1-200 printable characters")
        return v

    @model_validator(mode="after")
    def _bounds(self) -> ScaledModel:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas {self.min_replicas} is above max_replicas {self.max_replicas}")
        if self.signal in _RATIO_SIGNALS and self.target is not None and self.target > 1:
            raise ValueError(f"target {self.target:g} of {self.signal} must be a fraction in (0, 1]")
        return self

    @property
    def effective_target(self) -> float:
        return self.target if self.target is not None else DEFAULT_TARGETS[self.signal]


class AutoscalingAlerts(Strict):
    # A model with an autoscaler whose signal is gone: the autoscaler cannot act (and KEDA's
    # ignoreNullValues: false makes it say so instead of reading the gap as 0).
    signal_absent: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="warning")


class Autoscaling(PackSection):
    """Autoscaling pack: signals for KEDA or the HPA (through prometheus-adapter)."""

    models: list[ScaledModel] = []
    # Which manifests the Helm overlay carries (both are written under deploy/autoscaling/):
    # KEDA ScaledObjects, or autoscaling/v2 HPAs reading prometheus-adapter's external metric.
    engine: Literal["keda", "hpa"] = "keda"
    smoothing: Duration = Duration.parse("1m")  # avg_over_time of the signal: one slow scrape is no trend
    polling_interval: Duration = Duration.parse("15s")  # how often KEDA asks Prometheus
    alerts: AutoscalingAlerts = AutoscalingAlerts()

    @field_validator("models")
    @classmethod
    def _one_autoscaler_per_workload(cls, v: list[ScaledModel]) -> list[ScaledModel]:
        seen: set[tuple[str, str]] = set()
        for m in v:
            for key in ((m.workload.namespace, m.model_name), (m.workload.namespace, m.workload.name)):
                if key in seen:
                    raise ValueError(f"{key[1]!r} in namespace {key[0]!r} is listed twice; one autoscaler each")
                seen.add(key)
        return v

    def windows(self) -> dict[str, Duration]:
        # Nothing reads the smoothing window while no model is scaled.
        return {"smoothing": self.smoothing} if self.models else {}
