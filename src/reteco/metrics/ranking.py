"""Ranking metrics, vectorised over many topics at once.

Every function takes rankings that the deterministic run handling has already decided (see
``reteco.scoring.rules``): a flat table of ranked rows, grouped by topic, with each row's
0-based position within its topic's ranking and its gain from the qrels. Positions are dense
(0, 1, 2, ... within a topic), rows are sorted by (topic, position), and every topic index
lies in ``[0, n_topics)``. A topic with no
row has an empty ranking and scores 0 on every metric, as trec_eval does for a topic it scores.

Definitions follow trec_eval 9.x (``ndcg_cut``, ``map_cut``, ``recall``, ``P``, ``recip_rank``)
so that the figures equal pytrec_eval's on the same ranking; ``tests/scoring/test_retrieval_scoring.py`` checks
both that and hand-computed values. The measures' kernels, named by the rows of
``reteco.metrics.measure_table``, share one signature: ``(rows, judgments, k)`` -> one figure per
topic, ``(rows, judgments)`` for a measure over the whole ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankedRows:
    """Rows of many rankings: topic index, 0-based position in the topic's ranking, gain.

    ``gain`` is the qrels relevance used as nDCG gain (1/0 for binary relevance, the level for
    graded relevance); ``relevant`` is ``gain >= 1`` as in trec_eval's default relevance level.
    """

    topic: np.ndarray  # integers (the scorer passes int32: half the memory of int64 on 10M rows)
    position: np.ndarray  # integers
    gain: np.ndarray  # float64
    n_topics: int

    @property
    def relevant(self) -> np.ndarray:
        return self.gain >= 1.0


@dataclass(frozen=True)
class TopicJudgments:
    """Per-topic facts from the qrels: number of relevant documents and the ideal gain order.

    ``ideal_topic``/``ideal_gain`` list every judged document with a positive gain, grouped by
    topic, gains in descending order within a topic.
    """

    num_relevant: np.ndarray  # int64 per topic: judged docs with relevance >= 1
    ideal_topic: np.ndarray  # int64
    ideal_gain: np.ndarray  # float64, descending within topic

    @classmethod
    def from_qrels(cls, topic: np.ndarray, gain: np.ndarray, n_topics: int) -> "TopicJudgments":
        """Build from one row per judged (topic, document) with its gain (0 for non-relevant)."""
        topic = np.asarray(topic, dtype=np.int64)
        gain = np.asarray(gain, dtype=np.float64)
        num_relevant = np.bincount(topic[gain >= 1.0], minlength=n_topics).astype(np.int64)
        positive = gain > 0
        order = np.lexsort((-gain[positive], topic[positive]))
        return cls(num_relevant, topic[positive][order], gain[positive][order])


def _discount(position: np.ndarray) -> np.ndarray:
    # position is 0-based, so rank i = position + 1 and the discount is 1 / log2(i + 1).
    return 1.0 / np.log2(position + 2.0)


def _positions_within_group(group: np.ndarray) -> np.ndarray:
    """0-based index of each element within its run of equal, contiguous group values."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    run_lengths = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, run_lengths)


def dcg_at_k(rows: RankedRows, k: int) -> np.ndarray:
    """DCG@k per topic: sum over ranks i = 1..k of gain_i / log2(i + 1) (Jarvelin & Kekalainen
    2002, in trec_eval's ``ndcg_cut`` form: linear gains, log2(i + 1) discount from rank 1)."""
    top = rows.position < k
    return np.bincount(
        rows.topic[top], weights=rows.gain[top] * _discount(rows.position[top]), minlength=rows.n_topics
    )


def ideal_dcg_at_k(judgments: TopicJudgments, k: int, n_topics: int) -> np.ndarray:
    """IDCG@k per topic: the DCG@k of the judged documents sorted by gain, best first, which for
    binary relevance is the sum over i = 1..min(R, k) of 1 / log2(i + 1) (R relevant documents)."""
    position = _positions_within_group(judgments.ideal_topic)
    top = position < k
    return np.bincount(
        judgments.ideal_topic[top],
        weights=judgments.ideal_gain[top] * _discount(position[top]),
        minlength=n_topics,
    )


