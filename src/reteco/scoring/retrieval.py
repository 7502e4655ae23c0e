"""A run's retrieval scores against a reference: ``score_run`` applies the rules (``rules``),
computes every metric per topic (numpy, or pytrec_eval as a cross-check), aggregates them
(``aggregate``), adds the temporal diagnostics where the sub-track's row says they apply
(``temporal``) and per-stance recall where the reference has stance labels, and returns a
``ScoreResult``. The one entry point from a submission is ``reteco.scoring.submission``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reteco import __version__
from reteco.formats.reference import Reference
from reteco.formats.relevance_round import RelevanceRound
from reteco.formats.trec_run import RunTable, read_trec_run
from reteco.metrics import measure_table
from reteco.metrics.measure_strings import Measure
from reteco.metrics.ranking import stance_recall_at_k
from reteco.metrics.trec_eval_engine import trec_eval_per_topic
from reteco.problems import Problems
from reteco.scoring.aggregate import summarize
from reteco.scoring.judged import add_judged, judged_diagnostics
from reteco.scoring.measures import requested_measures
from reteco.scoring.rules import RankedRun, apply_rules, per_topic_metrics, topic_judgments
from reteco.scoring.temporal import add_temporal, temporal_diagnostics
from reteco.scoring.temporal import applies as temporal_applies
from reteco.subtracks import RETRIEVAL

ENGINES = ("numpy", "pytrec_eval")


def retrieval_rules() -> list[str]:
    """The rules of ``reteco.scoring.rules`` in short, as details.json repeats them; the measures
    over the whole ranking are the measure table's (``MRR``)."""
    whole = " and ".join(measure_table.whole_ranking_titles())
    return [
        "ranking by score descending, ties by rank ascending then line order",
        "v1.0 ids mapped to v1.1 through the duplicate map",
        "doc ids unknown to the topic's domain corpus discarded",
        "duplicates removed after their first occurrence",
        f"cut at the largest cutoff ({whole} over the whole ranking)" if whole else "cut at the largest cutoff",
        "reference topics without a ranked document score 0 and count",
    ]


@dataclass
class ScoreResult:
    """A scored submission: its ``scores.json`` figures, the aggregates of ``details.json``, and,
    apart, its per-topic figures, which only a phase that allows them publishes (``details_json``)."""

    scores: dict[str, float]
    details: dict  # details.json without the per-topic figures
    problems: Problems = field(default_factory=Problems)
    ranked: RankedRun | None = None  # the decided rankings (2c takes its top 5 passages from them)
    # Every key of the sub-track left out of scores, with the scorer's reason (a figure that
    # does not apply is absent with a reason, never 0).
    absent: dict[str, str] = field(default_factory=dict)
    # The per-topic figures, one record per topic, by their place in details.json: a top-level
    # section ("per_unit", "per_step") or one inside a section ("generation.per_turn").
    per_topic: dict[str, list[dict]] = field(default_factory=dict)
    # The details section the top-level per-topic sections follow in details.json.
    per_topic_after: str | None = None

    def details_json(self, per_topic: bool) -> dict:
        """What details.json holds: the aggregates, and with ``per_topic`` the per-topic figures
        in their places (a top-level section after ``per_topic_after``, a nested one at the end
        of its section). Without, nothing per topic can be in it: it never was in ``details``."""
        if not (per_topic and self.per_topic):
            return dict(self.details)
        top = {k: v for k, v in self.per_topic.items() if "." not in k}
        out: dict = {}
        if self.per_topic_after not in self.details:
            out.update(top)
        for key, value in self.details.items():
            out[key] = value
            if key == self.per_topic_after:
                out.update(top)
        for path, rows in self.per_topic.items():
            if "." in path:
                section, name = path.split(".", 1)
                out[section] = {**out[section], name: rows}
        return out


def retrieval_score_keys(reference: Reference) -> list[str]:
    """The scores.json keys of a retrieval reference, official figure first."""
    if reference.benchmark.has_subtracks:
        return list(RETRIEVAL)
    keys = measure_table.plain_qrels_keys(reference.cutoffs)
    official = reference.record.official or keys[0]
    return [official] + [k for k in keys if k != official]


