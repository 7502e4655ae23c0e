"""reteco.metrics.prediction_powered against ppi-python (the reference implementation, a test
dependency only), against the formulas written out here by hand, and by coverage simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reteco.metrics.prediction_powered import classical_mean, power_tuned_lambda, ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (the test extra: pip install -e '.[test]') is not installed")


def _synthetic(seed: int, n: int, big_n: int, bias: float = 0.12, noise: float = 0.2):
    """Human scores on the (s-1)/4 scale and a biased, noisy judge of the same items."""
    rng = np.random.default_rng(seed)
    y_all = rng.integers(1, 6, size=n + big_n).astype(float)
    y_all = (y_all - 1) / 4
    f_all = np.clip(0.7 * y_all + bias + rng.normal(0, noise, size=n + big_n), 0, 1)
    return y_all[:n], f_all[:n], f_all[n:]


@pytest.mark.parametrize("seed,n,big_n", [(1, 40, 500), (2, 200, 2000), (3, 12, 30), (4, 500, 600)])
@pytest.mark.parametrize("lam", [None, 0.0, 0.3, 1.0])
def test_equals_ppi_python(seed, n, big_n, lam):
    y, f, f_unlabelled = _synthetic(seed, n, big_n)
    mine = ppi_mean(y, f, f_unlabelled, lam=lam, confidence=0.95)
    point = ppi_py.ppi_mean_pointestimate(y, f, f_unlabelled, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, f, f_unlabelled, alpha=0.05, lam=lam)
    assert mine.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-9)
    assert mine.ci_low == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert mine.ci_high == pytest.approx(float(np.squeeze(high)), abs=1e-9)


def test_power_tuned_lambda_equals_ppi_python_and_the_closed_form():
    y, f, f_unlabelled = _synthetic(7, 80, 900)
    n, big_n = len(y), len(f_unlabelled)
    pooled = np.concatenate([f, f_unlabelled])
    by_hand = (np.sum((y - y.mean()) * (f - f.mean())) / n) / ((1 + n / big_n) * np.var(pooled, ddof=1))
    assert 0 < by_hand < 1  # not clipped: the formula itself is checked
    assert power_tuned_lambda(y, f, f_unlabelled) == pytest.approx(by_hand, abs=1e-12)
    grads, grads_hat = y - y.mean(), f - y.mean()
    from ppi_py.ppi import _calc_lam_glm

    reference = _calc_lam_glm(grads, grads_hat, f_unlabelled - y.mean(), np.eye(1), clip=True)
    assert power_tuned_lambda(y, f, f_unlabelled) == pytest.approx(float(reference), abs=1e-12)


def test_lambda_is_clipped_and_a_constant_judge_gets_zero():
    y = np.array([0.0, 0.25, 0.5, 1.0])
    assert power_tuned_lambda(y, -y, np.array([0.1, 0.9])) == 0.0  # negative covariance: clipped to 0
    assert power_tuned_lambda(y, np.full(4, 0.5), np.full(3, 0.5)) == 0.0  # ppi_py divides by zero here


def test_a_small_case_by_hand():
    # Y = (1, 0), f = (1, 0.5), f~ = (1, 0.5, 0), lambda = 1:
    # theta = mean(f~) + mean(Y - f) = 0.5 + (0 - 0.5) / 2 = 0.25;
    # se^2 = var0(f~)/3 + var0(Y - f)/2 = (1/6)/3 + (0.0625)/2 = 0.0868055...
    result = ppi_mean([1.0, 0.0], [1.0, 0.5], [1.0, 0.5, 0.0], lam=1.0)
    assert result.estimate == pytest.approx(0.25, abs=1e-15)
    se = math.sqrt((1 / 6) / 3 + 0.0625 / 2)
    assert result.standard_error == pytest.approx(se, abs=1e-15)
    assert result.ci_high - result.estimate == pytest.approx(1.959963984540054 * se, abs=1e-12)
    assert result.effective_sample_size == pytest.approx(0.25 / se ** 2, abs=1e-12)  # var0(Y) = 0.25


def test_lambda_zero_is_the_classical_interval():
    y, f, f_unlabelled = _synthetic(9, 60, 300)
    at_zero = ppi_mean(y, f, f_unlabelled, lam=0.0)
    mean, low, high = classical_mean(y)
    assert (at_zero.estimate, at_zero.ci_low, at_zero.ci_high) == pytest.approx((mean, low, high), abs=1e-12)
    reference = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert (low, high) == pytest.approx(tuple(float(np.squeeze(v)) for v in reference), abs=1e-9)
    assert at_zero.effective_sample_size == pytest.approx(60, abs=1e-9)


def test_coverage_with_a_biased_noisy_judge():
    """>= 93% of 2,000 nominal 95% intervals cover the true mean; the judge alone is biased."""
    rng = np.random.default_rng(2027)
    probabilities = np.array([0.1, 0.15, 0.25, 0.3, 0.2])  # human score s = 1..5
    levels = (np.arange(5)) / 4
    true_mean = float(probabilities @ levels)
    covered, judge_bias = 0, []
    trials, n, big_n = 2000, 60, 1500
    for _ in range(trials):
        y_all = rng.choice(levels, size=n + big_n, p=probabilities)
        f_all = np.clip(0.6 * y_all + 0.3 + rng.normal(0, 0.15, size=n + big_n), 0, 1)  # biased upwards, noisy
        result = ppi_mean(y_all[:n], f_all[:n], f_all[n:])
        covered += result.ci_low <= true_mean <= result.ci_high
        judge_bias.append(f_all.mean() - true_mean)
    assert covered / trials >= 0.93
    assert np.mean(judge_bias) > 0.05  # the judge alone would be off: the correction is doing the work


def test_bad_arguments():
    with pytest.raises(ValueError, match="pair up"):
        ppi_mean([0.1, 0.2], [0.1], [0.3])
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean([0.1], [0.1], [0.3])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([0.1, math.nan], [0.1, 0.2], [0.3])
