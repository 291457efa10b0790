"""Shared pieces of every infersight dashboard, on top of grafana-foundation-sdk.

Conventions live here so each dashboard module only says what it shows: one
``datasource`` variable, chained label variables, panels that always carry a title,
description and unit, stable UIDs and panel ids, and JSON with sorted keys.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders.dashboard import (
    Dashboard,
    DashboardLink,
    DatasourceVariable,
    QueryVariable,
    Row,
    ThresholdsConfig,
)
from grafana_foundation_sdk.builders.heatmap import CellValues, HeatmapColorOptions, HeatmapTooltip, RowsHeatmapOptions
from grafana_foundation_sdk.builders.heatmap import Panel as HeatmapPanel
from grafana_foundation_sdk.builders.heatmap import YAxisConfig as HeatmapYAxis
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as StatPanel
from grafana_foundation_sdk.builders.table import Panel as TablePanel
from grafana_foundation_sdk.builders.timeseries import Panel as TimeseriesPanel
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dashboard_model
from grafana_foundation_sdk.models import heatmap as heatmap_model
from grafana_foundation_sdk.models import prometheus as prometheus_model
from grafana_foundation_sdk.models.common import (
    BigValueGraphMode,
    DataSourceRef,
    HeatmapCellLayout,
    LegendDisplayMode,
    LegendPlacement,
    StackingMode,
    TooltipDisplayMode,
)

from infersight import conventions, promql
from infersight.config import Config

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
_REF_IDS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False
    table: bool = False  # one row per series, its labels as columns (a table panel's query)
    buckets: bool = False  # histogram buckets by le: Grafana turns the cumulative counts into per-bucket rows


def filters(*labels: str) -> list[str]:
    """Matchers that apply the dashboard's chained variables, e.g. job=~"$job"."""
    return [f'{label}=~"${label}"' for label in labels]


def model_quantiles(cfg: Config, metric: str, quantiles: Sequence[float], label: str = "") -> list[Query]:
    """One line per recorded per-model quantile of a histogram, e.g. "p95 sync tiny-moe"."""
    return [
        Query(
            promql.recorded(conventions.quantile(cfg, metric, "model", qv), filters("job", "model_name")),
            f"p{round(qv * 100)} {label}{{{{model_name}}}}",
        )
        for qv in quantiles
    ]


def _targets(queries: Sequence[Query]) -> list[Builder[Any]]:
    out: list[Builder[Any]] = []
    for ref, query in zip(_REF_IDS, queries, strict=False):
        t = Dataquery().expr(query.expr).ref_id(ref).datasource(DATASOURCE)
        if query.legend:
            t = t.legend_format(query.legend)
        if query.instant:
            t = t.instant()
        if query.table:
            t = t.format(prometheus_model.PromQueryFormat.TABLE)
        if query.buckets:
            t = t.format(prometheus_model.PromQueryFormat.HEATMAP)
        out.append(t)
    if len(queries) > len(_REF_IDS):
        raise ValueError("a panel may hold at most 26 queries")
    return out


def _thresholds(steps: Sequence[tuple[float | None, str]]) -> ThresholdsConfig:
    return (
        ThresholdsConfig()
        .mode(dashboard_model.ThresholdsMode.ABSOLUTE)
        .steps([dashboard_model.Threshold(value=v, color=c) for v, c in steps])
    )


AnyPanel = TypeVar("AnyPanel", TimeseriesPanel, StatPanel, HeatmapPanel, TablePanel)


def _basics(
    panel: AnyPanel, title: str, description: str, unit: str, queries: Sequence[Query], width: int, height: int
) -> AnyPanel:
    """What every panel carries: title, description, unit, the $datasource and a grid size."""
    return (
        panel.title(title)
        .description(description)
        .unit(unit)
        .datasource(DATASOURCE)
        .targets(_targets(queries))
        .span(width)
        .height(height)
    )


