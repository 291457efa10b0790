"""The load generator's requests (``requests.csv``) matched to vLLM's request spans by trace ID.

Only ``llm_request`` spans count. vLLM sends one when a request finishes in its engine, so a
request refused before the engine (an HTTP 4xx) has none; every request that succeeded should
have exactly one. A span whose trace no request of this run sent is another client's.
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from infersight.traces import spans as sp
from infersight.traces.spans import Span

# Client TTFT minus the span's: the client adds HTTP, the API server's work before the request
# reaches the engine (tokenisation) and the stream back; on loopback a few ms to tens of ms, more
# when the host is busy. A request agrees when the gap is within this much, or this share of TTFT.
TTFT_TOLERANCE_S = 0.25
TTFT_TOLERANCE_SHARE = 0.25


class RequestsFileError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TracedRequest:
    index: int
    trace_id: str
    sent_at: float  # unix seconds
    ok: bool
    client_ttft: float | None
    client_e2e: float | None
    span: Span | None

    @property
    def ttft_gap(self) -> float | None:
        """Client TTFT minus vLLM's (seconds), where both exist."""
        server = None if self.span is None else self.span.get(sp.TTFT)
        if self.client_ttft is None or server is None:
            return None
        return self.client_ttft - server

    @property
    def ttft_agrees(self) -> bool | None:
        gap = self.ttft_gap
        if gap is None or self.client_ttft is None:
            return None
        return abs(gap) <= max(TTFT_TOLERANCE_S, TTFT_TOLERANCE_SHARE * self.client_ttft)


@dataclass(frozen=True)
class TraceJoin:
    requests: list[TracedRequest]
    duplicated: int  # trace IDs of this run with more than one request span
    foreign_spans: int  # request spans of traces this run did not send

    @property
    def ok_requests(self) -> list[TracedRequest]:
        return [r for r in self.requests if r.ok]

    @property
    def matched(self) -> int:
        return sum(r.span is not None for r in self.requests)

    @property
    def ok_without_span(self) -> int:
        return sum(r.span is None for r in self.ok_requests)

    def ttft_gaps(self) -> list[float]:
        return [g for r in self.ok_requests if (g := r.ttft_gap) is not None]

    def agreeing(self) -> tuple[int, int]:
        """(requests whose TTFTs agree, requests with both TTFTs)."""
        verdicts = [a for r in self.ok_requests if (a := r.ttft_agrees) is not None]
        return sum(verdicts), len(verdicts)

    def slowest(self, start: float, end: float, n: int) -> list[TracedRequest]:
        """The n requests sent within [start, end] that took longest end to end, errors included."""
        during = [r for r in self.requests if start <= r.sent_at <= end and r.client_e2e is not None]
        return sorted(during, key=lambda r: r.client_e2e or 0.0, reverse=True)[:n]


def gap_summary(gaps: Sequence[float]) -> dict[str, float] | None:
    if not gaps:
        return None
    ordered = sorted(abs(g) for g in gaps)
    return {
        "median_s": statistics.median(gaps),
        "p95_abs_s": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "max_abs_s": ordered[-1],
    }


def _float(row: dict[str, str], key: str) -> float | None:
    text = row.get(key) or ""
    return float(text) if text else None


def read_requests(path: Path, run_start: float) -> list[tuple[int, str, float, bool, float | None, float | None]]:
    """(index, trace ID, unix send time, ok, client TTFT, client e2e) for each row with a trace ID."""
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise RequestsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    out = []
    for n, row in enumerate(rows, start=2):
        if not row.get("trace_id") or not row.get("sent_s"):
            continue
        try:
            out.append(
                (
                    int(row["index"]),
                    row["trace_id"],
                    run_start + float(row["sent_s"]),
                    row.get("status") == "200" and not row.get("error"),
                    _float(row, "ttft_s"),
                    _float(row, "e2e_s"),
                )
            )
        except (KeyError, ValueError):
            raise RequestsFileError(f"{path}:{n}: not a row of infersight's requests.csv") from None
    return out


def join(requests_csv: Path, run_start: float, spans: Iterable[Span]) -> TraceJoin:
    rows = read_requests(requests_csv, run_start)
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        if s.name == sp.REQUEST_SPAN:
            by_trace.setdefault(s.trace_id, []).append(s)
    sent = Counter(r[1] for r in rows)
    traced = [
        TracedRequest(index, trace, at, ok, ttft, e2e, found[0] if (found := by_trace.get(trace)) else None)
        for index, trace, at, ok, ttft, e2e in rows
    ]
    return TraceJoin(
        requests=traced,
        duplicated=sum(1 for t in sent if len(by_trace.get(t, ())) > 1),
        foreign_spans=sum(len(v) for t, v in by_trace.items() if t not in sent),
    )
