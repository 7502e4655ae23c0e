"""Bootstrap intervals, the paired randomization test and Holm's correction
(reteco.metrics.significance), against hand-worked cases, plain reference implementations
written here, and scipy.stats (permutation_test, bootstrap)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from reteco.metrics import significance as sig
from reteco.metrics.significance import (
    DEFAULT_SEED,
    EXACT_MAX_UNITS,
    all_pairs,
    attainability_warning,
    benjamini_hochberg,
    bootstrap_ci,
    compact_letter_display,
    compare_systems,
    holm,
    letters_text,
    paired_randomization_test,
    rank_intervals,
    resamples_for,
    tukey_hsd,
)


def scipy_rng(seed: int) -> dict:
    # scipy 1.15 renamed random_state to rng; the Codabench image has 1.11.
    name = "rng" if "rng" in inspect.signature(stats.permutation_test).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def mean_difference(x, y, axis):
    return np.mean(x - y, axis=axis)


def scipy_p_value(a, b, n_resamples, seed=0) -> float:
    result = stats.permutation_test((a, b), mean_difference, permutation_type="samples",
                                    vectorized=True, n_resamples=n_resamples,
                                    alternative="two-sided", **scipy_rng(seed))
    return float(result.pvalue)


def ndcg_like(rng, shape):
    """Per-unit figures as nDCG@10 gives them: many exact zeros and ones, a few discrete levels
    in between, so that ties between sign vectors are common."""
    levels = np.array([0.0, 0.0, 0.0, 1 / np.log2(3), 0.5, 0.6309297535714575, 1.0, 1.0])
    return rng.choice(levels, size=shape)


# ---------------------------------------------------------------------------------------------
# Paired randomization test: hand-worked exact cases


def test_exact_enumeration_hand_worked_four_units():
    a = np.array([0.9, 0.6, 0.5, 0.3])
    b = np.array([0.5, 0.4, 0.4, 0.4])
    # d = a - b = (0.4, 0.2, 0.1, -0.1); mean(d) = 0.6 / 4 = 0.15, so a sign vector s counts
    # when |sum(s * d)| >= 0.6. Flipping d4 = -0.1 is the same as flipping a +0.1, so write the
    # 16 sums as s1 0.4 + s2 0.2 + s3 0.1 + s4 0.1. With s1 = +1:
    #   s2 = +1: 0.6 + (+0.1 +0.1) = 0.8 | 0.6 + (+0.1 -0.1) = 0.6 | (-0.1 +0.1) = 0.6 | 0.4
    #   s2 = -1: 0.2 + (0.2, 0, 0, -0.2) = 0.4, 0.2, 0.2, 0.0
    # so 3 of 8 reach 0.6 (0.8, 0.6, 0.6); the 8 with s1 = -1 are their negatives: 3 more.
    # p = 6 / 16 = 0.375 exactly. Two of the six are ties (|sum| = 0.6 by another route): they
    # only count if the comparison tolerates the rounding of the computed means.
    result = paired_randomization_test(a, b)
    assert result.exact and result.sign_vectors == 16
    assert result.p_value == 6 / 16
    assert result.standard_error == 0.0
    assert result.delta == pytest.approx(0.15, abs=1e-15)
    # The opposite direction is the same two-sided test.
    assert paired_randomization_test(b, a).p_value == 6 / 16


def test_exact_enumeration_hand_worked_unit_without_difference():
    a = np.array([0.7, 0.45, 0.33])
    b = np.array([0.4, 0.35, 0.33])
    # d = (0.3, 0.1, 0); mean(d) = 0.4 / 3. The third unit's sign changes nothing, so each sum
    # appears twice: +0.3 +0.1 = 0.4, +0.3 -0.1 = 0.2, -0.3 +0.1 = -0.2, -0.3 -0.1 = -0.4.
    # |sum| >= 0.4 for 2 x 2 = 4 of 8 sign vectors: p = 0.5.
    assert paired_randomization_test(a, b).p_value == 0.5
    # One unit: both sign vectors give |mean| = |d|, p = 1.
    assert paired_randomization_test([0.8], [0.1]).p_value == 1.0


def test_exact_enumeration_equals_scipy_exact():
    rng = np.random.default_rng(11)
    cases = [(rng.random(n), rng.random(n)) for n in (2, 5, 9, 13)]
    cases += [(ndcg_like(rng, n), ndcg_like(rng, n)) for n in (6, 12, EXACT_MAX_UNITS)]
    cases.append((np.array([0.9, 0.6, 0.5, 0.3]), np.array([0.5, 0.4, 0.4, 0.4])))
    for a, b in cases:
        ours = paired_randomization_test(a, b)
        assert ours.exact and ours.sign_vectors == 2 ** len(a)
        # n_resamples=inf makes scipy enumerate all 2^n swaps of the pairs.
        assert ours.p_value == pytest.approx(scipy_p_value(a, b, np.inf), abs=1e-12)


def test_more_units_than_the_exact_limit_use_random_signs():
    rng = np.random.default_rng(3)
    a, b = rng.random((2, EXACT_MAX_UNITS + 1))
    result = paired_randomization_test(a, b, resamples=500)
    assert not result.exact and result.sign_vectors == 500
    p = result.p_value
    assert result.standard_error == pytest.approx(math.sqrt(p * (1 - p) / 500), rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Paired randomization test: Monte Carlo


def reference_p_value(a, b, resamples, seed) -> float:
    """The documented procedure, one sign vector at a time: signs 1 - 2 * B[r] with
    B = default_rng(seed).integers(0, 2, size=(R, n)), p = (1 + #{|mean(s d)| >= |mean(d)|})
    / (1 + R), ties (within 1e-9 of |mean(d)|, far above rounding) counted."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    observed = abs(d.sum() / len(d))
    flips = np.random.default_rng(seed).integers(0, 2, size=(resamples, len(d)))
    count = 0
    for r in range(resamples):
        statistic = abs(sum((1 - 2 * int(f)) * x for f, x in zip(flips[r], d)) / len(d))
        if statistic >= observed or math.isclose(statistic, observed, rel_tol=0, abs_tol=1e-9):
            count += 1
    return (1 + count) / (1 + resamples)


def test_monte_carlo_p_value_equals_plain_reference():
    rng = np.random.default_rng(5)
    for a, b in [(ndcg_like(rng, 40), ndcg_like(rng, 40)), (rng.random(25), rng.random(25))]:
        # Make the second case close, and give the first many zero differences.
        b = np.where(rng.random(len(b)) < 0.4, a, b)
        result = paired_randomization_test(a, b, resamples=999, seed=8)
        assert result.p_value == reference_p_value(a, b, 999, 8)


def test_monte_carlo_p_value_agrees_with_scipy_within_monte_carlo_error():
    resamples = 10_000
    rng = np.random.default_rng(2024)
    n = 80
    base = rng.beta(2, 3, n)
    checked = []
    for shift in (0.0, 0.01, 0.02, 0.03, 0.05):
        noise = rng.normal(0, 0.15, n)
        a = np.clip(base + shift + noise - noise.mean(), 0, 1)
        ours = paired_randomization_test(a, base, resamples=resamples, seed=1)
        theirs = scipy_p_value(a, base, resamples, seed=2)
        p = ours.p_value
        # Our estimate has variance p(1-p)/R. scipy's two-sided p is 2 min(p_less, p_greater),
        # twice a proportion near p/2: variance 4 (p/2)(1 - p/2)/R = p(2-p)/R. The two are
        # independent (different seeds), so their difference has the sum of the variances;
        # the two +1 corrections differ by at most 2/(R+1).
        tolerance = 4 * math.sqrt(p * (1 - p) / resamples + p * (2 - p) / resamples)
        assert abs(p - theirs) <= tolerance + 2 / (resamples + 1), (shift, p, theirs)
        checked.append(p)
    # The cases span p-values where the Monte Carlo error is large, not only p = 1 or tiny p.
    assert min(checked) < 0.01 and any(0.3 < p < 0.7 for p in checked)


def test_clearly_better_system_on_100_units():
    rng = np.random.default_rng(17)
    b = rng.beta(2, 3, 100)
    a = np.minimum(1.0, b + 0.1 + rng.normal(0, 0.05, 100))
    result = paired_randomization_test(a, b)
    assert result.p_value < 0.01
    # No sign vector beats the observed difference: p is the smallest value the +1 allows.
    assert result.p_value == 1 / 10_001
    assert result.delta > 0.05


def test_identical_systems_have_p_one_and_delta_zero():
    rng = np.random.default_rng(4)
    for n in (5, 100):
        x = rng.random(n)
        result = paired_randomization_test(x, x.copy())
        assert result.delta == 0.0 and result.p_value == 1.0
    # All zero (a system that answered nothing twice): still p = 1.
    assert paired_randomization_test(np.zeros(50), np.zeros(50)).p_value == 1.0


def test_seeded_reproducibility():
    rng = np.random.default_rng(9)
    a, b = rng.random((2, 60))
    b = 0.9 * b + 0.1 * a
    first = paired_randomization_test(a, b, resamples=2_000, seed=123)
    assert paired_randomization_test(a, b, resamples=2_000, seed=123) == first
    assert paired_randomization_test(a, b, resamples=2_000, seed=124).p_value != first.p_value
    assert paired_randomization_test(a, b, resamples=2_000).p_value == \
        paired_randomization_test(a, b, resamples=2_000, seed=DEFAULT_SEED).p_value


# ---------------------------------------------------------------------------------------------
# Holm


def test_holm_hand_worked():
    # p = (0.01, 0.04, 0.03, 0.005), m = 4. Ascending: 0.005, 0.01, 0.03, 0.04, multiplied by
    # 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06 (the last
    # raised to keep the order). Back in the given order: 0.03, 0.06, 0.06, 0.02.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # (0.3, 0.5, 0.02): 3 x 0.02 = 0.06, 2 x 0.3 = 0.6, 1 x 0.5 = 0.5 -> 0.6.
    assert holm([0.3, 0.5, 0.02]) == pytest.approx([0.6, 0.6, 0.06], abs=1e-15)
    # Capped at 1: (0.6, 0.7): 2 x 0.6 = 1.2 -> 1, then max(1, 0.7) = 1.
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]
    # Ties get the same value: (0.01, 0.01): 0.02, max(0.02, 0.01) = 0.02.
    assert holm([0.01, 0.01]) == pytest.approx([0.02, 0.02], abs=1e-15)
    assert holm([0.2]).tolist() == [0.2]
    assert holm([]).tolist() == []


