"""The relevance round's label agreement (``reteco.metrics.label_agreement``) against
scikit-learn's Cohen's kappa (quadratic weights on the 0-3 levels, and unweighted at a binary cut)
and scipy's Wilson interval, on random labels; the cluster bootstrap's resamples against a plain
loop over the same draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from reteco.metrics.label_agreement import contingency, kappa_with_interval, weighted_kappa, wilson_interval
from reteco.metrics.significance import centred_percentile_interval


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
        centred_percentile_interval(point, np.array(values), 0.95, -1.0, 1.0), abs=1e-9)
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
