"""What a scenario's traces say: its requests matched to vLLM's spans (:mod:`infersight.traces.join`),
and for each alert that fired the slowest requests sent while it built up.

"While it built up" is from one rate window (``intervals.rate``, time-scaled) before the alert went
pending until it fired: the requests whose latency the rule was reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infersight.loadgen.results import REQUESTS_CSV
from infersight.traces import spans as sp
from infersight.traces.join import (
    TTFT_TOLERANCE_S,
    TTFT_TOLERANCE_SHARE,
    RequestsFileError,
    TracedRequest,
    TraceJoin,
    gap_summary,
)
from infersight.traces.join import join as join_requests
from infersight.traces.spans import Span
from infersight.validate.timeline import AlertInterval

SLOWEST_PER_ALERT = 5


@dataclass
class AlertRequests:
    alert: AlertInterval
    since: float  # unix: the first send time considered
    slowest: list[TracedRequest]  # slowest first


@dataclass
class TraceView:
    receiver: str  # the OTLP endpoint vLLM was to send to
    join: TraceJoin | None
    alerts: list[AlertRequests] = field(default_factory=list)
    problem: str | None = None  # why there is no join, or what is wrong with it

    def missing_note(self) -> str | None:
        """One line when spans were missing; the load ran and is judged all the same."""
        if self.problem is not None:
            return self.problem
        assert self.join is not None
        ok = len(self.join.ok_requests)
        missing = self.join.ok_without_span
        if not missing:
            return None
        return (
            f"{missing} of {ok} successful requests have no vLLM span at {self.receiver}: is the target started "
            "with --otlp-traces-endpoint pointing there (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf)? "
            "The load ran and is judged all the same."
        )

    def summary(self) -> dict[str, Any]:
        if self.join is None:
            return {"receiver": self.receiver, "problem": self.problem}
        agree, compared = self.join.agreeing()
        return {
            "receiver": self.receiver,
            "requests": len(self.join.requests),
            "ok_requests": len(self.join.ok_requests),
            "matched": self.join.matched,
            "ok_without_span": self.join.ok_without_span,
            "duplicated_traces": self.join.duplicated,
            "foreign_spans": self.join.foreign_spans,
            "ttft_gap": gap_summary(self.join.ttft_gaps()),
            "ttft_agreeing": agree,
            "ttft_compared": compared,
            "ttft_tolerance": {"seconds": TTFT_TOLERANCE_S, "share": TTFT_TOLERANCE_SHARE},
            "alerts": [
                {"alert": a.alert.describe(), "slowest": [_request_json(r) for r in a.slowest]} for a in self.alerts
            ],
            "problem": self.missing_note(),
        }


def _request_json(r: TracedRequest) -> dict[str, Any]:
    stages = {} if r.span is None else {k: r.span.get(v) for k, v in STAGES}
    return {"trace_id": r.trace_id, "ok": r.ok, "client_ttft_s": r.client_ttft, "client_e2e_s": r.client_e2e, **stages}


# vLLM's own breakdown, as the report shows it: (column key, span attribute)
STAGES = (
    ("queue_s", sp.QUEUE),
    ("prefill_s", sp.PREFILL),
    ("decode_s", sp.DECODE),
    ("ttft_s", sp.TTFT),
    ("e2e_s", sp.E2E),
)


def build(
    receiver: str,
    spans: Callable[[], list[Span]],
    results_dir: Path,
    run_start: float,
    until: float,
    fired: Sequence[AlertInterval],
    lookback_s: float,
) -> TraceView:
    """Spans of requests that arrived from ``run_start`` until ``until`` only: the receiver keeps
    the spans of earlier scenarios too."""
    during = [s for s in spans() if run_start - 1 <= s.start <= until]
    try:
        joined = join_requests(results_dir / REQUESTS_CSV, run_start, during)
    except RequestsFileError as exc:
        return TraceView(receiver, None, problem=f"requests not joined to spans: {exc}")
    if not joined.requests:
        return TraceView(receiver, joined, problem="no request carried a trace ID")
    alerts = []
    for interval in fired:
        if interval.firing_at is None:
            continue
        since = interval.pending_at - lookback_s
        alerts.append(AlertRequests(interval, since, joined.slowest(since, interval.firing_at, SLOWEST_PER_ALERT)))
    return TraceView(receiver, joined, alerts)