def holm_plain(p: list[float]) -> list[float]:
    """Holm's adjusted p-values, straight from the formula, one hypothesis at a time:
    p~_i = min(1, max over hypotheses j sorted at or before i of (m - rank_j) p_j)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rank = {i: r for r, i in enumerate(order)}
    return [min(1.0, max((m - rank[j]) * p[j] for j in range(m) if rank[j] <= rank[i]))
            for i in range(m)]


def holm_rejections(p: list[float], alpha: float) -> set[int]:
    """Holm's step-down procedure itself: reject the smallest p while p_(k) <= alpha/(m-k+1)."""
    m = len(p)
    rejected = set()
    for k, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if p[i] > alpha / (m - k):
            break
        rejected.add(i)
    return rejected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1000), max_size=30))
def test_holm_against_plain_references(thousandths):
    p = [t / 1000 for t in thousandths]
    adjusted = holm(p)
    assert adjusted == pytest.approx(holm_plain(p), abs=1e-15)
    assert ((adjusted >= np.asarray(p)) & (adjusted <= 1.0)).all()
    # Monotone: a smaller raw p never gets a larger adjusted one.
    order = np.argsort(p, kind="stable")
    assert (np.diff(adjusted[order]) >= 0).all()
    # Adjusted p <= alpha exactly when the procedure rejects at alpha. The alphas are odd
    # multiples of 1/2000, so no (m - k + 1) p_(k) lies on one of them and rounding cannot
    # decide.
    for alpha in (0.0105, 0.0505, 0.1005, 0.2505, 0.5005):
        assert {i for i, q in enumerate(adjusted) if q <= alpha} == holm_rejections(p, alpha)


