"""Prometheus durations: parsing, formatting and time scaling.

Every duration in the config is nominal (what ships to production). The validation
profile divides all of them by one factor, and this module is the one place that does it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from infersight.inputs import brief

# Largest unit first, so formatting picks the most readable exact unit.
_UNITS_MS: tuple[tuple[str, int], ...] = (
    ("y", 365 * 24 * 3600 * 1000),
    ("w", 7 * 24 * 3600 * 1000),
    ("d", 24 * 3600 * 1000),
    ("h", 3600 * 1000),
    ("m", 60 * 1000),
    ("s", 1000),
    ("ms", 1),
)
_UNIT_MS = dict(_UNITS_MS)
_PART = re.compile(r"(\d+)(ms|[ywdhms])")
_WHOLE = re.compile(r"^(?:\d+(?:ms|[ywdhms]))+$")


class DurationError(ValueError):
    """A string is not a Prometheus duration, or one Prometheus cannot hold."""


@dataclass(frozen=True, order=True)
class Duration:
    """A non-negative span of time with millisecond resolution."""

    ms: int

    @classmethod
    def parse(cls, text: str) -> Duration:
        text = text.strip()
        shown = brief(text, 40)
        if not _WHOLE.match(text):
            raise DurationError(
                f"{shown} is not a Prometheus duration; use digits and units ms, s, m, h, d, w, y (e.g. 30s, 5m, 1h30m)"
            )
        # A number of more than 16 digits exceeds the range in any unit; stopping there also
        # keeps int() away from Python's limit on digits.
        parts = [(n.lstrip("0") or "0", u) for n, u in _PART.findall(text)]
        ms = None if any(len(n) > 16 for n, _ in parts) else sum(int(n) * _UNIT_MS[u] for n, u in parts)
        if ms is None or ms > MAX_DURATION.ms:
            raise DurationError(f"{shown} is out of Prometheus's range; durations are at most {MAX_DURATION}")
        return cls(ms)

    @classmethod
    def seconds(cls, value: float) -> Duration:
        return cls(round(value * 1000))

    @property
    def total_seconds(self) -> float:
        return self.ms / 1000

    def scaled(self, factor: float) -> Duration:
        """Divide by the time-scale factor, never below one millisecond. A factor under 1 would
        stretch a duration past what the config checked (and Prometheus's range)."""
        if not (math.isfinite(factor) and factor >= 1):
            raise ValueError(f"time-scale factor {factor} must be a finite number >= 1")
        return Duration(max(1, round(self.ms / factor))) if self.ms else self

    def __mul__(self, k: float) -> Duration:
        return Duration(round(self.ms * k))

    def __str__(self) -> str:
        if self.ms == 0:
            return "0s"
        for unit, size in _UNITS_MS:
            if self.ms % size == 0:
                return f"{self.ms // size}{unit}"
        raise AssertionError("unreachable: ms divides everything")

    @property
    def suffix(self) -> str:
        """The form used inside recording-rule names, e.g. ``rate5m``."""
        return str(self)

    # pydantic integration: accept "5m" strings (or Duration), serialise back to "5m".
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def validate(value: Any) -> Duration:
            if isinstance(value, Duration):
                return value
            if isinstance(value, bool) or not isinstance(value, str):
                raise ValueError(
                    f"expected a duration string such as '30s' or '5m', got {type(value).__name__} {brief(value)}"
                )
            if value.strip().startswith("-"):
                raise ValueError(f"{brief(value, 40)}: durations cannot be negative")
            try:
                return Duration.parse(value)
            except DurationError as exc:
                raise ValueError(str(exc)) from None

        return core_schema.no_info_plain_validator_function(
            validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )


# Prometheus holds a duration as a Go time.Duration, int64 nanoseconds: 9223372036854ms at most,
# and `promtool check rules` refuses one more ("duration out of range") in for:, a range or an
# offset. The largest whole year below it is the bound the config enforces.
MAX_DURATION = Duration(292 * _UNIT_MS["y"])