def score_run(
    reference: Reference,
    run: RunTable | bytes,
    run_name: str = "run",
    *,
    engine: str = "numpy",
    per_topic: bool = True,
    measures: list[Measure] | None = None,
    relevance_round: RelevanceRound | None = None,
) -> ScoreResult:
    """Score a TREC run against a retrieval reference (1a, 1b, 2a, 2c, graded benchmarks).

    ``measures`` (``reteco.metrics.measure_strings``) adds details.json's ``measures`` section
    (``reteco.scoring.measures``); the scores.json keys are the same with or without it.

    ``run`` is a parsed run (whose source bytes are released once topics are resolved, so a
    600 MB run is not held through scoring) or the raw bytes of one. ``relevance_round``: the
    organizers' round labels for the unjudged diagnostics (``reteco.scoring.judged``). Raises ``InputError`` for a
    run that cannot be scored; warnings land in ``result.problems``.
    """
    problems = Problems()
    if not isinstance(run, RunTable):
        run = read_trec_run(run, run_name)
    ranked = apply_rules(reference, run, problems)
    mostly_relevant = corpus_caveat(reference, problems)
    del run
    if engine == "numpy":
        topic_values = per_topic_metrics(reference, ranked)
    elif engine == "pytrec_eval":
        topic_values = per_topic_metrics_trec_eval(reference, ranked)
    else:
        raise ValueError(f"unknown engine {engine!r}; choose one of {ENGINES}")
    summary = summarize(reference, topic_values)

    scores = {}
    for key in retrieval_score_keys(reference):
        if key.endswith("_domain_macro"):
            scores[key] = summary["domain_macro"][key.removesuffix("_domain_macro")]
        else:
            scores[key] = summary["overall"][key]
    stance = stance_recall(reference, ranked)
    scores.update({k: v["mean"] for k, v in stance.items() if v["topics"]})

    details = {
        "scorer": {"name": "reteco", "version": __version__, "engine": engine},
        "reference": {
            "subtrack": reference.subtrack,
            "benchmark": reference.record.benchmark,
            "split": reference.record.split,
            "relevance": reference.relevance,
            "cutoffs": reference.cutoffs,
            "fingerprint": reference.fingerprint(),
        },
        "rules": retrieval_rules(),
        "counts": ranked.counts,
        "warnings": [str(p) for p in problems.warnings()],
        "units": summary["units"],
        "topics": summary["topics"],
        "overall": summary["overall"],
        "domain_macro": summary["domain_macro"],
        "per_domain": summary["per_domain"],
    }
    for optional in ("per_depth", "step_mean"):
        if optional in summary:
            details[optional] = summary[optional]
    if stance:
        details["stance_recall"] = stance
    if mostly_relevant:
        details["reference"]["corpus_mostly_relevant"] = mostly_relevant
    after = next(reversed(details))  # the per-topic sections follow the grouped figures in details.json
    per_topic_sections = {}
    if per_topic:
        per_topic_sections["per_unit"] = summary["per_unit"]
        if "per_step" in summary:
            per_topic_sections["per_step"] = summary["per_step"]
    # Track 1: TP@10, TR@10, TC@10, nDCG|FC@10 on the same decided rankings (reteco.scoring.temporal).
    temporal = temporal_diagnostics(reference, ranked, topic_values["ndcg_10"]) if temporal_applies(reference) else None
    if temporal is not None:
        add_temporal(scores, details, temporal, per_topic_sections)
    if measures:
        details["measures"], per_unit_measures = requested_measures(reference, ranked, measures)
        if per_topic:
            per_topic_sections["measures.per_unit"] = per_unit_measures
    absent = dict(temporal.absent) if temporal is not None else {}
    # Holes in the qrels: details.json only, never a scores.json key (reteco.scoring.judged).
    add_judged(details, judged_diagnostics(reference, ranked, relevance_round), per_topic_sections)
    return ScoreResult(scores, details, problems, ranked, absent, per_topic_sections, after)