def test_holm_rejects_bad_input():
    for bad in ([0.1, float("nan")], [1.2], [-0.1], [[0.1, 0.2]]):
        with pytest.raises(ValueError):
            holm(bad)


# ---------------------------------------------------------------------------------------------
# Bootstrap


def reference_interval(x, confidence, resamples, seed):
    """The documented procedure, one resample at a time."""
    units = np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))
    means = [np.asarray(x)[units[r]].mean() for r in range(resamples)]
    alpha = 1 - confidence
    return np.percentile(means, 100 * alpha / 2), np.percentile(means, 100 * (1 - alpha / 2))


def test_bootstrap_equals_plain_reference():
    rng = np.random.default_rng(6)
    matrix = np.vstack([rng.random(30), ndcg_like(rng, 30), np.zeros(30)])
    low, high = bootstrap_ci(matrix, confidence=0.9, resamples=500, seed=77)
    for system in range(3):
        ref_low, ref_high = reference_interval(matrix[system], 0.9, 500, 77)
        assert low[system] == ref_low and high[system] == ref_high
    assert low[2] == high[2] == 0.0


def test_bootstrap_agrees_with_scipy_percentile_within_quantile_error():
    resamples = 10_000
    confidence = 0.95
    rng = np.random.default_rng(31)
    systems = [rng.beta(2, 3, 100), ndcg_like(rng, 100), rng.random(350)]
    for x in systems:
        ours = bootstrap_ci(x, confidence=confidence, resamples=resamples, seed=5)
        theirs = stats.bootstrap((x,), np.mean, vectorized=True, method="percentile",
                                 confidence_level=confidence, n_resamples=resamples,
                                 **scipy_rng(6))
        distribution = np.sort(theirs.bootstrap_distribution)
        for q, ours_end, theirs_end in ((0.025, ours.low, theirs.confidence_interval.low),
                                        (0.975, ours.high, theirs.confidence_interval.high)):
            # A sample q-quantile of R draws has standard error sqrt(q(1-q)/R) / f(xi_q)
            # (asymptotic normality of sample quantiles); the density f at the quantile is
            # estimated from scipy's bootstrap distribution as 2h / (Q(q+h) - Q(q-h)). Two
            # independent estimates differ by sqrt(2) of that; allow 4 standard errors.
            h = 0.01
            spread = np.quantile(distribution, q + h) - np.quantile(distribution, q - h)
            standard_error = math.sqrt(q * (1 - q) / resamples) * spread / (2 * h)
            assert abs(ours_end - theirs_end) <= 4 * math.sqrt(2) * standard_error, (q, x[:3])
        assert ours.low < x.mean() < ours.high


