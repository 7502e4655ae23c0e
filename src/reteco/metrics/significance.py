"""Statistics behind the organizers' ranked tables: bootstrap intervals of the figures and of
the ranks, the randomised Tukey HSD test (the default), paired randomization tests with Holm's
or Benjamini-Hochberg's correction (options), significance groups, vectorised over many systems.

Why one module: one family of procedures over one score matrix, sharing its seeded
resampling streams and their chunking; reproducing any figure of a ranked table needs the whole
contract below, so it is written, and kept, in one place.

Everything works on a matrix ``scores[system, unit]`` (float64): every system scored on the same
units (queries for 1a and 1b, turns for 2a and 2c), a unit the system did not answer already 0,
each value the per-unit figure of the official metric (nDCG@10). A system's figure is the mean
over units, so every procedure here is about the mean over units:

- ``bootstrap_ci``: percentile bootstrap interval of the mean (resampling units with
  replacement), the same resampled units for every system; ``rank_intervals``: the interval of
  each system's rank over the same bootstrap resamples;
- ``tukey_hsd``: the randomised Tukey HSD test of every pair (Carterette 2012; Sakai 2014), one
  distribution of the largest difference of means for all pairs: it controls the family-wise
  error over all pairs and can say "significant" among hundreds of systems and few units, where
  a correction over S(S-1)/2 separate tests cannot (``attainability_warning`` says when a
  configuration cannot reach significance, ``resamples_for`` how many resamples a table needs);
- ``paired_randomization_test``: the paired two-sided randomization (sign-flipping) test of the
  difference of means between two systems; ``all_pairs``: every pair tested with the same sign
  vectors, then ``holm`` (family-wise) or ``benjamini_hochberg`` (false discovery rate);
- ``compact_letter_display``: significance groups as letters (Piepho 2004);
- ``method_description``: the ``method`` block of ``leaderboard.json``;
- ``compare_systems``: all of it at once, with one set of parameters.

Reproducibility is part of the contract. Resample ``r`` of the bootstrap takes units
``I[r]`` with ``I = numpy.random.default_rng(seed).integers(0, n_units, size=(resamples,
n_units))``; sign vector ``r`` of the randomization test is ``1 - 2 * B[r]`` with
``B = numpy.random.default_rng(seed).integers(0, 2, size=(resamples, n_units))``; trial ``r`` of
the Tukey HSD test is ``rng.permuted(scores, axis=0)``, the trials in order from one
``rng = numpy.random.default_rng(seed)``. Bootstrap and sign vectors are drawn in chunks of rows
to bound memory; numpy's generator gives the same stream whichever the chunk sizes
(``tests/metrics/test_significance.py`` checks it), so anyone can reproduce every figure with
those lines of numpy. A system's interval and a pair's unadjusted p-value never depend on which
other systems are in the table; the adjusted p-values, rank intervals and groups do, by design.

This module is pure: no file, no message; bad arguments raise ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DEFAULT_SEED = 2027
DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_ALPHA = 0.05  # a pair is significant when its adjusted p-value is at most this
PROCEDURES = ("tukey-hsd", "holm", "fdr")
DEFAULT_PROCEDURE = "tukey-hsd"
# The most resamples ``resamples_for`` asks for on its own (holm and fdr count R x m statistics:
# 10^6 x 16,110 pairs is minutes); above it, say so rather than run for an hour.
MAX_AUTO_RESAMPLES = 1_000_000

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

    ``p_value`` is the pair's own p-value (None under Tukey HSD, which has none);
    ``p_adjusted`` the p-value that accounts for all pairs of the table (Tukey HSD's, or
    ``p_value`` corrected by Holm or Benjamini-Hochberg); ``standard_error`` the Monte Carlo
    standard error of the p-value the table uses.
    """

    a: str
    b: str
    delta: float
    p_value: float | None
    p_adjusted: float
    standard_error: float

    def as_dict(self) -> dict[str, str | float]:
        """The pair as ``leaderboard.json`` lists it (the standard error is in the method)."""
        out = {"a": self.a, "b": self.b, "delta": self.delta}
        if self.p_value is not None:
            out["p_value"] = self.p_value
        return out | {"p_adjusted": self.p_adjusted}


