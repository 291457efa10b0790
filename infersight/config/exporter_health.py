"""Settings of the exporter_health pack: the health of infersight's own exporters. Its section of
infersight.yaml is ``exporters:``."""

from __future__ import annotations

from infersight.config.common import AlertRule, NonNegative, PackSection, Strict
from infersight.durations import Duration


class ExporterStaleAlert(AlertRule):
    after: Duration = Duration.parse("5m")  # last successful collection older than this


class ExporterErrorsAlert(AlertRule):
    window: Duration = Duration.parse("10m")
    min_errors: NonNegative = 0.0  # errors of one kind in the window above this, for the whole for:


class ExporterAlerts(Strict):
    down: AlertRule = AlertRule(for_=Duration.parse("5m"), severity="warning")
    stale: ExporterStaleAlert = ExporterStaleAlert(for_=Duration.parse("2m"), severity="warning")
    errors: ExporterErrorsAlert = ExporterErrorsAlert(for_=Duration.parse("15m"), severity="warning")


class Exporters(PackSection):
    """Health of infersight's own exporters (selectors.gpu_exporter, selectors.moe_exporter)."""

    alerts: ExporterAlerts = ExporterAlerts()

    def windows(self) -> dict[str, Duration]:
        return {"alerts.errors.window": self.alerts.errors.window}