def test_bootstrap_same_units_for_every_system():
    rng = np.random.default_rng(12)
    matrix = rng.random((4, 50))
    matrix[3] = matrix[1]
    low, high = bootstrap_ci(matrix, resamples=2_000, seed=3)
    # A system's interval does not depend on the others (the units drawn depend only on the
    # seed and the number of units), and identical systems get identical intervals.
    for system in range(4):
        assert bootstrap_ci(matrix[system], resamples=2_000, seed=3) == (low[system], high[system])
    assert low[3] == low[1] and high[3] == high[1]
    # A constant shift of a system shifts its interval: the same units were drawn.
    shifted_low, shifted_high = bootstrap_ci(matrix[0] + 0.25, resamples=2_000, seed=3)
    assert shifted_low == pytest.approx(low[0] + 0.25, abs=1e-12)
    assert shifted_high == pytest.approx(high[0] + 0.25, abs=1e-12)


def test_bootstrap_seeded_reproducibility():
    x = np.random.default_rng(2).random(40)
    first = bootstrap_ci(x, resamples=1_000, seed=10)
    assert bootstrap_ci(x, resamples=1_000, seed=10) == first
    assert bootstrap_ci(x, resamples=1_000, seed=11) != first
    assert bootstrap_ci(x, resamples=1_000) == bootstrap_ci(x, resamples=1_000, seed=DEFAULT_SEED)


