"""Which dashboard panels had data during a run: each panel's queries, as Grafana would send them
with every variable on "All", asked of Prometheus over the run's window (for the report).

A panel had data when one of its queries returned a sample in the window. ``$__rate_interval`` is
Grafana's floor for it, four scrape intervals: the shortest window its dashboards would ask for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from infersight.bundle import Dashboard
from infersight.lint import dashboard_queries, flag_gated, substitute
from infersight.validate.apis import ApiError, PrometheusApi

MAX_POINTS = 500  # per query: enough to find a sample, cheap for Prometheus


@dataclass(frozen=True)
class PanelCheck:
    id: int | None
    title: str
    kind: str  # the panel type: timeseries, stat, ...
    queries: int
    series: int  # series with at least one sample in the window, over all the panel's queries
    errors: tuple[str, ...] = ()
    no_value: str = ""  # what the panel shows without data (e.g. the vLLM flag its series need)

    @property
    def had_data(self) -> bool:
        return self.series > 0


@dataclass(frozen=True)
class DashboardCheck:
    file: str
    uid: str
    title: str
    panels: tuple[PanelCheck, ...]

    @property
    def with_data(self) -> int:
        return sum(p.had_data for p in self.panels)


def rate_interval(scrape_s: float) -> str:
    return f"{4 * scrape_s:g}s"


def _has_sample(series: Mapping[str, Any]) -> bool:
    return any(not math.isnan(float(value)) for _, value in series.get("values", []))


class _Checker:
    """Asks one Prometheus; once it stops answering, the remaining panels say so instead of each
    waiting for its own timeout."""

    def __init__(self, prom: PrometheusApi, start: float, end: float, scrape_s: float):
        self.prom = prom
        self.start, self.end = start, end
        self.step = max(scrape_s, (end - start) / MAX_POINTS)
        self.window = rate_interval(scrape_s)
        self.gone: str | None = None

    def panel(self, panel: Mapping[str, Any]) -> PanelCheck:
        # dashboard_queries of a board holding only this panel: its targets, as the linter reads them.
        queries = [expr for _, expr in dashboard_queries({"panels": [panel]})]
        series, errors = 0, []
        for expr in queries:
            if self.gone:
                errors.append(f"not asked: {self.gone}")
                break
            plain = substitute(expr.replace("$__rate_interval", self.window))
            try:
                result = self.prom.query_range(plain, self.start, self.end, self.step)
            except ApiError as exc:
                if not self.prom.ready():
                    self.gone = f"Prometheus stopped answering ({exc})"
                errors.append(str(exc))
                continue
            series += sum(_has_sample(s) for s in result)
        raw_id = panel.get("id")
        return PanelCheck(
            raw_id if isinstance(raw_id, int) else None,
            str(panel.get("title") or "(untitled)"),
            str(panel.get("type")),
            len(queries),
            series,
            tuple(errors),
            str(panel["fieldConfig"]["defaults"]["noValue"]) if flag_gated(panel) else "",
        )


def check_dashboards(
    prom: PrometheusApi, dashboards: Iterable[Dashboard], start: float, end: float, scrape_s: float
) -> list[DashboardCheck]:
    """Every panel (rows aside) of every dashboard, asked of ``prom`` over ``start``..``end``."""
    checker = _Checker(prom, start, end, scrape_s)
    return [
        DashboardCheck(
            d.file,
            str(d.model.get("uid")),
            str(d.model.get("title")),
            tuple(checker.panel(p) for p in d.model.get("panels", []) if p.get("type") != "row"),
        )
        for d in dashboards
    ]
