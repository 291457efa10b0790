"""Summaries of a run: per stage and overall latency distributions, errors by status, requested
versus achieved rate, schedule lag, and whether the run is valid at all.

A run is invalid when an open-loop stage sent more of its requests later than ``validity`` allows
(the larger of ``max_schedule_lag_p99`` and a fraction of the stage's mean gap between requests)
than a 1 % late share would give by chance: then the client, not the server, shaped the load, so
its numbers do not describe the requested load. Counting rather than reading the p99 matters on
short stages: on 98 sends the p99 is the second-latest send, and two late sends are what a 1 %
share gives one time in four. A send later than its stage's mean gap between requests makes the
stage invalid on its own, however few such sends: the client stalled for a whole request's slot.
A run is also invalid when any response was not OpenAI-shaped (the target is not what it claims
to be), or when any request failed in the client itself.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from infersight.loadgen.records import CLIENT_FAILURE_KINDS, NOT_OPENAI_KINDS, RequestRecord
from infersight.loadgen.scenario import Scenario
from infersight.loadgen.scheduler import StopReason

QUANTILES = (0.5, 0.9, 0.95, 0.99)
LATE_SHARE = 0.01  # the "p99" of max_schedule_lag_p99: one send in a hundred may be later
LATE_CONFIDENCE = 0.95  # how sure a verdict of "invalid" must be that more than that share was late


def late_sends_allowed(sends: int) -> int:
    """The most sends of ``sends`` that may be late before the stage is invalid: the 95th
    percentile of Binomial(sends, 1 %), so a stage's invalid verdict is wrong at most one time in 20."""
    if sends <= 0:
        return 0
    log_p, log_q = math.log(LATE_SHARE), math.log1p(-LATE_SHARE)
    cumulative = 0.0
    for k in range(sends + 1):
        log_pmf = math.lgamma(sends + 1) - math.lgamma(k + 1) - math.lgamma(sends - k + 1) + k * log_p
        cumulative += math.exp(log_pmf + (sends - k) * log_q)
        if cumulative >= LATE_CONFIDENCE:
            return k
    return sends


def percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) over sorted values."""
    if not ordered:
        raise ValueError("percentile of no values")
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def distribution(values: Iterable[float], scale: float = 1.0) -> dict[str, float | int | None]:
    """count, mean, min, p50/p90/p95/p99 and max; ``scale`` converts units (e.g. 1000 for ms)."""
    ordered = sorted(values)
    out: dict[str, float | int | None] = {"count": len(ordered)}
    keys = ["mean", "min", *(f"p{round(q * 100)}" for q in QUANTILES), "max"]
    if not ordered:
        return out | dict.fromkeys(keys)
    out["mean"] = sum(ordered) / len(ordered) * scale
    out["min"] = ordered[0] * scale
    for q in QUANTILES:
        out[f"p{round(q * 100)}"] = percentile(ordered, q) * scale
    out["max"] = ordered[-1] * scale
    return out


def error_counts(records: Iterable[RequestRecord]) -> dict[str, int]:
    """Failed requests by HTTP status ("400", "503") or client-side kind ("timeout", "cancelled")."""
    counts: Counter[str] = Counter()
    for r in records:
        if not r.ok:
            counts[str(r.status) if r.error == "http" else (r.error or f"status {r.status}")] += 1
    return dict(sorted(counts.items()))


def _failure_reasons(errors: dict[str, int], sent: int) -> list[str]:
    """Why the errors make a run invalid: the target is not an OpenAI server, or the client failed."""

    def kinds(names: Sequence[str]) -> tuple[int, str]:
        found = {k: errors[k] for k in names if k in errors}
        return sum(found.values()), ", ".join(f"{k}: {n}" for k, n in found.items())

    reasons = []
    count, detail = kinds(NOT_OPENAI_KINDS)
    if count:
        reasons.append(
            f"{count} of {sent} responses were not OpenAI-shaped ({detail}): the target is not an "
            "OpenAI-compatible server, so these are not a model's latencies"
        )
    count, detail = kinds(CLIENT_FAILURE_KINDS)
    if count:
        reasons.append(f"{count} of {sent} requests failed in the client, not at the server ({detail})")
    return reasons


def _group(records: Sequence[RequestRecord], planned: int) -> dict[str, Any]:
    ok = [r for r in records if r.ok]
    lags = [lag for r in records if (lag := r.lag) is not None]
    completion = sum(r.completion_tokens or 0 for r in ok)
    sources = Counter(r.itl_source for r in ok)
    return {
        "planned": planned,
        "sent": len(records),
        "succeeded": len(ok),
        "errors": error_counts(records),
        "schedule_lag_ms": distribution(lags, 1000),
        "ttft_s": distribution(r.ttft for r in ok if r.ttft is not None),
        "itl_s": distribution(x for r in ok for x in r.itl),
        "itl_sources": dict(sorted(sources.items())),
        "tpot_s": distribution(r.tpot for r in ok if r.tpot is not None),
        "e2e_s": distribution(r.e2e for r in ok if r.e2e is not None),
        "prompt_tokens": distribution(r.prompt_tokens for r in ok if r.prompt_tokens is not None),
        "completion_tokens_total": completion,
    }


def summarize(
    scenario: Scenario,
    records: Sequence[RequestRecord],
    planned_by_stage: Sequence[int],
    ended: StopReason,
    stopped_at: float | None,
    plan_truncated: bool,
) -> dict[str, Any]:
    """The ``summary`` section of results.json."""
    by_stage: list[list[RequestRecord]] = [[] for _ in scenario.stages]
    for r in records:
        by_stage[r.stage].append(r)
    stages = []
    for i, (stage, start) in enumerate(zip(scenario.stages, scenario.stage_starts(), strict=True)):
        recs = by_stage[i]
        begin = start.total_seconds
        end = begin + stage.duration.total_seconds
        if stopped_at is not None:
            end = min(end, stopped_at)
        last_sent = max((r.sent for r in recs if r.sent is not None), default=begin)
        span = max(end, last_sent) - begin  # a client that fell behind spreads the stage out
        achieved = len(recs) / span if span > 0 else None
        row: dict[str, Any] = {
            "name": stage.name,
            "fault": stage.fault,
            "start_s": begin,
            "duration_s": stage.duration.total_seconds,
        }
        if stage.rate is not None:
            row |= {
                "mode": "rate",
                "arrival": stage.arrival,
                "requested_rate": stage.rate,
                "achieved_rate": achieved,
                "achieved_over_requested": achieved / stage.rate if achieved is not None else None,
            }
        elif stage.concurrency is not None:
            row |= {"mode": "concurrency", "concurrency": stage.concurrency, "achieved_rate": achieved}
        else:
            row |= {"mode": "idle", "achieved_rate": achieved}
        row |= _group(recs, planned_by_stage[i])
        if stage.rate is not None:
            allowed_ms = scenario.validity.allowed_lag_ms(stage.rate)
            lags = [lag for r in recs if (lag := r.lag) is not None]
            row["schedule_lag_allowed_ms"] = allowed_ms
            row["schedule_lag_late"] = sum(lag * 1000 > allowed_ms for lag in lags)
            row["schedule_lag_late_allowed"] = late_sends_allowed(len(lags))
            row["schedule_lag_worst_allowed_ms"] = scenario.validity.worst_lag_ms(stage.rate)
        if span > 0:
            row["output_tokens_per_s"] = row["completion_tokens_total"] / span
        stages.append(row)

    overall = _group(records, sum(planned_by_stage))
    threshold_ms = scenario.validity.max_schedule_lag_p99.ms
    reasons = []
    for row in stages:
        if row.get("schedule_lag_late", 0) > row.get("schedule_lag_late_allowed", 0):
            sends, late, may = (
                row["schedule_lag_ms"]["count"],
                row["schedule_lag_late"],
                row["schedule_lag_late_allowed"],
            )
            reasons.append(
                f"stage {row['name']}: {late} of {sends} sends more than {row['schedule_lag_allowed_ms']:g} ms late "
                f"(schedule lag p99 {row['schedule_lag_ms']['p99']:.1f} ms), where a {LATE_SHARE * 100:g} % late "
                f"share gives at most {may} of {sends} at {LATE_CONFIDENCE * 100:g} % confidence (the bound is the "
                f"larger of {threshold_ms:g} ms and {scenario.validity.max_schedule_lag_gap_fraction:g} of its mean "
                "gap between requests): the client fell behind its schedule, so the achieved load is not the "
                "requested one"
            )
        gap_ms = row.get("schedule_lag_worst_allowed_ms")
        worst_ms = row["schedule_lag_ms"]["max"] if gap_ms is not None else None
        if worst_ms is not None and worst_ms > gap_ms:
            reasons.append(
                f"stage {row['name']}: a send left {worst_ms:.0f} ms late, later than the {gap_ms:g} ms mean gap "
                "between its requests: the client stalled for a whole request's slot, so the load had a hole "
                "and then a burst that the schedule did not ask for"
            )
    if not records:
        reasons.append("no request was sent")
    reasons += _failure_reasons(overall["errors"], len(records))
    notes = []
    if plan_truncated:
        notes.append(f"limits.max_requests ({scenario.limits.max_requests}) cut the open-loop plan short")
    if ended == "interrupted":
        notes.append("interrupted: partial results")
    elif ended == "max_duration":
        notes.append(f"stopped at limits.max_duration ({scenario.limits.max_duration}); in-flight requests cancelled")
    return {
        "valid": not reasons,
        "invalid_reasons": reasons,
        "ended": ended,
        "notes": notes,
        "max_schedule_lag_p99_ms": threshold_ms,
        "overall": overall,
        "stages": stages,
    }
