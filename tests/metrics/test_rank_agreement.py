"""Rank agreement between two system rankings (reteco.metrics.rank_agreement).

tau_AP against hand-computed cases and a brute-force implementation written here from the
paper's definition (every way of breaking ties enumerated and averaged); tau-b against
``scipy.stats.kendalltau``; the bootstrap against the resamples recomputed by hand.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from support.intervals import centred

from reteco.metrics.rank_agreement import conversation_draws, interval_note, kendall_tau_b, system_rank_agreement, tau_ap


def tau_ap_of_orders(reference: list[float], order: list[int]) -> Fraction:
    """The paper's tau_AP: ``order`` lists systems best first (the estimate); a pair is correct
    when ``reference`` puts it the same way, a tie in the reference counting 1/2."""
    n = len(order)
    total = Fraction(0)
    for i in range(1, n):
        below = order[i]
        correct = Fraction(0)
        for above in order[:i]:
            if reference[above] > reference[below]:
                correct += 1
            elif reference[above] == reference[below]:
                correct += Fraction(1, 2)
        total += correct / i
    return Fraction(2, n - 1) * total - 1


def orders_breaking_ties(scores: list[float]) -> list[list[int]]:
    """Every best-first order of the systems consistent with ``scores`` (ties in any order)."""
    return [list(p) for p in itertools.permutations(range(len(scores)))
            if all(scores[p[k]] >= scores[p[k + 1]] for k in range(len(p) - 1))]


def brute_tau_ap(reference: list[float], other: list[float]) -> Fraction:
    """The mean of the paper's tau_AP over all ways to break the ties of both rankings."""
    outcomes = []
    for reference_order in orders_breaking_ties(reference):
        strict = [0.0] * len(reference)
        for position, s in enumerate(reference_order):
            strict[s] = -position  # a total order of the reference
        outcomes += [tau_ap_of_orders(strict, order) for order in orders_breaking_ties(other)]
    return sum(outcomes, Fraction(0)) / len(outcomes)


def one(function, x, y) -> float:
    values, defined = function(np.array([x], dtype=float), np.array([y], dtype=float))
    assert defined[0]
    return float(values[0])


def test_tau_ap_hand_computed_cases():
    # Reference A > B > C > D. The estimate swaps the top two: B, A, C, D.
    # C(2) = 0 (A below B, wrong), C(3) = 2 of 2, C(4) = 3 of 3: 2/3 * (0 + 1 + 1) - 1 = 1/3.
    assert one(tau_ap, [4, 3, 2, 1], [3, 4, 2, 1]) == pytest.approx(1 / 3, abs=1e-12)
    # The bottom two swapped instead: 2/3 * (1 + 1 + 2/3) - 1 = 7/9: an error at the top costs more.
    assert one(tau_ap, [4, 3, 2, 1], [4, 3, 1, 2]) == pytest.approx(7 / 9, abs=1e-12)
    # tau-b does not see where the swap is: 5 concordant, 1 discordant of 6 pairs, 2/3 both times.
    assert one(kendall_tau_b, [4, 3, 2, 1], [3, 4, 2, 1]) == pytest.approx(2 / 3, abs=1e-12)
    assert one(kendall_tau_b, [4, 3, 2, 1], [4, 3, 1, 2]) == pytest.approx(2 / 3, abs=1e-12)
    # Asymmetric: the estimate moves A from the top to the bottom (B, C, D, A): 2/3 * (1 + 1 + 0) - 1
    # = 1/3; with the roles exchanged (positions A, B, C, D; correctness from B > C > D > A):
    # 2/3 * (0 + 1/2 + 2/3) - 1 = -2/9.
    assert one(tau_ap, [4, 3, 2, 1], [1, 4, 3, 2]) == pytest.approx(1 / 3, abs=1e-12)
    assert one(tau_ap, [1, 4, 3, 2], [4, 3, 2, 1]) == pytest.approx(-2 / 9, abs=1e-12)
    # Ties in the estimate: A and B tied at its top. Order A, B, C gives 1; B, A, C gives 0: mean 1/2.
    assert one(tau_ap, [3, 2, 1], [2, 2, 1]) == pytest.approx(0.5, abs=1e-12)
    assert one(tau_ap, [4, 3, 2, 1], [4, 3, 2, 1]) == pytest.approx(1.0, abs=1e-12)
    assert one(tau_ap, [4, 3, 2, 1], [1, 2, 3, 4]) == pytest.approx(-1.0, abs=1e-12)


def test_tau_ap_equals_brute_force_with_and_without_ties():
    rng = np.random.default_rng(7)
    checked_ties = 0
    for _ in range(150):
        n = int(rng.integers(2, 7))
        reference = [float(v) for v in rng.integers(0, 4, size=n)]
        other = [float(v) for v in rng.integers(0, 4, size=n)]
        if len(set(reference)) < 2 or len(set(other)) < 2:
            _, defined = tau_ap(np.array([reference]), np.array([other]))
            assert not defined[0]
            continue
        checked_ties += len(set(reference)) < n or len(set(other)) < n
        assert one(tau_ap, reference, other) == pytest.approx(float(brute_tau_ap(reference, other)), abs=1e-12)
    assert checked_ties > 50


