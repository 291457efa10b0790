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

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infersight import catalog
from infersight.durations import Duration

Severity = Literal["critical", "warning", "info"]

_MATCHER = re.compile(r'^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*$')
_UID = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
_MODEL_LABEL_VALUE = re.compile(r"^[^\n\r]{1,200}$")


class ConfigError(ValueError):
    """The config is invalid. ``problems`` lists (path, message) pairs."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {path}: {msg}" for path, msg in problems)
        super().__init__(f"invalid config {source}:\n{lines}")


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
        BurnWindow(severity=s, long=Duration.parse(lg), short=Duration.parse(sh), factor=f)
        for s, lg, sh, f in rows
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

    def d(self, nominal: Duration) -> Duration:
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


_PATH_PREFIX = re.compile(r"^([A-Za-z_][\w.\-]*): (.*)$", re.S)


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Turn pydantic's errors into (field path, message) pairs a user can act on."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"] if not str(p).startswith("function-")]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key; check the spelling against `infersight init`"
        value = err.get("input")
        if isinstance(value, dict):
            # A cross-field check on a whole section: the message names its own sub-path.
            for part in msg.split(" ;; "):
                m = _PATH_PREFIX.match(part)
                sub = m.group(1) if m else ""
                path = ".".join([*loc, sub] if sub else loc)
                problems.append((path or "(root)", m.group(2) if m else part))
            continue
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        problems.append((".".join(loc) or "(root)", f"{msg} (got {shown})"))
    return problems


def parse_config(data: Any, source: str = "<config>") -> Config:
    """Validate already-parsed YAML data. Raises only ConfigError."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, [("(root)", f"must be a mapping of settings, got {type(data).__name__}")])
    try:
        return Config.model_validate(_overlay(default_data(), data))
    except ValidationError as exc:
        raise ConfigError(source, _problems(exc)) from None
    except (TypeError, ArithmeticError) as exc:  # defensive: odd YAML scalars
        raise ConfigError(source, [("(root)", str(exc))]) from None


def load_config(path: Path | None) -> Config:
    """Load infersight.yaml; ``None`` gives the embedded defaults."""
    if path is None:
        return Config()
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [("(file)", f"cannot read: {exc}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(source, [("(file)", f"not valid YAML: {exc}")]) from None
    return parse_config(data, source)