# ---------------------------------------------------------------------------------------------
# Chunking: memory bounds must not change a single bit


def test_chunk_size_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(21)
    matrix = np.vstack([rng.random((4, 45)), ndcg_like(rng, (2, 45))])
    names = [f"s{i}" for i in range(6)]
    exact_matrix = matrix[:, :10]
    before = (bootstrap_ci(matrix, resamples=700, seed=4),
              all_pairs(matrix, names, resamples=700, seed=4),
              all_pairs(exact_matrix, names, seed=4))
    # 37 floats a chunk: sign vectors and resamples drawn a row at a time, pairs one by one.
    monkeypatch.setattr(sig, "_CHUNK_ELEMENTS", 37)
    after = (bootstrap_ci(matrix, resamples=700, seed=4),
             all_pairs(matrix, names, resamples=700, seed=4),
             all_pairs(exact_matrix, names, seed=4))
    np.testing.assert_array_equal(before[0].low, after[0].low)
    np.testing.assert_array_equal(before[0].high, after[0].high)
    assert before[1] == after[1] and before[2] == after[2]


# ---------------------------------------------------------------------------------------------
# All pairs


def test_all_pairs_equal_single_tests_and_plain_reference():
    rng = np.random.default_rng(8)
    matrix = np.vstack([rng.random((3, 30)), ndcg_like(rng, (2, 30))])
    matrix[4, :12] = matrix[0, :12]  # many zero differences for one pair
    names = ["t1/r1", "t2/r1", "t3/r2", "t4/r1", "t5/r3"]
    pairs = all_pairs(matrix, names, resamples=2_000, seed=99)
    assert [(p.a, p.b) for p in pairs] == [(names[i], names[j])
                                            for i in range(5) for j in range(i + 1, 5)]
    for pair in pairs:
        i, j = names.index(pair.a), names.index(pair.b)
        single = paired_randomization_test(matrix[i], matrix[j], resamples=2_000, seed=99)
        assert (pair.delta, pair.p_value, pair.standard_error) == \
            (single.delta, single.p_value, single.standard_error)
        assert pair.p_value == reference_p_value(matrix[i], matrix[j], 2_000, 99)
        assert pair.delta == pytest.approx(matrix[i].mean() - matrix[j].mean(), abs=1e-15)
    assert [p.p_adjusted for p in pairs] == holm([p.p_value for p in pairs]).tolist()
    assert all_pairs(matrix[:1], ["alone"]) == []
    assert pairs[0].as_dict() == {"a": "t1/r1", "b": "t2/r1", "delta": pairs[0].delta,
                                  "p_value": pairs[0].p_value, "p_adjusted": pairs[0].p_adjusted}


def test_all_pairs_identical_and_clearly_different_systems():
    rng = np.random.default_rng(13)
    base = rng.beta(2, 3, 100)
    better = np.minimum(1.0, base + 0.1 + rng.normal(0, 0.05, 100))
    matrix = np.vstack([better, base, base])
    pairs = all_pairs(matrix, ["better", "base", "copy"])
    by_names = {(p.a, p.b): p for p in pairs}
    same = by_names[("base", "copy")]
    assert (same.delta, same.p_value, same.p_adjusted, same.standard_error) == (0.0, 1.0, 1.0, 0.0)
    for other in ("base", "copy"):
        assert by_names[("better", other)].p_value < 0.01
        assert by_names[("better", other)].p_adjusted < 0.01


