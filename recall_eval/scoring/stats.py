"""Intervals and tests on per-question values, all from scipy.stats, all seeded.

    bootstrap_ci      percentile bootstrap interval of a statistic (``scipy.stats.bootstrap``); for
                      a rate whose every value is the same (all hits, or none), where resamples
                      cannot vary, Wilson's score interval (``scipy.stats.binomtest``)
    two_sample_ci     the same over two samples resampled independently (balanced accuracy:
                      paraphrases and unrelated messages are resampled separately, as drawn)
    ratio_ci          sum(num) / sum(den) with messages resampled as pairs (headline precision:
                      right headlines over headlines handed over, a message at a time)
    paired_bootstrap  mean of b - a, its interval and a two-sided bootstrap p-value
    randomization_p   paired randomization (sign-flip) test of mean(a - b) = 0
                      (``scipy.stats.permutation_test``): Fisher's test, as ranx runs it
    holm              Holm-Bonferroni adjusted p-values
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

N_RESAMPLES = 1000
PERMUTATIONS = 10_000
SEED = 20261129
LEVEL = 0.95


def mean(a: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis)


def _resampleable(a: np.ndarray) -> np.ndarray:
    """scipy resamples two or more values; resampling one value always gives it back, as
    resampling it twice over does."""
    return np.repeat(a, 2) if a.size == 1 else a


def _bootstrap(samples: Sequence[np.ndarray], stat: Callable, seed: int, n_resamples: int, level: float):
    return stats.bootstrap(tuple(_resampleable(s) for s in samples), stat, n_resamples=n_resamples,
                           vectorized=True, paired=False, confidence_level=level, method="percentile",
                           rng=np.random.default_rng(seed))


def bootstrap_ci(values: Sequence[float] | np.ndarray, stat: Callable = mean, seed: int = SEED,
                 n_resamples: int = N_RESAMPLES, level: float = LEVEL, rate: bool = True) -> tuple[float, float] | None:
    """Percentile interval of ``stat(values, axis=...)`` over resamples of ``values``; None when empty.
    ``rate``: the values are a rate's 0/1 outcomes (Wilson's interval where they are all alike);
    otherwise (a paired difference) values all alike have the interval of their value: Wilson's
    for a difference of nothing read "between no change and a 6-point gain, never a loss" (an
    outside tester's AH07)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    if not rate and np.all(arr == arr[0]):
        return float(arr[0]), float(arr[0])
    if stat is mean and np.all(arr == arr[0]) and arr[0] in (0.0, 1.0):
        # Every question a hit (or none): resamples are all alike and the percentile interval
        # would be [1, 1] however few questions there are. Wilson's score interval says what
        # n questions can tell (one hit: [0.21, 1]; 40 of 40: [0.91, 1]).
        return _wilson(int(arr.sum()), arr.size, level)
    ci = _bootstrap([arr], stat, seed, n_resamples, level).confidence_interval
    return float(ci.low), float(ci.high)


def two_sample_ci(a: np.ndarray, b: np.ndarray, stat: Callable, seed: int = SEED,
                  n_resamples: int = N_RESAMPLES, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of ``stat(a, b, axis=...)``, each sample resampled on its own."""
    ci = _bootstrap([np.asarray(a, float), np.asarray(b, float)], stat, seed, n_resamples, level).confidence_interval
    return float(ci.low), float(ci.high)


def _ratio(num: np.ndarray, den: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(num, axis=axis) / np.maximum(np.sum(den, axis=axis), 1e-12)


def ratio_ci(num: Sequence[float], den: Sequence[float], seed: int = SEED, n_resamples: int = N_RESAMPLES,
             level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile interval of ``sum(num) / sum(den)``, resampling (num, den) pairs; None when empty."""
    a, b = np.asarray(num, float), np.asarray(den, float)
    if a.size == 0:
        return None
    if b.sum() > 0 and (np.all(a == b) or not a.any()) and np.all(a == np.round(a)) and np.all(b == np.round(b)):
        # Every headline right (or none): resamples are all alike, the percentile interval [1, 1];
        # Wilson's score interval over the headlines says what that many can tell (stop 44).
        return _wilson(int(a.sum()), int(b.sum()), level)
    ci = stats.bootstrap((_resampleable(a), _resampleable(b)), _ratio, n_resamples=n_resamples, vectorized=True,
                         paired=True, confidence_level=level, method="percentile",
                         rng=np.random.default_rng(seed)).confidence_interval
    return float(ci.low), float(ci.high)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, seed: int = SEED) -> dict:
    """Mean of b - a with a percentile 95% interval and a two-sided bootstrap p-value (twice
    the smaller share of resampled means on either side of 0)."""
    d = np.asarray(b, float) - np.asarray(a, float)
    if d.size == 0:
        return {"diff": None, "ci95": [], "p_value": None}
    res = _bootstrap([d], mean, seed, N_RESAMPLES, LEVEL)
    means = res.bootstrap_distribution
    p = 1.0 if not d.any() else min(1.0, 2 * min(float((means <= 0).mean()), float((means >= 0).mean())))
    ci = res.confidence_interval
    return {"diff": float(d.mean()), "ci95": [float(ci.low), float(ci.high)], "p_value": p}


def randomization_p(a: np.ndarray, b: np.ndarray, n: int = PERMUTATIONS, seed: int = SEED) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(a - b) = 0."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if not diff.any():
        return 1.0
    res = stats.permutation_test((diff,), mean, permutation_type="samples", vectorized=True, n_resamples=n,
                                 alternative="two-sided", rng=np.random.default_rng(seed))
    return float(res.pvalue)


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    order = sorted(pvalues, key=pvalues.__getitem__)
    out, running = {}, 0.0
    for k, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - k) * pvalues[name]))
        out[name] = running
    return out


def _wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval of ``k`` out of ``n``: what n can tell when resamples cannot vary."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def alike(a: np.ndarray) -> bool:
    """Every value the same: resamples cannot vary, so a percentile interval has no width."""
    return a.size > 0 and bool(np.all(a == a.flat[0]))


def wilson_mean_of_two(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """A conservative interval of (mean(a) + mean(b)) / 2 for two rates' 0/1 outcomes: each
    part's Wilson interval at the Bonferroni level (both hold together at ``level`` or more),
    averaged. What n can tell where every outcome of a part is alike (balanced accuracy of
    4 questions read 1.000 [1.000, 1.000]: an outside tester, stop 58)."""
    each = 1 - (1 - level) / 2
    (la, ha), (lb, hb) = (_wilson(int(x.sum()), x.size, each) for x in (a, b))
    return (la + lb) / 2, (ha + hb) / 2


def count_ci(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The exact Poisson (Garwood) interval of a mean count per item (headlines per message),
    for counts all alike where resamples cannot vary: not a proportion's, which is capped at 1."""
    k, n, alpha = float(values.sum()), values.size, 1 - level
    lo = stats.chi2.ppf(alpha / 2, 2 * k) / 2 if k > 0 else 0.0
    return float(lo / n), float(stats.chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2 / n)


def hull(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return min(a[0], b[0]), max(a[1], b[1])


wilson = _wilson  # for callers outside this module (versus's separation)
