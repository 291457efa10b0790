"""The model of ``infersight.yaml``: one object that drives every selector, threshold,
window, SLO objective and dashboard UID in the bundle.

Each pack's settings live in its own module of this package (:mod:`.serving`, :mod:`.kv_cache`,
:mod:`.moe`, :mod:`.gpu`, :mod:`.exporter_health`) and the deploy stage's in :mod:`.deploy`; this
module holds the root and the checks that span sections.

Every field has a default, so an empty file (or no file) is a complete config. Loading
fails with :class:`ConfigError`, which names each bad field's path, its value and what is
allowed; nothing else escapes :func:`load_config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from infersight.config.autoscaling import Autoscaling
from infersight.config.common import AlertRule, Fraction, NonNegative, PackSection, Severity, Strict
from infersight.config.deploy import (
    Deploy,
    DeployAlertmanager,
    DeployGrafana,
    DeployKubernetes,
    DeployOtelcol,
    DeployTarget,
    DeployTargets,
)
from infersight.config.exporter_health import ExporterAlerts, ExporterErrorsAlert, Exporters, ExporterStaleAlert
from infersight.config.gpu import (
    GPU,
    GPUAlerts,
    GPUBandwidthThrashAlert,
    GPUIdleQueueAlert,
    GPUJoin,
    GPULeakAlert,
    GPUPredictedOOMAlert,
    GPUTemperatureAlert,
    GPUThrottleAlert,
    GPUWindowAlert,
    LabelPair,
)
from infersight.config.kv_cache import (
    KVCache,
    KVCacheAlerts,
    KVPreemptionAlert,
    KVSaturationAlert,
    KVThrashAlert,
    PrefixCollapseAlert,
    QueueBuildUpAlert,
)
from infersight.config.moe import MoE, MoEAlerts, MoEImbalanceAlert
from infersight.config.serving import (
    Alerts,
    AvailabilitySLO,
    Buckets,
    BurnWindow,
    Dashboards,
    HungEngineAlert,
    Intervals,
    LatencySLO,
    Selectors,
    ServingAlerts,
    SLOOverride,
    SLOs,
    TrafficStopAlert,
    thresholds_off_buckets,
)
from infersight.config.spec_decode import AcceptanceCollapseAlert, SpecDecode, SpecDecodeAlerts
from infersight.durations import Duration
from infersight.inputs import InputError, read_yaml, validate

__all__ = [
    "GPU",
    "AcceptanceCollapseAlert",
    "AlertRule",
    "Alerts",
    "AvailabilitySLO",
    "Buckets",
    "BurnWindow",
    "Config",
    "ConfigError",
    "Dashboards",
    "Deploy",
    "DeployAlertmanager",
    "DeployGrafana",
    "DeployKubernetes",
    "DeployOtelcol",
    "DeployTarget",
    "DeployTargets",
    "ExporterAlerts",
    "ExporterErrorsAlert",
    "ExporterStaleAlert",
    "Exporters",
    "Fraction",
    "GPUAlerts",
    "GPUBandwidthThrashAlert",
    "GPUIdleQueueAlert",
    "GPUJoin",
    "GPULeakAlert",
    "GPUPredictedOOMAlert",
    "GPUTemperatureAlert",
    "GPUThrottleAlert",
    "GPUWindowAlert",
    "HungEngineAlert",
    "Intervals",
    "KVCache",
    "KVCacheAlerts",
    "KVPreemptionAlert",
    "KVSaturationAlert",
    "KVThrashAlert",
    "LabelPair",
    "LatencySLO",
    "MoE",
    "MoEAlerts",
    "MoEImbalanceAlert",
    "NonNegative",
    "PrefixCollapseAlert",
    "QueueBuildUpAlert",
    "SLOOverride",
    "SLOs",
    "Selectors",
    "ServingAlerts",
    "Severity",
    "SpecDecode",
    "SpecDecodeAlerts",
    "TrafficStopAlert",
    "default_data",
    "load_config",
    "parse_config",
]


class ConfigError(InputError):
    """The config is invalid. ``problems`` lists (path, message) pairs."""

    what = "config"


# A minute of alerting behaviour in a second at most: past that, every window is a single scrape.
MAX_TIME_SCALE = 3600


class Config(Strict):
    """Root of infersight.yaml."""

    # Divide every scrape, evaluation, window and for: by this factor (1 in production). The
    # validation profile uses e.g. 60, so an hour of alerting behaviour takes a minute.
    time_scale: float = Field(default=1.0, ge=1, le=MAX_TIME_SCALE)
    selectors: Selectors = Selectors()
    intervals: Intervals = Intervals()
    buckets: Buckets = Buckets()
    slo: SLOs = SLOs()
    alerts: Alerts = Alerts()
    dashboards: Dashboards = Dashboards()
    kv_cache: KVCache = KVCache()
    spec_decode: SpecDecode = SpecDecode()
    moe: MoE = MoE()
    deploy: Deploy = Deploy()
    gpu: GPU = GPU()
    exporters: Exporters = Exporters()
    autoscaling: Autoscaling = Autoscaling()

    @model_validator(mode="after")
    def _thresholds_are_buckets(self) -> Config:
        problems = thresholds_off_buckets(self.slo, self.buckets)
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self

    @model_validator(mode="after")
    def _pack_windows_hold_enough_scrapes(self) -> Config:
        """Each pack section names its windows; the scrape interval they must hold is serving's."""
        problems = [
            f"{name}.{path}: window {w} must cover at least 4 scrapes ({self.intervals.scrape} each)"
            for name, section in self.pack_sections().items()
            for path, w in section.windows().items()
            if w < self.intervals.scrape * 4
        ]
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self

    def pack_sections(self) -> dict[str, PackSection]:
        """The top-level sections that one pack owns, by key, in the order of the file."""
        return {
            name: section for name in type(self).model_fields if isinstance(section := getattr(self, name), PackSection)
        }

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
