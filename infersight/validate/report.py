"""The validation report: ``index.html`` (summary per alert, then per scenario the load, the
actions, the expectations met or missed, a plot with alert bands, client-versus-server TTFT and
every alert seen; then, when given, each dashboard's panels and whether they had data during the
run, with links into a Grafana showing them), ``plots/*.png`` and ``validation.json`` with the same
figures for machines.

Every file is written atomically. Nothing here sees prompt or completion text: the load
generator's results hold counts and times only.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import infersight
from infersight.output import dump_json, write_atomic
from infersight.stack.grafana import dashboard_url
from infersight.traces.join import TTFT_TOLERANCE_S, TTFT_TOLERANCE_SHARE, gap_summary
from infersight.validate import plots, trace_view
from infersight.validate.dashboard_data import DashboardCheck
from infersight.validate.evaluator import ExpectationResult, Summary, faults, summarize
from infersight.validate.series import CLIENT_QUANTILES
from infersight.validate.session import ScenarioRun

INDEX = "index.html"
JSON = "validation.json"
PLOTS = "plots"
_PLOT_NAME = re.compile(r"^\d{2}-[a-z0-9_-]+\.png$")


@dataclass
class ReportMeta:
    time_scale: float
    prometheus: str
    alertmanager: str | None
    known_alerts: list[str] = field(default_factory=list)  # every alert rule loaded in Prometheus
    notes: list[str] = field(default_factory=list)  # e.g. scenarios `up` skipped, where the bundle is
    dashboards: list[DashboardCheck] = field(default_factory=list)  # panels and whether they had data
    grafana_url: str | None = None  # a Grafana showing those dashboards with this run's data
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


class _Html(str):
    """A table cell that is already HTML (a link), not text to escape."""


def _s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], classes: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for k, row in enumerate(rows):
        cls = f' class="{_e(classes[k])}"' if k < len(classes) and classes[k] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c if isinstance(c, _Html) else _e(c)}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _scale_text(factor: float) -> str:
    if factor == 1:
        return "1 (production timings)"
    return (
        f"{factor:g}: every scrape and evaluation interval, rate and burn window and for: of the bundle is divided by "
        f"{factor:g} (1h runs as {3600 / factor:g}s, 5m as {300 / factor:g}s); only page-severity burn windows "
        "fit in a run of minutes"
    )


def _rel(t: float | None, t0: float) -> str:
    return "-" if t is None else f"+{t - t0:.1f}"


# --- sections -----------------------------------------------------------------------------------


def _summary_section(summary: Summary, factor: float) -> str:
    rows, classes = [], []
    for s in summary.alerts:
        fp_rate = summary.false_positives_per_hour(s)
        rate = s.detection_rate
        rows.append(
            [
                s.alert,
                s.expected or "-",
                s.detected if s.expected else "-",
                "-" if rate is None else f"{rate:.0%}",
                _s(s.median_ttd_s),
                s.false_positives,
                _s(fp_rate, 2),
            ]
        )
        exercised = s.expected or s.false_positives
        classes.append(
            ("bad" if (rate is not None and rate < 1) or s.false_positives else "") or ("" if exercised else "dim")
        )
    healthy_min = summary.healthy_s / 60
    return (
        "<h2>Alerts</h2>"
        + _table(
            (
                "alert",
                "expected to fire",
                "detected",
                "detection rate",
                "median time to detect (s)",
                "false positives",
                "false positives per hour of healthy traffic",
            ),
            rows,
            classes,
        )
        + f"<p>Healthy traffic observed: {healthy_min:.1f} min (about {healthy_min * factor / 60:.1f} h at production "
        f"timings, time scale {factor:g}). Times to detect are measured from the fault's start to the first poll that "
        "saw the alert firing in Prometheus; they are wall-clock seconds of the scaled run.</p>"
    )


def _expectation_rows(results: Sequence[ExpectationResult]) -> tuple[list[list[object]], list[str]]:
    rows: list[list[object]] = []
    classes = []
    for e in results:
        when = (
            f"{e.fault} at +{e.fault_offset_s:.1f}s, within {e.within_s:g}s"
            if e.kind in ("fire", "resolve") and e.fault_offset_s is not None and e.within_s is not None
            else (", ".join(e.during) if e.during else "whole scenario")
        )
        detail = e.detail + (": " + "; ".join(e.offenders) if e.offenders else "")
        rows.append([e.status.upper(), e.kind, e.selector, when, _s(e.ttd_s), _s(e.received_s), e.alert or "", detail])
        classes.append({"met": "good", "missed": "bad", "skipped": "dim"}[e.status])
    return rows, classes


def _load_section(load: dict[str, Any]) -> str:
    summary = load["summary"]
    rows = []
    for st in summary["stages"]:
        requested = "idle"
        if st["mode"] == "rate":
            requested = f"{st['requested_rate']:g}/s"
        elif st["mode"] == "concurrency":
            requested = f"{st['concurrency']} streams"
        rows.append(
            [
                st["name"],
                st.get("fault") or "",
                requested,
                _s(st.get("achieved_rate"), 2),
                st["sent"],
                st["succeeded"],
                ", ".join(f"{k}: {v}" for k, v in st["errors"].items()) or "-",
                _s(st["ttft_s"]["p95"], 3),
                _s(st["schedule_lag_ms"]["p99"], 2),
                f"{st['schedule_lag_late']} (≤ {st['schedule_lag_late_allowed']})" if "schedule_lag_late" in st else "",
            ]
        )
    validity = "valid" if summary["valid"] else "INVALID: " + "; ".join(summary["invalid_reasons"])
    notes = "".join(f"<li>{_e(n)}</li>" for n in summary["notes"])
    return (
        f"<p>Load: {_e(validity)}; ended {_e(summary['ended'])}.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
        + _table(
            (
                "stage",
                "fault",
                "requested",
                "achieved req/s",
                "sent",
                "succeeded",
                "errors",
                "client TTFT p95 (s)",
                "schedule lag p99 (ms)",
                "sends late (allowed)",
            ),
            rows,
        )
    )


def _agreement_section(run: ScenarioRun) -> str:
    client = run.load["summary"]["overall"]["ttft_s"]
    server = run.server_ttft
    rows = []
    for qv in CLIENT_QUANTILES:
        c = client.get(f"p{round(qv * 100)}")
        s = server.quantiles.get(qv)
        gap = None if c is None or s is None else c - s
        pct = None if gap is None or not s else 100 * gap / s
        rows.append([f"p{round(qv * 100)}", _s(c, 3), _s(s, 3), _s(None if gap is None else gap * 1000, 0), _s(pct, 0)])
    count = "-" if server.count is None else f"{server.count:.0f}"
    return (
        "<h4>Client versus server TTFT</h4>"
        + _table(("quantile", "client (s)", "server histogram (s)", "gap client - server (ms)", "gap (%)"), rows)
        + f"<p>Requests with a first token: client {client['count']}, server histogram {count} (over "
        f"{server.window_s:g}s). The server's quantiles are interpolated within histogram buckets "
        "(0.1, 0.25, 0.5, 0.75, 1, 2.5, 5 s ...), so gaps within a bucket's width are resolution, not "
        "disagreement; the client adds HTTP, queueing in the API server and stream parsing.</p>"
    )


_SLOWEST_HEADERS = (
    "trace ID", "sent (s)", "outcome", "client TTFT (s)", "client e2e (s)",
    "queue (s)", "prefill (s)", "decode (s)", "span TTFT (s)", "span e2e (s)",
)  # fmt: skip


def _traces_section(run: ScenarioRun) -> str:
    view = run.traces
    if view is None:
        return ""
    text = "<h4>Requests and vLLM's spans</h4>"
    if view.join is None:
        return text + f"<p>{_e(view.problem)}</p>"
    j, t0 = view.join, run.window.start
    agree, compared = j.agreeing()
    gaps = gap_summary(j.ttft_gaps())
    text += (
        f"<p>Spans from {_e(view.receiver)}: {j.matched} of {len(j.requests)} requests matched by trace ID "
        f"({len(j.ok_requests) - j.ok_without_span} of {len(j.ok_requests)} successful ones); "
        f"{j.duplicated} trace(s) with more than one request span; {j.foreign_spans} span(s) of other clients.</p>"
    )
    if gaps is not None:
        text += (
            f"<p>Client TTFT against the span's, per request: {agree} of {compared} agree within "
            f"{TTFT_TOLERANCE_S * 1000:.0f} ms or {TTFT_TOLERANCE_SHARE:.0%} of the client's TTFT; gap client - span "
            f"median {gaps['median_s'] * 1000:.0f} ms, 95% within {gaps['p95_abs_s'] * 1000:.0f} ms, largest "
            f"{gaps['max_abs_s'] * 1000:.0f} ms.</p>"
        )
    for a in view.alerts:
        rows = [
            [r.trace_id, _rel(r.sent_at, t0), "ok" if r.ok else "error", _s(r.client_ttft, 3), _s(r.client_e2e, 3)]
            + [_s(None if r.span is None else r.span.get(attr), 3) for _, attr in trace_view.STAGES]
            for r in a.slowest
        ]
        text += f"<p>Slowest requests sent from {a.since - t0:+.1f} s until {_e(a.alert.describe())} fired:</p>"
        text += _table(_SLOWEST_HEADERS, rows) if rows else "<p>None was sent then.</p>"
    return text


def _alerts_section(run: ScenarioRun) -> str:
    t0 = run.window.start
    rows = [
        [i.describe(), i.severity, i.component, _rel(i.pending_at, t0), _rel(i.firing_at, t0), _rel(i.received_at, t0),
         _rel(i.resolved_at, t0) if i.resolved_at is not None else "still active"]
        for i in run.intervals
    ]  # fmt: skip
    text = "<h4>Alerts seen</h4>"
    if rows:
        text += _table(
            ("alert", "severity", "component", "pending (s)", "firing (s)", "in Alertmanager (s)", "resolved (s)"), rows
        )
    else:
        text += "<p>None went pending or firing.</p>"
    if run.other_target:
        names = sorted({i.describe() for i in run.other_target})
        text += f"<p>About other targets (not judged here): {_e(', '.join(names))}</p>"
    if run.verdict.carried_over:
        text += f"<p>Carried over from before the scenario: {_e(', '.join(run.verdict.carried_over))}</p>"
    return text


def _scenario_section(run: ScenarioRun, plot: str) -> str:
    t0 = run.window.start
    action_rows = [
        [o.name, o.kind, _rel(o.planned_at, t0), _rel(o.started_at, t0), _rel(o.finished_at, t0), o.status, o.detail]
        for o in run.outcomes
    ]
    exp_rows, exp_classes = _expectation_rows(run.verdict.expectations)
    verdict = "all expectations met" if not run.verdict.missed else f"{len(run.verdict.missed)} expectation(s) missed"
    parts = [
        f'<section id="{_e(run.scenario.name)}"><h3>{_e(run.scenario.name)}: {_e(verdict)}</h3>',
        f"<p>{_e(run.scenario.description)}</p>",
        f"<p>Scenario file {_e(run.source)}; target {_e(run.target.url)} (model {_e(run.target.model)}, "
        f"instance {_e(run.target.instance)}); observed {run.window.end - t0:.0f}s; alert polls at most "
        f"{run.poll_max_gap_s:.1f}s apart.</p>",
        _load_section(run.load),
    ]
    if action_rows:
        parts.append(
            "<h4>Actions</h4>"
            + _table(("action", "does", "planned (s)", "started (s)", "finished (s)", "status", "detail"), action_rows)
        )
    parts.append("<h4>Expectations</h4>")
    parts.append(
        _table(
            (
                "result",
                "kind",
                "alert",
                "when",
                "to detect or resolve (s)",
                "to Alertmanager (s)",
                "fired",
                "detail",
            ),
            exp_rows,
            exp_classes,
        )
        if exp_rows
        else "<p>This scenario has no expectations.</p>"
    )
    parts.append(f'<img src="{_e(plot)}" alt="{_e(run.scenario.name)} over time" width="960">')
    parts.append(_agreement_section(run))
    parts.append(_alerts_section(run))
    parts.append(_traces_section(run))
    if run.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in run.notes) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _link(url: str, text: str) -> _Html:
    return _Html(f'<a href="{_e(url)}">{_e(text)}</a>')


def _run_span(runs: Sequence[ScenarioRun]) -> tuple[float, float] | None:
    if not runs:
        return None
    return min(r.window.start for r in runs), max(r.window.end for r in runs)


def _dashboards_section(checks: Sequence[DashboardCheck], grafana: str | None, span: tuple[float, float] | None) -> str:
    start, end = span if span else (None, None)
    where = (
        f"The links open them in the Grafana at {_e(grafana)} over this run's time range, while it runs."
        if grafana
        else "No Grafana was started: <code>infersight up --keep-running</code> starts one where a Grafana server "
        "is installed, and prints a <code>docker run</code> of Grafana's image where none is."
    )
    parts = [
        "<h2>Dashboards</h2>",
        "<p>Each panel's queries, with every variable on All, asked of Prometheus over the whole run; a panel had "
        f"data when one of them returned a sample. {where}</p>",
    ]
    for board in checks:
        heading = f"{_e(board.title)} ({_e(board.file)}): {board.with_data} of {len(board.panels)} panels had data"
        parts.append(f'<section id="dashboard-{_e(board.uid)}"><h3>{heading}</h3>')
        if grafana:
            link = _link(dashboard_url(grafana, board.uid, start, end), "open in Grafana")
            parts.append(f"<p>{link}</p>")
        rows: list[list[object]] = []
        classes = []
        for panel in board.panels:
            title: object = panel.title
            if grafana and panel.id is not None:
                title = _link(dashboard_url(grafana, board.uid, start, end, panel.id), panel.title)
            data = "yes" if panel.had_data else ("no" if panel.queries else "no queries")
            if not panel.had_data and panel.no_value:
                data += f" ({panel.no_value})"
            rows.append([title, panel.kind, data, panel.series, "; ".join(panel.errors)])
            classes.append("bad" if panel.errors else ("" if panel.had_data else "dim"))
        parts.append(_table(("panel", "type", "data during the run", "series with data", "errors"), rows, classes))
        parts.append("</section>")
    return "\n".join(parts)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
tr.good td:first-child { color: #1a7f37; font-weight: bold; }
tr.bad td { background: #fde8e8; }
tr.dim td { color: #888; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
"""


