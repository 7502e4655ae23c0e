"""Agreement of two raters' graded relevance labels of the same pairs (a relevance round's LLM and
its blind human validation), with cluster-bootstrap intervals; and a binomial proportion's
Wilson interval (the LLM's recall on pairs known to be relevant).

- ``weighted_kappa``: Cohen's weighted kappa (Cohen 1968) with quadratic weights on the scale's
  levels 0..L, ``1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij``, ``w_ij = (i - j)^2``, ``O`` the joint
  distribution of the pairs' (x, y) labels and ``E`` the product of its margins; on two levels
  (a binary cut) it is Cohen's kappa. Weights are on the levels, so a level nobody used changes
  nothing (scikit-learn's ``cohen_kappa_score(..., weights="quadratic", labels=range(L + 1))``).
- Intervals: a bootstrap over clusters (the pairs of one topic are not independent: they share
  the question), ``resamples`` draws of as many clusters as there are, with replacement, from
  ``numpy.random.default_rng(seed)``; a resample whose kappa is undefined (both raters gave one
  and the same level throughout) is left out and counted. The interval is the percentile
  interval re-centred on the estimate and clipped to [-1, 1] (``significance.centred_percentile_interval``, as every
  agreement interval of the project: it holds its estimate).
- ``mean_pairwise_kappa_with_interval``: the agreement of two or more raters, each grading some
  of the same units: the mean over the rater pairs of their quadratic-weighted kappa on the units
  both graded, ``(1 / |P|) sum_{(a, b) in P} kappa_w(a, b)``; Light's (1971) average of the
  pairwise Cohen's kappas, with Cohen's weighted kappa in each pair (Hallgren 2012, "Computing
  inter-rater reliability for observational data", section "Cohen's kappa for more than two
  coders"). With two raters it is their weighted kappa. A pair whose kappa is undefined (no
  shared unit, or one level throughout) is left out of the mean; the mean is undefined when
  every pair is. Its interval resamples the units (each its own cluster), as above.
- ``wilson_interval``: Wilson's score interval (Wilson 1927) for k successes of n at 95%.
"""

from __future__ import annotations

import math

import numpy as np

from reteco.metrics.significance import centred_percentile_interval

CONFIDENCE = 0.95
Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile


def contingency(x: np.ndarray, y: np.ndarray, levels: int) -> np.ndarray:
    """The (levels x levels) count table of integer labels ``x`` (rows) and ``y`` (columns)."""
    return np.bincount(np.asarray(x) * levels + np.asarray(y), minlength=levels * levels).reshape(levels, levels).astype(float)


