"""The same measures computed by pytrec_eval (trec_eval 9.x), on rankings already decided.

pytrec_eval is the community's reference implementation; ``reteco score --engine pytrec_eval``
uses it instead of the vectorised ``reteco.metrics.ranking`` and the test suite proves both
give the same figures. Its pitfalls (found by experiment with the pytrec-eval-terrier wheel) are handled here:

- trec_eval re-sorts a ranking by score with 32-bit floats and breaks ties by doc id, so it is
  fed integer-valued, strictly descending scores that encode the ranking we decided;
- ``ndcg_cut`` always uses graded gains: for binary relevance the qrels are binarised first;
- topics absent from the run are skipped by pytrec_eval: they are filled with 0 here;
- relevance must be a Python ``int`` and ids ``str``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pytrec_eval

from reteco.metrics.measure_table import Figure


def _judged(qrels: Mapping[str, Mapping[str, int]], binary: bool) -> dict[str, dict[str, int]]:
    return {
        str(topic): {str(doc): (1 if int(rel) > 0 else 0) if binary else int(rel) for doc, rel in docs.items()}
        for topic, docs in qrels.items()
    }


def _ranked(rankings: Mapping[str, Sequence[str]], judged: Mapping[str, object]) -> dict[str, dict[str, float]]:
    """The rankings as the strictly descending integer scores trec_eval keeps in that order."""
    return {
        str(topic): {str(doc): float(len(docs) - i) for i, doc in enumerate(docs)}
        for topic, docs in rankings.items()
        if topic in judged and docs
    }


def trec_eval_per_topic(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    figures: Sequence[Figure],
    binary: bool,
) -> dict[str, dict[str, float]]:
    """Per topic of ``qrels``: each of ``figures`` (rows of ``reteco.metrics.measure_table`` at
    their cutoffs) under its reteco key (``ndcg_10``, ``mrr``), as pytrec_eval computes it.

    ``rankings`` maps a topic to its ranked doc ids, best first, already de-duplicated and cut as
    the rules say (a measure over the whole ranking is computed over whatever is given).
    """
    if not figures:  # pytrec_eval asked for nothing would compute every measure it knows
        return {str(topic): {} for topic in qrels}
    found = trec_eval_measures(
        qrels, rankings, [f.trec_eval for f in figures], [f.result_key for f in figures], binary
    )
    return {topic: {f.key: values[f.result_key] for f in figures} for topic, values in found.items()}


def trec_eval_measures(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[str]],
    measures: Sequence[str],
    result_keys: Sequence[str],
    binary: bool,
) -> dict[str, dict[str, float]]:
    """Per topic of ``qrels``: each of ``measures`` (trec_eval's names, e.g. ``ndcg_cut.10``,
    ``recip_rank``; ``reteco.metrics.measure_strings`` reads them) as the value pytrec_eval
    returns under its ``result_keys`` (``ndcg_cut_10``), on rankings already decided (best first).
    A topic the run does not rank gets 0 on every measure (trec_eval's ``-c``), as in reteco's
    official figures. The definitions are trec_eval's (its ``m_*.c`` files)."""
    judged = _judged(qrels, binary)
    run = _ranked(rankings, judged)
    results = pytrec_eval.RelevanceEvaluator(judged, set(measures)).evaluate(run) if run else {}
    return {topic: {key: float(results.get(topic, {}).get(key, 0.0)) for key in result_keys} for topic in judged}
