"""Argument types the subcommands share: a bad value becomes argparse's usage error naming it and
what is allowed."""

from __future__ import annotations

import argparse
import math
import urllib.parse

from infersight.config import MAX_TIME_SCALE
from infersight.durations import Duration, DurationError
from infersight.loopback import is_loopback

# Waiting on a server for more than a day is a typo, not a plan.
LONGEST_TIME_LIMIT = Duration.parse("1d")


def duration(text: str) -> Duration:
    """A Prometheus-style duration such as 500ms, 30s or 5m."""
    try:
        return Duration.parse(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def time_limit(text: str) -> float:
    """How long an operation may take, in seconds: a duration (90s, 2m) or a number of seconds
    (120, 0.5), above zero and at most a day. NaN, infinities and negative values are refused."""
    allowed = f"give a number of seconds or a duration such as 90s or 2m, above 0 and at most {LONGEST_TIME_LIMIT}"
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = Duration.parse(text).total_seconds
        except DurationError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a time limit: {allowed}") from None
    if not (math.isfinite(seconds) and 0 < seconds <= LONGEST_TIME_LIMIT.total_seconds):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time limit: {allowed}")
    return seconds


def time_scale(text: str) -> float:
    """The factor a bundle's rules were built with: what the config's time_scale allows."""
    try:
        factor = float(text)
    except ValueError:
        factor = math.nan
    if not (math.isfinite(factor) and 1 <= factor <= MAX_TIME_SCALE):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time scale: give a number from 1 to {MAX_TIME_SCALE}")
    return factor


def http_url(text: str) -> str:
    """A server's base URL, http:// or https:// with a host (e.g. http://127.0.0.1:9090); no trailing slash."""
    not_a_url = f"{text!r} is not a URL: give http:// or https:// and a host, e.g. http://127.0.0.1:9090"
    try:
        parts = urllib.parse.urlsplit(text.strip())
        host = parts.hostname  # a bracketed host that is no IPv6 address raises, here or in urlsplit
    except ValueError:
        raise argparse.ArgumentTypeError(not_a_url) from None
    try:
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} has a port that is not a number (0-65535)") from None
    if parts.scheme not in ("http", "https") or not host:
        raise argparse.ArgumentTypeError(not_a_url)
    return text.strip().rstrip("/")


def loopback_listen(text: str) -> tuple[str, int]:
    """HOST:PORT to listen on, on a loopback address (127.0.0.1:4318): a receiver here takes data
    from processes on this machine only."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    allowed = "give a loopback HOST:PORT, e.g. 127.0.0.1:4318"
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT with a port from 1 to 65535: {allowed}")
    if not is_loopback(host):
        raise argparse.ArgumentTypeError(f"{text!r} is not on a loopback address: {allowed}")
    return host, int(port)