def render_html(runs: Sequence[ScenarioRun], summary: Summary, meta: ReportMeta, plot_names: Sequence[str]) -> str:
    met = summary.expectations - summary.missed - summary.skipped
    overall = "PASSED" if not summary.missed else "FAILED"
    header = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>infersight validation: {overall}</title><style>{_STYLE}</style></head><body>",
        f"<h1>infersight validation: {overall}</h1>",
        f"<p>{met} of {summary.expectations} expectations met, {summary.missed} missed, {summary.skipped} skipped, "
        f"over {len(runs)} scenario(s).</p>",
        "<ul>",
        f"<li>Time scale: {_e(_scale_text(meta.time_scale))}.</li>",
        f"<li>Prometheus {_e(meta.prometheus)}; Alertmanager {_e(meta.alertmanager or 'not watched')}.</li>",
        f"<li>Generated {_e(meta.generated_at)} by infersight {_e(infersight.__version__)}.</li>",
        *(f"<li>{_e(n)}</li>" for n in meta.notes),
        "</ul>",
        "<p>A fire expectation is met when the alert starts firing within its time of the fault's start and reaches "
        "Alertmanager; a quiet one when no matching alert fires in its stages. Healthy traffic is each scenario "
        "before its first fault; an alert that starts firing there is a false positive.</p>",
    ]
    body = [_summary_section(summary, meta.time_scale), "<h2>Scenarios</h2>"]
    body += [_scenario_section(run, plot) for run, plot in zip(runs, plot_names, strict=True)]
    if meta.dashboards:
        body.append(_dashboards_section(meta.dashboards, meta.grafana_url, _run_span(runs)))
    return "\n".join([*header, *body, "</body></html>\n"])


