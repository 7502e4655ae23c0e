"""Statistics behind the organizers' ranked tables: bootstrap intervals, paired randomization
tests between systems and the Holm-Bonferroni correction, vectorised over many systems.

Why one module: one family of procedures over one score matrix, sharing its seeded
resampling streams and their chunking; reproducing any figure of a ranked table needs the whole
contract below, so it is written, and kept, in one place.

Everything works on a matrix ``scores[system, unit]`` (float64): every system scored on the same
units (queries for 1a and 1b, turns for 2a and 2c), a unit the system did not answer already 0,
each value the per-unit figure of the official metric (nDCG@10). A system's figure is the mean
over units, so every procedure here is about the mean over units:

- ``bootstrap_ci``: percentile bootstrap interval of the mean (resampling units with
  replacement), the same resampled units for every system;
- ``paired_randomization_test``: the paired two-sided randomization (sign-flipping) test of the
  difference of means between two systems;
- ``holm``: Holm-Bonferroni step-down adjusted p-values;
- ``all_pairs``: every pair of systems, tested with the same sign vectors, Holm over all pairs;
- ``method_description``: the ``method`` block of ``leaderboard.json``;
- ``compare_systems``: all of it at once, with one set of parameters.

Reproducibility is part of the contract. Resample ``r`` of the bootstrap takes units
``I[r]`` with ``I = numpy.random.default_rng(seed).integers(0, n_units, size=(resamples,
n_units))``, and sign vector ``r`` of the randomization test is ``1 - 2 * B[r]`` with
``B = numpy.random.default_rng(seed).integers(0, 2, size=(resamples, n_units))``. Both are
drawn in chunks of rows to bound memory; numpy's generator gives the same stream whichever the
chunk sizes (``tests/metrics/test_significance.py`` checks it), so anyone can reproduce every figure with
those lines of numpy. The figures of a system, or of a pair, never depend on which other systems
are in the table.

This module is pure: no file, no message; bad arguments raise ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DEFAULT_SEED = 2027
DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95

# With at most this many units the randomization test enumerates all 2^n sign vectors (65,536
# at 16 units: cheaper than 10,000 random ones on 350 units, and free of Monte Carlo error).
EXACT_MAX_UNITS = 16

# Floats one working array holds at most (8 MiB of float64): bounds the memory of every chunked
# loop below whatever the number of systems, units or resamples.
_CHUNK_ELEMENTS = 1 << 20

# Relative tolerance when comparing a resampled statistic with the observed one (see
# ``paired_randomization_test``).
_TIE_TOLERANCE = 1e-10
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


class ConfidenceInterval(NamedTuple):
    """Lower and upper ends of an interval: floats for one system, arrays for many."""

    low: np.ndarray | float
    high: np.ndarray | float


@dataclass(frozen=True)
class RandomizationTest:
    """The outcome of one paired randomization test.

    ``delta`` is mean(a) - mean(b); ``p_value`` the two-sided p-value; ``standard_error`` its
    Monte Carlo standard error sqrt(p(1-p)/R) (0 for an exact enumeration); ``exact`` whether
    all 2^n sign vectors were enumerated; ``sign_vectors`` how many were used (R or 2^n).
    """

    delta: float
    p_value: float
    standard_error: float
    exact: bool
    sign_vectors: int


@dataclass(frozen=True)
class PairComparison:
    """One unordered pair of systems: ``a`` is ranked above ``b`` (its row comes first).

    ``p_holm`` is ``p_value`` adjusted by Holm over all pairs of the table.
    """

    a: str
    b: str
    delta: float
    p_value: float
    p_holm: float
    standard_error: float

    def as_dict(self) -> dict[str, str | float]:
        """The pair as ``leaderboard.json`` lists it (the standard error is in the method)."""
        return {"a": self.a, "b": self.b, "delta": self.delta, "p_value": self.p_value,
                "p_holm": self.p_holm}


@dataclass(frozen=True)
class SystemComparison:
    """Intervals per system (rows of the scores), every pair, and the method block."""

    ci_low: np.ndarray
    ci_high: np.ndarray
    pairs: list[PairComparison]
    method: dict


# ----------------------------------------------------------------------------- validation


def _score_matrix(scores, what: str) -> np.ndarray:
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"{what} must be a matrix [system, unit], got {matrix.ndim} dimension(s)")
    if matrix.shape[1] == 0:
        raise ValueError(f"{what} has no unit")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{what} holds a value that is not finite (NaN or infinite)")
    return matrix


def _check_resamples(resamples: int) -> int:
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    return int(resamples)


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, (float, int)) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def _rows_per_chunk(n_units: int) -> int:
    return max(1, _CHUNK_ELEMENTS // n_units)


# ------------------------------------------------------------------------------- bootstrap


def _bootstrap_means(matrix: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """means[system, r] = mean of the system's values on the units of resample r."""
    n_systems, n_units = matrix.shape
    rng = np.random.default_rng(seed)
    means = np.empty((n_systems, resamples), dtype=np.float64)
    rows = _rows_per_chunk(n_units)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        units = rng.integers(0, n_units, size=(stop - start, n_units))
        # One system at a time keeps the gathered block at one chunk. The mean over the last,
        # contiguous axis is numpy's pairwise sum, the same bits as a plain x[units[r]].mean()
        # (no BLAS, whose rounding depends on the machine's kernel).
        for system in range(n_systems):
            means[system, start:stop] = matrix[system][units].mean(axis=1)
    return means


