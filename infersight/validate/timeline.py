"""What a validation run observed, in Unix time (seconds): alert intervals and fault actions.

An :class:`AlertInterval` is one activation of one alert (one label set): pending from
``pending_at`` (Prometheus's ``activeAt``), firing from ``firing_at`` (the first poll that saw it
firing, or never), in Alertmanager from ``received_at``, and over at ``resolved_at`` (the first
poll that no longer saw it, or still open).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ActionStatus = Literal["done", "skipped", "failed"]

# Labels that say what an alert is about; others (descriptions' inputs) are shown only in full views.
IDENTIFYING_LABELS = ("instance", "model_name", "engine", "gpu", "layer", "job")


@dataclass
class AlertInterval:
    name: str
    labels: dict[str, str]
    pending_at: float
    firing_at: float | None = None
    received_at: float | None = None  # first seen in Alertmanager
    resolved_at: float | None = None

    @property
    def key(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.labels.items()))

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "")

    @property
    def component(self) -> str:
        return self.labels.get("component", "")

    @property
    def fired(self) -> bool:
        return self.firing_at is not None

    def firing_overlaps(self, start: float, end: float) -> bool:
        """Whether it was firing at any moment of [start, end)."""
        if self.firing_at is None:
            return False
        stop = self.resolved_at if self.resolved_at is not None else float("inf")
        return self.firing_at < end and stop > start

    def describe(self) -> str:
        """The alert name and its identifying labels, e.g. ``InfersightVLLMTargetDown{instance=...}``."""
        shown = [f"{k}={self.labels[k]}" for k in IDENTIFYING_LABELS if k in self.labels]
        return f"{self.name}{{{', '.join(shown)}}}" if shown else self.name


@dataclass(frozen=True)
class ActionOutcome:
    """One ``actions:`` entry as performed: planned offset, when it started and ended, and how."""

    name: str
    kind: str
    planned_at: float  # Unix time the scenario asked for
    status: ActionStatus
    started_at: float | None = None
    finished_at: float | None = None
    detail: str = ""
