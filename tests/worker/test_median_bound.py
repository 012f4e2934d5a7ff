"""What the speed boards rank is a 95% lower confidence bound of the median ratio.

docs/learners/speed-boards.md: "the k-th smallest of the n pair ratios, with k taken from the
binomial distribution (the median lies above the k-th smallest of n pairs with probability at
least 95%).  The bound stays below the file's true median ratio in at least 19 trials out of
20".  The coverage is computed here from the binomial itself, exactly, and then seen on
simulated trials whose true median is known.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from bot.worker.speed_trial import PAIRS, lower_bound_of_median


def _coverage(k: int, n: int) -> float:
    """P(the k-th smallest of n draws lies below their distribution's median): at least k of
    the n draws fall below it, each with probability 1/2."""
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n


def _k_taken(n: int) -> int:
    """Which order statistic ``lower_bound_of_median`` returns for n distinct values."""
    values = [float(i) for i in range(1, n + 1)]
    random.Random(n).shuffle(values)
    return int(lower_bound_of_median(values))


@pytest.mark.parametrize("n", [PAIRS, *range(5, 201, 5)])
def test_the_k_taken_covers_the_median_at_least_19_times_in_20(n: int) -> None:
    k = _k_taken(n)
    assert _coverage(k, n) >= 0.95, (n, k, _coverage(k, n))
    assert k == 1 or k >= n // 4, "and it is no lower than it must be: it still ranks"


def test_simulated_trials_rank_below_their_true_median_19_times_in_20() -> None:
    """2000 trials of PAIRS lognormal ratios around a known median of 1.8: the expected share
    below is 0.98 for n = 50 (sd 0.003), so 0.95 is ten deviations of margin."""
    rng = random.Random(20260)
    median, trials = 1.8, 2000
    below = 0
    for _ in range(trials):
        ratios = [median * math.exp(rng.gauss(0.0, 0.2)) for _ in range(PAIRS)]
        bound = lower_bound_of_median(ratios)
        below += bound < median
        assert bound <= statistics.median(ratios)
    assert below / trials >= 0.95, below / trials