def test_tau_b_equals_scipy_rows_at_once():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=(40, 9)).astype(float)
    y = rng.integers(0, 5, size=(40, 9)).astype(float)
    values, defined = kendall_tau_b(x, y)
    for row in range(40):
        expected = stats.kendalltau(x[row], y[row], variant="b").statistic
        assert defined[row] == np.isfinite(expected)
        if defined[row]:
            assert values[row] == pytest.approx(expected, abs=1e-12)


def test_constant_ranking_is_undefined():
    for function in (kendall_tau_b, tau_ap):
        _, defined = function(np.array([[1.0, 1.0, 1.0]]), np.array([[1.0, 2.0, 3.0]]))
        assert not defined[0]


def synthetic_items(n_systems: int, n_conversations: int, seed: int):
    rng = np.random.default_rng(seed)
    conversation, system, reference, other = [], [], [], []
    for c in range(n_conversations):
        for s in range(n_systems):
            conversation.append(c)
            system.append(s)
            truth = s / n_systems
            reference.append(truth + rng.normal(0, 0.3))
            other.append(truth + rng.normal(0.1, 0.3))
    return (np.array(conversation), np.array(system), np.array(reference), np.array(other),
            [f"s{k}" for k in range(n_systems)])


def test_a_biased_bootstrap_no_longer_misses_its_own_estimate():
    """Issue 32: the resamples of a tau sit below it (conversations repeat, means blur): the plain
    percentile interval excluded the estimate; the re-centred one holds it and stays in [-1, 1]."""
    from reteco.metrics.significance import centred_percentile_interval

    values = np.linspace(0.75, 0.87, 101)
    assert not (np.quantile(values, 0.025) <= 0.891 <= np.quantile(values, 0.975))
    low, high = centred_percentile_interval(0.891, values, 0.95, -1.0, 1.0)
    assert low <= 0.891 <= high <= 1.0
    assert centred_percentile_interval(1.0, np.full(10, 0.6), 0.95, -1.0, 1.0) == (1.0, 1.0)
    assert centred_percentile_interval(0.208, np.linspace(0.25, 1.0, 50), 0.95, -1.0, 1.0)[0] <= 0.208


def test_bootstrap_equals_resamples_recomputed_by_hand():
    conversation, system, reference, other, systems = synthetic_items(6, 12, 1)
    result = system_rank_agreement(conversation, system, reference, other, systems, seed=5, resamples=300)
    counts = conversation_draws(12, 300, 5)
    taus, aps = [], []
    for row in counts:
        weight = row[conversation]
        x = np.array([np.sum(weight * reference * (system == s)) / np.sum(weight * (system == s)) for s in range(6)])
        y = np.array([np.sum(weight * other * (system == s)) / np.sum(weight * (system == s)) for s in range(6)])
        taus.append(stats.kendalltau(x, y, variant="b").statistic)
        aps.append(float(brute_tau_ap(list(np.round(x, 9)), list(np.round(y, 9)))))
    for name, values in (("kendall_tau_b", taus), ("tau_ap", aps)):
        # the percentiles re-centred on the estimate (median - estimate removed), clipped to [-1, 1]
        point = result[name]["value"]
        low, high = centred(point, values, -1.0, 1.0)
        assert result[name]["ci_low"] == pytest.approx(low, abs=1e-12)
        assert result[name]["ci_high"] == pytest.approx(high, abs=1e-12)
        assert result[name]["ci_low"] <= point <= result[name]["ci_high"]
    x = [np.mean(reference[system == s]) for s in range(6)]
    y = [np.mean(other[system == s]) for s in range(6)]
    assert result["kendall_tau_b"]["value"] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert result["tau_ap"]["value"] == pytest.approx(float(brute_tau_ap(x, y)), abs=1e-12)
    assert result["systems"]["s0"]["n_items"] == 12
    assert result["interval_note"] is None
    again = system_rank_agreement(conversation, system, reference, other, systems, seed=5, resamples=300)
    assert again == result


def test_few_systems_say_so_in_words():
    conversation, system, reference, other, systems = synthetic_items(3, 10, 2)
    result = system_rank_agreement(conversation, system, reference, other, systems, seed=1, resamples=200)
    assert "only 3 systems" in result["interval_note"]
    assert interval_note(8, {"value": 0.1, "ci_low": -1.0, "ci_high": 1.0}).startswith("the interval spans every")
    assert "one point" in interval_note(8, {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0})
    assert interval_note(8, {"value": 0.5, "ci_low": 0.2, "ci_high": 0.8}) is None


def test_one_system_and_missing_items_are_undefined_with_reasons():
    result = system_rank_agreement(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 2.0]), np.array([1.0, 2.0]),
                                   ["only"], seed=1, resamples=10)
    assert result["kendall_tau_b"]["value"] is None and "one system" in result["tau_ap"]["reason"]
