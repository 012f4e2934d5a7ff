"""Pearson's chi-square goodness-of-fit test, for graders that check a distribution.

A grader that samples on the learner's side (with uniforms it passed in) can test, on the
trusted side, that the counts it got back follow the distribution the task guarantees.
The p-value is the chi-square distribution's upper tail, ``Q(df / 2, x / 2)`` with ``Q`` the
regularized upper incomplete gamma function, computed here by its power series below
``a + 1`` and its continued fraction above (Numerical Recipes, 6.2), so the worker needs
no scipy.  Plain Python floats: a test has a handful of bins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

_EPS = 1e-15
_TINY = 1e-300
_MAX_TERMS = 10_000


@dataclass(frozen=True)
class ChiSquare:
    """One test: the statistic, its degrees of freedom, the p-value, and the bins that
    were observed although their probability is 0 (which alone make the p-value 0)."""

    statistic: float
    df: int
    p_value: float
    impossible: tuple[int, ...] = ()


def chi_square(observed: Sequence[int], probabilities: Sequence[float]) -> ChiSquare:
    """Pearson's test of ``observed`` counts against ``probabilities`` (summing to 1 up to
    rounding): the statistic sums ``(O - E)^2 / E`` over the bins of positive probability,
    with ``df`` one less than their number.  A count in a bin of probability 0 is
    impossible under the hypothesis, so the p-value is 0."""
    if len(observed) != len(probabilities):
        raise ValueError(f"{len(observed)} counts for {len(probabilities)} probabilities")
    total = sum(observed)
    impossible = tuple(
        i for i, (o, pr) in enumerate(zip(observed, probabilities, strict=True)) if pr <= 0 < o
    )
    live = [(o, pr * total) for o, pr in zip(observed, probabilities, strict=True) if pr > 0]
    statistic = sum((o - e) ** 2 / e for o, e in live) if total else 0.0
    df = len(live) - 1
    if impossible:
        return ChiSquare(statistic, df, 0.0, impossible)
    p_value = upper_gamma(df / 2, statistic / 2) if df > 0 else 1.0
    return ChiSquare(statistic, df, p_value)


def upper_gamma(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function ``Q(a, x) = Γ(a, x) / Γ(a)``, for
    ``a > 0`` and ``x >= 0``, to about 1e-14 relative (absolute near 1)."""
    if a <= 0 or x < 0:
        raise ValueError(f"Q(a, x) needs a > 0 and x >= 0, got a={a}, x={x}")
    if x == 0:
        return 1.0
    if x < a + 1:
        return max(0.0, 1.0 - _lower_series(a, x))
    return _upper_fraction(a, x)


def _prefactor(a: float, x: float) -> float:
    """``x^a e^-x / Γ(a)``, in logs so that large ``x`` underflows to 0 rather than nan."""
    return math.exp(a * math.log(x) - x - math.lgamma(a))


def _lower_series(a: float, x: float) -> float:
    """``P(a, x)`` by its series, which converges fast for ``x < a + 1``."""
    term = total = 1.0 / a
    n = a
    for _ in range(_MAX_TERMS):
        n += 1
        term *= x / n
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * _prefactor(a, x)


def _upper_fraction(a: float, x: float) -> float:
    """``Q(a, x)`` by Lentz's evaluation of its continued fraction, for ``x >= a + 1``."""
    b = x + 1 - a
    c = 1 / _TINY
    d = 1 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _EPS:
            break
    return _prefactor(a, x) * h
