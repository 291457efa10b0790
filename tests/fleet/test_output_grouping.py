"""Which labels name the entity a rule reports on, so that the fleet test can ask whether a rule
yields two series for one entity. The outermost aggregation in reading order is not always it: an
``and`` filter or the "one" side of a ``group_left`` aggregates by fewer labels than the rule keeps,
and ``label_replace`` adds one."""

from __future__ import annotations

import pytest

from infersight.alerts import serving as serving_alerts
from infersight.config import Config
from infersight.fleet.measure import output_grouping


@pytest.mark.parametrize(
    ("expr", "grouping"),
    [
        ("sum by (job, model_name) (rate(x[5m]))", ["job", "model_name"]),
        # the filter's aggregation is not the output's
        ("sum by (job, instance) (a) and on (job) (count by (job) (b) > 2)", ["job", "instance"]),
        # the "one" side of a many-to-one match is not the output's
        ("sum by (job, instance) (a) > on (job) group_left () (2 * quantile by (job) (0.5, b))", ["job", "instance"]),
        ('label_replace(sum by (job) (a), "signal", "x", "", "")', ["job", "signal"]),
        # a bare selector on the left: the first aggregation found, as before
        ("a > 0 and on (job, instance) (sum by (job, instance) (rate(b[5m])) == 0)", ["job", "instance"]),
        ("sum(a)", None),
    ],
)
def test_output_grouping(expr: str, grouping: list[str] | None) -> None:
    assert output_grouping(expr) == grouping


def test_the_outlier_alert_reports_per_replica_and_signal() -> None:
    alert = next(
        r
        for g in serving_alerts.groups(Config())
        for r in g.rules
        if getattr(r, "alert", None) == serving_alerts.OUTLIER_REPLICA
    )
    assert output_grouping(alert.expr) == ["job", "instance", "model_name", "signal"]
