"""Measure strings (reteco.metrics.measure_strings) and the pytrec_eval engine's requested
measures (reteco.metrics.trec_eval_engine.trec_eval_measures), on values computed by hand."""

from __future__ import annotations

import math

import pytest

from reteco.metrics.measure_strings import Measure, MeasureError, parse_measure, parse_measures
from reteco.metrics.ranking import judged_in_top, reciprocal_rank_in_top
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


@pytest.mark.parametrize("text", ["nDCG@x", "nDCG@0", "P", "ndcg_cut", "P.0", "foo", "MRR@0", "nDCG@10,", "R@-1",
                                  "recip_rank.10", "judged.10", "recip_rank_cut.10", "RR.5"])
def test_anything_else_is_refused_naming_it(text):
    with pytest.raises(MeasureError, match="measure"):
        parse_measure(text)


@pytest.mark.parametrize(
    ("text", "name", "family"),
    [  # the names trec_eval prints (issue 35: -m refused them), ranx's names, and the measures trec_eval lacks
        ("ndcg_cut_10", "nDCG@10", "ndcg_cut"), ("P_5", "P@5", "P"), ("map_cut_10", "AP@10", "map_cut"),
        ("recall_100", "R@100", "recall"), ("success_1", "Success@1", "success"), ("recip_rank", "RR", "recip_rank"),
        ("precision@10", "P@10", "P"), ("recall@10", "R@10", "recall"), ("map@10", "AP@10", "map_cut"),
        ("ndcg@10", "nDCG@10", "ndcg_cut"), ("mrr", "RR", "recip_rank"), ("mrr@10", "RR@10", "recip_rank_cut"),
        ("hit_rate@5", "Success@5", "success"), ("r-precision", "R-Prec", "Rprec"), ("bpref", "Bpref", "bpref"),
        ("RR@10", "RR@10", "recip_rank_cut"), ("Judged@10", "Judged@10", "judged"),
    ],
)
def test_trec_evals_printed_names_and_ranxs_names_are_read(text, name, family):
    measure = parse_measure(text)
    assert (measure.name, measure.family) == (name, family)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("nDGC@10", "did you mean 'nDCG@10'?"), ("precison@10", "did you mean 'precision@10'?"),
        ("nDCG@x", "did you mean 'nDCG@10'?"), ("RR.5", "did you mean 'RR@5'?"), ("judged.10", "did you mean 'Judged@10'?"),
        ("ndcg_cut_x", "did you mean 'ndcg_cut.10'?"), ("recip_rank@10", "recip_rank takes no cutoff"),
        ("P", "P takes a cutoff, a positive integer: P@k, e.g. P@10"),
        ("ndcg_cut", "ndcg_cut takes a cutoff, a positive integer: ndcg_cut.k, e.g. ndcg_cut.10"),
    ],
)
def test_a_near_miss_gets_a_did_you_mean(text, hint):
    with pytest.raises(MeasureError) as raised:
        parse_measure(text)
    assert f"unknown measure {text!r}; {hint}" in str(raised.value) and "; accepted: nDCG@k" in str(raised.value)


def test_a_string_near_nothing_gets_no_guess():
    with pytest.raises(MeasureError) as raised:
        parse_measure("foo")
    assert str(raised.value).startswith("unknown measure 'foo'; accepted: ")


def test_rr_at_k_and_judged_at_k_by_hand():
    # Relevant a, b; c judged 0; x unjudged. Ranking c, x, a: RR@2 = 0, RR@3 = 1/3; Judged@2 = 1/2, Judged@4 = 2/4.
    judgments = {"a": 1, "b": 1, "c": 0}
    assert reciprocal_rank_in_top(judgments, ["c", "x", "a"], 2) == 0.0
    assert reciprocal_rank_in_top(judgments, ["c", "x", "a"], 3) == pytest.approx(1 / 3, abs=1e-15)
    assert judged_in_top(judgments, ["c", "x", "a"], 2) == 0.5
    assert judged_in_top(judgments, ["c", "x", "a"], 4) == 0.5  # the empty fourth place is unjudged
    assert judged_in_top({}, [], 10) == 0.0


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
