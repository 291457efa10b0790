"""How well the monitoring itself kept up during a scenario: rule-group evaluations Prometheus
skipped (its ``prometheus_rule_group_iterations_missed_total``) and failed scrapes per job.

On a starved host both leave holes in the time-scaled 5 s windows, which reset every ``for:``; the
report states them next to the expectations so a missed alert can be told from a broken rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from infersight import promql
from infersight.deploy import http
from infersight.durations import Duration
from infersight.validate.apis import ApiError, PrometheusApi

_ITERATIONS = "prometheus_rule_group_iterations"
_MISSED = "prometheus_rule_group_iterations_missed"


@dataclass(frozen=True)
class RuleIterations:
    total: float
    missed: float

    def __sub__(self, other: RuleIterations) -> RuleIterations:
        return RuleIterations(self.total - other.total, self.missed - other.missed)


def rule_iterations(prometheus_url: str) -> RuleIterations | None:
    """Prometheus's own counters (summed over rule groups), read from its ``/metrics``; None when
    that cannot be read or holds no such counter (unknown, which is not "none missed"). Read through
    the deploy client, like every other call to this user-given address: no redirect is followed,
    the answer is capped, and the call ends within its timeout however slowly it is sent."""
    try:
        answer = http.request("GET", f"{prometheus_url}/metrics", deadline=http.Deadline.after(10))
    except http.RequestFailed:
        return None
    if answer.status != 200 or not isinstance(answer.body, str):
        return None
    sums: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(answer.body):
            if family.name in (_ITERATIONS, _MISSED):
                total = sum(s.value for s in family.samples if s.name.endswith("_total"))
                sums[family.name] = sums.get(family.name, 0.0) + total
    except ValueError:
        return None
    if _ITERATIONS not in sums:
        return None
    return RuleIterations(sums[_ITERATIONS], sums.get(_MISSED, 0.0))


@dataclass(frozen=True)
class Health:
    rule_iterations: RuleIterations | None
    failed_scrapes: dict[str, float]  # job -> failed scrapes over the scenario
    scrapes: dict[str, float]

    def notes(self) -> list[str]:
        out = []
        it = self.rule_iterations
        if it is not None and it.missed > 0:
            out.append(
                f"Prometheus skipped {it.missed:.0f} of {it.total + it.missed:.0f} rule-group evaluations "
                "(it could not keep up: the host was starved)"
            )
        for job, failed in sorted(self.failed_scrapes.items()):
            if failed > 0:
                out.append(f"{failed:.0f} of {self.scrapes.get(job, 0):.0f} scrapes of job {job} failed")
        return out


def failed_scrapes(prom: PrometheusApi, start: float, end: float) -> tuple[dict[str, float], dict[str, float]]:
    """Per job: scrapes that failed (``up == 0``) and all scrapes, over [start, end]."""
    window = Duration.seconds(max(1.0, math.ceil(end - start)))
    up = promql.series("up")
    counts: dict[str, dict[str, float]] = {"all": {}, "ok": {}}
    for key, fn in (("all", "count"), ("ok", "sum")):
        try:
            result = prom.query(promql.sum_by(("job",), promql.over_time(fn, up, window)), at=end)
        except ApiError:
            return {}, {}
        counts[key] = {r["metric"].get("job", ""): float(r["value"][1]) for r in result}
    failed = {job: n - counts["ok"].get(job, 0.0) for job, n in counts["all"].items()}
    return failed, counts["all"]
