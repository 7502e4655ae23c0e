"""Prediction-powered inference of a mean: a few human ratings correct many judge scores.

The estimator is PPI++ (Angelopoulos, Duchi and Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", arXiv:2311.01453, section on mean estimation), written to equal
the reference implementation ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci``
(package ``ppi-python`` 0.2.x, unweighted, two-sided; ``tests/metrics/test_prediction_powered.py``
checks it to 1e-9). With n labelled pairs (Y_i, f_i) (the human's and the judge's score of the
same item) and N unlabelled judge scores f~_j (items no human rated, a separate sample):

    theta(lambda) = lambda * mean(f~) + mean(Y - lambda f)
    se(lambda)^2  = var0(lambda f~) / N + var0(Y - lambda f) / n         (var0: divisor n or N)
    interval      = theta -/+ z_{1 - alpha/2} se                          (normal approximation)

Power tuning (ppi_py's ``_calc_lam_glm`` for the mean, ``clip=True``): the variance-minimising

    lambda* = cov0(Y, f) / ((1 + n / N) * var1(f, f~))

where cov0 is the covariance over the n labelled pairs with divisor n and var1 the sample
variance (divisor count - 1, ``numpy.cov``) of the labelled and unlabelled judge scores pooled,
clipped to [0, 1]. lambda = 1 is plain PPI (Angelopoulos et al. 2023, Science), lambda = 0 the
classical mean of the labelled Y alone (``classical_mean_ci``: mean(Y) -/+ z std0(Y)/sqrt(n)).
One departure, where ppi_py divides by zero: when the judge's scores do not vary (var1 = 0),
lambda* is 0 (a constant judge carries no information; ppi_py returns nan or 1 there).

The effective sample size says what the judge is worth in human ratings: the number of human
ratings whose classical interval would be as narrow as the prediction-powered one,
n_eff = var0(Y) / se(lambda)^2 (n_eff = n at lambda = 0; larger when the judge helps).

This module is pure (numpy only): no file, no message; bad arguments raise ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

DEFAULT_CONFIDENCE = 0.95
#: The smallest labelled sample with a variance to speak of: below it no interval is made.
MIN_LABELLED = 2


@dataclass(frozen=True)
class PredictionPoweredMean:
    """One prediction-powered estimate of a mean, with its normal-approximation interval."""

    estimate: float
    ci_low: float
    ci_high: float
    standard_error: float
    lam: float  # the lambda used (power-tuned unless given)
    labelled: int  # n
    unlabelled: int  # N
    effective_sample_size: float | None  # var0(Y) / se^2; None when se is 0


def _vector(values, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite")
    return array


def _check(y, f, f_unlabelled) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, f, f_unlabelled = _vector(y, "y"), _vector(f, "f"), _vector(f_unlabelled, "f_unlabelled")
    if y.shape != f.shape:
        raise ValueError("y and f must pair up: one judge score per labelled item")
    if y.size < MIN_LABELLED:
        raise ValueError(f"at least {MIN_LABELLED} labelled items are needed")
    if f_unlabelled.size < 1:
        raise ValueError("at least one unlabelled item is needed")
    return y, f, f_unlabelled


def power_tuned_lambda(y, f, f_unlabelled) -> float:
    """lambda* = cov0(Y, f) / ((1 + n/N) var1(f, f~)), clipped to [0, 1] (module docstring);
    0 when the judge's scores do not vary."""
    y, f, f_unlabelled = _check(y, f, f_unlabelled)
    n, big_n = y.size, f_unlabelled.size
    covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
    pooled = np.concatenate([f, f_unlabelled])
    variance = float(np.var(pooled, ddof=1))
    if variance == 0.0:
        return 0.0
    return float(np.clip(covariance / ((1.0 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(y, f, f_unlabelled, *, lam: float | None = None,
             confidence: float = DEFAULT_CONFIDENCE) -> PredictionPoweredMean:
    """The PPI++ estimate of mean(Y) and its two-sided interval (module docstring for the
    formulas): ``y`` and ``f`` the labelled items' human and judge scores, ``f_unlabelled`` the
    judge's scores of items without a human score (not including the labelled ones: ppi_py's
    convention, the two samples are independent). ``lam`` None: power-tuned (``power_tuned_lambda``);
    1: plain PPI; 0: the classical mean of ``y``."""
    y, f, f_unlabelled = _check(y, f, f_unlabelled)
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if lam is None:
        lam = power_tuned_lambda(y, f, f_unlabelled)
    lam = float(lam)
    n, big_n = y.size, f_unlabelled.size
    estimate = float(np.mean(lam * f_unlabelled) + np.mean(y - lam * f))
    imputed = float(np.std(lam * f_unlabelled)) / np.sqrt(big_n)
    rectifier = float(np.std(y - lam * f)) / np.sqrt(n)
    se = float(np.sqrt(imputed ** 2 + rectifier ** 2))
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    human_variance = float(np.var(y))
    return PredictionPoweredMean(
        estimate=estimate, ci_low=estimate - z * se, ci_high=estimate + z * se, standard_error=se, lam=lam,
        labelled=int(n), unlabelled=int(big_n),
        effective_sample_size=human_variance / se ** 2 if se > 0 else None,
    )


def classical_mean(values, *, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float, float]:
    """(mean, low, high): the normal-approximation interval mean -/+ z std0 / sqrt(n) that
    ``ppi_py.classical_mean_ci`` gives (PPI with lambda = 0), for the judge-only and
    human-only columns beside the prediction-powered one."""
    values = _vector(values, "values")
    if values.size < 1:
        raise ValueError("at least one value is needed")
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    mean = float(values.mean())
    half = z * float(values.std()) / np.sqrt(values.size)
    return mean, mean - half, mean + half