def test_compare_systems_every_number_finite_and_method_complete():
    rng = np.random.default_rng(1)
    matrix = ndcg_like(rng, (6, 120))
    matrix[5] = 0.0  # a system that answered nothing
    result = compare_systems(matrix, [f"s{i}" for i in range(6)], resamples=1_000, seed=5, procedure="holm")
    assert len(result.pairs) == 15
    numbers = [*result.ci_low, *result.ci_high]
    numbers += [v for p in result.pairs for v in (p.delta, p.p_value, p.p_adjusted, p.standard_error)]
    assert all(math.isfinite(v) for v in numbers)
    assert ((result.ci_low <= matrix.mean(axis=1)) & (matrix.mean(axis=1) <= result.ci_high)).all()
    assert result.ci_low[5] == result.ci_high[5] == 0.0
    method = result.method
    for key in ("test", "statistic", "sidedness", "resamples", "seed", "correction"):
        assert key in method
    assert method["interval"]["confidence"] == 0.95
    assert (method["resamples"], method["seed"], method["units"], method["exact"]) == \
        (1_000, 5, 120, False)
    assert method["sidedness"] == "two-sided"
    assert "15 pairs" in method["correction"]
    assert method["monte_carlo_standard_error"]["max"] == \
        max(p.standard_error for p in result.pairs)
    assert method["monte_carlo_standard_error"]["max"] <= 0.5 / math.sqrt(1_000)
    # Few units: exact, stated as such.
    small = compare_systems(matrix[:3, :8], ["a", "b", "c"], resamples=1_000, procedure="holm")
    assert small.method["exact"] and small.method["sign_vectors"] == 256
    assert small.method["monte_carlo_standard_error"]["max"] == 0.0


def test_bad_arguments_raise_value_error():
    good = np.random.default_rng(0).random((3, 20))
    calls = [
        lambda: bootstrap_ci(np.array([0.1, np.nan])),
        lambda: bootstrap_ci(np.zeros(0)),
        lambda: bootstrap_ci(good, confidence=1.0),
        lambda: bootstrap_ci(good, resamples=0),
        lambda: bootstrap_ci(good, seed=-1),
        lambda: paired_randomization_test(good[0], good[1][:10]),
        lambda: paired_randomization_test(good[0], np.full(20, np.inf)),
        lambda: all_pairs(good, ["a", "b"]),
        lambda: all_pairs(good, ["a", "b", "a"]),
        lambda: all_pairs(good[0], ["a"]),
        lambda: all_pairs(good, ["a", "b", "c"], resamples=2.5),
    ]
    for call in calls:
        with pytest.raises(ValueError):
            call()


# ---------------------------------------------------------------------------------------------
# Randomised Tukey HSD


def exact_tukey_p(matrix: np.ndarray, a: int, b: int) -> float:
    """The textbook definition, enumerated: over every assignment of each unit's figures to the
    systems (S!^n of them, all equally likely under the null), the share whose range of system
    means reaches |mean(a) - mean(b)|."""
    import itertools

    n_systems, n_units = matrix.shape
    observed = abs(matrix[a].mean() - matrix[b].mean())
    hits = total = 0
    for perms in itertools.product(itertools.permutations(range(n_systems)), repeat=n_units):
        # perms[j][s]: the system whose figure on unit j system s gets.
        means = [sum(matrix[perms[j][s], j] for j in range(n_units)) / n_units for s in range(n_systems)]
        total += 1
        hits += max(means) - min(means) >= observed - 1e-12
    return hits / total


def test_tukey_hsd_agrees_with_the_enumerated_textbook_definition():
    # 3 systems x 4 units: 6^4 = 1,296 assignments, enumerated; the Monte Carlo p-value must lie
    # within 4 of its standard errors of the exact one.
    matrix = np.array([[0.9, 0.8, 0.7, 1.0], [0.5, 0.6, 0.4, 0.7], [0.3, 0.5, 0.2, 0.6]])
    pairs = tukey_hsd(matrix, ["a", "b", "c"], resamples=20_000, seed=3)
    for pair, (i, j) in zip(pairs, [(0, 1), (0, 2), (1, 2)]):
        exact = exact_tukey_p(matrix, i, j)
        assert pair.p_value is None
        assert abs(pair.p_adjusted - exact) <= 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1 / 20_001
        assert pair.delta == pytest.approx(matrix[i].mean() - matrix[j].mean())


