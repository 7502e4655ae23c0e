"""Requested measures (``reteco score -m``, ``reteco.evaluate(measures=...)``): diagnostics
beyond the leaderboard's keys, on the run's decided rankings.

The rankings are those the official figures are computed on (``reteco.scoring.rules``: reteco's
tie-break, v1.0 ids mapped, unknown ids discarded, duplicates removed), but not cut at the
largest cutoff: a requested ``R@100`` sees the top 100 even where the official cutoff is 10. Each
measure is computed per reference topic by pytrec_eval (``reteco.metrics.trec_eval_engine``; a
topic without a ranked document scores 0), or, for a measure trec_eval lacks (``RR@k``,
``Judged@k``), by its row's ``requested`` function (``reteco.metrics.ranking``) and averaged as the official figures are
(``reteco.scoring.aggregate.summarize``: over units, a 1b query's steps first). Which spellings
name which measure, and which figure of reteco's each equals, is the measure table's
(``reteco.metrics.measure_table``, read through ``reteco.metrics.measure_strings``). So a requested
``nDCG@10`` equals ``ndcg_10`` of scores.json (the tests check it), and ``step_mean`` gives 1b's
mean over steps, the figure trec_eval prints.

What it writes (details.json's ``measures``; never a scores.json key):
``{"requested": [names], "engine": "pytrec_eval", "ranking": ..., "overall": {name: mean},
"step_mean": {...} (1b), "reteco_keys": {name: the key of reteco's figure it equals}}``, and per unit,
``measures.per_unit``, where the phase publishes per-topic figures.
"""

from __future__ import annotations

import numpy as np

from reteco.formats.reference import Reference
from reteco.metrics import measure_table
from reteco.metrics.measure_strings import Measure
from reteco.metrics.trec_eval_engine import trec_eval_measures
from reteco.scoring.aggregate import summarize
from reteco.scoring.rules import RankedRun

RANKING = "the decided rankings (reteco's rules), not cut at the largest cutoff"


def requested_measures(reference: Reference, ranked: RankedRun, measures: list[Measure]) -> tuple[dict, list[dict]]:
    """The ``measures`` section of details.json and its per-unit records (module docstring)."""
    qrels: dict[str, dict[str, int]] = {}
    for j in reference.judgments:
        qrels.setdefault(j.key, {})[j.doc_id] = j.relevance
    for topic in reference.topics:  # a topic without judgments still counts, at 0 (pytrec_eval needs one entry)
        qrels.setdefault(topic.key, {})
    rankings = ranked.rankings(reference)
    own = {m.name: measure_table.row_of(m.family, m.cutoff is not None).requested for m in measures}
    asked = [m for m in measures if own[m.name] is None]
    found = trec_eval_measures(
        {k: v for k, v in qrels.items() if v},
        rankings,
        [m.trec_eval for m in asked],
        [m.result_key for m in asked],
        reference.relevance == "binary",
    ) if asked else {}
    per_topic = {
        m.name: (
            np.array([own[m.name](qrels[t.key], rankings.get(t.key, []), m.cutoff) for t in reference.topics],
                     dtype=np.float64)
            if own[m.name] is not None
            else np.array([found.get(t.key, {}).get(m.result_key, 0.0) for t in reference.topics], dtype=np.float64)
        )
        for m in measures
    }
    summary = summarize(reference, per_topic)
    section: dict = {
        "requested": [m.name for m in measures],
        "engine": "pytrec_eval" if not any(own.values()) else "pytrec_eval; reteco for the measures trec_eval lacks",
        "ranking": RANKING,
        "overall": summary["overall"],
    }
    if "step_mean" in summary:
        section["step_mean"] = summary["step_mean"]
    equal = {m.name: m.reteco_key(reference.cutoffs) for m in measures}
    section["reteco_keys"] = {name: key for name, key in equal.items() if key is not None}
    return section, summary["per_unit"]