@dataclass(frozen=True)
class SystemComparison:
    """Per system (rows of the scores): interval, rank interval and group letters; every pair;
    the method block; the warnings (a configuration that cannot reach significance)."""

    ci_low: np.ndarray
    ci_high: np.ndarray
    pairs: list[PairComparison]
    method: dict
    rank_low: np.ndarray | None = None
    rank_high: np.ndarray | None = None
    letters: list[str] | None = None
    warnings: list[str] | None = None


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
    low, high = _percentile_interval(_bootstrap_means(matrix, resamples, seed), confidence)
    if one_system:
        return ConfidenceInterval(float(low[0]), float(high[0]))
    return ConfidenceInterval(low, high)


def _percentile_interval(means: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - confidence
    low, high = np.percentile(means, [100.0 * alpha / 2, 100.0 * (1 - alpha / 2)], axis=1)
    return low, high


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


def _check_p_values(p_values) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be a 1-D list, got {p.ndim} dimension(s)")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise ValueError("every p-value must lie in [0, 1]")
    return p


def holm(p_values) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979), in the order given.

    With the m p-values sorted ascending, p_(1) <= ... <= p_(m):

        p~_(i) = min(1, max_{j <= i} (m - j + 1) p_(j))

    (the running maximum makes the adjusted values monotone in the raw ones). Rejecting every
    hypothesis with p~ <= alpha controls the family-wise error rate at alpha under any
    dependence between the tests. Tied p-values get the same adjusted value.
    """
    p = _check_p_values(p_values)
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(stepped))
    return adjusted




def benjamini_hochberg(p_values) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (Benjamini & Hochberg 1995), in the order
    given: the FDR option of the leaderboard.

    With the m p-values sorted ascending, p~_(i) = min(1, min_{j >= i} m p_(j) / j). Rejecting
    every hypothesis with p~ <= alpha controls the false discovery rate at alpha for independent
    or positively dependent tests (pairs of systems sharing the same units are positively
    dependent in practice; the guarantee is stated, not proven, for them).
    """
    p = _check_p_values(p_values)
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = m * p[order] / np.arange(1, m + 1)
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(stepped[::-1])[::-1])
    return adjusted


# ------------------------------------------------------------------------------- all pairs


def _check_names(names: Sequence[str], n_systems: int) -> list[str]:
    names = list(names)
    if len(names) != n_systems:
        raise ValueError(f"{len(names)} name(s) for {n_systems} system(s)")
    if len(set(names)) != len(names):
        raise ValueError("system names must be unique")
    return names


def _check_procedure(procedure: str) -> str:
    if procedure not in PROCEDURES:
        raise ValueError(f"procedure must be one of {', '.join(PROCEDURES)}, got {procedure!r}")
    return procedure


def all_pairs(scores, names: Sequence[str], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, correction: str = "holm") -> list[PairComparison]:
    """Every unordered pair of systems, tested by ``paired_randomization_test``.

    The rows of ``scores`` are the systems in rank order, best first (the caller ranks);
    ``names[i]`` names row i. Pair (i, j) with i < j has a = names[i] (ranked above) and
    b = names[j], delta = mean(a) - mean(b), and its p-value. Every pair uses the same sign
    vectors, so each p-value equals the one ``paired_randomization_test(scores[i], scores[j])``
    gives with the same seed; ``correction`` ("holm": ``holm``, "fdr": ``benjamini_hochberg``)
    runs over all m = S(S-1)/2 pairs and gives ``p_adjusted``.
    Pairs are listed as (0, 1), (0, 2), ..., (1, 2), ...
    """
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    if correction not in ("holm", "fdr"):
        raise ValueError(f"correction must be holm or fdr, got {correction!r}")
    matrix = _score_matrix(scores, "scores")
    names = _check_names(names, matrix.shape[0])
    first, second = np.triu_indices(matrix.shape[0], k=1)
    observed, counts, sign_vectors = _randomization_counts(matrix, first, second, resamples, seed)
    p, standard_error = _p_values(counts, sign_vectors, _is_exact(matrix.shape[1]))
    adjusted = holm(p) if correction == "holm" else benjamini_hochberg(p)
    return [PairComparison(names[i], names[j], float(observed[k]), float(p[k]), float(adjusted[k]),
                           float(standard_error[k]))
            for k, (i, j) in enumerate(zip(first.tolist(), second.tolist()))]


# ------------------------------------------------------------------------- randomised Tukey HSD


