"""Requests matched to vLLM's spans by trace ID: counts, per-request TTFT agreement and the slowest
requests of a window, from a requests.csv as the load generator writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.loadgen.records import RequestRecord
from infersight.loadgen.results import csv_text
from infersight.traces import spans as sp
from infersight.traces.context import new_traceparent
from infersight.traces.join import RequestsFileError, gap_summary, join
from infersight.traces.spans import Span

RUN_START = 1_700_000_000.0


def record(index: int, sent: float, ttft: float | None, e2e: float, status: int = 200) -> RequestRecord:
    rec = RequestRecord(index, 0, sent, sent=sent, status=status, ttft=ttft, e2e=e2e)
    rec.error = None if status == 200 else "http"
    rec.trace_id = new_traceparent()[0]
    return rec


def span(trace_id: str, ttft: float, e2e: float, name: str = sp.REQUEST_SPAN) -> Span:
    attrs = {sp.TTFT: ttft, sp.E2E: e2e, sp.QUEUE: 0.01, sp.PREFILL: ttft - 0.01, sp.DECODE: e2e - ttft}
    return Span(trace_id, "1" * 16, "2" * 16, name, RUN_START, RUN_START + e2e, attrs)


def write(tmp_path: Path, records: list[RequestRecord]) -> Path:
    path = tmp_path / "requests.csv"
    path.write_text(csv_text(records, ["main"]))
    return path


def test_each_request_is_matched_to_its_own_span(tmp_path: Path) -> None:
    recs = [
        record(0, 1.0, 0.20, 1.0),
        record(1, 2.0, 0.30, 4.0),  # the slowest
        record(2, 3.0, 0.10, 0.5),  # its span never arrived
        record(3, 4.0, None, 0.01, status=400),  # refused before the engine: no span expected
    ]
    spans = [
        span(recs[0].trace_id or "", 0.19, 0.98),
        span(recs[1].trace_id or "", 0.04, 3.9),  # client TTFT 260 ms later than vLLM's: outside tolerance
        span(recs[1].trace_id or "", 0.05, 3.9),  # a duplicate
        span(new_traceparent()[0], 0.1, 0.2),  # another client's
        span(recs[0].trace_id or "", 0.1, 0.1, name="some_other_span"),  # not a request span
    ]
    j = join(write(tmp_path, recs), RUN_START, spans)
    assert [r.span is not None for r in j.requests] == [True, True, False, False]
    assert (j.matched, j.ok_without_span, j.duplicated, j.foreign_spans) == (2, 1, 1, 1)
    assert [round(g, 6) for g in j.ttft_gaps()] == [0.01, 0.26]
    assert j.agreeing() == (1, 2)
    assert [r.index for r in j.slowest(RUN_START + 1.5, RUN_START + 10, 2)] == [1, 2]
    assert j.requests[1].sent_at == RUN_START + 2.0


def test_tolerance_grows_with_the_ttft(tmp_path: Path) -> None:
    # 25 % of a 4 s client TTFT is 1 s: a 0.9 s gap agrees there, not on a 1 s TTFT.
    recs = [record(0, 1.0, 4.0, 5.0), record(1, 2.0, 1.0, 2.0)]
    j = join(
        write(tmp_path, recs),
        RUN_START,
        [span(recs[0].trace_id or "", 3.1, 5.0), span(recs[1].trace_id or "", 0.1, 2.0)],
    )
    assert [r.ttft_agrees for r in j.requests] == [True, False]


def test_gap_summary() -> None:
    assert gap_summary([]) is None
    summary = gap_summary([0.01, -0.02, 0.03, 0.5])
    assert summary == {"median_s": 0.02, "p95_abs_s": 0.5, "max_abs_s": 0.5}


@pytest.mark.parametrize(
    "text",
    [
        "index,sent_s,trace_id\nnot-a-number,1.0,abc\n",
        "index,sent_s,trace_id,ttft_s\n1,1.0,abc,fast\n",
    ],
)
def test_a_broken_requests_file_is_named_with_its_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "requests.csv"
    path.write_text(text)
    with pytest.raises(RequestsFileError, match=r"requests.csv:2: not a row of infersight's requests.csv"):
        join(path, RUN_START, [])


def test_a_missing_requests_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RequestsFileError, match="cannot read"):
        join(tmp_path / "nope.csv", RUN_START, [])
