"""Settings of the serving pack: which series are vLLM's, the scrape and rate intervals, the SLOs
and their burn-rate policy, vLLM's histogram buckets, the serving alerts and the dashboards.

Unlike the other packs, serving reads several top-level sections (``selectors``, ``intervals``,
``buckets``, ``slo``, ``alerts``, ``dashboards``); the other packs share some of them too."""

# Pydantic copies mutable field defaults per instance; ruff cannot see across modules that
# these models' base (config.common.Strict) is a BaseModel.
# ruff: noqa: RUF012

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from infersight import catalog
from infersight.config.common import (
    MODEL_LABEL_VALUE,
    AlertRule,
    Matchers,
    NonNegative,
    PackSection,
    Severity,
    Strict,
    matchers_valid,
)
from infersight.durations import Duration
from infersight.inputs import brief

_UID = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")


class Selectors(Strict):
    """PromQL label matchers that pick each source's series."""

    vllm: Matchers = ['job="vllm"']
    dcgm: Matchers = ['job="dcgm-exporter"']
    gpu_exporter: Matchers = ['job="infersight-gpu"']
    moe_exporter: Matchers = ['job="infersight-moe"']

    _check = field_validator("vllm", "dcgm", "gpu_exporter", "moe_exporter")(matchers_valid)


# Recordings at dashboard_evaluation feed only alerts that wait 10 times this (evaluation_intervals).
DASHBOARD_EVALUATION_MAX = Duration.parse("1m")
# Recordings at view_evaluation feed dashboards only. Half of Prometheus' 5 m lookback, so a panel
# still finds a sample when one evaluation is missed or late.
VIEW_EVALUATION_MAX = Duration.parse("2m30s")


class Intervals(Strict):
    scrape: Duration = Duration.parse("15s")
    evaluation: Duration = Duration.parse("30s")
    # Alerts that read windows of 10 m or more and wait 10 m or more (GPU coverage, throttling, leak,
    # predicted OOM) gain nothing from a 30 s evaluation, and at fleet size they cost the most.
    slow_evaluation: Duration = Duration.parse("2m")
    # Recordings that only dashboards and alerts with a for: of 10 m or more read
    # (infersight/evaluation_intervals.py): a 5 m rate drawn every minute loses nothing.
    dashboard_evaluation: Duration = Duration.parse("1m")
    # Recordings that no alert reads, only dashboards: a 5 m rate drawn every 2 m still overlaps
    # itself, and at fleet size the per-model quantiles and per-node views cost most of the rules' time.
    view_evaluation: Duration = Duration.parse("2m")
    rate: Duration = Duration.parse("5m")  # window of the golden-signal recording rules

    @model_validator(mode="after")
    def _windows_hold_enough_scrapes(self) -> Intervals:
        if self.rate < self.scrape * 4:
            raise ValueError(f"rate: window {self.rate} must cover at least 4 scrapes ({self.scrape} each)")
        if self.scrape.ms == 0 or self.evaluation.ms == 0:
            raise ValueError("scrape and evaluation intervals must be positive")
        for name in ("slow_evaluation", "dashboard_evaluation", "view_evaluation"):
            if getattr(self, name) < self.evaluation:
                raise ValueError(
                    f"{name}: {getattr(self, name)} must not be shorter than evaluation ({self.evaluation}); "
                    f"set it to {self.evaluation} or more"
                )
        # Equal to evaluation moves nothing, so an evaluation over the cap stays allowed.
        if self.dashboard_evaluation > max(self.evaluation, DASHBOARD_EVALUATION_MAX):
            raise ValueError(
                f"dashboard_evaluation: {self.dashboard_evaluation} is over {DASHBOARD_EVALUATION_MAX} (a tenth of "
                "the shortest for: of an alert that reads those recordings, 10m) and over evaluation"
            )
        if self.view_evaluation > max(self.evaluation, VIEW_EVALUATION_MAX):
            raise ValueError(
                f"view_evaluation: {self.view_evaluation} is over {VIEW_EVALUATION_MAX} (half of Prometheus' 5m "
                "lookback, or panels show gaps when an evaluation is late) and over evaluation"
            )
        return self


class BurnWindow(Strict):
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


class AvailabilitySLO(Strict):
    enabled: bool = True
    objective: Objective = 0.99
    # finished_reason values counted as bad; "abort" covers client disconnects caused by slowness.
    bad_finished_reasons: list[Literal["stop", "length", "abort", "error", "repetition"]] = ["error", "abort"]


class LatencySLO(Strict):
    enabled: bool = True
    objective: Objective = 0.95
    threshold_seconds: float = Field(default=1.0, gt=0)  # sections override it, see SLOs


class SLOOverride(Strict):
    """Per-model objectives and thresholds; unset fields inherit the default."""

    availability_objective: Objective | None = None
    ttft_objective: Objective | None = None
    ttft_threshold_seconds: float | None = Field(default=None, gt=0)
    itl_objective: Objective | None = None
    itl_threshold_seconds: float | None = Field(default=None, gt=0)


