"""Measure strings (reteco.metrics.measure_strings) and the pytrec_eval engine's requested
measures (reteco.metrics.trec_eval_engine.trec_eval_measures), on values computed by hand."""

from __future__ import annotations

import math

import pytest

from reteco.metrics.measure_strings import Measure, MeasureError, parse_measure, parse_measures
from reteco.metrics.trec_eval_engine import trec_eval_measures


@pytest.mark.parametrize(
    ("text", "name", "trec_eval"),
    [
        ("nDCG@10", "nDCG@10", "ndcg_cut.10"), ("ndcg_cut.10", "nDCG@10", "ndcg_cut.10"), ("NDCG@5", "nDCG@5", "ndcg_cut.5"),
        ("nDCG", "nDCG", "ndcg"), ("P@5", "P@5", "P.5"), ("P.5", "P@5", "P.5"), ("R@100", "R@100", "recall.100"),
        ("recall.100", "R@100", "recall.100"), ("MRR", "RR", "recip_rank"), ("RR", "RR", "recip_rank"),
        ("recip_rank", "RR", "recip_rank"), ("AP", "AP", "map"), ("MAP", "AP", "map"), ("map", "AP", "map"),
        ("AP@10", "AP@10", "map_cut.10"), ("map_cut.10", "AP@10", "map_cut.10"), ("R-Prec", "R-Prec", "Rprec"),
        ("Rprec", "R-Prec", "Rprec"), ("Success@3", "Success@3", "success.3"), ("success.3", "Success@3", "success.3"),
        ("Bpref", "Bpref", "bpref"), ("bpref", "Bpref", "bpref"),
    ],
)
def test_both_spellings_name_one_measure(text, name, trec_eval):
    measure = parse_measure(text)
    assert (measure.name, measure.trec_eval) == (name, trec_eval)


@pytest.mark.parametrize("text", ["nDCG@x", "nDCG@0", "P", "ndcg_cut", "P.0", "foo", "MRR@10", "nDCG@10,", "R@-1"])
def test_anything_else_is_refused_naming_it(text):
    with pytest.raises(MeasureError, match="measure"):
        parse_measure(text)


def test_a_list_splits_on_blanks_and_commas_and_keeps_each_once():
    assert [m.name for m in parse_measures("nDCG@10 P@5,R@100  MRR ndcg_cut.10")] == ["nDCG@10", "P@5", "R@100", "RR"]
    assert [m.name for m in parse_measures(["nDCG@10", "P.5 recip_rank"])] == ["nDCG@10", "P@5", "RR"]
    with pytest.raises(MeasureError, match="no measure"):
        parse_measures(" , ")


def test_the_leaderboard_key_a_measure_equals_depends_on_the_references_cutoffs():
    assert Measure("nDCG@10", "ndcg_cut", 10).reteco_key([10]) == "ndcg_10"
    assert Measure("nDCG@5", "ndcg_cut", 5).reteco_key([10]) is None
    assert Measure("RR", "recip_rank", None).reteco_key([10]) == "mrr"
    assert Measure("AP", "map", None).reteco_key([10]) is None  # uncut AP is not map_10


def test_requested_measures_by_hand():
    # Relevant a, b; the ranking c (judged 0), a, x (unjudged): R = 2.
    qrels = {"q": {"a": 1, "b": 1, "c": 0}, "empty": {"a": 1}}
    measures = [parse_measure(t) for t in ("P@2", "R@2", "RR", "Success@1", "Success@2", "R-Prec", "AP", "nDCG@2")]
    got = trec_eval_measures(qrels, {"q": ["c", "a", "x"]}, [m.trec_eval for m in measures],
                             [m.result_key for m in measures], binary=True)
    discounted = 1 / math.log2(3)
    expected = {"P_2": 0.5, "recall_2": 0.5, "recip_rank": 0.5, "success_1": 0.0, "success_2": 1.0, "Rprec": 0.5,
                "map": (1 / 2) / 2, "ndcg_cut_2": discounted / (1 + discounted)}
    assert got["q"] == pytest.approx(expected, abs=1e-12)
    assert got["empty"] == {k: 0.0 for k in expected}  # a topic the run leaves out scores 0 (trec_eval -c)
