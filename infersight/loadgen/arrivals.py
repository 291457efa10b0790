"""Open-loop arrival processes: when each request of a rate stage is due.

All three have mean gap ``1/rate``:
- ``constant``: exactly ``1/rate``;
- ``poisson``: exponential gaps (memoryless arrivals);
- ``gamma``: gamma gaps of shape ``k`` (vLLM bench's "burstiness"), so the gaps' coefficient of
  variation is ``1/sqrt(k)``: k < 1 is burstier than Poisson, k = 1 is Poisson, k > 1 smoother.

Randomness comes only from the ``random.Random`` passed in, so a seed fixes the schedule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Literal

ArrivalKind = Literal["constant", "poisson", "gamma"]


def gaps(kind: ArrivalKind, rate: float, rng: random.Random, burstiness: float = 1.0) -> Iterator[float]:
    """An endless stream of inter-arrival gaps in seconds."""
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    mean = 1.0 / rate
    if kind == "constant":
        while True:
            yield mean
    elif kind == "poisson":
        while True:
            yield rng.expovariate(rate)
    elif kind == "gamma":
        if burstiness <= 0:
            raise ValueError(f"burstiness (gamma shape) must be positive, got {burstiness}")
        scale = mean / burstiness  # shape * scale = mean
        while True:
            yield rng.gammavariate(burstiness, scale)
    else:
        raise ValueError(f"unknown arrival process {kind!r}; use constant, poisson or gamma")


def offsets(
    kind: ArrivalKind, rate: float, duration_s: float, rng: random.Random, burstiness: float = 1.0, limit: int = -1
) -> list[float]:
    """Send offsets in [0, duration_s) from the stage's start: the first request goes at 0, each next one
    a gap later. ``limit`` (if >= 0) caps how many are returned."""
    if kind == "constant":  # i / rate, not a running sum, so rounding never adds an arrival
        count = math.ceil(duration_s * rate - 1e-9)
        return [i / rate for i in range(count if limit < 0 else min(count, limit))]
    out: list[float] = []
    t = 0.0
    stream = gaps(kind, rate, rng, burstiness)
    while t < duration_s and (limit < 0 or len(out) < limit):
        out.append(t)
        t += next(stream)
    return out