def timeseries(
    title: str,
    description: str,
    unit: str,
    queries: Sequence[Query],
    *,
    width: int = 12,
    height: int = 8,
    min_val: float | None = 0,
    max_val: float | None = None,
    stacked: bool = False,
    no_value: str | None = None,
    links: Sequence[DashboardLink] = (),
) -> TimeseriesPanel:
    """``no_value``: what the panel says instead of "No data", e.g. the flag its series need;
    ``links``: data links from a clicked series (e.g. to its traces)."""
    panel = (
        _basics(TimeseriesPanel(), title, description, unit, queries, width, height)
        .fill_opacity(10)
        .legend(
            common_builders.VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.TABLE)
            .placement(LegendPlacement.BOTTOM)
            .calcs(["lastNotNull", "max"])
        )
    )
    if min_val is not None:
        panel = panel.min(min_val)
    if max_val is not None:
        panel = panel.max(max_val)
    if stacked:
        panel = panel.stacking(common_builders.StackingConfig().mode(StackingMode.NORMAL))
    if no_value is not None:
        panel = panel.no_value(no_value)
    if links:
        panel = panel.data_links(list(links))
    return panel


def stat(
    title: str,
    description: str,
    unit: str,
    queries: Sequence[Query],
    *,
    width: int = 6,
    height: int = 4,
    thresholds: Sequence[tuple[float | None, str]] = ((None, "green"),),
    decimals: int | None = None,
) -> StatPanel:
    panel = (
        _basics(StatPanel(), title, description, unit, queries, width, height)
        .graph_mode(BigValueGraphMode.AREA)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .thresholds(_thresholds(thresholds))
    )
    if decimals is not None:
        panel = panel.decimals(decimals)
    return panel


@dataclass(frozen=True)
class Column:
    """One value column of a table: its query (instant, one series per row), its header, its unit,
    and the value from which its cell turns red (None: never coloured)."""

    expr: str
    header: str
    unit: str
    red_from: float | None = None


def table(
    title: str,
    description: str,
    key: Sequence[str],
    columns: Sequence[Column],
    *,
    width: int = 24,
    height: int = 10,
    no_value: str | None = None,
    links: Sequence[DashboardLink] = (),
) -> TablePanel:
    """One row per ``key`` (label columns), one column per query: the queries' instant results
    merged on their labels. A column with ``red_from`` colours each cell past it. ``no_value``: what
    it says instead of "No data"."""
    # Summed by the key: one row per key, and no __name__ (a column's metric name differs from
    # the next one's, and Grafana's merge keeps rows apart that differ in any shared label).
    queries = [Query(promql.sum_by(key, c.expr), instant=True, table=True) for c in columns]
    values = {f"Value #{ref}": c for ref, c in zip(_REF_IDS, columns, strict=False)}
    organize = {
        "excludeByName": {"Time": True, "__name__": True},
        "indexByName": {name: i for i, name in enumerate([*key, *values])},
        "renameByName": {name: c.header for name, c in values.items()},
    }
    panel = (
        _basics(TablePanel(), title, description, "none", queries, width, height)
        .transformations(
            [
                dashboard_model.DataTransformerConfig(id_val="merge", options={}),
                dashboard_model.DataTransformerConfig(id_val="organize", options=organize),
            ]
        )
        .filterable(True)
    )
    if no_value is not None:
        panel = panel.no_value(no_value)
    if links:
        panel = panel.data_links(list(links))
    for c in columns:
        properties = [dashboard_model.DynamicConfigValue(id_val="unit", value=c.unit)]
        if c.red_from is not None:
            properties += [
                dashboard_model.DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
                dashboard_model.DynamicConfigValue(
                    id_val="thresholds",
                    value={
                        "mode": "absolute",
                        "steps": [{"color": "green", "value": None}, {"color": "red", "value": c.red_from}],
                    },
                ),
            ]
        panel = panel.override_by_name(c.header, properties)
    return panel


