"""Settings of the speculative-decoding pack (``spec_decode:``)."""

from __future__ import annotations

from pydantic import Field

from infersight.config.common import AlertRule, Fraction, NonNegative, PackSection, Strict
from infersight.durations import Duration


class AcceptanceCollapseAlert(AlertRule):
    """A server's draft acceptance rate fell far below its own baseline: the drafter (a draft
    model, n-gram lookup, EAGLE heads) stopped paying for the verification it costs."""

    drop_fraction: float = Field(default=0.5, gt=0, lt=1)  # fires below (1 - drop) x baseline
    baseline_window: Duration = Duration.parse("1h")
    baseline_offset: Duration = Duration.parse("1h")  # the baseline ends this long ago
    min_baseline_ratio: Fraction = 0.1  # a drafter accepted this rarely had nothing left to lose
    min_draft_tokens_per_second: NonNegative = 1.0  # proposed tokens needed to judge a ratio


class SpecDecodeAlerts(Strict):
    acceptance_collapse: AcceptanceCollapseAlert = AcceptanceCollapseAlert(
        for_=Duration.parse("15m"), severity="warning"
    )


class SpecDecode(PackSection):
    """Speculative-decoding pack; its rates use intervals.rate, like the serving pack. Its series
    exist only on servers started with --speculative-config; elsewhere its rules record nothing."""

    alerts: SpecDecodeAlerts = SpecDecodeAlerts()

    def windows(self) -> dict[str, Duration]:
        return {"alerts.acceptance_collapse.baseline_window": self.alerts.acceptance_collapse.baseline_window}
