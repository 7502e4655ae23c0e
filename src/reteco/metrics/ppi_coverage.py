"""Coverage of the human-corrected intervals by simulation: how the method was chosen (issue 32).

``coverage`` draws, seeded, ``trials`` phases of K systems x T turns, each system's human score of
each turn on 1..5 and a judge that errs, and reports the share of nominal 95% intervals that
cover the true mean (per system) and the true difference (per pair), for three methods:

- ``ppi++``: PPI++ as ``prediction_powered.ppi_mean`` (= ppi_py: lambda tuned on the sample, z);
- ``own``: lambda = 1, t(n-1), each system's own residual variance;
- ``pooled`` (the leaderboard's, ``prediction_powered.small_sample_means``): as ``own`` with the
  residual variance floored at its mean over the systems of the design;
- ``pooled_unweighted`` (depth_bias only): ``pooled`` with every weight 1, what ignoring the
  stratified design's inclusion probabilities gives.

The phase. Human scores: a turn's base score s ~ the setting's distribution (``DISTRIBUTIONS``:
mild; skewed, 70% fives; very skewed, 90% fives), shared by the systems (turns differ in
difficulty for all), and system k drops it by one step with probability q_k (``DROPS``: 0, 0.1,
0.2, 0.3, 0.1, 0.1: systems 1, 4 and 5 are identical in law, for the test's size). The judge's score is the human's plus an error
e: -1 with probability 0.05, 0 with 0.55, +1 with 0.30, +2 with 0.10 (a lenient judge), clipped
to 1..5; with ``depth_bias`` the turns have depths 1..5 (shares 0.3, 0.25, 0.2, 0.15, 0.1) and
e is -1 with 0.05, +1 with 0.1 + 0.1 (depth - 1), else 0: the judge's leniency grows with depth,
and the sample is stratified by depth with equal allocation (the stratified design's "at least one
per stratum"), weighted by T_d / a_d. Without it the n rated turns are a uniform sample (the
paired design). The truth is the system's expected human score ((s - 1) / 4), computed exactly.

Every array is (trials, systems, turns) of int8 (12 MB each): 2,000 trials of 6 systems x 1,000
turns take one to a few seconds per setting on one core. ``size`` is the share of trials in which
the two-sided t test at 0.05 calls systems 1 and 4 different (unadjusted).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from reteco.metrics.prediction_powered import t_quantile, weighted_parts

DISTRIBUTIONS = {
    "mild": (0.10, 0.15, 0.25, 0.30, 0.20),
    "skewed": (0.03, 0.05, 0.07, 0.15, 0.70),
    "very_skewed": (0.01, 0.02, 0.02, 0.05, 0.90),
}
SETTINGS = ("mild", "skewed", "very_skewed", "depth_bias")  # depth_bias: the mild distribution
DROPS = (0.0, 0.1, 0.2, 0.3, 0.1, 0.1)  # per system; systems 4 and 5 are identical in law to system 1
DEPTH_SHARES = (0.3, 0.25, 0.2, 0.15, 0.1)


@dataclass(frozen=True)
class Coverage:
    """Shares over trials x systems (means) and trials x pairs (differences)."""

    setting: str
    n: int
    trials: int
    means: dict[str, float]  # method -> share of intervals covering the true mean
    differences: dict[str, float]  # method -> share covering the true difference (not for ppi++)
    zero_width: dict[str, float]  # method -> share of the means' intervals of width 0
    size: float  # pooled: share of trials whose test calls systems 1, 4 and 5 (equal in law) different


def _phase(setting: str, n: int, trials: int, turns: int, seed: int):
    rng = np.random.default_rng(seed)
    p = np.array(DISTRIBUTIONS["mild" if setting == "depth_bias" else setting])
    drops = np.array(DROPS)
    levels = np.arange(5)
    base = rng.choice(5, size=(trials, 1, turns), p=p).astype(np.int8)
    drop = rng.random((trials, drops.size, turns), dtype=np.float32) < drops[None, :, None].astype(np.float32)
    y = np.maximum(base - drop, 0).astype(np.int8)
    truth = ((p @ levels) * (1 - drops) + (p @ np.maximum(levels - 1, 0)) * drops) / 4
    u = rng.random((trials, drops.size, turns), dtype=np.float32)
    if setting == "depth_bias":
        sizes = np.floor(np.array(DEPTH_SHARES) * turns).astype(int)
        sizes[-1] = turns - sizes[:-1].sum()
        depth = np.repeat(np.arange(5), sizes)
        up = (0.1 + 0.1 * depth).astype(np.float32)[None, None, :]
        e = np.where(u < 0.05, -1, np.where(u < 1 - up, 0, 1)).astype(np.int8)
        alloc = np.full(5, n // 5)
        alloc[: n % 5] += 1
        rated = np.concatenate([np.flatnonzero(depth == d)[: alloc[d]] for d in range(5)])
        weights = np.concatenate([np.full(alloc[d], sizes[d] / alloc[d]) for d in range(5) if alloc[d]])
    else:
        e = np.where(u < 0.05, -1, np.where(u < 0.6, 0, np.where(u < 0.9, 1, 2))).astype(np.int8)
        rated = np.arange(n)  # turns are exchangeable: the first n are a uniform sample
        weights = np.ones(n)
    f = np.clip(y + e, 0, 4).astype(np.int8)
    return y, f, rated, weights, truth


def _intervals(y, f, f_mean, f_var, turns, weights, pooled: bool):
    n = y.shape[-1]
    theta_r, u, c = weighted_parts(y - f, f, weights)
    if pooled:
        u = np.maximum(u, u.mean(axis=1, keepdims=True))
    variance = u / n + f_var / turns + 2 * c / turns
    se = np.sqrt(np.maximum(variance, 0.0))
    return f_mean + theta_r, se


def coverage(setting: str, n: int, *, trials: int = 2000, turns: int = 1000, seed: int = 2027,
             confidence: float = 0.95) -> Coverage:
    """The coverage of the three methods on one setting at n rated turns per system (module docstring)."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(SETTINGS)}")
    if not 2 <= n <= turns // 2:
        raise ValueError("n must be between 2 and half the turns")
    y8, f8, rated, weights, truth = _phase(setting, n, trials, turns, seed)
    f_all = f8.astype(np.float64) / 4
    y = y8[:, :, rated].astype(np.float64) / 4
    f = f_all[:, :, rated]
    t = t_quantile(n - 1, confidence)
    first, second = np.triu_indices(truth.size, k=1)
    means, differences, zero = {}, {}, {}
    size = 0.0
    for method in ("own", "pooled"):
        theta, se = _intervals(y, f, f_all.mean(-1), f_all.var(-1, ddof=1), turns, weights, method == "pooled")
        means[method] = float(np.mean(np.abs(theta - truth) <= t * se))
        zero[method] = float(np.mean(se == 0))
        d_all = f_all[:, first] - f_all[:, second]
        d_theta, d_se = _intervals(y[:, first] - y[:, second], f[:, first] - f[:, second], d_all.mean(-1),
                                   d_all.var(-1, ddof=1), turns, weights, method == "pooled")
        differences[method] = float(np.mean(np.abs(d_theta - (truth[first] - truth[second])) <= t * d_se))
        if method == "pooled":
            equal = [k for k, (a, b) in enumerate(zip(first, second)) if a == 1 and b == 4]
            size = float(np.mean(np.abs(d_theta[:, equal]) > t * d_se[:, equal]))
    if setting == "depth_bias":  # what the weights are for: the same method with every weight 1
        theta, se = _intervals(y, f, f_all.mean(-1), f_all.var(-1, ddof=1), turns, np.ones(n), True)
        means["pooled_unweighted"] = float(np.mean(np.abs(theta - truth) <= t * se))
    if setting != "depth_bias":  # PPI++ takes no weights: it is not offered for the stratified design
        mask = np.ones(turns, dtype=bool)
        mask[rated] = False
        unlabelled = f_all[:, :, mask]
        big_n = unlabelled.shape[-1]
        covariance = ((y - y.mean(-1, keepdims=True)) * (f - f.mean(-1, keepdims=True))).mean(-1)
        pooled_var = np.concatenate([f, unlabelled], axis=-1).var(-1, ddof=1)
        lam = np.clip(np.where(pooled_var > 0, covariance / np.where(pooled_var > 0, pooled_var, 1.0), 0.0)
                      / (1 + n / big_n), 0.0, 1.0)
        theta = lam * unlabelled.mean(-1) + (y - lam[..., None] * f).mean(-1)
        se = np.sqrt(lam ** 2 * unlabelled.var(-1) / big_n + (y - lam[..., None] * f).var(-1) / n)
        z = NormalDist().inv_cdf(0.5 + confidence / 2)  # PPI++'s normal interval, at the asked confidence
        means["ppi++"] = float(np.mean(np.abs(theta - truth) <= z * se))
        zero["ppi++"] = float(np.mean(se == 0))
    return Coverage(setting, n, trials, means, differences, zero, size)
