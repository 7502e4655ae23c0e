"""How much of a ranking the judgments cover, and nDCG when the holes are filled or skipped.

The released RETECO qrels list gold documents only: a document a system ranks that nobody
judged scores as non-relevant, and nothing says how often that happens. These figures say it.
They take the same decided rankings as the official figures (``reteco.metrics.ranking``: rows
grouped by topic, dense 0-based positions, ties already broken by the official rules of
``reteco.scoring.rules``, never by doc id) and one boolean per row: whether the (topic,
document) pair is judged.

- ``unjudged_at_k``: Unjudged@k = 1 - |{judged documents in the top k}| / k, the complement of
  Judged@k (ir_measures' ``Judged@k``, after OpenNIR: the judged share of the top k, divided by
  k however many documents were ranked, as P@k). A ranking shorter than k counts its empty
  places as unjudged, so an empty ranking is 1. trec_eval 10 reports the same red flag.
- ``condensed_rows`` / ``ndcg_condensed_at_k``: the condensed list of Sakai (2007, "Alternatives
  to Bpref", SIGIR): unjudged documents are removed from the ranking *before* it is cut at k, and
  nDCG@k is computed on what remains, against the same ideal ranking. trec_eval's ``-J`` option
  (pytrec_eval's ``judged_docs_only_flag``) computes the same.

The augmented nDCG (official qrels plus a round's labels) is plain ``ndcg_at_k`` on other gains;
``reteco.scoring.judged`` builds them.
"""

from __future__ import annotations

import numpy as np

from reteco.metrics.ranking import RankedRows, TopicJudgments, ndcg_at_k


def unjudged_at_k(rows: RankedRows, judged: np.ndarray, k: int) -> np.ndarray:
    """Unjudged@k per topic: 1 - (judged documents among ranks 1..k) / k.

    ``judged[i]`` says whether row i's (topic, document) pair has a judgment (any level, 0
    included). Equals 1 - ir_measures' ``Judged@k`` with the same judgments as qrels.
    """
    top = (rows.position < k) & np.asarray(judged, dtype=bool)
    judged_count = np.bincount(rows.topic[top], minlength=rows.n_topics).astype(np.float64)
    return 1.0 - judged_count / k


def _positions_within_topic(topic: np.ndarray) -> np.ndarray:
    """Dense 0-based position of each row within its topic (``topic`` sorted)."""
    n = len(topic)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1]])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))


def condensed_rows(rows: RankedRows, judged: np.ndarray) -> RankedRows:
    """The condensed rankings (Sakai 2007): the judged rows only, in their order, renumbered from
    position 0 within each topic, so that the k-th judged document of a ranking is at rank k."""
    keep = np.asarray(judged, dtype=bool)
    topic = rows.topic[keep]
    return RankedRows(topic, _positions_within_topic(topic), rows.gain[keep], rows.n_topics)


def ndcg_condensed_at_k(rows: RankedRows, judged: np.ndarray, judgments: TopicJudgments, k: int) -> np.ndarray:
    """Condensed-list nDCG@k per topic (Sakai 2007): nDCG@k = DCG@k / IDCG@k of
    ``condensed_rows(rows, judged)``, DCG@k = sum over condensed ranks i <= k of gain_i / log2(i + 1),
    the ideal the same as the full list's (it holds judged documents only). 0 where IDCG@k = 0.

    ``rows`` must hold the whole decided ranking, or at least every row down to its k-th judged
    document: cutting at k first would lose the judged documents that move up.
    """
    return ndcg_at_k(condensed_rows(rows, judged), judgments, k)


__all__ = ["condensed_rows", "ndcg_condensed_at_k", "unjudged_at_k"]