def weighted_kappa(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quadratic-weighted kappa of (R x L x L) count tables: ``(values, defined)``; a table with
    no pairs, or whose expected disagreement is 0 (both raters one and the same level), is
    undefined (value 0)."""
    if tables.ndim == 2:
        tables = tables[None]
    levels = tables.shape[1]
    scale = np.arange(levels, dtype=float)
    weights = (scale[:, None] - scale[None, :]) ** 2
    n = tables.sum(axis=(1, 2))
    safe = np.where(n > 0, n, 1.0)
    observed = np.einsum("rij,ij->r", tables, weights) / safe
    rows, cols = tables.sum(axis=2) / safe[:, None], tables.sum(axis=1) / safe[:, None]
    expected = np.einsum("ri,rj,ij->r", rows, cols, weights)
    defined = (n > 0) & (expected > 0)
    return np.where(defined, 1.0 - observed / np.where(defined, expected, 1.0), 0.0), defined


def kappa_with_interval(x, y, clusters, levels: int, *, resamples: int, seed: int) -> dict:
    """``weighted_kappa`` of the pairs (x_i, y_i) with its cluster-bootstrap interval:
    ``{"value", "ci_low", "ci_high", "undefined_resamples", "pairs"}`` (``value`` None, with
    ``reason``, when undefined on the pairs themselves)."""
    x, y = np.asarray(x, dtype=np.int64), np.asarray(y, dtype=np.int64)
    names, cluster = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    point, defined = weighted_kappa(contingency(x, y, levels)[None])
    out: dict = {"pairs": int(len(x)), "clusters": int(len(names))}
    if not defined[0]:
        return {**out, "value": None, "ci_low": None, "ci_high": None,
                "reason": "undefined: no pairs, or both raters gave one and the same label throughout"}
    # Per cluster tables, then each resample's table as the draw counts' weighted sum.
    per_cluster = np.zeros((len(names), levels, levels))
    np.add.at(per_cluster, (cluster, x, y), 1.0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(resamples, len(names)))
    counts = np.zeros((resamples, len(names)))
    np.add.at(counts, (np.repeat(np.arange(resamples), len(names)), draws.ravel()), 1.0)
    values, ok = weighted_kappa(np.einsum("rc,cij->rij", counts, per_cluster))
    low, high = (centred_percentile_interval(float(point[0]), values[ok], CONFIDENCE, -1.0, 1.0) if ok.any()
                 else (None, None))
    return {**out, "value": float(point[0]), "ci_low": None if low is None else float(low),
            "ci_high": None if high is None else float(high), "undefined_resamples": int((~ok).sum()),
            "resamples": resamples}


def mean_pairwise_kappa_with_interval(grades, levels: int, *, resamples: int, seed: int) -> dict:
    """The raters' mean pairwise quadratic-weighted kappa (module docstring) with the units'
    bootstrap interval. ``grades``: (units x raters) integer levels 0..levels-1, -1 where the
    rater did not grade the unit. Returns ``{"value", "ci_low", "ci_high", "pairs": [{"raters",
    "units", "value"}], "units", "undefined_resamples", "resamples"}`` (``value`` None, with
    ``reason``, when undefined)."""
    grades = np.asarray(grades, dtype=np.int64)
    units, raters = grades.shape
    pairs = [(a, b) for a in range(raters) for b in range(a + 1, raters)]
    out: dict = {"units": int(units), "pairs": []}
    if not pairs:
        return {**out, "value": None, "ci_low": None, "ci_high": None, "reason": "fewer than two raters"}
    # per_unit[u, p]: unit u's one-cell table for pair p (zero when one of the two did not grade it)
    per_unit = np.zeros((units, len(pairs), levels, levels))
    for p, (a, b) in enumerate(pairs):
        both = (grades[:, a] >= 0) & (grades[:, b] >= 0)
        per_unit[np.flatnonzero(both), p, grades[both, a], grades[both, b]] = 1.0
    point, defined = weighted_kappa(per_unit.sum(axis=0))
    out["pairs"] = [{"raters": [a, b], "units": int(per_unit[:, p].sum()),
                     "value": float(point[p]) if defined[p] else None} for p, (a, b) in enumerate(pairs)]
    if not defined.any():
        return {**out, "value": None, "ci_low": None, "ci_high": None,
                "reason": "undefined: no pair of raters shares a unit with two different levels"}
    value = float(point[defined].mean())
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, units, size=(resamples, units))
    counts = np.zeros((resamples, units))
    np.add.at(counts, (np.repeat(np.arange(resamples), units), draws.ravel()), 1.0)
    tables = np.einsum("ru,upij->rpij", counts, per_unit).reshape(resamples * len(pairs), levels, levels)
    values, ok = weighted_kappa(tables)
    values, ok = values.reshape(resamples, len(pairs)), ok.reshape(resamples, len(pairs))
    some = ok.any(axis=1)
    means = (values * ok).sum(axis=1)[some] / ok.sum(axis=1)[some]
    low, high = centred_percentile_interval(value, means, CONFIDENCE, -1.0, 1.0) if some.any() else (None, None)
    return {**out, "value": value, "ci_low": None if low is None else float(low),
            "ci_high": None if high is None else float(high), "undefined_resamples": int((~some).sum()),
            "resamples": resamples}


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of the proportion ``successes / n`` (n > 0)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


__all__ = ["contingency", "kappa_with_interval", "mean_pairwise_kappa_with_interval", "weighted_kappa", "wilson_interval"]
