"""Settings of the KV cache and scheduler pack (``kv_cache:``)."""

# Pydantic copies mutable field defaults per instance; ruff cannot see across modules that
# these models' base (config.common.Strict) is a BaseModel.
# ruff: noqa: RUF012

from __future__ import annotations

from pydantic import Field

from infersight.config.common import AlertRule, Fraction, NonNegative, PackSection, Strict
from infersight.durations import Duration


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


class KVCacheAlerts(Strict):
    saturation: KVSaturationAlert = KVSaturationAlert(for_=Duration.parse("5m"), severity="warning")
    preemptions: KVPreemptionAlert = KVPreemptionAlert(for_=Duration.parse("15m"), severity="warning")
    queue_build_up: QueueBuildUpAlert = QueueBuildUpAlert(for_=Duration.parse("10m"), severity="warning")
    prefix_collapse: PrefixCollapseAlert = PrefixCollapseAlert(for_=Duration.parse("15m"), severity="warning")
    thrash: KVThrashAlert = KVThrashAlert(for_=Duration.parse("10m"), severity="warning")


class KVCache(PackSection):
    """KV cache and scheduler pack; its rates use intervals.rate, like the serving pack."""

    fleet_quantiles: list[Fraction] = [0.5, 0.9, 0.99]  # KV usage across a model's engines
    alerts: KVCacheAlerts = KVCacheAlerts()

    def windows(self) -> dict[str, Duration]:
        return {
            "alerts.thrash.window": self.alerts.thrash.window,
            "alerts.prefix_collapse.baseline_window": self.alerts.prefix_collapse.baseline_window,
        }
