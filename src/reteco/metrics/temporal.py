"""Temporal diagnostics of Track 1, vectorised over many rankings at once.

Definitions are the TEMPO paper's (Abdallah, Ali, Abdul-Mageed, Jatowt: "TEMPO: A Realistic
Multi-Domain Benchmark for Temporal Reasoning-Intensive Retrieval", arXiv 2601.09523, section
"Temporal metrics"). For a ranking, ``v_i = 1`` when the document at rank ``i`` is temporally
relevant to the query and 0 otherwise; ``c_{i,m} = 1`` when that document covers the query's
required period ``m``. Where these labels come from (frozen labels or the qrels oracle) is
decided by ``reteco.scoring.temporal``; the functions here only count.

Inputs follow ``reteco.metrics.ranking``: rankings already decided by the deterministic run
handling, as flat rows grouped by topic with each row's 0-based ``position`` in its topic's
ranking, sorted by (topic, position). ``RankedRows.gain`` carries ``v`` (1.0 or 0.0) here.
A topic with no row has an empty ranking: TP = TR = 0 and, when it has required periods,
TC = 0. ``tests/metrics/test_temporal_metrics.py`` checks the paper's test vectors and hand-computed
cases, and properties (bounds, TC monotone in k) on random rankings.

Note on TP: the TEMPO organizers' offline scorer uses a DCG-weighted precision under the same
name; the figure here is the paper's published definition.
"""

from __future__ import annotations

import numpy as np

from reteco.metrics.ranking import RankedRows, _positions_within_group


def temporal_precision_at_k(rows: RankedRows, k: int) -> np.ndarray:
    """Temporal Precision@k per topic (TEMPO paper, arXiv 2601.09523):

        TP@k = (1 / |R|) * sum over r in R of |{j in R : j <= r}| / r,

    with R the set of ranks r <= k whose document is temporally relevant (v_r = 1); TP@k = 0
    when R is empty. It is the precision at each temporally relevant rank, averaged over those
    ranks: it rewards temporally relevant documents ranked early, and unlike AP it divides by
    the number found in the top k, not by a number of judged documents.
    Paper test vectors: [1,0,0,0,0] -> 1.0; [0,0,0,0,1] -> 0.2; [1,1,0,0,0] -> 1.0;
    [0,1,0,1,0] -> 0.5.
    """
    top = (rows.position < k) & (rows.gain >= 1.0)
    topic = rows.topic[top]
    # Within a topic, the j-th temporally relevant row (1-based) at rank r contributes j / r.
    nth = _positions_within_group(topic) + 1
    summed = np.bincount(topic, weights=nth / (rows.position[top] + 1.0), minlength=rows.n_topics)
    found = np.bincount(topic, minlength=rows.n_topics)
    out = np.zeros(rows.n_topics)
    np.divide(summed, found, out=out, where=found > 0)
    return out


def temporal_relevance_at_k(rows: RankedRows, k: int) -> np.ndarray:
    """Temporal Relevance@k per topic (TEMPO paper, arXiv 2601.09523):

        TR@k = (1 / k) * sum over i = 1..k of v_i,

    the share of the top k that is temporally relevant. The divisor is k even when fewer than k
    documents were ranked (as P@k in trec_eval); a topic with no ranked document scores 0.
    """
    top = (rows.position < k) & (rows.gain >= 1.0)
    return np.bincount(rows.topic[top], minlength=rows.n_topics).astype(np.float64) / k


def covered_periods_at_k(
    cover_period: np.ndarray, cover_position: np.ndarray, period_group: np.ndarray, n_groups: int, k: int
) -> np.ndarray:
    """Number of required periods of each group covered by a document ranked in the top k.

    ``period_group[m]`` is the group (query, or step) that period ``m`` belongs to; periods are
    numbered globally, so one period index belongs to one group. Each cover row says that a
    document at 0-based ``cover_position`` of one of the group's rankings covers period
    ``cover_period``. A group may have several rankings (a 1b query's steps): a period counts
    once however many of them cover it, which makes this the coverage of their union.
    """
    top = np.asarray(cover_position) < k
    covered = np.unique(np.asarray(cover_period, dtype=np.int64)[top])
    return np.bincount(np.asarray(period_group, dtype=np.int64)[covered], minlength=n_groups)


def temporal_coverage_at_k(
    cover_period: np.ndarray, cover_position: np.ndarray, period_group: np.ndarray, n_groups: int, k: int
) -> np.ndarray:
    """Temporal Coverage@k per group (TEMPO paper, arXiv 2601.09523):

        TC@k = (1 / M) * sum over required periods m = 1..M of max over i <= k of c_{i,m},

    the share of the query's M required periods covered by at least one document of the top k.
    NaN where M = 0: coverage is undefined for a query that requires no period, and such a
    query is left out of the mean (callers count it). Inputs as ``covered_periods_at_k``.
    """
    required = np.bincount(np.asarray(period_group, dtype=np.int64), minlength=n_groups)
    covered = covered_periods_at_k(cover_period, cover_position, period_group, n_groups, k)
    out = np.full(n_groups, np.nan)
    np.divide(covered, required, out=out, where=required > 0)
    return out


def full_coverage(covered: np.ndarray, required: np.ndarray) -> np.ndarray:
    """Which groups have full temporal coverage: at least one required period, all covered.

    Compared on the integer counts, never on the float TC, so 1.0 means exactly all.
    """
    covered = np.asarray(covered)
    required = np.asarray(required)
    return (required > 0) & (covered >= required)


def ndcg_full_coverage(ndcg: np.ndarray, fully_covered: np.ndarray) -> tuple[float | None, int]:
    """nDCG|FC@k (TEMPO paper, arXiv 2601.09523): the mean nDCG@k over the queries whose
    Temporal Coverage@k is 1.0; queries below full coverage are excluded, not counted as 0.

    Returns (mean, number of fully covered queries); the mean is None (undefined, never 0)
    when no query reaches full coverage.
    """
    fully_covered = np.asarray(fully_covered, dtype=bool)
    n = int(np.count_nonzero(fully_covered))
    if n == 0:
        return None, 0
    return float(np.mean(np.asarray(ndcg, dtype=np.float64)[fully_covered])), n


__all__ = [
    "covered_periods_at_k",
    "full_coverage",
    "ndcg_full_coverage",
    "temporal_coverage_at_k",
    "temporal_precision_at_k",
    "temporal_relevance_at_k",
]
