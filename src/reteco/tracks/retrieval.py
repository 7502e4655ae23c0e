"""Retrieval scoring for 1a, 1b, 2a, 2c and graded benchmarks (FactIR): the official rules.

How a run is interpreted (evaluation plan, "Deterministic handling"; README, "Scoring rules"):

1. A run line is ``topic Q0 docid rank score tag`` (``reteco.formats.trec_run``).
2. Within a topic the ranking is by score descending, ties broken by rank ascending, then by
   file order. Never by doc id (trec_eval's tie-break) and never by the rank column alone.
3. Document ids are first mapped through the v1.1 duplicate map (a v1.0 id that was
   de-duplicated becomes the id that was kept); ids unknown to the topic's domain corpus are
   discarded; then duplicates are removed after their first occurrence in that order; then
   the ranking is cut at the largest cutoff k (MRR alone uses the whole ranking).
4. Run topics that are not reference topics are ignored with a warning; reference topics with
   no ranked document score 0 on every metric and count in every average. A run none of whose
   topics is a reference topic is an error (almost surely the wrong file or sub-track).
5. RETECO relevance is binary (rel > 0 is relevant, gain 1); graded qrels use the level as gain.
6. Aggregation: the official figure is the mean over *units*: queries (1a), queries after
   averaging each query's steps (1b), turns (2a, 2c). Per-domain figures average the units of a
   domain; ``*_domain_macro`` averages the domains (the figure the TEMPO and RECOR papers print).
7. A topic is keyed by (domain, topic id). A run may write a topic as ``<domain>/<topic id>``;
   a bare id is accepted when exactly one domain has it and is an error naming the line when
   several do (RECOR's bare-integer conversation ids). ``<conv>#turn<n>`` means
   ``<conv>_turn_<n>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from reteco.formats.reference import Reference
from reteco.formats.topic_ids import canonical_domain, normalize_topic_id
from reteco.formats.trec_run import RunTable
from reteco.metrics.ranking import (
    RankedRows,
    TopicJudgments,
    average_precision_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from reteco.problems import InputError, Problems

NOT_FOUND = -1
AMBIGUOUS = -2
EXAMPLES = 5  # how many of the participant's own ids a warning quotes


@dataclass
class RankedRun:
    """A run after the deterministic handling: rows grouped by reference topic, in ranking order."""

    rows: RankedRows
    doc_id: pa.Array  # the (mapped) document id of each row
    counts: dict = field(default_factory=dict)

    def top_documents(self, topic: int, n: int) -> list[str]:
        """The first ``n`` document ids of a topic's ranking (e.g. 2c's top 5 passages)."""
        start, stop = np.searchsorted(self.rows.topic, [topic, topic + 1])
        stop = min(stop, start + n)
        return self.doc_id.slice(start, stop - start).to_pylist()


class TopicResolver:
    """Maps the topic strings of a run to reference topic indices (rule 7)."""

    def __init__(self, reference: Reference):
        self.by_key = {t.key: i for i, t in enumerate(reference.topics)}
        self.by_bare: dict[str, list[int]] = {}
        for i, t in enumerate(reference.topics):
            self.by_bare.setdefault(t.topic_id, []).append(i)
        self.domain_of = [t.domain for t in reference.topics]
        self.domains = set(self.domain_of)

    def resolve(self, text: str) -> int:
        """Reference topic index, NOT_FOUND or AMBIGUOUS."""
        if "/" in text:
            domain, rest = text.split("/", 1)
            domain = canonical_domain(domain)
            if domain in self.domains:
                return self.by_key.get(f"{domain}/{normalize_topic_id(rest)}", NOT_FOUND)
        candidates = self.by_bare.get(normalize_topic_id(text), [])
        if len(candidates) == 1:
            return candidates[0]
        return AMBIGUOUS if candidates else NOT_FOUND

    def domains_of(self, text: str) -> list[str]:
        """The domains in which a bare topic id exists."""
        return sorted({self.domain_of[i] for i in self.by_bare.get(normalize_topic_id(text), [])})


def apply_rules(reference: Reference, run: RunTable, problems: Problems) -> RankedRun:
    """Rules 2-4 and 7: resolve topics, map and check doc ids, order, de-duplicate."""
    counts = {"lines_read": len(run)}
    name = run.name

    # Rule 7: resolve each distinct topic string once.
    encoded = pc.dictionary_encode(run.topic)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    distinct = encoded.dictionary.to_pylist()
    resolver = TopicResolver(reference)
    resolved = np.array([resolver.resolve(t) for t in distinct], dtype=np.int64)
    ambiguous = np.flatnonzero(resolved == AMBIGUOUS)
    if len(ambiguous):
        collected = Problems()
        for code in ambiguous[:20]:
            text = distinct[code]
            line = run.line_of_row(int(np.argmax(codes == code)))
            qualified = " or ".join(f"'{d}/{normalize_topic_id(text)}'" for d in resolver.domains_of(text))
            collected.error(
                name, line, f"topic '{text}' exists in several domains; write it as {qualified} on every line"
            )
        raise InputError(collected)
    topic = resolved[codes]
    in_reference = topic >= 0
    unknown_topics = [distinct[c] for c in np.flatnonzero(resolved == NOT_FOUND)]
    counts["topics_in_run"] = len(distinct)
    counts["topics_ignored"] = len(unknown_topics)
    counts["lines_ignored_topic"] = int(np.count_nonzero(~in_reference))
    if len(unknown_topics) == len(distinct):
        raise InputError(
            f"none of the run's {len(distinct)} topics is a topic of sub-track {reference.subtrack} "
            f"(for example '{unknown_topics[0]}'); {_topic_hint(reference)}",
            name,
        )
    if unknown_topics:
        problems.warning(
            name,
            None,
            f"{len(unknown_topics)} topics are not in the reference and were ignored "
            f"({counts['lines_ignored_topic']} lines), e.g. " + ", ".join(f"'{t}'" for t in unknown_topics[:EXAMPLES]),
        )

    keep = np.flatnonzero(in_reference)
    topic = topic[keep]
    doc_id = run.doc_id.take(pa.array(keep))
    score = run.score[keep]
    rank = run.rank[keep]

    # Rule 3: v1.0 ids map to v1.1 ids; ids outside the topic's domain corpus are discarded.
    counts["doc_ids_remapped"] = 0
    if reference.duplicate_map is not None:
        doc_id, counts["doc_ids_remapped"] = reference.duplicate_map.apply(doc_id)
    if reference.doc_index is not None:
        domain_bit = np.array([reference.doc_index.domain_bit(t.domain) for t in reference.topics], dtype=np.int64)
        doc_position = reference.doc_index.lookup(doc_id, domain_bit[topic])
        vocabulary = reference.doc_index.doc_ids
    else:
        vocabulary = pc.unique(doc_id)
        doc_position = pc.index_in(doc_id, value_set=vocabulary).to_numpy(zero_copy_only=False).astype(np.int64)
    known = doc_position >= 0
    counts["unknown_doc_ids"] = int(np.count_nonzero(~known))
    if counts["unknown_doc_ids"]:
        examples = pc.unique(doc_id.filter(pa.array(~known))).slice(0, EXAMPLES).to_pylist()
        problems.warning(
            name,
            None,
            f"{counts['unknown_doc_ids']} lines rank a document id that is not in the topic's domain corpus "
            "and were discarded, e.g. " + ", ".join(f"'{d}'" for d in examples),
        )
    if not known.all():
        keep = np.flatnonzero(known)
        topic, score, rank, doc_position = topic[keep], score[keep], rank[keep], doc_position[keep]
        doc_id = doc_id.take(pa.array(keep))

    # Rule 2: score descending, then rank ascending, then file order (lexsort is stable).
    if not _in_rule_order(topic, score, rank):
        order = np.lexsort((rank, -score, topic))
        topic, score, rank, doc_position = topic[order], score[order], rank[order], doc_position[order]
        doc_id = doc_id.take(pa.array(order))
    disagreeing = _topics_where_rank_disagrees(topic, rank)
    counts["topics_rank_score_disagree"] = len(disagreeing)
    if len(disagreeing):
        example = reference.topics[int(disagreeing[0])].topic_id
        problems.warning(
            name,
            None,
            f"in {len(disagreeing)} topics (e.g. '{example}') the rank column disagrees with the scores; "
            "the ranking follows the scores (ties broken by rank, then by line order)",
        )

    # Rule 3, continued: duplicates go after their first occurrence in ranking order.
    pair = topic * np.int64(max(len(vocabulary), 1)) + doc_position
    by_pair = np.argsort(pair, kind="stable")
    repeated = by_pair[1:][pair[by_pair[1:]] == pair[by_pair[:-1]]]
    counts["duplicate_doc_ids"] = len(repeated)
    if len(repeated):
        problems.warning(
            name, None, f"{len(repeated)} lines repeat a document already ranked for the topic and were removed"
        )
        keep = np.ones(len(topic), dtype=bool)
        keep[repeated] = False
        topic, doc_position = topic[keep], doc_position[keep]
        doc_id = doc_id.filter(pa.array(keep))

    position = _positions(topic)
    gain = _gains(reference, topic, doc_position, vocabulary)
    n_topics = len(reference.topics)
    ranked_topics = np.unique(topic)
    counts["topics_missing"] = n_topics - len(ranked_topics)
    counts["rows_ranked"] = len(topic)
    if counts["topics_missing"]:
        missing = np.setdiff1d(np.arange(n_topics), ranked_topics)
        problems.warning(
            name,
            None,
            f"{counts['topics_missing']} reference topics have no ranked document and score 0, e.g. "
            + ", ".join(f"'{reference.topics[i].key}'" for i in missing[:EXAMPLES]),
        )
    return RankedRun(RankedRows(topic, position, gain, n_topics), doc_id, counts)


def _topic_hint(reference: Reference) -> str:
    example = reference.topics[0].topic_id if reference.topics else "?"
    kind = {"1a": "query ids", "1b": "step ids (<query id>_step<n>)"}.get(reference.subtrack, "turn ids (<conv>_turn_<n>)")
    return f"sub-track {reference.subtrack} expects {kind}, e.g. '{example}'"


def _in_rule_order(topic: np.ndarray, score: np.ndarray, rank: np.ndarray) -> bool:
    if len(topic) < 2:
        return True
    t0, t1, s0, s1 = topic[:-1], topic[1:], score[:-1], score[1:]
    same = t1 == t0
    ordered = (t1 > t0) | (same & ((s1 < s0) | ((s1 == s0) & (rank[1:] >= rank[:-1]))))
    return bool(ordered.all())


def _topics_where_rank_disagrees(topic: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Topics in which, in ranking order, a rank is smaller than the rank before it."""
    if len(topic) < 2:
        return np.zeros(0, dtype=np.int64)
    bad = (topic[1:] == topic[:-1]) & (rank[1:] < rank[:-1])
    return np.unique(topic[1:][bad])


