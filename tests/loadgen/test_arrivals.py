"""Arrival processes: inter-arrival times follow the stated distribution (Kolmogorov-Smirnov
test with fixed seeds), the rate is right, and a seed fixes the schedule.

The KS critical value at significance 0.001 is 1.949/sqrt(n); with fixed seeds the outcome is
deterministic, and a test of the wrong distribution (the power check) must reject."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from infersight.loadgen import arrivals

N = 4000
KS_CRITICAL = 1.949 / math.sqrt(N)  # alpha = 0.001


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Regularized lower incomplete gamma P(shape, x/scale): series below shape+1, else Lentz's continued fraction."""
    z = x / scale
    if z <= 0:
        return 0.0
    log_front = shape * math.log(z) - z - math.lgamma(shape)
    if z < shape + 1:
        term = total = 1.0 / shape
        a = shape
        for _ in range(10_000):
            a += 1
            term *= z / a
            total += term
            if term < total * 1e-15:
                break
        return total * math.exp(log_front)
    tiny = 1e-300
    b = z + 1 - shape
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - shape)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return 1.0 - math.exp(log_front) * h


def ks_statistic(samples: list[float], cdf: object) -> float:
    assert callable(cdf)
    xs = sorted(samples)
    n = len(xs)
    return max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))


def sample_gaps(kind: arrivals.ArrivalKind, rate: float, seed: int, burstiness: float = 1.0) -> list[float]:
    return list(itertools.islice(arrivals.gaps(kind, rate, random.Random(seed), burstiness), N))


def test_gamma_cdf_matches_closed_forms() -> None:
    for x in (0.1, 0.5, 1.0, 2.0, 5.0, 12.0):
        assert gamma_cdf(x, 1.0, 1.0) == pytest.approx(1 - math.exp(-x), abs=1e-12)
        assert gamma_cdf(x, 2.0, 1.0) == pytest.approx(1 - math.exp(-x) * (1 + x), abs=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rate", [0.5, 20.0, 1000.0])
def test_poisson_gaps_are_exponential(rate: float, seed: int) -> None:
    gaps = sample_gaps("poisson", rate, seed)
    d = ks_statistic(gaps, lambda x: 1 - math.exp(-rate * x))
    assert d < KS_CRITICAL, f"KS D={d:.4f} >= {KS_CRITICAL:.4f}: gaps are not Exp(rate={rate})"


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_gaps_have_the_stated_shape_and_mean(burstiness: float, seed: int) -> None:
    rate = 10.0
    gaps = sample_gaps("gamma", rate, seed, burstiness)
    scale = 1 / (rate * burstiness)
    d = ks_statistic(gaps, lambda x: gamma_cdf(x, burstiness, scale))
    assert d < KS_CRITICAL, f"KS D={d:.4f} >= {KS_CRITICAL:.4f}: gaps are not Gamma(k={burstiness})"


def test_ks_rejects_the_wrong_distribution() -> None:
    """Power check: bursty gamma gaps must not pass as exponential, or the tests above prove nothing."""
    gaps = sample_gaps("gamma", 10.0, 1, 0.25)
    assert ks_statistic(gaps, lambda x: 1 - math.exp(-10.0 * x)) > KS_CRITICAL


def test_burstiness_sets_the_coefficient_of_variation() -> None:
    """Moment check; the tolerance is 5 standard errors of the sample CV for n gaps."""
    for k in (0.25, 1.0, 4.0):
        gaps = sample_gaps("gamma", 10.0, 7, k)
        mean = sum(gaps) / N
        sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (N - 1))
        cv = 1 / math.sqrt(k)
        # se(CV) ~ CV * sqrt((1 + 2 CV^2) / (2n)) for gamma samples (delta method, generous)
        tolerance = 5 * cv * math.sqrt((1 + 2 * cv**2) / (2 * N))
        assert abs(sd / mean - cv) < tolerance
        assert abs(mean - 0.1) < 5 * 0.1 * cv / math.sqrt(N)


def test_constant_arrivals_are_exact() -> None:
    offs = arrivals.offsets("constant", 10.0, 3.0, random.Random(0))
    assert len(offs) == 30
    assert offs[0] == 0.0
    assert all(b - a == pytest.approx(0.1) for a, b in itertools.pairwise(offs))
    assert len(arrivals.offsets("constant", 3.0, 1.0, random.Random(0))) == 3


@pytest.mark.parametrize("kind", ["poisson", "gamma"])
def test_arrival_count_matches_rate_times_duration(kind: arrivals.ArrivalKind) -> None:
    rate, duration = 50.0, 200.0
    n = len(arrivals.offsets(kind, rate, duration, random.Random(11), burstiness=1.0))
    expected = rate * duration
    assert abs(n - expected) < 5 * math.sqrt(expected)


def test_seed_fixes_the_schedule() -> None:
    def run(seed: int) -> list[float]:
        return arrivals.offsets("gamma", 5.0, 20.0, random.Random(seed), burstiness=0.5)

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_limit_caps_the_count_and_offsets_stay_inside_the_stage() -> None:
    offs = arrivals.offsets("poisson", 100.0, 10.0, random.Random(0), limit=25)
    assert len(offs) == 25
    offs = arrivals.offsets("poisson", 100.0, 10.0, random.Random(0))
    assert all(0 <= t < 10.0 for t in offs)
    assert offs == sorted(offs)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="rate must be positive"):
        next(arrivals.gaps("poisson", 0.0, random.Random(0)))
    with pytest.raises(ValueError, match="burstiness"):
        next(arrivals.gaps("gamma", 1.0, random.Random(0), burstiness=0))
