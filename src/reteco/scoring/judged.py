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
from reteco.scoring.rules import _topic_indices

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
    n_topics = len(reference.topics)
    topic_index = {t.key: i for i, t in enumerate(reference.topics)}
    binary = reference.relevance == "binary"
    official = _official_pairs(reference, binary)
    # The top 10 is all unjudged_10 and the augmented nDCG@10 need; the condensed list (a round
    # only, the organizers' run) needs the whole ranking: a scoring run never pays for that.
    rows = ranked.rows
    keep = slice(None) if round_labels is not None else np.flatnonzero(rows.position < K)
    view = _Rows(rows.topic[keep], rows.position[keep], ranked.doc_position[keep], ranked.vocabulary, rows.n_topics)
    in_official, official_gain = view.find(official)
    per_topic = {"unjudged_10": unjudged_at_k(view.ranked(), in_official, K)}
    absent: dict[str, str] = {}
    round_info = None
    if round_labels is None:
        absent["ndcg_10_augmented"] = absent["ndcg_10_condensed"] = absent["round_labelled_10"] = NO_ROUND
    else:
        labelled = _round_pairs(reference, round_labels, topic_index)
        officially = set(zip(official.topic.tolist(), official.docs.to_pylist()))
        only = {pair: level for pair, level in labelled.items() if pair not in officially}
        only_round = _Pairs(
            np.array([t for t, _ in only], dtype=np.int64), pa.array([d for _, d in only], pa.string()),
            np.array([level if level >= threshold else 0 for level in only.values()], dtype=np.float64),
        )
        in_round, round_gain = view.find(only_round)
        judged = in_official | in_round
        per_topic["unjudged_10"] = unjudged_at_k(view.ranked(), judged, K)
        per_topic["round_labelled_10"] = 1.0 - unjudged_at_k(view.ranked(), in_round, K)
        augmented_rows = view.ranked(official_gain + round_gain)
        ideal = TopicJudgments.from_qrels(
            np.concatenate([official.topic, only_round.topic]), np.concatenate([official.value, only_round.value]), n_topics
        )
        per_topic["ndcg_10_augmented"] = ndcg_at_k(augmented_rows, ideal, K)
        per_topic["ndcg_10_condensed"] = ndcg_condensed_at_k(augmented_rows, judged, ideal, K)
        round_info = {
            "file": round_labels.name,
            "fingerprint": round_labels.fingerprint,
            "threshold": threshold,
            "labels_of_reference_topics": len(labelled),
            "labels_of_pairs_the_qrels_judge": len(labelled) - len(only),
        }

    units = Units.of(reference)
    per_unit_values = {key: units.mean_per_unit(values) for key, values in per_topic.items()}
    overall = {key: float(np.mean(values)) for key, values in per_unit_values.items()}
    per_unit = [{key: float(values[u]) for key, values in per_unit_values.items()} for u in range(len(units.keys))]
    details = {
        "k": K,
        "definitions": {key: DEFINITIONS[key] for key in DEFINITIONS if key in per_topic},
        "judged_means": _judged_means(round_labels is not None, bool((official.value > 0).all())),
        "overall": overall,
    }
    if round_info is not None:
        details["condensed_over"] = "the whole decided ranking, unjudged documents removed, then cut at 10"
        details["round"] = round_info
        details["gains"] = (
            f"official relevant documents {MAX_LABEL if binary else 'their level'}; round labels >= {threshold} their "
            "label, lower labels 0; the official qrels win where both judge a pair"
        )
    if absent:
        details["absent"] = dict(absent)
    return JudgedResult(overall, per_unit, details, absent, per_topic)


def _judged_means(with_round: bool, positive_only: bool) -> str:
    """What "judged" means in these figures, in words for details.json."""
    if with_round:
        return "in the official qrels or labelled by the relevance round"
    if positive_only:
        return ("in the official qrels, which list relevant documents only: unjudged_10 is then 1 - P@10, "
                "the share of the top 10 nobody judged, not the share that is wrong")
    return "in the official qrels (at any level, 0 included)"


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


@dataclass(frozen=True)
class _Pairs:
    """(reference topic index, doc id) pairs with a value each (a gain)."""

    topic: np.ndarray  # int64
    docs: pa.Array  # strings
    value: np.ndarray  # float64


def _official_pairs(reference: Reference, binary: bool) -> _Pairs:
    """Every judgment of a reference topic, with its augmented gain (module docstring)."""
    columns = reference.judgment_columns()
    topic = _topic_indices(reference, columns.column("key"))
    level = to_numpy(columns.column("relevance")).astype(np.float64)
    gain = (level > 0) * float(MAX_LABEL) if binary else np.maximum(level, 0.0)
    of_reference = np.flatnonzero(topic >= 0)
    docs = columns.column("doc_id").combine_chunks().take(pa.array(of_reference))
    return _Pairs(topic[of_reference], docs, gain[of_reference])


@dataclass(frozen=True)
class _Rows:
    """Decided rows (a run's, or its top 10) with their documents as vocabulary positions, and
    lookups of pairs in them."""

    topic: np.ndarray
    position: np.ndarray
    doc_position: np.ndarray
    vocabulary: pa.Array
    n_topics: int

    def ranked(self, gain: np.ndarray | None = None) -> RankedRows:
        return RankedRows(self.topic, self.position, np.zeros(len(self.topic)) if gain is None else gain, self.n_topics)

    def find(self, pairs: _Pairs) -> tuple[np.ndarray, np.ndarray]:
        """Per row: whether its pair is among ``pairs``, and that pair's value (0 when not there)."""
        which = self._lookup(pairs)
        found = which >= 0
        out = np.zeros(len(which))
        out[found] = pairs.value[which[found]]
        return found, out

    def _lookup(self, pairs: _Pairs) -> np.ndarray:
        """Per row, the index of its pair among ``pairs``; -1 when not there."""
        n = len(self.topic)
        which = np.full(n, -1, dtype=np.int64)
        if not len(pairs.topic) or not n:
            return which
        distinct = pc.unique(pairs.docs)
        width = np.int64(len(distinct))
        if n < len(self.vocabulary):  # few rows (a top 10): hash the pairs' ids, probe the rows' ids
            row_doc = pc.index_in(self.vocabulary.take(pa.array(self.doc_position)), value_set=distinct)
            row_code = to_numpy(row_doc.fill_null(-1)).astype(np.int64)
        else:  # a whole run: probe the vocabulary (maybe the corpus) once, then gather
            found = pc.index_in(self.vocabulary, value_set=distinct)
            code_of = np.full(len(self.vocabulary), -1, dtype=np.int64)
            code_of[np.flatnonzero(to_numpy(found.is_valid()))] = to_numpy(found.drop_null())
            row_code = code_of[self.doc_position]
        keys = pairs.topic * width + to_numpy(pc.index_in(pairs.docs, value_set=distinct)).astype(np.int64)
        order = np.argsort(keys)
        keys = keys[order]
        candidate = np.flatnonzero(row_code >= 0)  # rows whose document some pair names: few
        row_key = self.topic[candidate].astype(np.int64) * width + row_code[candidate]
        at = np.minimum(np.searchsorted(keys, row_key), len(keys) - 1)
        hit = keys[at] == row_key
        which[candidate[hit]] = order[at[hit]]
        return which


__all__ = ["DEFAULT_THRESHOLD", "JudgedResult", "K", "SECTION", "add_judged", "judged_diagnostics"]
