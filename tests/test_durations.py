from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from infersight.durations import MAX_DURATION, Duration, DurationError


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


@pytest.mark.parametrize("text", ["293y", "1000y", "9223372036855ms", "106752d", "9" * 5000 + "y", "1y" * 293])
def test_parse_refuses_what_prometheus_cannot_represent(text: str) -> None:
    with pytest.raises(DurationError) as info:
        Duration.parse(text)
    message = str(info.value)
    assert "out of Prometheus's range" in message and f"at most {MAX_DURATION}" in message
    assert "\n" not in message and len(message) < 200


def test_the_largest_duration_parses() -> None:
    assert Duration.parse(str(MAX_DURATION)) == MAX_DURATION


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool")
def test_promtool_accepts_the_largest_duration_everywhere_a_rule_holds_one(tmp_path: Path) -> None:
    d = str(MAX_DURATION)
    group = {
        "name": "largest",
        "interval": d,
        "rules": [{"alert": "Largest", "expr": f"rate(up[{d}] offset {d}) > 0", "for": d}],
    }
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [group]}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@given(st.integers(min_value=0, max_value=MAX_DURATION.ms), st.floats(min_value=1, max_value=3600))
def test_scaling_stays_a_valid_duration(ms: int, factor: float) -> None:
    scaled = Duration(ms).scaled(factor)
    assert Duration.parse(str(scaled)) == scaled  # printable, and inside the range again
    assert (1 if ms else 0) <= scaled.ms <= ms


@pytest.mark.parametrize("factor", [0, 0.5, -1, math.nan, math.inf])
def test_scaling_refuses_factors_that_would_stretch_or_break(factor: float) -> None:
    with pytest.raises(ValueError, match="time-scale factor"):
        Duration.parse("5m").scaled(factor)
