"""Whether a companion load's own traffic collapsed, from the requests it saw finish: then an
InfersightVLLMTrafficStop about the companion's model was right, not a false alarm, and its
``quiet`` expectation cannot be judged.

On a starved host (two cores shared by two vLLM servers, Prometheus and the load generators) the
companion's server can go many seconds without finishing a request. Prometheus sees that as a
traffic stop, correctly. Only the completions the load generator recorded tell that apart from a
rule that wrongly fires for a model whose traffic flowed.

The check leans towards excusing by where its windows sit, never by the rate it holds them to: a
recorded rate at evaluation ``t`` spans samples up to one scrape interval inside each end of its
window, and the alert may read a recording up to one evaluation old. So at each evaluation only
the completions in ``(t - window + scrape, t - evaluation - scrape]`` surely counted. The alert is
excused when the rate over that part stayed under the alert's own threshold (its drop fraction
below the companion's mean rate over the baseline window) at every moment of its ``for:``, ending
at most two evaluations before the poll that saw it firing. Pure functions; the caller reads the
CSV.
"""

from __future__ import annotations

import bisect
import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from infersight.alerts.serving import TRAFFIC_STOP
from infersight.config import Config
from infersight.validate.evaluator import Excuse
from infersight.validate.timeline import AlertInterval

STEP_S = 0.1  # the grid the trailing counts are taken on; far finer than any scaled interval


@dataclass(frozen=True)
class StallRule:
    """The parts of InfersightVLLMTrafficStop the check needs, in (scaled) seconds."""

    window_s: float
    for_s: float
    baseline_s: float
    drop_fraction: float
    scrape_s: float
    evaluation_s: float

    @classmethod
    def of(cls, cfg: Config, time_scale: float, scrape_s: float, evaluation_s: float) -> StallRule:
        """The rule as built from ``cfg`` at ``time_scale``; the intervals as Prometheus runs them."""
        a = cfg.alerts.serving.traffic_stop
        return cls(
            window_s=cfg.intervals.rate.scaled(time_scale).total_seconds,
            for_s=a.for_.scaled(time_scale).total_seconds,
            baseline_s=a.baseline_window.scaled(time_scale).total_seconds,
            drop_fraction=a.drop_fraction,
            scrape_s=scrape_s,
            evaluation_s=evaluation_s,
        )


def read_completions(requests_csv: Path, run_start: float) -> list[float]:
    """Unix times the run's requests ended at the server (its ``requests.csv``), sorted: every row
    with an end, whatever its status, as vllm:request_success_total counts aborts and errors too."""
    with requests_csv.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("sent_s") and r.get("e2e_s")]
    return sorted(run_start + float(r["sent_s"]) + float(r["e2e_s"]) for r in rows)


def _count(done: Sequence[float], start: float, end: float) -> int:
    """Completions in (start, end]."""
    return max(0, bisect.bisect_right(done, end) - bisect.bisect_right(done, start))


def collapsed_before(done: Sequence[float], started: float, rule: StallRule, seen_firing: float) -> str | None:
    """Why the companion's own traffic plausibly made TrafficStop fire by ``seen_firing``, or None.
    ``done``: sorted completion times; ``started``: when the companion load began."""
    first = max(started, seen_firing - rule.baseline_s)
    if seen_firing <= first:
        return None
    baseline = _count(done, first, seen_firing) / (seen_firing - first)
    floor = (1 - rule.drop_fraction) * baseline  # the rate (per second) the alert fires under
    lead = rule.scrape_s
    lag = rule.evaluation_s + rule.scrape_s
    surely = rule.window_s - lead - lag  # the part of each window whose completions surely counted
    if surely <= 0:  # none: it cannot be told
        return None

    def low(t: float) -> bool:
        return _count(done, t - rule.window_s + lead, t - lag) < floor * surely

    steps = round(rule.for_s / STEP_S)
    latest = seen_firing
    while latest >= seen_firing - 2 * rule.evaluation_s:  # the evaluation that fired it
        if all(low(latest - k * STEP_S) for k in range(steps + 1)):
            quiet_from, quiet_to = latest - rule.for_s - rule.window_s + lead - started, latest - lag - started
            return (
                f"the companion's own server finished requests at under {floor:.2f}/s "
                f"({(1 - rule.drop_fraction) * 100:g}% of its mean {baseline:.2f}/s) in every window the alert "
                f"read from +{quiet_from:.1f}s to +{quiet_to:.1f}s of its load: its traffic did collapse"
            )
        latest -= STEP_S
    return None


def excuse(rule: StallRule, done: Sequence[float], started: float) -> Excuse:
    """For the evaluator: the reason a companion alert was right (TrafficStop only), else None."""

    def why(interval: AlertInterval) -> str | None:
        if interval.name != TRAFFIC_STOP or interval.firing_at is None:
            return None
        return collapsed_before(done, started, rule, interval.firing_at)

    return why
