"""The ranking measures: one table every reader of a measure reads.

``MEASURES`` holds one typed row per measure, in the style of ``reteco.subtracks``' tables: its
ir_measures name, its trec_eval name, at which cutoffs reteco computes it, the kernel that
computes it (``reteco.metrics.ranking``), its ``details.json`` / ``scores.json`` key, and its
place among a plain-qrels benchmark's ``scores.json`` keys. The readers, none of which names a
measure:

- the scorer (``reteco.scoring.rules.per_topic_metrics``: every row with a kernel, per topic;
  ``reteco.scoring.retrieval``: the same by pytrec_eval with ``--engine pytrec_eval``, the keys
  of a benchmark of plain qrels, the rule of the ranking's depth);
- the pytrec_eval engine (``reteco.metrics.trec_eval_engine``), given the rows' figures;
- measure strings (``reteco.metrics.measure_strings``: ``reteco score -m``, ``reteco.evaluate
  (measures=...)``): every row's spellings are accepted, and a requested measure names the key
  it equals.

A row with a kernel is computed for every retrieval reference, at ``at``: ``CUTOFFS`` (each
cutoff of the reference: its benchmark's preset or its manifest's, e.g. ``ndcg_10``), ``WHOLE``
(no cutoff: over the whole decided ranking, which is not cut at the largest cutoff, e.g. ``mrr``)
or a fixed k. A row without a kernel is computed only when requested (``-m``): by pytrec_eval,
or, for a measure trec_eval lacks (``RR@k``, ``Judged@k``), by its ``requested`` function.
A sub-track of RETECO lists the keys its ``scores.json`` holds in its own row
(``reteco.subtracks``, with their titles in the participants' words); a benchmark of plain qrels
(FactIR) writes the figures of every row with a ``plain`` place. docs/development.md ("Adding a
measure") shows what adding a row takes; ``tests/scoring/test_measure_table.py`` scores made-up
rows with nothing else changed.

Why in ``metrics``, not beside ``subtracks.py``: a row holds its kernel, a function of
``reteco.metrics.ranking``, and every reader is in ``metrics`` or above; a top-level module may
import no layer. So a sub-track's retrieval keys stay in its row (the leaderboard's choice, in
the participants' words), and the tests check that each is a figure of this table, titled alike.

Sources: trec_eval 9.x's ``m_*.c`` files (the definitions, and pytrec_eval's names);
ir_measures' measure names (MacAvaney et al. 2022).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from reteco.metrics.ranking import (
    RankedRows,
    TopicJudgments,
    average_precision_at_k,
    judged_in_top,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    reciprocal_rank_in_top,
)

CUTOFFS = "cutoffs"  # at each cutoff of the reference (a figure per k: ndcg_10, ndcg_100 ...)
WHOLE = "whole"  # no cutoff: over the whole decided ranking, never cut at the largest cutoff (MRR)

# A kernel: (rows, judgments, k) -> one figure per topic; (rows, judgments) for a WHOLE measure.
Kernel = Callable[..., np.ndarray]


@dataclass(frozen=True)
class RankingMeasure:
    """One ranking measure: its names, its cutoff rule, how reteco computes it, and its key."""

    name: str  # ir_measures' name, what reteco prints (with "@k" when cut): nDCG, P, R, AP, RR ...
    trec_eval: str  # trec_eval's measure, pytrec_eval's name: ndcg_cut, P, recall, map_cut, recip_rank ...
    at: str | int  # CUTOFFS, WHOLE or a fixed k: the cutoffs reteco computes it at (-m takes any k unless WHOLE)
    definition: str  # what it is, with its source
    kernel: Kernel | None = None  # reteco's function (reteco.metrics.ranking); None: pytrec_eval, on request only
    key: str | None = None  # its details.json key, "{k}" the cutoff: ndcg_{k}, mrr (None without a kernel)
    title: str = ""  # reteco's name for the figure in its rules: nDCG@{k}, MAP@{k}, MRR
    plain: int | None = None  # its place among a plain-qrels benchmark's scores.json keys; None: details.json only
    aliases: tuple[str, ...] = ()  # other spellings -m accepts for the name: MRR, MAP, ranx's precision, recall
    # A measure trec_eval lacks: reteco's function of one topic, (judgments, ranking, k) -> figure,
    # computed on request (-m); ``trec_eval`` is then only its family's name, not a spelling -m takes.
    requested: Callable[..., float] | None = None

    @property
    def by_pytrec_eval(self) -> bool:
        """Whether -m asks pytrec_eval for it (by its trec_eval name, which -m accepts too)."""
        return self.requested is None

    @property
    def id(self) -> str:
        """The row's key in ``MEASURES``: its ir_measures spelling, ``nDCG@k``, ``RR``, ``R@100``."""
        if self.at == WHOLE:
            return self.name
        return f"{self.name}@{'k' if self.at == CUTOFFS else self.at}"

    @property
    def takes_cutoff(self) -> bool:
        """Whether a measure string names it with a cutoff (``nDCG@10``, ``ndcg_cut.10``)."""
        return self.at != WHOLE

    @property
    def computed(self) -> bool:
        """Whether reteco computes it for every retrieval reference (it has a kernel and a key)."""
        return self.kernel is not None


