"""The argument types the subcommands share: what they accept, and a one-line usage error naming
the value and what is allowed for anything else."""

from __future__ import annotations

import argparse
import threading

import pytest

from infersight.commands.arguments import duration, http_url, time_limit, time_scale
from infersight.durations import MAX_DURATION


@pytest.mark.parametrize(
    ("text", "seconds"), [("120", 120.0), ("0.5", 0.5), ("90s", 90.0), ("2m", 120.0), ("1d", 86400.0)]
)
def test_a_time_limit_is_seconds_or_a_duration(text: str, seconds: float) -> None:
    assert time_limit(text) == seconds


@pytest.mark.parametrize("text", ["nan", "-5", "inf", "-inf", "0", "0s", "1e999", "-1s", "soon", "", "1d1ms"])
def test_a_time_limit_must_be_positive_finite_and_at_most_a_day(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"is not a time limit: .* at most 1d"):
        time_limit(text)


def test_a_duration_longer_than_any_wait_is_refused() -> None:
    """A flag's duration ends up in a sleep or a timeout: Python's waits must hold the longest."""
    assert MAX_DURATION.total_seconds <= threading.TIMEOUT_MAX
    assert duration(str(MAX_DURATION)) == MAX_DURATION
    with pytest.raises(argparse.ArgumentTypeError, match="'1000y' is out of Prometheus's range"):
        duration("1000y")


@pytest.mark.parametrize("text", ["notaurl", "127.0.0.1:9090", "ftp://host", "http://", "http://host:port"])
def test_a_server_url_needs_http_and_a_host(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="http"):
        http_url(text)


def test_a_server_url_loses_its_trailing_slash() -> None:
    assert http_url("http://127.0.0.1:9090/") == "http://127.0.0.1:9090"


@pytest.mark.parametrize(("text", "factor"), [("1", 1.0), ("60", 60.0), ("2.5", 2.5), ("3600", 3600.0)])
def test_a_time_scale_is_what_the_config_allows(text: str, factor: float) -> None:
    assert time_scale(text) == factor


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "1e400", "0", "0.5", "-5", "3601", "fast", ""])
def test_a_time_scale_must_be_finite_and_within_the_configs_range(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"is not a time scale: .*from 1 to 3600"):
        time_scale(text)
