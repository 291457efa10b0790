"""Argument types the subcommands share: a bad value becomes argparse's usage error naming it."""

from __future__ import annotations

import argparse

from infersight.durations import Duration, DurationError


def duration(text: str) -> Duration:
    """A Prometheus-style duration such as 500ms, 30s or 5m."""
    try:
        return Duration.parse(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