def test_tukey_hsd_equals_a_plain_loop_over_the_stated_stream():
    rng = np.random.default_rng(5)
    matrix = ndcg_like(rng, (5, 12))
    names = [f"s{i}" for i in range(5)]
    pairs = tukey_hsd(matrix, names, resamples=500, seed=17)
    stream = np.random.default_rng(17)
    ranges = []
    for _ in range(500):
        shuffled = stream.permuted(matrix, axis=0)
        # Column j of the trial holds unit j's figures, shuffled among the systems.
        for j in range(12):
            assert sorted(shuffled[:, j]) == sorted(matrix[:, j])
        means = [math.fsum(row) / 12 for row in shuffled]
        ranges.append(max(means) - min(means))
    k = 0
    for i in range(5):
        for j in range(i + 1, 5):
            d = abs(math.fsum(matrix[i]) / 12 - math.fsum(matrix[j]) / 12)
            count = sum(r >= d - 1e-10 for r in ranges)
            assert pairs[k].p_adjusted == pytest.approx((count + 1) / 501, abs=1e-15)
            k += 1


def test_identical_systems_under_tukey_hsd_have_p_one():
    rng = np.random.default_rng(2)
    base = ndcg_like(rng, 30)
    pairs = tukey_hsd(np.vstack([base, base, ndcg_like(rng, 30)]), ["a", "b", "c"], resamples=300)
    assert pairs[0].p_adjusted == 1.0 and pairs[0].delta == 0.0


