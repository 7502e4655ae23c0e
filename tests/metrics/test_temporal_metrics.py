"""Temporal metrics: the TEMPO paper's test vectors, hand-computed cases and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reteco.metrics.ranking import RankedRows
from reteco.metrics.temporal import (
    covered_periods_at_k,
    full_coverage,
    ndcg_full_coverage,
    temporal_coverage_at_k,
    temporal_precision_at_k,
    temporal_relevance_at_k,
)


def rows_of(*verdicts: list[int]) -> RankedRows:
    """One topic per verdict list, in ranking order (v_1, v_2, ...)."""
    topic, position, gain = [], [], []
    for t, vs in enumerate(verdicts):
        for p, v in enumerate(vs):
            topic.append(t)
            position.append(p)
            gain.append(float(v))
    return RankedRows(np.array(topic, np.int64), np.array(position, np.int64), np.array(gain), len(verdicts))


# ---------------------------------------------------------------- the paper's test vectors


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([1, 0, 0, 0, 0], 1.0),
        ([0, 0, 0, 0, 1], 0.2),
        ([1, 1, 0, 0, 0], 1.0),
        ([0, 1, 0, 1, 0, 0, 0, 0, 0, 0], 0.5),
    ],
)
def test_temporal_precision_paper_vectors(verdicts, expected):
    assert temporal_precision_at_k(rows_of(verdicts), 10)[0] == pytest.approx(expected, abs=1e-15)


def test_temporal_precision_vectors_all_at_once():
    # Vectorised: the four vectors as four topics of one table give the same four values.
    tp = temporal_precision_at_k(rows_of([1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [1, 1, 0, 0, 0], [0, 1, 0, 1, 0]), 10)
    assert tp.tolist() == pytest.approx([1.0, 0.2, 1.0, 0.5], abs=1e-15)


# ---------------------------------------------------------------- hand-computed cases


def test_temporal_precision_hand_computed():
    # R = {1, 3, 4}: (1/1 + 2/3 + 3/4) / 3
    assert temporal_precision_at_k(rows_of([1, 0, 1, 1]), 10)[0] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3, abs=1e-15)
    # Nothing relevant: 0, not NaN; an empty ranking: 0.
    assert temporal_precision_at_k(rows_of([0, 0, 0], []), 10).tolist() == [0.0, 0.0]


def test_temporal_precision_ignores_ranks_beyond_k():
    # The relevant document at rank 11 is outside the top 10: R is empty.
    assert temporal_precision_at_k(rows_of([0] * 10 + [1]), 10)[0] == 0.0
    # With k = 3: R = {2} -> 1/2; rank 5 is cut.
    assert temporal_precision_at_k(rows_of([0, 1, 0, 0, 1]), 3)[0] == pytest.approx(0.5)


def test_temporal_relevance_divides_by_k():
    tr = temporal_relevance_at_k(rows_of([1, 0, 1], [1] * 12, []), 10)
    # Three ranked, two relevant: 2/10 (not 2/3); twelve relevant: 10/10; none ranked: 0.
    assert tr.tolist() == pytest.approx([0.2, 1.0, 0.0], abs=1e-15)


def test_temporal_coverage_hand_computed():
    # Query 0 has periods 0, 1, 2; query 1 has periods 3, 4; query 2 has none.
    period_group = np.array([0, 0, 0, 1, 1])
    # q0: rank 1 covers p0 and p1, rank 12 covers p2 (outside top 10). q1: rank 10 covers p4.
    cover_period = np.array([0, 1, 2, 4])
    cover_position = np.array([0, 0, 11, 9])
    tc = temporal_coverage_at_k(cover_period, cover_position, period_group, 3, 10)
    assert tc[0] == pytest.approx(2 / 3, abs=1e-15)
    assert tc[1] == pytest.approx(1 / 2, abs=1e-15)
    assert np.isnan(tc[2])  # no required period: undefined, left out by callers
    covered = covered_periods_at_k(cover_period, cover_position, period_group, 3, 10)
    assert covered.tolist() == [2, 1, 0]
    assert full_coverage(covered, np.array([3, 2, 0])).tolist() == [False, False, False]
    assert temporal_coverage_at_k(cover_period, cover_position, period_group, 3, 12)[0] == 1.0


def test_temporal_coverage_counts_a_period_once_across_documents_and_lists():
    # Two documents (or two step lists) covering the same period count it once: TC = 1/2.
    tc = temporal_coverage_at_k(np.array([0, 0, 0]), np.array([0, 3, 0]), np.array([0, 0]), 1, 10)
    assert tc[0] == pytest.approx(0.5)


def test_ndcg_full_coverage():
    ndcg = np.array([0.2, 0.9, 0.5, 0.0])
    fully = full_coverage(np.array([2, 1, 3, 0]), np.array([2, 2, 3, 0]))
    assert fully.tolist() == [True, False, True, False]  # the query without periods never qualifies
    value, n = ndcg_full_coverage(ndcg, fully)
    assert (value, n) == (pytest.approx(0.35, abs=1e-15), 2)
    # No fully covered query: undefined (None), never 0.
    assert ndcg_full_coverage(ndcg, np.zeros(4, bool)) == (None, 0)


# ---------------------------------------------------------------- properties


@st.composite
def rankings(draw):
    n_topics = draw(st.integers(1, 6))
    verdicts = [draw(st.lists(st.integers(0, 1), max_size=15)) for _ in range(n_topics)]
    periods = [draw(st.integers(0, 4)) for _ in range(n_topics)]
    covers = []  # (topic, position, local period)
    for t in range(n_topics):
        for p in range(len(verdicts[t])):
            for m in range(periods[t]):
                if draw(st.booleans()):
                    covers.append((t, p, m))
    return verdicts, periods, covers


def _coverage_inputs(periods, covers):
    offset = np.concatenate(([0], np.cumsum(periods)[:-1])).astype(np.int64)
    period_group = np.repeat(np.arange(len(periods)), periods)
    cover_period = np.array([offset[t] + m for t, _, m in covers], dtype=np.int64)
    cover_position = np.array([p for _, p, _ in covers], dtype=np.int64)
    return cover_period, cover_position, period_group


@settings(max_examples=200, deadline=None)
@given(rankings(), st.integers(1, 12))
def test_bounds(data, k):
    verdicts, periods, covers = data
    rows = rows_of(*verdicts)
    tp = temporal_precision_at_k(rows, k)
    tr = temporal_relevance_at_k(rows, k)
    assert ((0 <= tp) & (tp <= 1)).all() and ((0 <= tr) & (tr <= 1)).all()
    # TP is 0 exactly when no temporally relevant document is in the top k.
    found = np.array([sum(v[:k]) for v in verdicts])
    assert ((tp > 0) == (found > 0)).all()
    assert tr == pytest.approx(found / k)
    cover_period, cover_position, period_group = _coverage_inputs(periods, covers)
    tc = temporal_coverage_at_k(cover_period, cover_position, period_group, len(periods), k)
    defined = np.array(periods) > 0
    assert np.isnan(tc[~defined]).all()
    assert ((0 <= tc[defined]) & (tc[defined] <= 1)).all()


@settings(max_examples=200, deadline=None)
@given(rankings())
def test_coverage_is_monotone_in_k(data):
    verdicts, periods, covers = data
    cover_period, cover_position, period_group = _coverage_inputs(periods, covers)
    defined = np.array(periods) > 0
    previous = np.zeros(len(periods))
    for k in range(1, 17):
        tc = temporal_coverage_at_k(cover_period, cover_position, period_group, len(periods), k)
        assert (tc[defined] >= previous[defined]).all()
        previous = np.where(defined, tc, 0.0)


@settings(max_examples=200, deadline=None)
@given(rankings(), st.lists(st.floats(0, 1), min_size=6, max_size=6))
def test_ndcg_fc_averages_only_fully_covered_queries(data, ndcg_values):
    verdicts, periods, covers = data
    n = len(periods)
    ndcg = np.array(ndcg_values[:n])
    cover_period, cover_position, period_group = _coverage_inputs(periods, covers)
    covered = covered_periods_at_k(cover_period, cover_position, period_group, n, 10)
    tc = temporal_coverage_at_k(cover_period, cover_position, period_group, n, 10)
    fully = full_coverage(covered, np.array(periods))
    value, count = ndcg_full_coverage(ndcg, fully)
    qualifying = [i for i in range(n) if periods[i] > 0 and tc[i] == 1.0]
    assert count == len(qualifying)
    if qualifying:
        assert value == pytest.approx(float(np.mean(ndcg[qualifying])))
    else:
        assert value is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 1), max_size=12))
def test_precision_matches_a_plain_loop(verdicts):
    k = 10
    ranks = [i + 1 for i, v in enumerate(verdicts[:k]) if v]
    expected = sum(sum(1 for j in ranks if j <= r) / r for r in ranks) / len(ranks) if ranks else 0.0
    assert temporal_precision_at_k(rows_of(verdicts), k)[0] == pytest.approx(expected, abs=1e-15)
