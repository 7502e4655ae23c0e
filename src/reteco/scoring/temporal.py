"""Track 1 temporal diagnostics beside nDCG@10: TP@10, TR@10, TC@10 and nDCG|FC@10.

Definitions: ``reteco.metrics.temporal`` (the TEMPO paper's, arXiv 2601.09523). This module
decides what they are computed on, and how they are aggregated:

- **Rankings.** The same decided rankings as nDCG (``reteco.scoring.rules.apply_rules``:
  v1.0 ids mapped, unknown ids dropped, duplicates removed), cut at k = 10. A reference query
  with no ranked document scores TP = TR = 0 and, when it has required periods, TC = 0.
- **Labels.** Frozen labels when the reference folder holds ``temporal_labels/`` (the
  organizers' human-checked labels of the test set, ``reteco.formats.temporal_labels``);
  otherwise the organizers' offline oracle from ``temporal_periods.jsonl``: the query's gold
  documents are temporally relevant, each step of the query is one required period, covered by
  that step's gold documents (steps without a gold document are not counted as required). A
  reference prepared before temporal data existed falls back to its own qrels (1a: the query's
  qrels, no required period; 1b: the union of the steps' qrels, each step a period). With frozen
  labels, a retrieved document without a label is not temporally relevant and covers nothing
  (as unjudged documents are non-relevant in TREC); the unlabelled documents of the top 10 are
  counted per query and overall so organizers see when the labelling pool was too shallow.
- **1b.** A step ranking is judged against its parent query's labels. TP and TR are computed
  per step and averaged over the query's steps, then over queries, as the official 1b nDCG.
  ``tc_10`` is the coverage of the query's required periods by the *union* of its steps' top-10
  lists: in 1b a query's retrieved evidence is what all its steps retrieved together, so the
  union answers the question coverage asks (was every required period found?) on the same
  periods and labels as 1a, and nDCG|FC selects the queries whose step retrieval as a whole
  covered every period. The per-step figure (coverage of all the query's periods by one step's
  list, which by design rarely reaches 1) and whether each step's list covers the step's own
  period are reported in details.json (``per_step``, ``step_mean``). The union holds up to
  10 x steps documents, so a 1b tc_10 is not comparable with a 1a tc_10 of the same system.
- **Aggregation.** Means over all reference queries (query-pooled, as the paper's temporal
  averages), per domain and the domain macro in details.json. Queries with no required period
  are left out of tc_10 (counted). nDCG|FC@10 averages the official per-query nDCG@10 (1b: the
  step mean) over fully covered queries; when none is, it is undefined: left out of
  scores.json, said so in details.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reteco.formats.arrow_arrays import from_numpy
from reteco.formats.reference import Reference
from reteco.metrics.ranking import RankedRows
from reteco.metrics.temporal import (
    covered_periods_at_k,
    full_coverage,
    ndcg_full_coverage,
    temporal_precision_at_k,
    temporal_relevance_at_k,
)
from reteco.scoring.aggregate import Units
from reteco.scoring.temporal_sources import TemporalSource, load_source

K = 10
SCORE_KEYS = ("tp_10", "tr_10", "tc_10", "ndcg_fc_10")
DEFINITIONS = {
    "tp_10": "Temporal Precision@10 (TEMPO paper, arXiv 2601.09523): (1/|R|) sum over r in R of |{j in R: j <= r}| / r, "
    "R = ranks <= 10 holding a temporally relevant document; 0 when R is empty",
    "tr_10": "Temporal Relevance@10: temporally relevant documents in the top 10, divided by 10",
    "tc_10": "Temporal Coverage@10: share of the query's required periods covered by a top-10 document; "
    "queries without required periods are left out",
    "ndcg_fc_10": "nDCG|FC@10: mean nDCG@10 over the queries with full temporal coverage (tc = 1); "
    "undefined (left out of scores.json) when no query has it",
    "fully_covered_queries": "number of queries with full temporal coverage at 10 (those nDCG|FC@10 averages)",
}


@dataclass
class TemporalResult:
    scores: dict[str, float]
    details: dict
    per_unit: list[dict]  # aligned with the reference's units (Units.of order)
    per_step: list[dict] | None  # 1b: aligned with the reference's topics
    per_domain: dict[str, dict]
    absent: dict[str, str] = field(default_factory=dict)  # scores.json key left out -> why


def applies(reference: Reference) -> bool:
    row = reference.row
    return row is not None and row.temporal


def temporal_diagnostics(
    reference: Reference, ranked, ndcg_per_topic: np.ndarray, source: TemporalSource | None = None
) -> TemporalResult | None:
    """TP@10, TR@10, TC@10 and nDCG|FC@10 of a decided run (``RankedRun``); None outside 1a/1b.

    ``ndcg_per_topic`` is the official nDCG@10 per reference topic (``per_topic_metrics``);
    ``source`` defaults to ``load_source(reference)``.
    """
    if not applies(reference):
        return None
    k = K  # the diagnostics' cutoff, fixed by the evaluation plan (and in every key's name)
    if source is None:
        source = load_source(reference)
    units = Units.of(reference)
    n_topics, n_units = len(reference.topics), len(units.keys)
    stepwise = reference.row.step_topics

    rows = ranked.rows
    within = np.flatnonzero(rows.position < k)
    topic = rows.topic[within]
    position = rows.position[within]
    docs = ranked.vocabulary.take(from_numpy(ranked.doc_position[within])).to_pylist()  # top k only, not all rows
    unit = units.unit_of_topic[topic]
    pairs = [(units.keys[u], d) for u, d in zip(unit.tolist(), docs)]

    # TP and TR per ranking (a 1b step), then per query.
    v = np.fromiter((p in source.relevant for p in pairs), dtype=np.float64, count=len(pairs))
    judged = RankedRows(topic, position, v, n_topics)
    tp_topic = temporal_precision_at_k(judged, k)
    tr_topic = temporal_relevance_at_k(judged, k)
    tp_unit = units.mean_per_unit(tp_topic)
    tr_unit = units.mean_per_unit(tr_topic)
    ndcg_unit = units.mean_per_unit(np.asarray(ndcg_per_topic, dtype=np.float64))

    # Required periods, numbered globally per query; coverage over the union of a query's lists.
    periods_of = [source.periods.get(key, []) for key in units.keys]
    local = [{pid: i for i, pid in enumerate(p)} for p in periods_of]
    required = np.array([len(p) for p in periods_of], dtype=np.int64)
    offset = np.concatenate(([0], np.cumsum(required)[:-1])).astype(np.int64)
    cover_row, cover_local = [], []
    for r, (u, pair) in enumerate(zip(unit.tolist(), pairs)):
        for pid in source.covers.get(pair, ()):
            index = local[u].get(pid)
            if index is not None:
                cover_row.append(r)
                cover_local.append(index)
    cover_row_a = np.array(cover_row, dtype=np.int64)
    cover_local_a = np.array(cover_local, dtype=np.int64)
    cover_unit = unit[cover_row_a]
    cover_position = position[cover_row_a]
    period_group = np.repeat(np.arange(n_units, dtype=np.int64), required)
    covered = covered_periods_at_k(offset[cover_unit] + cover_local_a, cover_position, period_group, n_units, k)
    tc_unit = np.full(n_units, np.nan)
    np.divide(covered, required, out=tc_unit, where=required > 0)
    fully = full_coverage(covered, required)

    # Unlabelled documents of the top k (frozen labels only): distinct per query.
    unlabelled_unit = None
    pairs_unit = None
    if source.labelled is not None:
        seen: list[set[str]] = [set() for _ in range(n_units)]
        for u, (_, doc) in zip(unit.tolist(), pairs):
            seen[u].add(doc)
        pairs_unit = np.array([len(s) for s in seen], dtype=np.int64)
        unlabelled_unit = np.array(
            [sum((units.keys[u], d) not in source.labelled for d in seen[u]) for u in range(n_units)], dtype=np.int64
        )

    domain = np.array(units.domain, dtype=object)
    domains = sorted(set(units.domain))
    everything = np.ones(n_units, dtype=bool)
    overall = _figures(everything, tp_unit, tr_unit, tc_unit, ndcg_unit, fully, required, unlabelled_unit, pairs_unit)
    per_domain = {
        d: _figures(domain == d, tp_unit, tr_unit, tc_unit, ndcg_unit, fully, required, unlabelled_unit, pairs_unit)
        for d in domains
    }
    macro = {}
    for metric in ("tp_10", "tr_10", "tc_10"):
        values = [per_domain[d][metric] for d in domains if per_domain[d][metric] is not None]
        macro[metric] = float(np.mean(values)) if values else None
    macro["domains"] = {m: sum(per_domain[d][m] is not None for d in domains) for m in ("tp_10", "tr_10", "tc_10")}

    scores = {"tp_10": overall["tp_10"], "tr_10": overall["tr_10"]}
    if overall["tc_10"] is not None:
        scores["tc_10"] = overall["tc_10"]
    if overall["ndcg_fc_10"] is not None:
        scores["ndcg_fc_10"] = overall["ndcg_fc_10"]

    per_unit = []
    for u in range(n_units):
        row = {
            "tp_10": float(tp_unit[u]),
            "tr_10": float(tr_unit[u]),
            "tc_10": None if required[u] == 0 else float(tc_unit[u]),
            "required_periods": int(required[u]),
            "covered_periods": int(covered[u]),
            "fully_covered": bool(fully[u]),
        }
        if unlabelled_unit is not None:
            row["unlabelled_top10"] = int(unlabelled_unit[u])
        per_unit.append(row)

    per_step = None
    step_mean = None
    if stepwise:
        per_step, step_mean = _per_step(
            reference, units, topic, unit, cover_row_a, cover_local_a, position, required, periods_of,
            tp_topic, tr_topic, source, k,
        )

    details = {
        "k": k,
        "source": source.kind,
        "source_description": source.description,
        "definitions": DEFINITIONS,
        "coverage_over": (
            "the union of the query's step rankings (top 10 of each step); per-step coverage in per_step"
            if stepwise
            else "the query's ranking (top 10)"
        ),
        "queries": n_units,
        "queries_with_required_periods": int(np.count_nonzero(required > 0)),
        "queries_without_required_periods": int(np.count_nonzero(required == 0)),
        "required_periods": int(required.sum()),
        "fully_covered_queries": overall["fully_covered_queries"],
        "overall": {m: overall[m] for m in ("tp_10", "tr_10", "tc_10", "ndcg_fc_10")},
        "domain_macro": macro,
        "per_domain": per_domain,
    }
    if source.kind == "frozen":
        details["labels"] = source.info
    else:
        details["oracle"] = source.info
    absent = {}
    if overall["ndcg_fc_10"] is None:
        absent["ndcg_fc_10"] = details["ndcg_fc_10_status"] = (
            "undefined: no query has a required period" if overall["tc_10"] is None
            else "undefined: no query reaches full temporal coverage at 10"
        )
    if overall["tc_10"] is None:
        absent["tc_10"] = details["tc_10_status"] = "undefined: no query has a required period"
    if unlabelled_unit is not None:
        details["unlabelled_top10"] = overall["unlabelled_top10"]
    else:
        details["unlabelled_top10"] = "not applicable: the oracle labels every document (gold documents relevant, all others not)"
    if step_mean is not None:
        details["step_mean"] = step_mean
    return TemporalResult(scores, details, per_unit, per_step, per_domain, absent)


def _figures(
    selected: np.ndarray,
    tp: np.ndarray,
    tr: np.ndarray,
    tc: np.ndarray,
    ndcg: np.ndarray,
    fully: np.ndarray,
    required: np.ndarray,
    unlabelled: np.ndarray | None,
    pairs: np.ndarray | None,
) -> dict:
    """Means over the selected queries; TC over those with required periods; None when undefined."""
    n = int(np.count_nonzero(selected))
    with_periods = selected & (required > 0)
    ndcg_fc, n_fc = ndcg_full_coverage(ndcg, selected & fully)
    out = {
        "queries": n,
        "queries_with_required_periods": int(np.count_nonzero(with_periods)),
        "fully_covered_queries": n_fc,
        "tp_10": float(np.mean(tp[selected])) if n else None,
        "tr_10": float(np.mean(tr[selected])) if n else None,
        "tc_10": float(np.mean(tc[with_periods])) if with_periods.any() else None,
        "ndcg_fc_10": ndcg_fc,
    }
    if unlabelled is not None and pairs is not None:
        total = int(pairs[selected].sum())
        missing = int(unlabelled[selected].sum())
        out["unlabelled_top10"] = {
            "documents": total,
            "unlabelled": missing,
            "share": missing / total if total else None,
            "queries_with_unlabelled": int(np.count_nonzero(unlabelled[selected] > 0)),
        }
    return out


def _per_step(
    reference: Reference,
    units: Units,
    topic: np.ndarray,
    unit: np.ndarray,
    cover_row: np.ndarray,
    cover_local: np.ndarray,
    position: np.ndarray,
    required: np.ndarray,
    periods_of: list[list[str]],
    tp_topic: np.ndarray,
    tr_topic: np.ndarray,
    source: TemporalSource,
    k: int,
) -> tuple[list[dict], dict]:
    """1b, per step: coverage of the query's periods by the step's own list, and of its own period."""
    n_topics = len(reference.topics)
    step_required = required[units.unit_of_topic]
    step_offset = np.concatenate(([0], np.cumsum(step_required)[:-1])).astype(np.int64)
    cover_topic = topic[cover_row]
    period_group = np.repeat(np.arange(n_topics, dtype=np.int64), step_required)
    covered = covered_periods_at_k(
        step_offset[cover_topic] + cover_local, position[cover_row], period_group, n_topics, k
    )
    tc_step = np.full(n_topics, np.nan)
    np.divide(covered, step_required, out=tc_step, where=step_required > 0)

    # A step's own period: the period the periods file ties to the step (derived oracle: the step).
    own = _own_periods(reference, units, periods_of, source)
    hit = set(zip(cover_topic[position[cover_row] < k].tolist(), cover_local[position[cover_row] < k].tolist()))
    rows = []
    for i, t in enumerate(reference.topics):
        row = {
            "tp_10": float(tp_topic[i]),
            "tr_10": float(tr_topic[i]),
            "tc_10": None if step_required[i] == 0 else float(tc_step[i]),
        }
        row["own_period_covered"] = None if own[i] is None else (i, own[i]) in hit
        rows.append(row)
    with_periods = step_required > 0
    own_known = [r["own_period_covered"] for r in rows if r["own_period_covered"] is not None]
    mean = {
        "steps": n_topics,
        "tp_10": float(np.mean(tp_topic)) if n_topics else None,
        "tr_10": float(np.mean(tr_topic)) if n_topics else None,
        "tc_10": float(np.mean(tc_step[with_periods])) if with_periods.any() else None,
        "steps_with_own_period": len(own_known),
        "own_period_covered_share": (sum(own_known) / len(own_known)) if own_known else None,
    }
    return rows, mean


def add_temporal(scores: dict, details: dict, result: TemporalResult, per_topic: dict | None = None) -> None:
    """Merge a temporal result into a score's scores, details and per-topic figures (score_run's layout).

    scores.json gets ``tp_10``, ``tr_10``, and, when defined, ``tc_10`` and ``ndcg_fc_10`` (all in
    0..1; the number of fully covered queries is a count, so it stays in details.json as
    ``temporal.fully_covered_queries``); details.json gets a ``temporal`` section and the figures of every
    domain in ``per_domain``; the per-topic figures (``ScoreResult.per_topic``) those of every
    query (and 1b step) in ``per_unit`` (``per_step``) when those lists are present.
    """
    per_topic = per_topic if per_topic is not None else {}
    scores.update(result.scores)
    details["temporal"] = result.details
    for domain, figures in result.per_domain.items():
        target = details.get("per_domain", {}).get(domain)
        if target is not None:
            target.update(
                {m: figures[m] for m in ("tp_10", "tr_10", "tc_10", "ndcg_fc_10")}
                | {"fully_covered_queries": figures["fully_covered_queries"]}
            )
    if "per_unit" in per_topic:
        for row, extra in zip(per_topic["per_unit"], result.per_unit):
            row.update(extra)
    if "per_step" in per_topic and result.per_step is not None:
        for row, extra in zip(per_topic["per_step"], result.per_step):
            row.update(extra)


def _own_periods(reference: Reference, units: Units, periods_of: list[list[str]], source: TemporalSource) -> list[int | None]:
    """Per step, the local index (among its query's counted periods) of the period it stands for."""
    out: list[int | None] = []
    for i, t in enumerate(reference.topics):
        pid = source.step_period.get(t.key)
        counted = periods_of[int(units.unit_of_topic[i])]
        out.append(counted.index(pid) if pid is not None and pid in counted else None)
    return out


__all__ = [
    "DEFINITIONS",
    "SCORE_KEYS",
    "TemporalResult",
    "TemporalSource",
    "add_temporal",
    "applies",
    "load_source",
    "temporal_diagnostics",
]
