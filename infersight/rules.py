"""Rule-file model: recording rules, alerts and groups, with the naming and annotation
conventions enforced where the rules are made (not in a test after the fact)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from infersight.durations import Duration

Component = Literal["serving", "kv_cache", "moe", "gpu", "exporter"]
COMPONENTS: tuple[str, ...] = ("serving", "kv_cache", "moe", "gpu", "exporter")

_RECORD_NAME = re.compile(r"^[a-z_]+:[a-zA-Z0-9_]+:[a-z0-9_]+$")
_ALERT_NAME = re.compile(r"^Infersight[A-Z][A-Za-z0-9]*$")


def is_alert_name(name: str) -> bool:
    """The alert names of docs/architecture.md: CamelCase, ``Infersight`` first, at most 40 characters."""
    return bool(_ALERT_NAME.match(name)) and len(name) <= 40


class RuleConventionError(ValueError):
    """A rule breaks the naming or annotation conventions (docs/architecture.md)."""


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _RECORD_NAME.match(self.record):
            raise RuleConventionError(f"recording rule {self.record!r} is not named level:metric:operation")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(sorted(self.labels.items()))
        return out


@dataclass(frozen=True)
class Alert:
    alert: str
    expr: str
    severity: str
    component: Component
    summary: str
    description: str
    runbook_url: str
    for_: Duration | None = None  # None only for multi-window burn-rate alerts
    extra_labels: dict[str, str] = field(default_factory=dict)
    burn_rate: bool = False

    def __post_init__(self) -> None:
        problems = []
        if not is_alert_name(self.alert):
            problems.append("name must be CamelCase, start with 'Infersight' and be at most 40 characters")
        if self.severity not in ("critical", "warning", "info"):
            problems.append(f"severity {self.severity!r} is not critical, warning or info")
        if self.component not in COMPONENTS:
            problems.append(f"component {self.component!r} is not one of {COMPONENTS}")
        if not (self.summary[:1].isupper() and self.summary.endswith(".")) or "{{" in self.summary:
            problems.append("summary must be static, start with a capital letter and end with a period")
        if "{{" not in self.description:
            problems.append("description must be templated with labels or the value")
        if self.for_ is None and not self.burn_rate:
            problems.append("every alert needs for: unless it is a multi-window burn-rate alert")
        if problems:
            raise RuleConventionError(f"alert {self.alert}: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alert": self.alert, "expr": self.expr}
        if self.for_ is not None:
            out["for"] = str(self.for_)
        labels = {"severity": self.severity, "component": self.component, **self.extra_labels}
        out["labels"] = dict(sorted(labels.items()))
        out["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": self.runbook_url,
        }
        return out


@dataclass(frozen=True)
class RuleGroup:
    name: str
    interval: Duration
    rules: tuple[RecordingRule | Alert, ...]
    # Read at every evaluation: by something outside the bundle (an autoscaler), or sampled by an
    # alert that counts the group's samples over a window, whose resolution is the interval (the
    # throttling share: 20 samples over 10 m, not 10). Never moved to the dashboard interval
    # (infersight.evaluation_intervals). Not written out.
    every_evaluation: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "interval": str(self.interval), "rules": [r.to_dict() for r in self.rules]}


def rule_file(groups: list[RuleGroup]) -> dict[str, Any]:
    return {"groups": [g.to_dict() for g in groups]}