def heatmap(
    title: str,
    description: str,
    unit: str,
    queries: Sequence[Query],
    *,
    width: int = 24,
    height: int = 10,
    max_val: float | None = None,
) -> HeatmapPanel:
    """Each series is one row (its legend names it), time runs along x, colour is the value.
    Nothing is re-binned (calculate off): the rows are the series, e.g. one per expert. With
    bucket queries (``Query.buckets``) the rows are the histogram's buckets, each named by its
    upper bound (``le``)."""
    layout = HeatmapCellLayout.LE if any(q.buckets for q in queries) else HeatmapCellLayout.UNKNOWN
    color = (
        HeatmapColorOptions()
        .mode(heatmap_model.HeatmapColorMode.SCHEME)
        .scheme("Oranges")
        .fill("dark-orange")
        .scale(heatmap_model.HeatmapColorScale.EXPONENTIAL)
        .exponent(0.5)
        .steps(64)
        .reverse(False)
        .min(0)
    )
    if max_val is not None:
        color = color.max(max_val)
    return (
        _basics(HeatmapPanel(), title, description, unit, queries, width, height)
        .calculate(False)
        .rows_frame(RowsHeatmapOptions().layout(layout))
        .color(color)
        .cell_values(CellValues().unit(unit))
        .y_axis(HeatmapYAxis().reverse(False))
        .show_legend()
        .tooltip(HeatmapTooltip().mode(TooltipDisplayMode.SINGLE).y_histogram(False).show_color_scale(True))
    )


def chained_variables(values_from: str, labels: Sequence[str], single: Sequence[str] = ()) -> list[QueryVariable]:
    """Each variable's values are filtered by the variables before it (job -> model_name -> ...).
    Variables are multi-select with All, except those in ``single``: one value, no All, so Grafana
    starts on the first (a drill-down that would be unreadable, and costly, across a fleet)."""
    variables = []
    for i, label in enumerate(labels):
        selector = promql.recorded(values_from, filters(*labels[:i]))
        query = f"label_values({selector}, {label})"
        variable = (
            QueryVariable(label)
            .label(label)
            .datasource(DATASOURCE)
            .query(query)  # a plain string: the form Grafana's schema and every version accept
            .definition(query)
            .refresh(dashboard_model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(dashboard_model.VariableSort.ALPHABETICAL_ASC)
        )
        if label in single:
            variable = variable.include_all(False).multi(False)
        else:
            variable = (
                variable.include_all(True)
                .all_value(".*")
                .multi(True)
                .current(dashboard_model.VariableOption(selected=True, text=["All"], value=["$__all"]))
            )
        variables.append(variable)
    return variables


@dataclass(frozen=True)
class Section:
    title: str
    panels: Sequence[Builder[Any]]


def render(
    cfg: Config,
    *,
    name: str,
    title: str,
    description: str,
    variables_from: str,
    variable_labels: Sequence[str],
    sections: Sequence[Section],
    single_variables: Sequence[str] = (),
) -> dict[str, Any]:
    """Assemble, number and serialise a dashboard. Same input, same dict."""
    dc = cfg.dashboards
    board = (
        Dashboard(title)
        .uid(dc.uid(name))
        .description(description)
        .tags(sorted(dc.tags))
        .refresh(dc.refresh)
        .time(dc.time_from, "now")
        .timezone("browser")
        .editable()
        .tooltip(dashboard_model.DashboardCursorSync.CROSSHAIR)
        .with_variable(
            DatasourceVariable("datasource")
            .label("Data source")
            .type("prometheus")
            .current(dashboard_model.VariableOption(selected=True, text=dc.datasource_uid, value=dc.datasource_uid))
        )
    )
    for var in chained_variables(variables_from, variable_labels, single_variables):
        board = board.with_variable(var)
    for section in sections:
        board = board.with_row(Row(section.title))
        for panel in section.panels:
            board = board.with_panel(panel)
    data: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True).encode(board.build()))
    for i, panel in enumerate(data.get("panels", []), start=1):
        panel["id"] = i  # stable ids: Grafana links and alerts refer to panels by id
    data["version"] = 1
    return data