class SLOs(Strict):
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
            if not MODEL_LABEL_VALUE.match(name):
                raise ValueError(f"override key {brief(name)} must be a model_name of 1-200 printable characters")
        return v


class Buckets(Strict):
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


def thresholds_off_buckets(slo: SLOs, buckets: Buckets) -> list[str]:
    """``path: message`` for each latency threshold that is not a bucket boundary (the root config
    reports them: the thresholds and the buckets are two sections)."""
    checks: list[tuple[str, float | None, list[float]]] = [
        ("slo.ttft.threshold_seconds", slo.ttft.threshold_seconds, buckets.ttft),
        ("slo.itl.threshold_seconds", slo.itl.threshold_seconds, buckets.itl),
    ]
    for model, o in slo.overrides.items():
        checks.append((f"slo.overrides.{model}.ttft_threshold_seconds", o.ttft_threshold_seconds, buckets.ttft))
        checks.append((f"slo.overrides.{model}.itl_threshold_seconds", o.itl_threshold_seconds, buckets.itl))
    return [
        f"{path}: {value} is not a histogram bucket boundary; latency SLIs count "
        f"requests under a bucket edge, so pick one of {bounds}"
        for path, value, bounds in checks
        if value is not None and value not in bounds
    ]


class HungEngineAlert(AlertRule):
    """Requests wait or run on an engine that generated no token and finished no request."""

    window: Duration = Duration.parse("5m")  # a healthy engine with work emits tokens every step


class TrafficStopAlert(AlertRule):
    """A model's request rate collapsed against its own recent average while its targets are up."""

    drop_fraction: float = Field(default=0.9, gt=0, lt=1)  # fires below (1 - drop) x baseline
    baseline_window: Duration = Duration.parse("1h")  # the average the current rate is held to
    # A quieter model can go minutes without a request by chance (and never had traffic to stop).
    min_requests_per_second: NonNegative = 0.05


class OutlierReplicaAlert(AlertRule):
    """One replica of a model much slower than its peers' median, while the model as a whole may
    still meet its SLO."""

    factor: float = Field(default=2.0, gt=1)  # slower than this many times the peers' median
    # A median of two is their mean: it cannot tell which one is slow. Three replicas at least.
    min_replicas: int = Field(default=3, ge=3, le=1_000_000)  # past any fleet, within what a rule prints plainly
    # Per replica, requests started (first token): fewer make its p99 the latency of one or two.
    min_requests_per_second: NonNegative = 0.1
    # Below these a replica is not slow enough to matter, however it compares with fast peers.
    min_ttft_seconds: NonNegative = 0.5
    min_queue_seconds: NonNegative = 0.5
    min_itl_seconds: NonNegative = 0.02


class ServingAlerts(Strict):
    target_down: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="critical")
    metrics_absent: AlertRule = AlertRule(for_=Duration.parse("10m"), severity="warning")
    hung_engine: HungEngineAlert = HungEngineAlert(for_=Duration.parse("5m"), severity="critical")
    traffic_stop: TrafficStopAlert = TrafficStopAlert(for_=Duration.parse("5m"), severity="critical")
    outlier_replica: OutlierReplicaAlert = OutlierReplicaAlert(for_=Duration.parse("15m"), severity="warning")
    # vllm:engine_healthy == 0 (vLLM with --enable-fault-tolerance, after 0.32): a dead engine rank.
    engine_unhealthy: AlertRule = AlertRule(for_=Duration.parse("1m"), severity="critical")


class Alerts(PackSection):
    """Owned by the serving pack; the other packs read runbook_base_url."""

    serving: ServingAlerts = ServingAlerts()
    runbook_base_url: str = "https://github.com/infersight/infersight/blob/main/docs/runbook.md"

    def windows(self) -> dict[str, Duration]:
        return {
            "serving.hung_engine.window": self.serving.hung_engine.window,
            "serving.traffic_stop.baseline_window": self.serving.traffic_stop.baseline_window,
        }


class TraceLinks(Strict):
    """Where the latency panels' data links search for traces: Grafana's Tempo or Jaeger datasource
    with this uid, or no links (none)."""

    backend: Literal["tempo", "jaeger", "none"] = "tempo"
    datasource_uid: str = Field(default="tempo", pattern=r"^[a-zA-Z0-9_-]{1,40}$")


class Dashboards(Strict):
    uid_prefix: str = "infersight"
    datasource_uid: str = "prometheus"  # default value of the datasource variable
    refresh: str = "30s"
    time_from: str = "now-3h"
    tags: list[str] = ["infersight", "vllm"]
    traces: TraceLinks = TraceLinks()

    @field_validator("uid_prefix")
    @classmethod
    def _uid_ok(cls, v: str) -> str:
        if not re.match(r"^[a-zA-Z0-9_-]{1,20}$", v):
            raise ValueError("must be 1-20 characters of letters, digits, '-' or '_' (Grafana UIDs are short)")
        return v

    def uid(self, name: str) -> str:
        uid = f"{self.uid_prefix}-{name}"
        if not _UID.match(uid):
            raise ValueError(f"dashboard uid {brief(uid)} exceeds Grafana's 40-character limit")
        return uid