def ndcg_at_k(rows: RankedRows, judgments: TopicJudgments, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k per topic, 0 where IDCG@k = 0 (no relevant judged document),
    as trec_eval's ``ndcg_cut.k``. RETECO evaluation plan: the official metric at k = 10."""
    dcg = dcg_at_k(rows, k)
    ideal = ideal_dcg_at_k(judgments, k, rows.n_topics)
    out = np.zeros(rows.n_topics)
    np.divide(dcg, ideal, out=out, where=ideal > 0)
    return out


def hits_at_k(rows: RankedRows, k: int) -> np.ndarray:
    """Number of relevant documents in the top k, per topic."""
    top = (rows.position < k) & rows.relevant
    return np.bincount(rows.topic[top], minlength=rows.n_topics).astype(np.float64)


def precision_at_k(rows: RankedRows, judgments: TopicJudgments, k: int) -> np.ndarray:
    """P@k = |relevant in top k| / k per topic; the divisor is k even when fewer than k documents
    were ranked (trec_eval ``P.k``). ``judgments`` is not read: a kernel's signature."""
    return hits_at_k(rows, k) / k


def recall_at_k(rows: RankedRows, judgments: TopicJudgments, k: int) -> np.ndarray:
    """Recall@k = |relevant in top k| / R per topic, R = number of relevant judged documents; 0 when
    R = 0 (trec_eval ``recall.k``; FactIR evaluation card)."""
    out = np.zeros(rows.n_topics)
    np.divide(hits_at_k(rows, k), judgments.num_relevant, out=out, where=judgments.num_relevant > 0)
    return out


def average_precision_at_k(rows: RankedRows, judgments: TopicJudgments, k: int) -> np.ndarray:
    """AP@k = (1 / R) * sum over relevant ranks i <= k of P@i, with R the number of relevant judged
    documents, not min(R, k) (trec_eval ``map_cut.k``); 0 when R = 0."""
    top = (rows.position < k) & rows.relevant
    topic = rows.topic[top]
    # Within each topic, the j-th relevant row (1-based) at rank i contributes j / i.
    nth_relevant = _positions_within_group(topic) + 1
    precision = nth_relevant / (rows.position[top] + 1.0)
    summed = np.bincount(topic, weights=precision, minlength=rows.n_topics)
    out = np.zeros(rows.n_topics)
    np.divide(summed, judgments.num_relevant, out=out, where=judgments.num_relevant > 0)
    return out


def reciprocal_rank(rows: RankedRows, judgments: TopicJudgments) -> np.ndarray:
    """RR = 1 / rank of the first relevant document over the whole ranking, 0 when none is ranked
    (trec_eval ``recip_rank``); its mean over topics is MRR. ``judgments`` is not read: a kernel's
    signature."""
    relevant = rows.relevant
    topic = rows.topic[relevant]
    position = rows.position[relevant]
    out = np.zeros(rows.n_topics)
    if len(topic):
        # Rows are in ranking order within each topic, so a topic's first relevant row is the
        # first of its run.
        first = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1]])
        out[topic[first]] = 1.0 / (position[first] + 1.0)
    return out


def stance_recall_at_k(
    ranked: list[tuple[int, int, str]], relevant: dict[int, set[str]], k: int
) -> tuple[int, float | None]:
    """Recall@k over the relevant documents of one stance (FactIR's evaluation card): for each
    topic with at least one such document, the share of them among its top k; returns (the
    number of such topics, the mean over them, None when there is none).

    ``ranked``: (topic index, 0-based position, doc id) of the decided rows; ``relevant``: per
    topic index, the relevant documents of the stance.
    """
    found = dict.fromkeys(relevant, 0)
    for topic, position, doc in ranked:
        if position < k and doc in relevant.get(topic, ()):
            found[topic] += 1
    values = [found[t] / len(relevant[t]) for t in sorted(relevant)]
    return len(values), (float(np.mean(values)) if values else None)


# ----------------------------------------------------------------------------- on request only
# Measures trec_eval lacks, computed for ``reteco score -m`` on one topic's decided ranking
# (the measure table's ``requested`` rows): ``judgments`` maps each judged document to its level.


def reciprocal_rank_in_top(judgments: dict, ranking: list, k: int) -> float:
    """ir_measures' RR@k (ranx's mrr@k): 1 / the rank of the first relevant document (level > 0)
    among the top k, 0 when none is there."""
    return next((1.0 / rank for rank, doc in enumerate(ranking[:k], start=1) if judgments.get(doc, 0) > 0), 0.0)


def judged_in_top(judgments: dict, ranking: list, k: int) -> float:
    """ir_measures' Judged@k: the documents of the top k that the judgments hold (any level), over
    k; an empty place counts as unjudged, so it is 1 - ``unjudged_k`` (``reteco.metrics.judged``)."""
    return sum(doc in judgments for doc in ranking[:k]) / k