def tukey_ranges(scores, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """The null distribution of the randomised Tukey HSD: for each of ``resamples`` trials, the
    range max - min of the systems' means after the systems' figures were shuffled within every
    unit. Trial r shuffles with ``rng.permuted(scores, axis=0)``, the trials in order from one
    ``rng = numpy.random.default_rng(seed)`` (each column, a unit, shuffled on its own)."""
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    matrix = _score_matrix(scores, "scores")
    rng = np.random.default_rng(seed)
    ranges = np.empty(resamples, dtype=np.float64)
    for r in range(resamples):
        means = rng.permuted(matrix, axis=0).mean(axis=1)
        ranges[r] = means.max() - means.min()
    return ranges


def tukey_hsd(scores, names: Sequence[str], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED) -> list[PairComparison]:
    """Every unordered pair of systems by the randomised Tukey HSD test (Carterette 2012,
    "Multiple testing in statistical analysis of systems-based information retrieval
    experiments", TOIS 30(1); Sakai 2014, "Statistical reform in information retrieval?").

    Under the null hypothesis that all systems are exchangeable on every unit, the systems'
    figures on a unit are shuffled among the systems; a trial records the largest difference
    of means over all pairs, max_s mean_s - min_s mean_s (``tukey_ranges``). One distribution
    of that maximum serves every pair:

        p_adjusted(a, b) = (1 + #{r : range_r >= |mean(a) - mean(b)|}) / (1 + R)

    which controls the family-wise error rate over all S(S-1)/2 pairs at once (a pair is
    judged against the largest difference chance gives among all systems). Its smallest value
    is 1/(R+1) whatever the number of systems, so with R = 10,000 a clear pair can be
    significant among 180 systems, where Holm over 16,110 separate tests cannot. The +1 counts
    the observed assignment as one trial (as in ``paired_randomization_test``); the same tie
    tolerance applies. ``p_value`` is None (there is no unadjusted p-value), ``standard_error``
    the Monte Carlo standard error sqrt(p (1 - p) / R). Rows of ``scores`` are in rank order,
    best first; pairs are listed as in ``all_pairs``.
    """
    resamples = _check_resamples(resamples)
    seed = _check_seed(seed)
    matrix = _score_matrix(scores, "scores")
    names = _check_names(names, matrix.shape[0])
    first, second = np.triu_indices(matrix.shape[0], k=1)
    if len(first) == 0:
        return []
    system_means = matrix.mean(axis=1)
    observed = system_means[first] - system_means[second]
    tolerance = max(_TIE_TOLERANCE, 4 * matrix.shape[1] * _UNIT_ROUNDOFF) * float(np.abs(matrix).max())
    ranges = np.sort(tukey_ranges(matrix, resamples=resamples, seed=seed))
    # #{r : range_r >= |observed| - tol}, by a binary search in the sorted ranges.
    counts = resamples - np.searchsorted(ranges, np.abs(observed) - tolerance, side="left")
    p = (counts + 1.0) / (resamples + 1.0)
    standard_error = np.sqrt(p * (1.0 - p) / resamples)
    return [PairComparison(names[i], names[j], float(observed[k]), None, float(p[k]), float(standard_error[k]))
            for k, (i, j) in enumerate(zip(first.tolist(), second.tolist()))]


# ------------------------------------------------------------------ resolution and attainability


def smallest_p(n_units: int, resamples: int, procedure: str) -> float:
    """The smallest unadjusted p-value a pair can get: 1/(R+1) for the Monte Carlo tests, and
    at least 2^(1-n) for the randomization test, whose two sign vectors s and -s give the same
    |statistic| (exact enumeration gives 2^(1-n) itself; random signs estimate it)."""
    monte_carlo = 1.0 / (resamples + 1)
    if procedure == "tukey-hsd":
        return monte_carlo
    exact_floor = 2.0 ** (1 - n_units)
    return exact_floor if _is_exact(n_units) else max(monte_carlo, exact_floor)


def smallest_adjusted_p(n_systems: int, n_units: int, resamples: int, procedure: str) -> float:
    """The smallest adjusted p-value any pair can reach: tukey-hsd 1/(R+1); holm m times the
    smallest p (the first step of Holm multiplies by all m pairs); fdr the smallest p (reached
    only when every pair has it: a lone clear pair still needs m times it)."""
    _check_procedure(procedure)
    m = n_systems * (n_systems - 1) // 2
    floor = smallest_p(n_units, resamples, procedure)
    return min(1.0, m * floor) if procedure == "holm" else floor


def resamples_for(n_systems: int, n_units: int, procedure: str, alpha: float = DEFAULT_ALPHA) -> int:
    """The resamples (trials, or random sign vectors) a table of ``n_systems`` needs: at least
    ``DEFAULT_RESAMPLES``; for holm and fdr also 2 m / alpha, so that a single clear pair can
    reach half of alpha after the correction (m/(R+1) <= alpha/2), capped at
    ``MAX_AUTO_RESAMPLES`` (the counting costs R x m; beyond the cap ``attainability_warning``
    says so). Randomised Tukey HSD needs no more than the default: its floor 1/(R+1) does not
    grow with the number of pairs."""
    _check_procedure(procedure)
    if procedure == "tukey-hsd" or _is_exact(n_units):
        return DEFAULT_RESAMPLES
    m = n_systems * (n_systems - 1) // 2
    return int(min(MAX_AUTO_RESAMPLES, max(DEFAULT_RESAMPLES, math.ceil(2 * m / alpha))))


def attainability_warning(n_systems: int, n_units: int, resamples: int, procedure: str,
                          alpha: float = DEFAULT_ALPHA) -> str | None:
    """A sentence when no pair of the table can be significant at ``alpha`` (the smallest
    adjusted p-value is above it), with what would help; None when some pair can be."""
    if n_systems < 2:
        return None
    reachable = smallest_adjusted_p(n_systems, n_units, resamples, procedure)
    if reachable <= alpha:
        return None
    m = n_systems * (n_systems - 1) // 2
    exact_floor = 2.0 ** (1 - n_units)
    if procedure == "tukey-hsd":
        cure = f"raise --resamples to at least {math.ceil(1 / alpha)}"
    elif procedure == "holm" and m * exact_floor > alpha:
        cure = (f"with {n_units} units even an exact test's smallest p, 2^(1-{n_units}) = {exact_floor:.3g}, "
                f"times {m} pairs is {m * exact_floor:.3g}: use --procedure tukey-hsd")
    else:
        cure = f"raise --resamples to at least {resamples_for(n_systems, n_units, procedure, alpha)}"
    return (f"no pair can be significant: with {n_systems} systems ({m} pairs), {n_units} units and "
            f"{resamples} resamples the smallest attainable adjusted p-value under {procedure} is "
            f"{reachable:.3g} > alpha {alpha}; {cure}")


# ------------------------------------------------------------------ rank intervals and letters


def centred_percentile_interval(point: float, values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                                low: float = -math.inf, high: float = math.inf) -> tuple[float, float]:
    """The bootstrap percentile interval re-centred on the estimate, clipped to the figure's range
    (issue 32): with m the median of the resampled values, (q_{a/2} - (m - point), q_{1-a/2} - (m -
    point)), each end clipped to [low, high] (``numpy.quantile``, linear). The shift removes the
    bootstrap's median bias (a rank correlation's resamples, which repeat conversations, sit below
    it: the plain percentile interval of a tau of 0.891 was [0.769, 0.864]); since q_{a/2} <= m <=
    q_{1-a/2}, the interval always holds the estimate, and the clipping keeps it in the range."""
    tail = (1 - confidence) / 2
    q_low, median, q_high = np.quantile(values, [tail, 0.5, 1 - tail])
    shift = float(median) - point
    return float(min(high, max(low, float(q_low) - shift))), float(min(high, max(low, float(q_high) - shift)))


def rank_intervals(means: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Per system, an interval of its rank from bootstrap means ``means[system, r]`` (as
    ``bootstrap`` draws them): in resample r a system's rank is 1 + the number of systems with a
    strictly larger mean (ties share the best rank), and its interval runs from the lower
    (alpha/2) to the upper (1 - alpha/2) quantile of its R ranks, order statistics taken
    outwards (numpy's "lower" and "higher" methods), so the ends are ranks. Returns two integer
    arrays (low <= high), one entry per system."""
    confidence = _check_confidence(confidence)
    means = np.asarray(means, dtype=np.float64)
    n_systems, resamples = means.shape
    ranks = np.empty((n_systems, resamples), dtype=np.int32)
    step = max(1, _CHUNK_ELEMENTS // max(1, n_systems * n_systems))
    for start in range(0, resamples, step):
        block = means[:, start:start + step]
        ranks[:, start:start + step] = 1 + (block[None, :, :] > block[:, None, :]).sum(axis=1)
    alpha = 1.0 - confidence
    low = np.percentile(ranks, 100.0 * alpha / 2, axis=1, method="lower")
    high = np.percentile(ranks, 100.0 * (1 - alpha / 2), axis=1, method="higher")
    return low.astype(np.int64), high.astype(np.int64)


LETTER_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def letter_token(column: int) -> str:
    """The name of group ``column``: a..z, A..Z, then a2..z2, A2..Z2, a3... ."""
    cycle, index = divmod(column, len(LETTER_ALPHABET))
    return LETTER_ALPHABET[index] + (str(cycle + 1) if cycle else "")


def compact_letter_display(n_systems: int, significant: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Significance groups (Piepho 2004, "An algorithm for a letter-based representation of
    all-pairwise comparisons"): per system (index 0 = best), the groups it belongs to. Two
    systems share a group exactly when their pair is not in ``significant`` (pairs of indices),
    and the groups are the maximal such sets (the maximal cliques of the "not significantly
    different" graph, by insert-and-absorb: start from one group of all; for each significant
    pair, split every group holding both into one without each; drop a group inside another).
    Groups are numbered by their best member, then their next, ... (``letter_token`` names them),
    so the best system is in group 0 ("a")."""
    groups: list[int] = [(1 << n_systems) - 1] if n_systems else []  # bit i set: system i is in
    for i, j in significant:
        both = (1 << i) | (1 << j)
        kept = [g for g in groups if g & both != both]
        split = [g & ~(1 << k) for g in groups if g & both == both for k in (i, j)]
        for g in split:
            if not any(g | other == other for other in kept) and g not in kept:
                kept.append(g)
        groups = kept
    members = sorted(([i for i in range(n_systems) if g >> i & 1] for g in groups))
    per_system: list[list[int]] = [[] for _ in range(n_systems)]
    for column, group in enumerate(members):
        for i in group:
            per_system[i].append(column)
    return per_system


def letters_text(columns: Sequence[int]) -> str:
    """A system's groups as text: their tokens in order, a run of three or more consecutive
    groups written first-last ("a", "ab", "c-f", "a-cH"), so a system in many groups stays short."""
    parts, start = [], 0
    columns = list(columns)
    while start < len(columns):
        end = start
        while end + 1 < len(columns) and columns[end + 1] == columns[end] + 1:
            end += 1
        if end - start >= 2:
            parts.append(f"{letter_token(columns[start])}-{letter_token(columns[end])}")
        else:
            parts.extend(letter_token(c) for c in columns[start:end + 1])
        start = end + 1
    return "".join(parts)


# ---------------------------------------------------------------------------- everything at once


def method_description(*, n_units: int, n_systems: int, resamples: int, seed: int,
                       confidence: float, pairs: Sequence[PairComparison] = (),
                       bootstrap_resamples: int | None = None, procedure: str = "holm",
                       alpha: float = DEFAULT_ALPHA) -> dict:
    """The ``method`` block of ``leaderboard.json``: what the intervals and p-values are."""
    _check_procedure(procedure)
    exact = _is_exact(n_units) and procedure != "tukey-hsd"
    sign_vectors = (1 << n_units) if exact else resamples
    largest_error = max((pair.standard_error for pair in pairs), default=0.0)
    m = n_systems * (n_systems - 1) // 2
    if procedure == "tukey-hsd":
        test = {
            "test": "randomised Tukey HSD (Carterette 2012; Sakai 2014): the systems' figures shuffled "
                    "among the systems within every unit, the range of the systems' means recorded per trial",
            "statistic": "difference of means over units, mean(a) - mean(b), against the range max - min "
                         "of the shuffled systems' means",
            "p_value": "p_adjusted = (1 + #{r : range_r >= |mean(a) - mean(b)|}) / (1 + R)",
            "correction": f"none needed: one distribution of the largest difference serves all {m} pairs, "
                          "controlling the family-wise error rate",
        }
    else:
        adjust = ("Holm-Bonferroni step-down (family-wise error rate)" if procedure == "holm"
                  else "Benjamini-Hochberg step-up (false discovery rate)")
        test = {
            "test": "paired randomization test (random sign flips of the per-unit differences)",
            "statistic": "difference of means over units, mean(a) - mean(b)",
            "p_value": ("#{s : |mean(s*d)| >= |mean(d)|} / 2^n over all 2^n sign vectors" if exact
                        else "(1 + #{r : |mean(s_r*d)| >= |mean(d)|}) / (1 + R)"),
            "correction": f"{adjust} over all {m} pairs (p_adjusted)",
        }
    return {
        "units": n_units,
        "systems": n_systems,
        "interval": {
            "method": "percentile bootstrap of the mean over units, units resampled with "
                      "replacement, the same resampled units for every system",
            "confidence": confidence,
            "resamples": bootstrap_resamples or resamples,
            "seed": seed,
        },
        "rank_interval": "per bootstrap resample, 1 + the number of systems with a larger mean; the "
                         f"{round(100 * confidence)}% interval of those ranks (order statistics outwards)",
        "procedure": procedure,
        **test,
        "sidedness": "two-sided",
        "exact": exact,
        "sign_vectors": sign_vectors,
        "resamples": resamples,
        "seed": seed,
        "alpha": alpha,
        "smallest_attainable_adjusted_p": smallest_adjusted_p(n_systems, n_units, resamples, procedure),
        "tie_tolerance": "max(1e-10, 4 n 2^-53) * max(|a|, |b|)",
        "monte_carlo_standard_error": {
            "formula": "0 (exact enumeration)" if exact else "sqrt(p (1 - p) / R)",
            "max": largest_error,
            "at_alpha": 0.0 if exact else math.sqrt(alpha * (1 - alpha) / resamples),
        },
        "groups": f"compact letter display (Piepho 2004): systems sharing a letter are not significantly "
                  f"different (p_adjusted > {alpha}); the letters are the maximal such sets",
    }


def compare_systems(scores, names: Sequence[str], *, confidence: float = DEFAULT_CONFIDENCE,
                    resamples: int | None = None, seed: int = DEFAULT_SEED,
                    procedure: str = DEFAULT_PROCEDURE, alpha: float = DEFAULT_ALPHA) -> SystemComparison:
    """Everything a ranked table shows, with one set of parameters (rows in rank order, best
    first, as ``all_pairs`` wants): ``bootstrap_ci`` and ``rank_intervals`` per system (one
    bootstrap), every pair by ``procedure`` ("tukey-hsd": ``tukey_hsd``; "holm", "fdr":
    ``all_pairs`` with that correction), the significance groups and the method block.

    ``resamples`` None: the bootstrap draws ``DEFAULT_RESAMPLES`` and the test
    ``resamples_for`` the table; a number: both draw that many. ``warnings`` holds
    ``attainability_warning``'s sentence when no pair can be significant.
    """
    procedure = _check_procedure(procedure)
    matrix = _score_matrix(scores, "scores")
    n_systems, n_units = matrix.shape
    bootstrap_resamples = _check_resamples(resamples or DEFAULT_RESAMPLES)
    test_resamples = _check_resamples(resamples or resamples_for(n_systems, n_units, procedure, alpha))
    means = _bootstrap_means(matrix, bootstrap_resamples, _check_seed(seed))
    low, high = _percentile_interval(means, _check_confidence(confidence))
    rank_low, rank_high = rank_intervals(means, confidence)
    if procedure == "tukey-hsd":
        pairs = tukey_hsd(matrix, names, resamples=test_resamples, seed=seed)
    else:
        pairs = all_pairs(matrix, names, resamples=test_resamples, seed=seed, correction=procedure)
    first, second = np.triu_indices(n_systems, k=1)
    significant = [(int(i), int(j)) for i, j, pair in zip(first, second, pairs) if pair.p_adjusted <= alpha]
    letters = [letters_text(columns) for columns in compact_letter_display(n_systems, significant)]
    method = method_description(n_units=n_units, n_systems=n_systems, resamples=test_resamples, seed=seed,
                                confidence=confidence, pairs=pairs, bootstrap_resamples=bootstrap_resamples,
                                procedure=procedure, alpha=alpha)
    warning = attainability_warning(n_systems, n_units, test_resamples, procedure, alpha)
    return SystemComparison(low, high, pairs, method, rank_low, rank_high, letters,
                            [warning] if warning else [])