def synthetic_180(units: int = 18, seed: int = 1):
    """180 systems as the issue found them: figures from about 0.98 down to 0.40 over few units."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.98, 0.40, 180)[:, None]
    matrix = np.clip(quality + rng.normal(0, 0.15, (180, units)), 0.0, 1.0)
    order = np.argsort(-matrix.mean(axis=1), kind="stable")
    return matrix[order], [f"team{i}/run{i % 3}" for i in order]


def test_at_180_systems_the_top_and_bottom_are_significantly_different():
    matrix, names = synthetic_180()
    result = compare_systems(matrix, names, seed=4)  # the default: Tukey HSD, 10,000 trials
    assert result.method["procedure"] == "tukey-hsd"
    assert result.method["resamples"] == 10_000 and result.warnings == []
    top_bottom = next(p for p in result.pairs if (p.a, p.b) == (names[0], names[-1]))
    assert top_bottom.p_adjusted <= 0.05
    assert result.method["smallest_attainable_adjusted_p"] == 1 / 10_001
    assert set(result.letters[0]).isdisjoint(set(result.letters[-1]) - {"-"})
    # Holm over 16,110 separate tests cannot, whatever the resamples, and says so.
    warning = attainability_warning(180, 18, resamples_for(180, 18, "holm"), "holm")
    assert warning and "tukey-hsd" in warning and "16110 pairs" in warning


def test_resolution_follows_the_number_of_comparisons():
    assert resamples_for(180, 18, "tukey-hsd") == 10_000
    assert resamples_for(9, 350, "holm") == 10_000          # 36 pairs: 2 x 36 / 0.05 < 10,000
    assert resamples_for(60, 350, "holm") == 70_800         # 1,770 pairs
    assert resamples_for(180, 350, "fdr") == 644_400        # 16,110 pairs
    assert resamples_for(400, 350, "holm") == 1_000_000     # capped
    assert attainability_warning(60, 350, 70_800, "holm") is None
    assert "70800" in attainability_warning(60, 350, 10_000, "holm")
    assert attainability_warning(9, 18, 10, "tukey-hsd").endswith("at least 20")
    assert attainability_warning(1, 18, 10, "tukey-hsd") is None


def test_compare_systems_warns_when_no_pair_can_be_significant():
    matrix, names = synthetic_180(units=18)
    result = compare_systems(matrix[:40], names[:40], procedure="holm", resamples=2_000)
    assert len(result.warnings) == 1 and "no pair can be significant" in result.warnings[0]
    assert all(p.p_adjusted > 0.05 for p in result.pairs)
    assert all(letters == "a" for letters in result.letters)


# ---------------------------------------------------------------------------------------------
# Benjamini-Hochberg


def test_benjamini_hochberg_hand_worked_and_against_scipy():
    # m = 4: sorted 0.01, 0.02, 0.03, 0.5 -> 4p/i = 0.04, 0.04, 0.04, 0.5, then the running min
    # from the top.
    assert benjamini_hochberg([0.03, 0.5, 0.01, 0.02]).tolist() == pytest.approx([0.04, 0.5, 0.04, 0.04])
    rng = np.random.default_rng(4)
    p = rng.random(200) ** 3
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"),
                               rtol=1e-12)
    with pytest.raises(ValueError):
        benjamini_hochberg([0.2, 1.5])


def test_all_pairs_with_the_fdr_correction():
    rng = np.random.default_rng(8)
    matrix = rng.random((4, 30))
    holm_pairs = all_pairs(matrix, list("abcd"), resamples=500, correction="holm")
    fdr_pairs = all_pairs(matrix, list("abcd"), resamples=500, correction="fdr")
    assert [p.p_value for p in holm_pairs] == [p.p_value for p in fdr_pairs]
    assert [p.p_adjusted for p in fdr_pairs] == benjamini_hochberg([p.p_value for p in fdr_pairs]).tolist()


# ---------------------------------------------------------------------------------------------
# Rank intervals and letters, against brute force


def test_rank_intervals_equal_brute_force():
    rng = np.random.default_rng(6)
    means = rng.random((5, 41)).round(1)  # rounded: ties between systems within a resample
    low, high = rank_intervals(means, 0.9)
    for s in range(5):
        ranks = sorted(1 + sum(means[o, r] > means[s, r] for o in range(5)) for r in range(41))
        # 0.05 and 0.95 quantiles over 41 values, outwards: positions floor(0.05*40) = 2 and
        # ceil(0.95*40) = 38 of the sorted ranks.
        assert (low[s], high[s]) == (ranks[2], ranks[38])


def maximal_cliques_brute_force(n: int, significant: set) -> list[list[int]]:
    import itertools

    cliques = [set(c) for size in range(1, n + 1) for c in itertools.combinations(range(n), size)
               if all((i, j) not in significant for i, j in itertools.combinations(c, 2))]
    return sorted(sorted(c) for c in cliques if not any(c < other for other in cliques))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.data())
def test_letters_are_the_maximal_sets_of_not_significantly_different_systems(n, data):
    import itertools

    all_pairs_ = list(itertools.combinations(range(n), 2))
    significant = set(data.draw(st.lists(st.sampled_from(all_pairs_), unique=True)) if all_pairs_ else [])
    per_system = compact_letter_display(n, sorted(significant))
    groups: dict[int, list[int]] = {}
    for system, columns in enumerate(per_system):
        for column in columns:
            groups.setdefault(column, []).append(system)
    assert sorted(groups.values()) == maximal_cliques_brute_force(n, significant)
    # Numbered by their best member: group 0 holds the first system.
    assert [groups[c] for c in sorted(groups)] == sorted(groups.values())
    for i, j in all_pairs_:
        share = bool(set(per_system[i]) & set(per_system[j]))
        assert share == ((i, j) not in significant)


def test_letters_text_shortens_runs():
    assert letters_text([0]) == "a"
    assert letters_text([0, 1]) == "ab"
    assert letters_text([2, 3, 4, 5]) == "c-f"
    assert letters_text([0, 1, 2, 33]) == "a-cH"
    assert letters_text([51, 52, 53]) == "Z-b2"
