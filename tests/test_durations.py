from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infersight.durations import Duration, DurationError


@pytest.mark.parametrize(
    ("text", "ms"), [("5m", 300_000), ("1h30m", 5_400_000), ("250ms", 250), ("30d", 30 * 86_400_000), ("0s", 0)]
)
def test_parse(text: str, ms: int) -> None:
    assert Duration.parse(text).ms == ms


@pytest.mark.parametrize("text", ["", "5", "-5m", "5 m", "1.5h", "5min", "m5"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(DurationError, match="not a Prometheus duration"):
        Duration.parse(text)


@pytest.mark.parametrize(("ms", "text"), [(300_000, "5m"), (90_000, "90s"), (250, "250ms"), (86_400_000, "1d")])
def test_format_picks_largest_exact_unit(ms: int, text: str) -> None:
    assert str(Duration(ms)) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_format_round_trips(ms: int) -> None:
    assert Duration.parse(str(Duration(ms))).ms == ms


def test_scaling_divides_and_never_reaches_zero() -> None:
    assert str(Duration.parse("1h").scaled(60)) == "1m"
    assert str(Duration.parse("5m").scaled(60)) == "5s"
    assert Duration.parse("1ms").scaled(60).ms == 1
