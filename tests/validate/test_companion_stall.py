"""Telling a TrafficStop about the companion's model that was right (its own server, starved on a
2-core host, finished nothing for the alert's window and for:) from a false alarm, on synthetic
completion times and the loadgen's own requests.csv."""

from __future__ import annotations

from pathlib import Path

from infersight.config import Config
from infersight.loadgen.records import RequestRecord
from infersight.loadgen.results import csv_text
from infersight.validate.companion_stall import StallRule, collapsed_before, excuse, read_completions
from infersight.validate.evaluator import evaluate, target_scope

from .timelines import COMPANION_MODEL, INSTANCE, MODEL, STOP, T0, TTFT_BURN, alert, traffic_stop
from .timelines import window as win

# As `infersight up` and the e2e tests run it: time scale 60, scraped and evaluated every second.
RULE = StallRule.of(Config(), 60, scrape_s=1.0, evaluation_s=1.0)


def steady(start: float, end: float, every: float = 1.0) -> list[float]:
    return [T0 + start + k * every for k in range(int((end - start) / every) + 1)]


def test_the_rule_is_the_shipped_one_at_its_time_scale() -> None:
    assert (RULE.window_s, RULE.for_s, RULE.baseline_s, RULE.drop_fraction) == (5, 5, 60, 0.9)


def test_a_companion_that_finished_nothing_for_long_enough_excuses_the_alert() -> None:
    # The CI run that failed: 1 request/s, then nothing for 9.7 s, the alert seen at the gap's end.
    done = steady(0, 50) + steady(59.7, 90)
    reason = collapsed_before(done, T0, RULE, seen_firing=T0 + 59.5)
    assert reason is not None and "did collapse" in reason and "mean 0.84/s" in reason  # 50 finished in 59.5 s
    assert "under 0.08/s" in reason  # the alert's own threshold: 10 % of that mean


def test_a_steady_companion_or_a_short_gap_does_not() -> None:
    assert collapsed_before(steady(0, 90), T0, RULE, seen_firing=T0 + 60) is None
    # 6 s without a completion: the alert reads 5 s windows for 5 s, so it could not have been right.
    assert collapsed_before(steady(0, 50) + steady(56, 90), T0, RULE, seen_firing=T0 + 56) is None


def test_a_stall_long_over_before_the_alert_fired_does_not() -> None:
    done = steady(0, 30) + steady(42, 90)  # 12 s of nothing, then traffic again for 18 s
    assert collapsed_before(done, T0, RULE, seen_firing=T0 + 41) is not None
    assert collapsed_before(done, T0, RULE, seen_firing=T0 + 60) is None


def test_a_fast_companion_that_slowed_to_a_tenth_excuses_it_without_a_gap() -> None:
    # 10 requests/s, then 1 every 2 s: under 10 % of the mean, though never a gap of 5 s.
    done = steady(0, 40, every=0.1) + steady(40.5, 80, every=2.0)
    assert collapsed_before(done, T0, RULE, seen_firing=T0 + 52) is not None
    assert collapsed_before(done, T0, RULE, seen_firing=T0 + 40) is None


def test_a_companion_that_slowed_but_stayed_over_the_alerts_threshold_does_not() -> None:
    # 10 requests/s, then 1.5/s: 15 % of what it was, over the alert's 10 %, so Prometheus could not
    # have fired; counted over the shorter part of each window that surely counted, it still is not low.
    done = steady(0, 40, every=0.1) + steady(40.5, 80, every=1 / 1.5)
    assert collapsed_before(done, T0, RULE, seen_firing=T0 + 55) is None


def test_windows_too_short_for_the_intervals_excuse_nothing() -> None:
    coarse = StallRule.of(Config(), 60, scrape_s=2.0, evaluation_s=2.0)  # 5 s window, 6 s of lag and lead
    assert collapsed_before(steady(0, 20), T0, coarse, seen_firing=T0 + 80) is None


def test_the_evaluator_skips_the_companion_quiet_with_the_reason_and_only_for_traffic_stop() -> None:
    sc = traffic_stop()
    mine, theirs = target_scope(INSTANCE, MODEL), target_scope("127.0.0.1:9000", COMPANION_MODEL)
    stopped = alert(STOP, pending=47, firing=53, model_name=MODEL)
    starved = alert(STOP, pending=54, firing=59.5, model_name=COMPANION_MODEL)
    why = excuse(RULE, steady(0, 50) + steady(59.7, 90), T0)
    (fire, quiet) = evaluate(sc, win(sc), [], [stopped, starved], mine, True, theirs, why).expectations
    assert fire.status == "met"
    assert quiet.status == "skipped" and "rightly" in quiet.detail and "did collapse" in quiet.detail
    assert quiet.offenders and f"model_name={COMPANION_MODEL}" in quiet.offenders[0]
    # The same alert while the companion's requests kept finishing: a false alarm.
    flowing = excuse(RULE, steady(0, 90), T0)
    (_, quiet) = evaluate(sc, win(sc), [], [stopped, starved], mine, True, theirs, flowing).expectations
    assert quiet.status == "missed"
    # Another alert is never excused by the companion's traffic.
    burn = alert(TTFT_BURN, pending=54, firing=59.5, model_name=COMPANION_MODEL)
    assert why(burn) is None


def test_completions_are_read_from_the_loadgens_csv(tmp_path: Path) -> None:
    records = [
        RequestRecord(index=0, stage=0, scheduled=0.0, sent=1.0, status=200, e2e=0.5),
        RequestRecord(index=1, stage=0, scheduled=1.0, sent=2.0, status=500, error="http", e2e=0.1),
        RequestRecord(index=2, stage=0, scheduled=2.0, sent=0.5, status=200, e2e=0.25),
        RequestRecord(index=3, stage=0, scheduled=3.0, sent=3.0, status=None, error="timeout"),
    ]
    path = tmp_path / "requests.csv"
    path.write_text(csv_text(records, ["companion"]))
    # Every request that ended at the server, the failed one too: vLLM counts aborts and errors as finished.
    assert read_completions(path, T0) == [T0 + 0.75, T0 + 1.5, T0 + 2.1]