@dataclass(frozen=True)
class Figure:
    """A row at one cutoff (``k`` None for a WHOLE row): one figure of every retrieval reference."""

    measure: RankingMeasure
    k: int | None

    @property
    def key(self) -> str:
        """Its details.json key: ``ndcg_10``, ``mrr``."""
        return self.measure.key.format(k=self.k)

    @property
    def trec_eval(self) -> str:
        """What pytrec_eval is asked for: ``ndcg_cut.10``, ``recip_rank``."""
        return trec_eval_spelling(self.measure.trec_eval, self.k)

    @property
    def result_key(self) -> str:
        """The key of pytrec_eval's answer: ``ndcg_cut_10``, ``recip_rank``."""
        return result_key(self.measure.trec_eval, self.k)

    def compute(self, rows: RankedRows, judgments: TopicJudgments) -> np.ndarray:
        """The figure per topic by the row's kernel."""
        if self.k is None:
            return self.measure.kernel(rows, judgments)
        return self.measure.kernel(rows, judgments, self.k)


def trec_eval_spelling(trec_eval: str, k: int | None) -> str:
    """trec_eval's spelling of a measure at a cutoff: ``ndcg_cut.10``; ``recip_rank``."""
    return trec_eval if k is None else f"{trec_eval}.{k}"


def result_key(trec_eval: str, k: int | None) -> str:
    """pytrec_eval's key for a measure at a cutoff: ``ndcg_cut_10``; ``recip_rank``."""
    return trec_eval if k is None else f"{trec_eval}_{k}"