def corpus_caveat(reference: Reference, problems: Problems) -> list[str]:
    """The domains whose corpus is mostly relevant documents (the manifest's
    ``corpus_relevance``, written by ``reteco prepare``), with a warning when there is one: there
    any ranking finds relevant documents, and a high nDCG@10 says little about the system."""
    warning = corpus_relevance_warning(reference.manifest)
    if warning:
        problems.warning("reference", None, warning)
    return _mostly_relevant(reference.manifest)


def _mostly_relevant(manifest: dict) -> list[str]:
    """The manifest's ``corpus_relevance.mostly_relevant`` domains (none when it has none)."""
    return list((manifest.get("corpus_relevance") or {}).get("mostly_relevant") or [])


def corpus_relevance_warning(manifest: dict) -> str | None:
    """The warning about the domains of a reference manifest whose corpus is mostly relevant
    documents (its ``corpus_relevance``), None when there is none: the words of scoring's log and
    of ``reteco prepare``'s summary alike."""
    mostly = _mostly_relevant(manifest)
    if not mostly:
        return None
    domains = len(manifest.get("domains") or []) or len(mostly)
    return (
        f"over half of the corpus is judged relevant in {len(mostly)} of {domains} domains "
        f"({', '.join(mostly)}): any ranking finds relevant documents there, so these ranking figures say "
        "little about a system (a corpus of gold passages only, like the organizers' sample); score on the "
        "full corpus for meaningful figures"
    )


def per_topic_metrics_trec_eval(reference: Reference, ranked: RankedRun) -> dict[str, np.ndarray]:
    """``per_topic_metrics`` computed by pytrec_eval on the same decided rankings."""
    qrels: dict[str, dict[str, int]] = {}
    for j in reference.judgments:
        qrels.setdefault(j.key, {})[j.doc_id] = j.relevance
    rows = ranked.rows
    docs = ranked.doc_id.to_pylist()
    rankings: dict[str, list[str]] = {}
    for i, t in enumerate(rows.topic.tolist()):
        rankings.setdefault(reference.topics[t].key, []).append(docs[i])
    # The ranking is cut at the largest cutoff for every figure but those over the whole ranking
    # (MRR), as in the numpy path.
    figures = measure_table.figures(reference.cutoffs)
    depth = measure_table.depth(reference.cutoffs)
    binary = reference.relevance == "binary"
    cut = trec_eval_per_topic(qrels, {k: v[:depth] for k, v in rankings.items()}, [f for f in figures if f.k is not None], binary)
    full = trec_eval_per_topic(qrels, rankings, [f for f in figures if f.k is None], binary)
    out = {f.key: np.zeros(len(reference.topics)) for f in figures}
    for i, topic in enumerate(reference.topics):
        for f in figures:
            source = full if f.k is None else cut
            out[f.key][i] = source.get(topic.key, {}).get(f.key, 0.0)
    return out


def stance_recall(reference: Reference, ranked: RankedRun) -> dict[str, dict]:
    """Recall@k per stance (``reteco.metrics.ranking.stance_recall_at_k``) at every cutoff of the
    reference, over its decided rankings.

    Keys ``recall_<k>_<stance>`` (stance lower-cased); empty when the reference has no stance file.
    """
    if not reference.stance:
        return {}
    index = {t.key: i for i, t in enumerate(reference.topics)}
    depth = max(reference.cutoffs)
    within = np.flatnonzero(ranked.rows.position < depth)
    rows = list(
        zip(
            ranked.rows.topic[within].tolist(),
            ranked.rows.position[within].tolist(),
            ranked.doc_id.take(within).to_pylist(),
        )
    )
    out = {}
    for stance in sorted({s for s in reference.stance.values()}):
        relevant: dict[int, set[str]] = {}
        for j in reference.judgments:
            if j.relevance > 0 and reference.stance.get((j.key, j.doc_id)) == stance and j.key in index:
                relevant.setdefault(index[j.key], set()).add(j.doc_id)
        for k in reference.cutoffs:
            topics, mean = stance_recall_at_k(rows, relevant, k)
            out[f"recall_{k}_{stance.lower()}"] = {"topics": topics, "mean": mean}
    return out


__all__ = ["ScoreResult", "corpus_caveat", "corpus_relevance_warning", "score_run", "retrieval_score_keys", "stance_recall", "topic_judgments"]