def bootstrap_ci(values, *, confidence: float = DEFAULT_CONFIDENCE,
                 resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED) -> ConfidenceInterval:
    """Percentile bootstrap interval of the mean over units (Efron & Tibshirani 1993, ch. 13).

    ``values`` is one system's per-unit figures (1-D) or a matrix [system, unit]. Each of
    ``resamples`` bootstrap samples draws ``n`` units with replacement (the same units for every
    system, so that intervals are comparable) and takes the mean of the drawn values,
    theta*_r = (1/n) sum_i x[I[r, i]]. The interval is the (alpha/2, 1 - alpha/2) quantiles of
    theta*_1..theta*_R with alpha = 1 - confidence, by linear interpolation between order
    statistics (numpy's default, the one ``scipy.stats.bootstrap(method="percentile")`` uses).

    Returns ``ConfidenceInterval(low, high)``: floats for 1-D ``values``, arrays (one per
    system) for a matrix. ``I`` is drawn as the module docstring states.
    """
    confidence = _check_confidence(confidence)
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    one_system = np.ndim(values) == 1
    matrix = _score_matrix(np.atleast_2d(values) if one_system else values, "values")
    means = _bootstrap_means(matrix, resamples, seed)
    alpha = 1.0 - confidence
    low, high = np.percentile(means, [100.0 * alpha / 2, 100.0 * (1 - alpha / 2)], axis=1)
    if one_system:
        return ConfidenceInterval(float(low[0]), float(high[0]))
    return ConfidenceInterval(low, high)


# --------------------------------------------------------------------- randomization test


def _is_exact(n_units: int) -> bool:
    return n_units <= EXACT_MAX_UNITS