# Keyed by ``RankingMeasure.id``. The order is details.json's (at each cutoff, then the others)
# and that of the accepted spellings in ``reteco.metrics.measure_strings``' messages.
MEASURES: dict[str, RankingMeasure] = {
    m.id: m
    for m in (
        RankingMeasure(
            "nDCG", "ndcg_cut", CUTOFFS,
            "DCG@k / ideal DCG@k, gain = relevance, discount log2(rank + 1) (Järvelin and Kekäläinen 2002; "
            "trec_eval's ndcg_cut)",
            ndcg_at_k, "ndcg_{k}", "nDCG@{k}", plain=1,
        ),
        RankingMeasure("nDCG", "ndcg", WHOLE, "the same over the whole ranking"),
        RankingMeasure(
            "AP", "map", WHOLE,
            "mean of the precision at each relevant document's rank, over relevant judged", aliases=("MAP",),
        ),
        RankingMeasure(
            "AP", "map_cut", CUTOFFS, "the same, ranks up to k only (divided by all relevant judged, not min(R, k))",
            average_precision_at_k, "map_{k}", "MAP@{k}", plain=3, aliases=("MAP",),
        ),
        RankingMeasure(
            "R", "recall", CUTOFFS, "relevant in the top k / relevant judged", recall_at_k, "recall_{k}", "Recall@{k}", plain=2,
            aliases=("recall",),
        ),
        RankingMeasure(
            "P", "P", CUTOFFS, "relevant in the top k / k (k even when fewer are ranked)",
            precision_at_k, "p_{k}", "P@{k}", plain=4, aliases=("precision",),
        ),
        RankingMeasure(
            "RR", "recip_rank", WHOLE, "1 / rank of the first relevant document; its mean over topics is the MRR",
            reciprocal_rank, "mrr", "MRR", plain=5, aliases=("MRR",),
        ),
        RankingMeasure(
            "RR", "recip_rank_cut", CUTOFFS, "1 / rank of the first relevant document in the top k, 0 if none there "
            "(ir_measures' RR@k, ranx's mrr@k)", aliases=("MRR",), requested=reciprocal_rank_in_top,
        ),
        RankingMeasure("R-Prec", "Rprec", WHOLE, "precision at R, R = relevant judged", aliases=("Rprec", "r-precision")),
        RankingMeasure("Success", "success", CUTOFFS, "1 if a relevant document is in the top k", aliases=("hit_rate",)),
        RankingMeasure(
            "Judged", "judged", CUTOFFS, "documents of the top k that the qrels hold / k (ir_measures' Judged@k; "
            "1 - unjudged_k of details.json)", requested=judged_in_top,
        ),
        RankingMeasure("Bpref", "bpref", WHOLE, "Buckley and Voorhees (2004), trec_eval's"),
    )
}


def figures(cutoffs: Sequence[int]) -> list[Figure]:
    """The figures reteco computes for a retrieval reference with ``cutoffs``, in details.json's
    order: at each cutoff the ``CUTOFFS`` rows with a kernel (in the table's order), then the
    other rows with a kernel (fixed k, ``WHOLE``). A key is computed once (a fixed ``R@100`` on a
    reference with cutoff 100 is its ``recall_100``)."""
    computed = [m for m in MEASURES.values() if m.computed]
    found = [Figure(m, k) for k in cutoffs for m in computed if m.at == CUTOFFS]
    found += [Figure(m, None if m.at == WHOLE else m.at) for m in computed if m.at != CUTOFFS]
    once: dict[str, Figure] = {}
    for figure in found:
        once.setdefault(figure.key, figure)
    return list(once.values())


def depth(cutoffs: Sequence[int]) -> int:
    """Where the ranking is cut for every figure but the ``WHOLE`` ones: the largest cutoff,
    the reference's or a fixed row's (rule 3 of ``reteco.scoring.rules``)."""
    return max([*cutoffs, *(f.k for f in figures(cutoffs) if f.k is not None)])


def whole_ranking_titles() -> list[str]:
    """The titles of the figures over the whole ranking (``MRR``), for the rules' words."""
    return [m.title for m in MEASURES.values() if m.computed and m.at == WHOLE]


def plain_qrels_keys(cutoffs: Sequence[int]) -> list[str]:
    """The scores.json keys of a benchmark of plain qrels with ``cutoffs``, before its official
    figure is moved first: the rows with a ``plain`` place, in its order, each at every cutoff."""
    placed = [f for f in figures(cutoffs) if f.measure.plain is not None]
    return [f.key for f in sorted(placed, key=lambda f: f.measure.plain)]


def key_of(trec_eval: str, k: int | None, cutoffs: Sequence[int]) -> str | None:
    """The key of the figure a reference with ``cutoffs`` computes as trec_eval's ``trec_eval``
    at ``k``, or None when it computes none."""
    return next((f.key for f in figures(cutoffs) if f.measure.trec_eval == trec_eval and f.k == k), None)


def row_of(family: str, takes_cutoff: bool) -> RankingMeasure:
    """The row of a measure string's family (``Measure.family``) and cutoff rule."""
    return next(m for m in MEASURES.values() if m.trec_eval == family and m.takes_cutoff == takes_cutoff)

