"""Topic-set stability (reteco.metrics.topic_stability): a hand-checked small case, then the
properties (systems of equal quality swap half the time, widely separated ones never), then
determinism and the bins."""

from __future__ import annotations

import numpy as np
import pytest

from reteco.metrics.topic_stability import DEFAULT_EDGES, permutations, sizes_for, swap_counts, topic_set_stability

LAST = len(DEFAULT_EDGES) - 1  # the open bin, >= 0.20


def test_hand_checked_swaps_over_the_three_half_splits_of_four_topics():
    # System 0 minus system 1 per topic: 3, 1, -1, -1 (system 1 is 0 everywhere).
    values = np.array([[3.0, 1.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    # The three ways to halve four topics, each read A against B and B against A:
    # {0,1}|{2,3}: differences 2 and -1, a swap; both read in the open bin (>= 0.2).
    # {0,2}|{1,3}: 1 and 0, set B ties: half a swap, once in the open bin (from 1), once in [0, 0.01) (from 0).
    # {0,3}|{1,2}: the same as {0,2}|{1,3}.
    orders = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]])
    assert sizes_for(4) == [2]
    swaps, comparisons = swap_counts(values, orders, [2])
    assert comparisons[0, LAST] == 4 and swaps[0, LAST] == 1 + 1 + 0.5 + 0.5  # 3/4
    assert comparisons[0, 0] == 2 and swaps[0, 0] == 0.5 + 0.5  # 1/2
    assert comparisons.sum() == 6 and swaps.sum() == 4
    # Size 1 on the same orders: topic 0 vs 1 (3 vs 1, no swap), 0 vs 2 (3 vs -1, a swap), 0 vs 3
    # (a swap); every difference is >= 1: the open bin, 6 comparisons, 4 swaps.
    swaps, comparisons = swap_counts(values, orders, [1])
    assert comparisons[0, LAST] == 6 and swaps[0, LAST] == 4 and comparisons.sum() == 6
    result = topic_set_stability({"x": values}, splits=3, seed=0)["metrics"]["x"]
    assert result["sizes"] == [2] and result["pairs"] == 1  # the ladder starts at 5: the half alone


def pooled_rate(metric: dict, size: str) -> float:
    swaps = sum(b["swap_rate"][size] * b["comparisons"][size] for b in metric["bins"] if b["comparisons"][size])
    return swaps / sum(b["comparisons"][size] for b in metric["bins"])


def test_equal_systems_swap_half_the_time_and_separated_ones_never():
    rng = np.random.default_rng(4)
    topics = 200
    equal = rng.normal(0.5, 0.2, size=(2, topics))
    result = topic_set_stability({"ndcg_10": equal}, splits=2000, seed=1)["metrics"]["ndcg_10"]
    # Small sets out of 200 topics are nearly independent draws: a coin, whatever the difference.
    # (Complementary halves are not: their differences sum to twice the full-set one.)
    assert pooled_rate(result, "5") == pytest.approx(0.5, abs=0.03)
    assert pooled_rate(result, "10") == pytest.approx(0.5, abs=0.03)
    identical = np.tile(rng.random(topics), (2, 1))  # the same per-topic figures: every split ties
    result = topic_set_stability({"p_10": identical}, splits=50, seed=1)["metrics"]["p_10"]
    assert [b["low"] for b in result["bins"]] == [0.0]
    assert all(rate == 0.5 for rate in result["bins"][0]["swap_rate"].values())
    apart = np.vstack([rng.uniform(0.8, 1.0, topics), rng.uniform(0.0, 0.2, topics)])
    result = topic_set_stability({"map_10": apart}, splits=500, seed=1)["metrics"]["map_10"]
    assert [b["low"] for b in result["bins"]] == [0.2] and result["bins"][0]["high"] is None
    assert all(rate == 0.0 for rate in result["bins"][0]["swap_rate"].values())
    assert result["bins"][0]["topics_for_5_percent"] == 5


def test_seeded_deterministic_and_swaps_fall_with_more_topics():
    rng = np.random.default_rng(2)
    values = np.vstack([rng.normal(mean, 0.3, size=100) for mean in (0.50, 0.515, 0.60, 0.30)])
    first = topic_set_stability({"ndcg_10": values, "mrr": values[::-1]}, splits=300, seed=9)
    assert topic_set_stability({"ndcg_10": values, "mrr": values[::-1]}, splits=300, seed=9) == first
    assert topic_set_stability({"ndcg_10": values}, splits=300, seed=10)["metrics"]["ndcg_10"] != first["metrics"]["ndcg_10"]
    metric = first["metrics"]["ndcg_10"]
    assert metric["pairs"] == 6 and metric["sizes"] == [5, 10, 25, 50]
    for size in metric["sizes"]:  # every pair, both directions, every split
        assert sum(b["comparisons"][str(size)] for b in metric["bins"]) == 6 * 2 * 300
    assert pooled_rate(metric, "25") < pooled_rate(metric, "5")
    # The permutations are the same for every metric (reversed systems: the same pairs' rates).
    assert first["metrics"]["mrr"]["bins"] == metric["bins"]
    assert permutations(10, 3, 9).tolist() == permutations(10, 3, 9).tolist()


def test_too_few_systems_or_topics_are_absent_with_a_reason():
    result = topic_set_stability({"a": np.zeros((1, 10)), "b": np.zeros((3, 1))}, splits=5)["metrics"]
    assert "fewer than 2 systems" in result["a"]["absent"] and "fewer than 2 topics" in result["b"]["absent"]