def _json(runs: Sequence[ScenarioRun], summary: Summary, meta: ReportMeta) -> dict[str, Any]:
    return {
        "time_scale": meta.time_scale,
        "generated_at": meta.generated_at,
        "passed": summary.missed == 0,
        "expectations": {"total": summary.expectations, "missed": summary.missed, "skipped": summary.skipped},
        "healthy_seconds": summary.healthy_s,
        "alerts": [
            {
                "alert": s.alert,
                "expected": s.expected,
                "detected": s.detected,
                "detection_rate": s.detection_rate,
                "median_ttd_s": s.median_ttd_s,
                "ttd_s": s.ttd_s,
                "false_positives": s.false_positives,
                "false_positives_per_hour": summary.false_positives_per_hour(s),
            }
            for s in summary.alerts
        ],
        "scenarios": [
            {
                "name": r.scenario.name,
                "target": r.target.url,
                "started_at": r.window.start,
                "observed_s": r.window.end - r.window.start,
                "poll_max_gap_s": r.poll_max_gap_s,
                "load_valid": r.load["summary"]["valid"],
                "notes": r.notes,
                "expectations": [
                    {k: v for k, v in vars(e).items() if k != "offenders"} | {"offenders": e.offenders}
                    for e in r.verdict.expectations
                ],
                "false_positives": [vars(fp) for fp in r.verdict.false_positives],
                "healthy_seconds": r.verdict.healthy_s,
                "actions": [vars(o) for o in r.outcomes],
                "server_ttft": {f"p{round(q * 100)}": v for q, v in r.server_ttft.quantiles.items()},
                "client_ttft": r.load["summary"]["overall"]["ttft_s"],
                "traces": None if r.traces is None else r.traces.summary(),
            }
            for r in runs
        ],
        "grafana_url": meta.grafana_url,
        "dashboards": [
            {
                "file": d.file,
                "uid": d.uid,
                "title": d.title,
                "panels": [
                    {
                        "id": p.id,
                        "title": p.title,
                        "type": p.kind,
                        "had_data": p.had_data,
                        "series": p.series,
                        "errors": list(p.errors),
                        "no_value": p.no_value,
                    }
                    for p in d.panels
                ],
            }
            for d in meta.dashboards
        ],
    }


def write_report(report_dir: Path, runs: Sequence[ScenarioRun], meta: ReportMeta) -> tuple[Path, Summary]:
    """Write plots, ``validation.json`` and ``index.html`` (last, so it never names a missing plot)."""
    summary = summarize([r.verdict for r in runs], meta.known_alerts)
    plot_dir = report_dir / PLOTS
    if plot_dir.is_dir():  # plots of an earlier report in this folder would be stale
        for old in plot_dir.iterdir():
            if _PLOT_NAME.match(old.name):
                old.unlink()
    names = []
    for k, run in enumerate(runs, 1):
        name = f"{k:02d}-{run.scenario.name}.png"
        fault_list = faults(run.scenario, run.window, run.outcomes).values()
        marks = [(f.name, f.at) for f in fault_list if f.at is not None]
        plots.draw_scenario(plot_dir / name, run.scenario.name, run.window, run.panels, run.intervals, marks)
        names.append(f"{PLOTS}/{name}")
    write_atomic(report_dir / JSON, dump_json(_json(runs, summary, meta)))
    index = report_dir / INDEX
    write_atomic(index, render_html(runs, summary, meta, names))
    return index, summary
