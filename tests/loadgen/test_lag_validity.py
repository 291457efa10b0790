"""What schedule lag makes a run invalid: lag that is small against the gap between requests does
not change the load, so each open-loop stage may lag up to the larger of the absolute threshold and
a fraction of its mean gap. At 2 requests/s (500 ms apart) a 21 ms p99 lag on a busy 2-core host
is 4 % of the gap, and the run stays valid; at 200 requests/s the same lag is four gaps."""

from __future__ import annotations

from infersight.loadgen.records import RequestRecord
from infersight.loadgen.stats import summarize
from tests.loadgen.helpers import scenario


def _records(stage: int, rate: float, seconds: float, start: float, lag_s: float) -> list[RequestRecord]:
    """Sent at a constant rate, every one of them ``lag_s`` late."""
    n = round(rate * seconds)
    out = []
    for i in range(n):
        due = start + i / rate
        out.append(RequestRecord(index=stage * 10_000 + i, stage=stage, scheduled=due, sent=due + lag_s, status=200))
    return out


def _summary(stages: list[tuple[float, float]], **validity: str | float) -> dict[str, object]:
    """One constant-rate stage of 10 s per (rate, lag in seconds)."""
    sc = scenario(
        [
            {"name": f"s{i}", "duration": "10s", "rate": rate, "arrival": "constant"}
            for i, (rate, _) in enumerate(stages)
        ],
        validity=validity,
    )
    records = [r for i, (rate, lag) in enumerate(stages) for r in _records(i, rate, 10, 10.0 * i, lag)]
    return summarize(sc, records, [round(rate * 10) for rate, _ in stages], "completed", None, False)


def test_a_lag_small_against_the_gap_keeps_a_slow_stage_valid() -> None:
    summary = _summary([(2, 0.021)])
    assert summary["valid"] is True, summary["invalid_reasons"]
    assert summary["stages"][0]["schedule_lag_allowed_ms"] == 50  # 10 % of the 500 ms gap


def test_the_same_lag_invalidates_a_fast_stage_and_names_it() -> None:
    summary = _summary([(2, 0.021), (200, 0.021)])
    assert summary["valid"] is False
    (reason,) = summary["invalid_reasons"]
    assert reason.startswith("stage s1: schedule lag p99 21.0 ms exceeds 10 ms"), reason
    assert summary["stages"][1]["schedule_lag_allowed_ms"] == 10  # the absolute threshold: 10 % is 0.5 ms


def test_a_lag_past_the_fraction_of_the_gap_is_invalid() -> None:
    summary = _summary([(2, 0.06)])
    assert summary["valid"] is False
    assert "stage s0: schedule lag p99 60.0 ms exceeds 50 ms" in summary["invalid_reasons"][0]


def test_the_fraction_is_configurable() -> None:
    assert _summary([(2, 0.06)], max_schedule_lag_gap_fraction=0.2)["valid"] is True
    assert _summary([(2, 0.021)], max_schedule_lag_gap_fraction=0.01)["valid"] is False