def _sign_vectors(n_units: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Chunks of sign vectors (rows of +1/-1 floats): all 2^n of them when the test is exact,
    else the ``resamples`` random ones of the module docstring."""
    rows = _rows_per_chunk(n_units)
    if _is_exact(n_units):
        # Row k's unit j is flipped when bit j of k is set: every sign vector exactly once.
        bits = np.arange(n_units, dtype=np.int64)
        total = 1 << n_units
        for start in range(0, total, rows):
            k = np.arange(start, min(total, start + rows), dtype=np.int64)
            yield 1.0 - 2.0 * ((k[:, None] >> bits) & 1)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, rows):
        flips = rng.integers(0, 2, size=(min(resamples, start + rows) - start, n_units))
        yield 1.0 - 2.0 * flips


def _randomization_counts(matrix: np.ndarray, first: np.ndarray, second: np.ndarray,
                          resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """For each pair (first[k], second[k]) of rows: the observed difference of means and the
    number of sign vectors whose |statistic| reaches |observed| (within the tolerance)."""
    n_units = matrix.shape[1]
    system_means = matrix.mean(axis=1)
    observed = system_means[first] - system_means[second]
    largest = np.abs(matrix).max(axis=1)
    scale = np.maximum(largest[first], largest[second])
    tolerance = max(_TIE_TOLERANCE, 4 * n_units * _UNIT_ROUNDOFF) * scale
    threshold = np.abs(observed) - tolerance
    counts = np.zeros(len(first), dtype=np.int64)
    if len(first) == 0:
        return observed, counts, 0
    sign_vectors = 0
    for signs in _sign_vectors(n_units, resamples, seed):
        sign_vectors += len(signs)
        # mean(s * (x_a - x_b)) = mean(s * x_a) - mean(s * x_b): one product per system rather
        # than per pair (50 systems, 1,225 pairs); the extra rounding is inside the tolerance.
        flipped_means = (signs @ matrix.T) / n_units
        pairs_per_block = max(1, _CHUNK_ELEMENTS // len(signs))
        for lo in range(0, len(first), pairs_per_block):
            hi = lo + pairs_per_block
            statistic = flipped_means[:, first[lo:hi]] - flipped_means[:, second[lo:hi]]
            counts[lo:hi] += np.count_nonzero(np.abs(statistic) >= threshold[lo:hi], axis=0)
    return observed, counts, sign_vectors


def _p_values(counts: np.ndarray, sign_vectors: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    if exact:
        return counts / sign_vectors, np.zeros(len(counts))
    p = (counts + 1.0) / (sign_vectors + 1.0)
    return p, np.sqrt(p * (1.0 - p) / sign_vectors)


def paired_randomization_test(a, b, *, resamples: int = DEFAULT_RESAMPLES,
                              seed: int = DEFAULT_SEED) -> RandomizationTest:
    """Paired two-sided randomization test (Fisher 1935; Smucker, Allan & Carterette 2007 for
    IR) of the difference of means over units, by flipping the sign of per-unit differences.

    With d_i = a_i - b_i and random signs s (each unit +1 or -1 with probability 1/2, the null
    hypothesis being that a and b are exchangeable on every unit):

        p = (1 + #{r : |mean(s_r * d)| >= |mean(d)|}) / (1 + R)

    over R = ``resamples`` sign vectors. The +1 in numerator and denominator counts the observed
    labelling as one of the resamples (Phipson & Smyth 2010, "Permutation p-values should never
    be zero"): without it a Monte Carlo p-value can be 0, which no exact test gives, and the
    test would reject more often than its level. Its Monte Carlo standard error is
    sqrt(p(1-p)/R).

    With at most ``EXACT_MAX_UNITS`` (16) units, all 2^n sign vectors are enumerated instead
    and p = #{s : |mean(s * d)| >= |mean(d)|} / 2^n exactly (the identity vector is among
    them, so p >= 2^-n > 0), as ``scipy.stats.permutation_test`` does when it can enumerate.

    Tolerance: statistics that are mathematically equal (a unit with d_i = 0 flipped, or two
    sign vectors giving the same sum) may differ in the last bits once computed, which would
    drop exact ties from the count. A resampled statistic counts when
    |mean(s * d)| >= |mean(d)| - tol, with tol = max(1e-10, 4 n u) * max(|a|, |b|) (u the unit
    roundoff 2^-53): above the worst-case rounding error of the computed means (about
    3 n u max(|a|, |b|)), and far below any difference of nDCG figures that matters. Identical
    systems therefore get p = 1 exactly and delta 0.
    """
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D of the same length, got shapes {a.shape} and "
                         f"{b.shape}")
    matrix = _score_matrix(np.stack([a, b]), "a and b")
    exact = _is_exact(matrix.shape[1])
    observed, counts, sign_vectors = _randomization_counts(
        matrix, np.array([0]), np.array([1]), resamples, seed)
    p, standard_error = _p_values(counts, sign_vectors, exact)
    return RandomizationTest(float(observed[0]), float(p[0]), float(standard_error[0]), exact,
                             sign_vectors)


# ------------------------------------------------------------------------------ correction


def holm(p_values) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979), in the order given.

    With the m p-values sorted ascending, p_(1) <= ... <= p_(m):

        p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j))

    (the running maximum makes the adjusted values monotone in the raw ones). Rejecting every
    hypothesis with p~ <= alpha controls the family-wise error rate at alpha under any
    dependence between the tests. Tied p-values get the same adjusted value.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be a 1-D list, got {p.ndim} dimension(s)")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise ValueError("every p-value must lie in [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(stepped))
    return adjusted


# ------------------------------------------------------------------------------- all pairs


def _check_names(names: Sequence[str], n_systems: int) -> list[str]:
    names = list(names)
    if len(names) != n_systems:
        raise ValueError(f"{len(names)} name(s) for {n_systems} system(s)")
    if len(set(names)) != len(names):
        raise ValueError("system names must be unique")
    return names


def all_pairs(scores, names: Sequence[str], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED) -> list[PairComparison]:
    """Every unordered pair of systems, tested by ``paired_randomization_test``.

    The rows of ``scores`` are the systems in rank order, best first (the caller ranks);
    ``names[i]`` names row i. Pair (i, j) with i < j has a = names[i] (ranked above) and
    b = names[j], delta = mean(a) - mean(b), and its p-value. Every pair uses the same sign
    vectors, so each p-value equals the one ``paired_randomization_test(scores[i], scores[j])``
    gives with the same seed; Holm's correction (``holm``) runs over all m = S(S-1)/2 pairs.
    Pairs are listed as (0, 1), (0, 2), ..., (1, 2), ...
    """
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    matrix = _score_matrix(scores, "scores")
    names = _check_names(names, matrix.shape[0])
    first, second = np.triu_indices(matrix.shape[0], k=1)
    observed, counts, sign_vectors = _randomization_counts(matrix, first, second, resamples, seed)
    p, standard_error = _p_values(counts, sign_vectors, _is_exact(matrix.shape[1]))
    p_holm = holm(p)
    return [PairComparison(names[i], names[j], float(observed[k]), float(p[k]), float(p_holm[k]),
                           float(standard_error[k]))
            for k, (i, j) in enumerate(zip(first.tolist(), second.tolist()))]


def method_description(*, n_units: int, n_systems: int, resamples: int, seed: int,
                       confidence: float, pairs: Sequence[PairComparison] = ()) -> dict:
    """The ``method`` block of ``leaderboard.json``: what the intervals and p-values are."""
    exact = _is_exact(n_units)
    sign_vectors = (1 << n_units) if exact else resamples
    largest_error = max((pair.standard_error for pair in pairs), default=0.0)
    return {
        "units": n_units,
        "systems": n_systems,
        "interval": {
            "method": "percentile bootstrap of the mean over units, units resampled with "
                      "replacement, the same resampled units for every system",
            "confidence": confidence,
            "resamples": resamples,
            "seed": seed,
        },
        "test": "paired randomization test (random sign flips of the per-unit differences)",
        "statistic": "difference of means over units, mean(a) - mean(b)",
        "sidedness": "two-sided",
        "p_value": ("#{s : |mean(s*d)| >= |mean(d)|} / 2^n over all 2^n sign vectors" if exact
                    else "(1 + #{r : |mean(s_r*d)| >= |mean(d)|}) / (1 + R)"),
        "exact": exact,
        "sign_vectors": sign_vectors,
        "resamples": resamples,
        "seed": seed,
        "tie_tolerance": "max(1e-10, 4 n 2^-53) * max(|a|, |b|)",
        "monte_carlo_standard_error": {
            "formula": "0 (exact enumeration)" if exact else "sqrt(p (1 - p) / R)",
            "max": largest_error,
        },
        "correction": f"Holm-Bonferroni step-down over all {n_systems * (n_systems - 1) // 2} "
                      "pairs (p_holm)",
    }


def compare_systems(scores, names: Sequence[str], *, confidence: float = DEFAULT_CONFIDENCE,
                    resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED) -> SystemComparison:
    """``bootstrap_ci`` for every system, ``all_pairs`` and ``method_description``, with one
    set of parameters (rows in rank order, best first, as ``all_pairs`` wants)."""
    matrix = _score_matrix(scores, "scores")
    low, high = bootstrap_ci(matrix, confidence=confidence, resamples=resamples, seed=seed)
    pairs = all_pairs(matrix, names, resamples=resamples, seed=seed)
    method = method_description(n_units=matrix.shape[1], n_systems=matrix.shape[0],
                                resamples=resamples, seed=seed, confidence=confidence,
                                pairs=pairs)
    return SystemComparison(low, high, pairs, method)
