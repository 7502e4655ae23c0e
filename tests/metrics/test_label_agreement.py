"""The relevance round's label agreement (``reteco.metrics.label_agreement``) against
scikit-learn's Cohen's kappa (quadratic weights on the 0-3 levels, and unweighted at a binary cut)
and scipy's Wilson interval, on random labels; the cluster bootstrap's resamples against a plain
loop over the same draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score
from support.intervals import centred

from reteco.metrics.label_agreement import (
    contingency,
    kappa_with_interval,
    mean_pairwise_kappa_with_interval,
    weighted_kappa,
    wilson_interval,
)


@pytest.mark.parametrize("seed", range(6))
def test_kappa_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, 60)
    y = np.clip(x + rng.integers(-1, 2, 60), 0, 3) if seed % 2 else rng.integers(0, 3, 60)  # a level unused
    (value,), (defined,) = weighted_kappa(contingency(x, y, 4)[None])
    assert defined and value == pytest.approx(cohen_kappa_score(x, y, weights="quadratic", labels=[0, 1, 2, 3]),
                                              abs=1e-12)
    xb, yb = (x >= 2).astype(int), (y >= 2).astype(int)
    (binary,), _ = weighted_kappa(contingency(xb, yb, 2)[None])
    assert binary == pytest.approx(cohen_kappa_score(xb, yb, labels=[0, 1]), abs=1e-12)


def test_the_cluster_bootstrap_is_the_loop_it_stands_for():
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 4, 40), rng.integers(0, 4, 40)
    topics = [f"t{i % 7}" for i in range(40)]
    figure = kappa_with_interval(x, y, topics, 4, resamples=300, seed=11)
    names = sorted(set(topics))
    draws = np.random.default_rng(11).integers(0, len(names), size=(300, len(names)))
    values = []
    for row in draws:
        picked = [i for c in row for i in range(40) if topics[i] == names[c]]
        values.append(cohen_kappa_score(x[picked], y[picked], weights="quadratic", labels=[0, 1, 2, 3]))
    point = cohen_kappa_score(x, y, weights="quadratic", labels=[0, 1, 2, 3])
    assert figure["value"] == pytest.approx(point, abs=1e-12)
    assert (figure["ci_low"], figure["ci_high"]) == pytest.approx(
        centred(point, values, -1.0, 1.0), abs=1e-9)
    assert figure["undefined_resamples"] == 0 and figure["clusters"] == 7


def test_undefined_kappa_says_why():
    # Both raters gave one and the same label: no disagreement is expected, kappa is 0/0.
    figure = kappa_with_interval([2, 2, 2], [2, 2, 2], ["a", "b", "c"], 4, resamples=50, seed=1)
    assert figure["value"] is None and "both raters gave one and the same label" in figure["reason"]
    # One rater constant, the other not: defined, and 0 (scikit-learn's too).
    figure = kappa_with_interval([2, 2, 2], [1, 2, 3], ["a", "b", "c"], 4, resamples=50, seed=1)
    assert figure["value"] == 0.0 == cohen_kappa_score([2, 2, 2], [1, 2, 3], weights="quadratic", labels=[0, 1, 2, 3])


@pytest.mark.parametrize("k, n", [(0, 5), (3, 4), (17, 20), (50, 50)])
def test_wilson_interval_equals_scipy(k, n):
    scipy = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((scipy.low, scipy.high), abs=1e-9)


def _sklearn_mean_pairwise(grades: np.ndarray, levels: int) -> float:
    """Light's mean of scikit-learn's pairwise quadratic kappas, each pair on the units both graded."""
    values = []
    for a in range(grades.shape[1]):
        for b in range(a + 1, grades.shape[1]):
            both = (grades[:, a] >= 0) & (grades[:, b] >= 0)
            values.append(cohen_kappa_score(grades[both, a], grades[both, b], weights="quadratic",
                                            labels=list(range(levels))))
    return float(np.mean(values))


@pytest.mark.parametrize("raters", [2, 3, 4])
def test_mean_pairwise_kappa_is_the_mean_of_scikit_learns_pairwise_kappas(raters):
    rng = np.random.default_rng(raters)
    truth = rng.integers(0, 5, 80)
    grades = np.clip(truth[:, None] + rng.integers(-1, 2, (80, raters)), 0, 4)
    grades[rng.random((80, raters)) < 0.15] = -1  # some units not graded by some raters
    figure = mean_pairwise_kappa_with_interval(grades, 5, resamples=200, seed=3)
    assert figure["value"] == pytest.approx(_sklearn_mean_pairwise(grades, 5), abs=1e-12)
    assert len(figure["pairs"]) == raters * (raters - 1) // 2
    assert figure["ci_low"] <= figure["value"] <= figure["ci_high"]


def test_mean_pairwise_kappa_by_hand():
    # Two raters on three units, levels 0..2: (0, 0), (1, 2), (2, 2). Observed mean squared
    # difference (0 + 1 + 0) / 3 = 1/3; margins x (1/3, 1/3, 1/3), y (1/3, 0, 2/3): expected
    # sum_ij x_i y_j (i - j)^2 = 1/3 [(0 + 0 + 4 * 2/3) + (1/3 + 0 + 2/3) + (4/3 + 0 + 0)] = 1/3 * 5 = 5/3;
    # kappa = 1 - (1/3) / (5/3) = 0.8. A third rater who agrees with the first: pairs (1, 3) kappa 1,
    # (2, 3) 0.8 again: mean (0.8 + 0.8 + 1) / 3.
    two = np.array([[0, 0], [1, 2], [2, 2]])
    assert mean_pairwise_kappa_with_interval(two, 3, resamples=50, seed=1)["value"] == pytest.approx(0.8, abs=1e-12)
    three = np.column_stack([two, two[:, 0]])
    assert mean_pairwise_kappa_with_interval(three, 3, resamples=50, seed=1)["value"] == pytest.approx(2.6 / 3, abs=1e-12)


def test_mean_pairwise_kappa_bootstrap_is_the_loop_it_stands_for():
    rng = np.random.default_rng(5)
    grades = np.clip(rng.integers(0, 5, 30)[:, None] + rng.integers(-1, 2, (30, 3)), 0, 4)
    figure = mean_pairwise_kappa_with_interval(grades, 5, resamples=250, seed=9)
    draws = np.random.default_rng(9).integers(0, 30, size=(250, 30))
    values = [_sklearn_mean_pairwise(grades[row], 5) for row in draws]
    assert (figure["ci_low"], figure["ci_high"]) == pytest.approx(
        centred(figure["value"], values, -1.0, 1.0), abs=1e-9)


def test_mean_pairwise_kappa_undefined_says_why():
    assert "fewer than two raters" in mean_pairwise_kappa_with_interval(np.zeros((4, 1), int), 5, resamples=10, seed=0)["reason"]
    no_shared = np.array([[1, -1], [-1, 2], [3, -1]])
    figure = mean_pairwise_kappa_with_interval(no_shared, 5, resamples=10, seed=0)
    assert figure["value"] is None and figure["pairs"][0]["units"] == 0