def _positions(topic: np.ndarray) -> np.ndarray:
    n = len(topic)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1]])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))


def _judged_pairs(reference: Reference, vocabulary: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(topic index, doc position in vocabulary or -1, gain) for every judgment of a reference topic."""
    index = {t.key: i for i, t in enumerate(reference.topics)}
    rows = [(index[j.key], j.doc_id, j.relevance) for j in reference.judgments if j.key in index]
    topic = np.array([r[0] for r in rows], dtype=np.int64)
    docs = pa.array([r[1] for r in rows], pa.string())
    position = pc.index_in(docs, value_set=vocabulary).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    level = np.array([r[2] for r in rows], dtype=np.float64)
    gain = (level > 0).astype(np.float64) if reference.relevance == "binary" else np.maximum(level, 0.0)
    return topic, position, gain


def _gains(reference: Reference, topic: np.ndarray, doc_position: np.ndarray, vocabulary: pa.Array) -> np.ndarray:
    judged_topic, judged_doc, judged_gain = _judged_pairs(reference, vocabulary)
    width = np.int64(max(len(vocabulary), 1))
    present = judged_doc >= 0
    judged_key = judged_topic[present] * width + judged_doc[present]
    order = np.argsort(judged_key)
    judged_key, gains = judged_key[order], judged_gain[present][order]
    key = topic * width + doc_position
    at = np.searchsorted(judged_key, key)
    at_clipped = np.minimum(at, max(len(judged_key) - 1, 0))
    hit = (at < len(judged_key)) & (judged_key[at_clipped] == key) if len(judged_key) else np.zeros(len(key), bool)
    return np.where(hit, gains[at_clipped] if len(gains) else 0.0, 0.0)


def topic_judgments(reference: Reference) -> TopicJudgments:
    """Per-topic relevant counts and ideal gains of the reference (rule 5)."""
    index = {t.key: i for i, t in enumerate(reference.topics)}
    pairs = [(index[j.key], j.relevance) for j in reference.judgments if j.key in index]
    topic = np.array([p[0] for p in pairs], dtype=np.int64)
    level = np.array([p[1] for p in pairs], dtype=np.float64)
    gain = (level > 0).astype(np.float64) if reference.relevance == "binary" else np.maximum(level, 0.0)
    return TopicJudgments.from_qrels(topic, gain, len(reference.topics))


def per_topic_metrics(reference: Reference, ranked: RankedRun) -> dict[str, np.ndarray]:
    """Every metric per reference topic (arrays in reference topic order)."""
    judgments = topic_judgments(reference)
    cutoffs = list(reference.manifest.get("cutoffs", [10]))
    depth = max(cutoffs)
    rows = ranked.rows
    cut = rows.position < depth
    cut_rows = RankedRows(rows.topic[cut], rows.position[cut], rows.gain[cut], rows.n_topics)
    out: dict[str, np.ndarray] = {}
    for k in cutoffs:
        out[f"ndcg_{k}"] = ndcg_at_k(cut_rows, judgments, k)
        out[f"map_{k}"] = average_precision_at_k(cut_rows, judgments, k)
        out[f"recall_{k}"] = recall_at_k(cut_rows, judgments, k)
        out[f"p_{k}"] = precision_at_k(cut_rows, k)
    out["mrr"] = reciprocal_rank(rows)
    return out
