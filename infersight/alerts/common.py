"""Helpers shared by the alert packs."""

from __future__ import annotations

from infersight import conventions
from infersight.config import AlertRule, Config
from infersight.promql import number as num
from infersight.rules import Alert, Component


def on(labels: tuple[str, ...]) -> str:
    return f"on ({', '.join(labels)})"


def tuned_alert(
    cfg: Config, component: Component, name: str, rule: AlertRule, expr: str, summary: str, description: str
) -> Alert:
    """An alert whose for: and severity come from its config section."""
    return Alert(
        alert=name,
        expr=expr,
        for_=cfg.scaled(rule.for_),
        severity=rule.severity,
        component=component,
        summary=summary,
        description=description,
        runbook_url=conventions.runbook_url(cfg.alerts.runbook_base_url, name),
    )


def collapse(
    current: str,
    baseline: str,
    by: tuple[str, ...],
    drop_fraction: float,
    min_baseline: float,
    volume: str,
    min_volume: float,
) -> str:
    """A ratio under ``(1 - drop_fraction)`` of its own baseline, judged only where the baseline had
    something to lose and enough ``volume`` (the ratio's denominator) flows now to trust it."""
    return (
        f"{current}\n< {num(1 - drop_fraction)} * {baseline}\n"
        f"and {on(by)}\n{baseline} > {num(min_baseline)}\n"
        f"and {on(by)}\n{volume} > {num(min_volume)}"
    )
