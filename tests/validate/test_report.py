"""The report writer: files exist (HTML, PNG per scenario, JSON), the HTML names every expectation
and states the time scale, stale plots are removed, and no prompt text gets anywhere."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from infersight.loadgen.prompts import WordVocabulary
from infersight.loadgen.records import RequestRecord, RequestSpec
from infersight.loadgen.results import REQUESTS_CSV
from infersight.loadgen.runner import RunOptions, run
from infersight.loadgen.scenario import Scenario
from infersight.traces import spans as sp
from infersight.traces.context import new_traceparent
from infersight.traces.spans import Span
from infersight.validate import trace_view
from infersight.validate.evaluator import evaluate
from infersight.validate.plots import with_gaps
from infersight.validate.report import ReportMeta, write_report
from infersight.validate.series import Line, Panel, PanelData, ServerTTFT
from infersight.validate.session import ScenarioRun, Target
from infersight.validate.timeline import AlertInterval

from .timelines import INSTANCE, LEAK, MODEL, T0, TTFT_BURN, alert, overload, target_down, traffic_stop, window


def load_results(scenario: Scenario, out: Path, prompts: list[str]) -> dict:  # type: ignore[type-arg]
    """A real load generator run, with a sender standing in for HTTP that keeps the prompts it saw."""

    async def send(spec: RequestSpec, rec: RequestRecord) -> None:
        prompts.append(spec.prompt)
        rec.status, rec.ttft, rec.e2e, rec.completion_tokens = (
            200,
            0.05 + spec.index % 7 / 100,
            0.3 + spec.index / 1e3,
            8,
        )
        rec.trace_id = new_traceparent()[0]

    short = scenario.model_copy(
        update={"stages": [s.model_copy(update={"duration": s.duration * 0.01}) for s in scenario.stages]}
    )
    opts = RunOptions(target="http://127.0.0.1:9", out_dir=out, vocabulary=WordVocabulary(), sender=send)
    opts.handle_signals = False
    return run(short, opts).run


def scenario_run(scenario: Scenario, intervals: list[AlertInterval], tmp: Path, prompts: list[str]) -> ScenarioRun:
    win = window(scenario)
    verdict = evaluate(scenario, win, [], intervals)
    points = [(T0 + t, 0.1 * t) for t in range(0, 80, 2)]
    panels = [
        PanelData(Panel("Load", "requests/s", (Line("requests/s", "x"),)), {"requests/s": points}),
        PanelData(Panel("Latency p95", "seconds", (Line("TTFT p95", "y"),), log_scale=True), {"TTFT p95": []}),
    ]
    return ScenarioRun(
        scenario=scenario,
        source=f"loadgen/scenarios/{scenario.name}.yaml",
        target=Target("http://127.0.0.1:8000", MODEL, INSTANCE, WordVocabulary()),
        window=win,
        outcomes=[],
        intervals=intervals,
        other_target=[alert(TTFT_BURN, 1, 2, model_name="tiny-dense")],
        verdict=verdict,
        load=load_results(scenario, tmp / scenario.name, prompts),
        results_dir=tmp / scenario.name,
        panels=panels,
        server_ttft=ServerTTFT({0.5: 0.07, 0.9: 0.1, 0.95: None, 0.99: 0.2}, 120.0, 80.0),
        traces=None,
        notes=["a note for the reader"],
        poll_max_gap_s=0.6,
        poll_errors=0,
    )


def test_report_files_expectations_and_no_prompt_text(tmp_path: Path) -> None:
    prompts: list[str] = []
    runs = [
        scenario_run(
            overload(), [alert(TTFT_BURN, 25, 41, 70), alert(LEAK, 60, 70, component="gpu")], tmp_path, prompts
        ),
        scenario_run(target_down(), [], tmp_path, prompts),
    ]
    stale = tmp_path / "report" / "plots" / "07-old.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    keep = stale.parent / "mine.txt"  # not a plot name of ours: left alone
    keep.write_text("x")
    meta = ReportMeta(
        60, "http://127.0.0.1:9090", "http://127.0.0.1:9093", known_alerts=[TTFT_BURN, LEAK, "InfersightX"]
    )
    index, summary = write_report(tmp_path / "report", runs, meta)

    assert index == tmp_path / "report" / "index.html" and index.is_file()
    for name in ("01-overload.png", "02-target_down.png"):
        assert (tmp_path / "report" / "plots" / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert not stale.exists() and keep.exists()
    page = index.read_text()
    assert "infersight validation: FAILED" in page  # the GPU alert broke overload's quiet expectation
    assert "Time scale: 60" in page and "1h runs as 60s" in page
    for scenario in runs:
        for e in scenario.verdict.expectations:
            assert f"<td>{e.selector}</td>" in page, e.selector
    # Overload: burn met, quiet serving met, quiet gpu missed; target down: no action performed, skipped.
    assert [page.count(f"<td>{s}</td>") for s in ("MET", "MISSED", "SKIPPED")] == [2, 1, 1]
    assert 'src="plots/01-overload.png"' in page and "a note for the reader" in page
    assert "InfersightX" in page  # a rule no scenario exercised is listed
    assert "Client versus server TTFT" in page
    assert re.search(r"<td>0 \(≤ \d+\)</td>", page), (
        "each open-loop stage shows its late sends and how many it may have"
    )
    data = json.loads((tmp_path / "report" / "validation.json").read_text())
    assert data["time_scale"] == 60 and data["passed"] is False
    assert [s["name"] for s in data["scenarios"]] == ["overload", "target_down"]
    burn = next(a for a in data["alerts"] if a["alert"] == TTFT_BURN)
    assert burn["detected"] == 1 and burn["median_ttd_s"] == 21
    assert (summary.missed, summary.skipped) == (1, 1)
    assert prompts, "the load generator produced no prompts: the check below would prove nothing"
    written = page + (tmp_path / "report" / "validation.json").read_text()
    assert not [p for p in prompts if p[:40] in written]


def test_the_report_joins_requests_to_spans_and_lists_the_slowest_behind_each_fired_alert(tmp_path: Path) -> None:
    run = scenario_run(overload(), [alert(TTFT_BURN, 25, 41, 70), alert(LEAK, 60, None, component="gpu")], tmp_path, [])
    rows = list(csv.DictReader((run.results_dir / REQUESTS_CSV).open()))
    assert len(rows) == 6  # five slowest of six: the table must choose
    # vLLM's span for every request but the last; its TTFT 5 ms under the client's
    spans = [
        Span(r["trace_id"], "1" * 16, "2" * 16, sp.REQUEST_SPAN, T0, T0 + 1,
             {sp.TTFT: float(r["ttft_s"]) - 0.005, sp.QUEUE: 0.002, sp.E2E: float(r["e2e_s"]) - 0.005})
        for r in rows[:-1]
    ]  # fmt: skip
    # Requests of the shortened run are sent within its first second; read as from T0, all precede the burn.
    earlier = Span("f" * 32, "1" * 16, "", sp.REQUEST_SPAN, T0 - 60, T0 - 59, {sp.TTFT: 0.1})  # an earlier scenario's
    run.traces = trace_view.build(
        "http://127.0.0.1:4318/v1/traces", lambda: [earlier, *spans], run.results_dir, T0, T0 + 100, run.intervals, 30
    )
    index, _ = write_report(tmp_path / "report", [run], ReportMeta(60, "http://p", None))
    page = index.read_text()
    n = len(rows)
    assert f"{n - 1} of {n} requests matched by trace ID" in page and f"{n - 1} of {n - 1} agree" in page
    slowest = sorted(rows, key=lambda r: float(r["e2e_s"]), reverse=True)[:5]
    assert all(r["trace_id"] in page for r in slowest)
    assert f"Slowest requests sent from -5.0 s until {TTFT_BURN}" in page
    traces = json.loads((tmp_path / "report" / "validation.json").read_text())["scenarios"][0]["traces"]
    assert (traces["matched"], traces["ok_without_span"], traces["ttft_agreeing"]) == (n - 1, 1, n - 1)
    assert traces["foreign_spans"] == 0  # the earlier scenario's span is not counted as another client's
    assert [a["alert"] for a in traces["alerts"]] == [TTFT_BURN]  # the pending-only leak has none
    assert [r["trace_id"] for r in traces["alerts"][0]["slowest"]] == [r["trace_id"] for r in slowest]
    assert traces["ttft_gap"]["median_s"] == pytest.approx(0.005)
    assert "1 of " + str(n) + " successful requests have no vLLM span" in traces["problem"]


def test_report_escapes_what_it_shows(tmp_path: Path) -> None:
    hostile = overload().model_copy(update={"description": "<script>alert(1)</script>"})
    run = scenario_run(hostile, [], tmp_path, [])
    index, _ = write_report(tmp_path / "r", [run], ReportMeta(60, "http://p", None))
    page = index.read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "not watched" in page


def test_plot_lines_break_at_holes_in_the_data() -> None:
    points = [(100.0, 1.0), (101.0, 2.0), (102.0, 3.0), (110.0, 4.0), (111.0, 5.0)]
    xs, ys = with_gaps(points, t0=100.0)
    assert xs == [0, 1, 2, 6, 10, 11]
    assert ys[:3] == [1, 2, 3] and math.isnan(ys[3]) and ys[4:] == [4, 5]
    assert with_gaps([], 0) == ([], [])


def test_a_traffic_stop_with_its_idle_stage_and_companion_quiet_is_reported(tmp_path: Path) -> None:
    stopped = alert("InfersightVLLMTrafficStop", 47, 53, model_name=MODEL)
    run_ = scenario_run(traffic_stop(), [stopped], tmp_path, [])
    index, _ = write_report(tmp_path / "report", [run_], ReportMeta(60, "http://127.0.0.1:9090", None))
    page = index.read_text()
    assert "<td>stopped</td><td>traffic_stop</td><td>idle</td>" in page
    assert "<td>alert InfersightVLLMTrafficStop of the companion</td>" not in page  # skipped: judged by nobody
    data = json.loads((tmp_path / "report" / "validation.json").read_text())
    (scenario,) = data["scenarios"]
    assert [e["status"] for e in scenario["expectations"]] == ["met", "skipped"]
    assert scenario["notes"] == ["a note for the reader"]
