"""Holes in the qrels: how much of a run's top 10 nobody judged, and nDCG@10 with the holes filled
(a relevance round's labels) or skipped (condensed lists). Diagnostics of details.json only:
never in scores.json, the official figure or the leaderboard's ranking key.

Definitions: ``reteco.metrics.judged``. This module decides what they are computed on:

- **Rankings.** The decided rankings of the official figure (``reteco.scoring.rules``: ties by
  rank then line order, v1.0 ids mapped, unknown ids dropped, duplicates removed), topics keyed
  by the reference's qualified key ``<domain>/<topic id>`` as the qrels are. ``unjudged_10`` and
  ``ndcg_10_augmented`` look at the top 10; ``ndcg_10_condensed`` at the whole decided ranking,
  from which unjudged documents are removed before the cut at 10 (Sakai 2007).
- **Judged.** A (topic, document) pair is judged when the official qrels list it (at any level)
  or, given a round, the round labels it. Without a round ``unjudged_10`` is relative to the
  official qrels alone; RETECO's qrels list relevant documents only, so then it is 1 - P@10 and
  says how much of the top 10 nobody judged, not how much is wrong (pages/evaluation.md).
- **Augmented gains** (``ndcg_10_augmented``): the official qrels win where they judge a pair;
  on a binary reference an official relevant document has gain ``MAX_LABEL`` (3, the top of the
  round's scale: the annotators' gold is worth no less than the LLM's best), on a graded one its
  level. A pair only the round labels has gain = its label when the label is at least
  ``threshold`` (default ``DEFAULT_THRESHOLD`` = 2, "highly relevant"), else 0. The ideal
  ranking is that of the augmented qrels.
- **Condensed** (``ndcg_10_condensed``): judged = official or round, gains as augmented; without a
  round it is not computed (on positive-only qrels it would only count relevant documents).
- **Aggregation.** As the official figure: per unit (1b: the mean over a query's steps), then
  the mean over units. Every figure is finite; one that does not apply is absent with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reteco.formats.arrow_arrays import to_numpy
from reteco.formats.reference import Reference
from reteco.formats.relevance_round import MAX_LABEL, RelevanceRound
from reteco.metrics.judged import ndcg_condensed_at_k, unjudged_at_k
from reteco.metrics.ranking import RankedRows, TopicJudgments, ndcg_at_k
from reteco.problems import InputError, quoted
from reteco.scoring.aggregate import Units

K = 10
#: The lowest round label counted as relevant in the augmented qrels (UMBRELA: 2 = highly relevant).
DEFAULT_THRESHOLD = 2
SECTION = "unjudged"  # the details.json section
DEFINITIONS = {
    "unjudged_10": "1 - (judged documents in the top 10) / 10, judged = in the official qrels or labelled by the round "
    "(= 1 - ir_measures' Judged@10 with those judgments as qrels)",
    "round_labelled_10": "documents of the top 10 that only the round judges, divided by 10",
    "ndcg_10_augmented": "nDCG@10 against the official qrels plus the round's labels at the threshold, graded gains",
    "ndcg_10_condensed": "nDCG@10 of the condensed list: unjudged documents removed before the cut at 10 "
    "(Sakai 2007; trec_eval -J)",
}
NO_ROUND = "no relevance round given (reteco score --round)"


@dataclass
class JudgedResult:
    overall: dict[str, float]
    per_unit: list[dict]
    details: dict
    absent: dict[str, str] = field(default_factory=dict)
    per_topic: dict[str, np.ndarray] = field(default_factory=dict)  # per reference topic, for the leaderboard


def judged_diagnostics(
    reference: Reference, ranked, round_labels: RelevanceRound | None = None, threshold: int = DEFAULT_THRESHOLD
) -> JudgedResult:
    """``unjudged_10`` and, with a round, ``round_labelled_10``, ``ndcg_10_augmented`` and
    ``ndcg_10_condensed`` of a decided run (``RankedRun``), per reference topic, per unit and
    their mean over units (the module docstring says how)."""
    if not 0 <= threshold <= MAX_LABEL:
        raise ValueError(f"threshold {threshold} is off the round's 0-{MAX_LABEL} scale")
    rows = ranked.rows
    n_topics = len(reference.topics)
    topic_index = {t.key: i for i, t in enumerate(reference.topics)}
    binary = reference.relevance == "binary"
    official = {}
    for j in reference.judgments:
        if j.key in topic_index:
            level = (1 if j.relevance > 0 else 0) if binary else max(j.relevance, 0)
            official[(topic_index[j.key], j.doc_id)] = level * (MAX_LABEL if binary else 1)
    in_official = _row_mask(ranked, list(official))
    per_topic = {"unjudged_10": unjudged_at_k(rows, in_official, K)}
    absent: dict[str, str] = {}
    round_info = None
    if round_labels is None:
        absent["ndcg_10_augmented"] = absent["ndcg_10_condensed"] = absent["round_labelled_10"] = NO_ROUND
    else:
        labelled = _round_pairs(reference, round_labels, topic_index)
        only_round = {pair: level for pair, level in labelled.items() if pair not in official}
        in_round = _row_mask(ranked, list(only_round))
        judged = in_official | in_round
        per_topic["unjudged_10"] = unjudged_at_k(rows, judged, K)
        per_topic["round_labelled_10"] = 1.0 - unjudged_at_k(rows, in_round & ~in_official, K)
        gains = {pair: level for pair, level in official.items()}
        gains.update({pair: (level if level >= threshold else 0) for pair, level in only_round.items()})
        row_gain = _row_values(ranked, gains)
        augmented_rows = RankedRows(rows.topic, rows.position, row_gain, rows.n_topics)
        ideal = TopicJudgments.from_qrels(
            np.array([t for t, _ in gains], dtype=np.int64), np.array(list(gains.values()), dtype=np.float64), n_topics
        )
        per_topic["ndcg_10_augmented"] = ndcg_at_k(augmented_rows, ideal, K)
        per_topic["ndcg_10_condensed"] = ndcg_condensed_at_k(augmented_rows, judged, ideal, K)
        round_info = {
            "file": round_labels.name,
            "fingerprint": round_labels.fingerprint,
            "threshold": threshold,
            "labels_of_reference_topics": len(labelled),
            "labels_of_pairs_the_qrels_judge": len(labelled) - len(only_round),
        }

    units = Units.of(reference)
    per_unit_values = {key: units.mean_per_unit(values) for key, values in per_topic.items()}
    overall = {key: float(np.mean(values)) for key, values in per_unit_values.items()}
    per_unit = [{key: float(values[u]) for key, values in per_unit_values.items()} for u in range(len(units.keys))]
    details = {
        "k": K,
        "definitions": {key: DEFINITIONS[key] for key in DEFINITIONS if key in per_topic},
        "judged_means": (
            "in the official qrels or labelled by the relevance round"
            if round_labels is not None
            else "in the official qrels (which list relevant documents only: unjudged_10 is then 1 - P@10)"
        ),
        "condensed_over": "the whole decided ranking, unjudged documents removed, then cut at 10",
        "overall": overall,
    }
    if round_info is not None:
        details["round"] = round_info
        details["gains"] = (
            f"official relevant documents {MAX_LABEL if binary else 'their level'}; round labels >= {threshold} their "
            "label, lower labels 0; the official qrels win where both judge a pair"
        )
    if absent:
        details["absent"] = dict(absent)
    return JudgedResult(overall, per_unit, details, absent, per_topic)


def add_judged(details: dict, result: JudgedResult, per_topic: dict | None = None) -> None:
    """Merge the diagnostics into details.json (section ``unjudged``) and the per-unit rows."""
    details[SECTION] = result.details
    if per_topic is not None and "per_unit" in per_topic:
        for row, extra in zip(per_topic["per_unit"], result.per_unit):
            row.update(extra)


def _round_pairs(
    reference: Reference, round_labels: RelevanceRound, topic_index: dict[str, int]
) -> dict[tuple[int, str], int]:
    """The round's labels keyed by (reference topic index, doc id); labels of topics the
    reference does not have are an error (a round of another sub-track or split)."""
    out = {}
    foreign = []
    for (key, doc), level in round_labels.labels.items():
        if key in topic_index:
            out[(topic_index[key], doc)] = level
        else:
            foreign.append(key)
    if foreign and not out:
        raise InputError(
            f"none of the round's topics is a topic of sub-track {reference.subtrack} (e.g. {quoted(foreign[0])}); "
            "a round's topics are the reference's keys <domain>/<topic id>",
            round_labels.name,
        )
    return out


def _row_keys(ranked, pairs: list[tuple[int, str]]) -> tuple[np.ndarray, np.ndarray, np.int64]:
    """Sorted keys topic * width + vocabulary position of the pairs whose document is in the run's
    vocabulary, with the order that sorts them; and the width."""
    vocabulary = ranked.vocabulary
    width = np.int64(max(len(vocabulary), 1))
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), width
    docs = pa.array([d for _, d in pairs], pa.string())
    distinct = pc.unique(docs)
    # Probe the vocabulary (possibly the corpus) into a hash of the few labelled ids.
    found = pc.index_in(vocabulary, value_set=distinct)
    valid = to_numpy(found.is_valid())
    vocab_of = np.full(len(distinct), -1, dtype=np.int64)
    vocab_of[to_numpy(found.filter(found.is_valid()))] = np.flatnonzero(valid)
    position = vocab_of[to_numpy(pc.index_in(docs, value_set=distinct))]
    topic = np.array([t for t, _ in pairs], dtype=np.int64)
    keys = topic * width + position
    keys[position < 0] = -1
    order = np.argsort(keys)
    return keys[order], order, width


def _lookup(ranked, pairs: list[tuple[int, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the ranking: whether its pair is among ``pairs``, and the index of that pair."""
    keys, order, width = _row_keys(ranked, pairs)
    n = len(ranked.rows.topic)
    hit = np.zeros(n, dtype=bool)
    which = np.full(n, -1, dtype=np.int64)
    if len(keys):
        row_key = ranked.rows.topic.astype(np.int64) * width + ranked.doc_position
        at = np.minimum(np.searchsorted(keys, row_key), len(keys) - 1)
        hit = keys[at] == row_key
        which[hit] = order[at[hit]]
    return hit, which


def _row_mask(ranked, pairs: list[tuple[int, str]]) -> np.ndarray:
    return _lookup(ranked, pairs)[0]


def _row_values(ranked, values: dict[tuple[int, str], float]) -> np.ndarray:
    pairs = list(values)
    hit, which = _lookup(ranked, pairs)
    level = np.array([values[p] for p in pairs], dtype=np.float64)
    out = np.zeros(len(hit))
    out[hit] = level[which[hit]]
    return out


__all__ = ["DEFAULT_THRESHOLD", "JudgedResult", "K", "SECTION", "add_judged", "judged_diagnostics"]
