"""reteco.evaluate against qrels given as they are (pages/python_api.md, "Any qrels"): the same
graded qrels as a TREC file, a pytrec_eval JSON file, a dict, a ranx Qrels, ir_measures' Qrel
items and DataFrames give identical figures, which are pytrec_eval's (trec_eval's code) and
ir_measures' on the same qrels and run; bad qrels objects get a file's messages, naming rows."""

from __future__ import annotations

import json
import random

import ir_measures
import pandas as pd
import pytest
import pytrec_eval
import ranx

import reteco

# reteco's key -> pytrec_eval's measure and result key (pages/other_tools.md's table).
TREC_EVAL = {"ndcg_10": ("ndcg_cut.10", "ndcg_cut_10"), "map_10": ("map_cut.10", "map_cut_10"),
             "recall_10": ("recall.10", "recall_10"), "p_10": ("P.10", "P_10"), "mrr": ("recip_rank", "recip_rank")}
MEASURES = "nDCG@5 nDCG@20 AP P@1 R@100 RR@10 Judged@10"


def graded_qrels_and_run() -> tuple[dict, dict]:
    """Twelve topics judged at levels 0-3 (t11 only at 0, so nothing of it is relevant); a run
    that ranks ten of them (t09 and t10 are left out: they score 0 in every mean) and a topic
    the qrels lack (ignored). Scores are distinct whole numbers: no tie for any tool to break."""
    rng = random.Random(35)
    qrels, run = {}, {}
    for t in range(12):
        topic = f"t{t:02d}"
        docs = [f"d{t}_{i}" for i in range(40)]
        qrels[topic] = {doc: (0 if t == 11 else rng.choice((0, 1, 1, 2, 3))) for doc in rng.sample(docs, 12)}
        if t not in (9, 10):
            ranked = rng.sample(docs, 30)
            run[topic] = {doc: float(30 - i) for i, doc in enumerate(ranked)}
    run["not_judged"] = {"x": 1.0}
    return qrels, run


def trec_qrels_text(qrels: dict) -> str:
    return "".join(f"{topic} 0 {doc} {rel}\n" for topic, docs in qrels.items() for doc, rel in docs.items())


def every_form(qrels: dict, tmp_path) -> dict[str, object]:
    """The same qrels in every form ``reteco.evaluate`` takes as its reference."""
    (tmp_path / "qrels.txt").write_text(trec_qrels_text(qrels), encoding="utf-8")
    (tmp_path / "qrels.json").write_text(json.dumps(qrels), encoding="utf-8")
    items = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")))
    frame = pd.DataFrame({"query_id": [q.query_id for q in items], "doc_id": [q.doc_id for q in items],
                          "relevance": [q.relevance for q in items]})
    return {
        "TREC file": tmp_path / "qrels.txt",
        "TREC file as str": str(tmp_path / "qrels.txt"),
        "pytrec_eval JSON file": tmp_path / "qrels.json",
        "dict": qrels,
        "ranx Qrels": ranx.Qrels(qrels),
        "ranx Qrels from the file": ranx.Qrels.from_file(str(tmp_path / "qrels.txt"), kind="trec"),
        "ir_measures Qrel list": items,
        "ir_measures generator": ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")),
        "ir_measures' DataFrame": frame,
        "PyTerrier's DataFrame": frame.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"}),
        "DataFrame with float levels": frame.astype({"relevance": float}),
    }


def test_every_form_of_the_same_qrels_gives_identical_figures(tmp_path):
    qrels, run = graded_qrels_and_run()
    results = {name: reteco.evaluate(run, form, measures=MEASURES) for name, form in every_form(qrels, tmp_path).items()}
    first = results.pop("dict")
    assert list(first.scores) == ["ndcg_10", "recall_10", "map_10", "p_10", "mrr"] and first.official == "ndcg_10"
    for name, result in results.items():
        assert result.scores == first.scores, name
        assert result.measures == first.measures, name
        pd.testing.assert_frame_equal(result.per_topic, first.per_topic, obj=name)


def test_the_figures_are_pytrec_evals_and_ir_measures_on_the_same_qrels_and_run():
    qrels, run = graded_qrels_and_run()
    result = reteco.evaluate(run, qrels, measures=MEASURES)
    # pytrec_eval returns the topics of both; a qrels topic the run leaves out counts 0, as in reteco.
    found = pytrec_eval.RelevanceEvaluator(qrels, {m for m, _ in TREC_EVAL.values()}).evaluate(run)
    assert set(found) == set(qrels) - {"t09", "t10"}
    for key, (_, name) in TREC_EVAL.items():
        per_topic = {topic: found.get(topic, {}).get(name, 0.0) for topic in qrels}
        assert result.scores[key] == pytest.approx(sum(per_topic.values()) / len(qrels), abs=1e-9), key
        for topic, value in per_topic.items():
            assert result.per_topic.loc[topic, key] == pytest.approx(value, abs=1e-9), (key, topic)
    # ir_measures on the same objects: the official keys' measures and the requested ones.
    names = {"ndcg_10": "nDCG@10", "map_10": "AP@10", "recall_10": "R@10", "p_10": "P@10", "mrr": "RR"}
    theirs = ir_measures.calc_aggregate([ir_measures.parse_measure(n) for n in [*names.values(), *MEASURES.split()]],
                                        qrels, run)
    theirs = {str(measure): value for measure, value in theirs.items()}
    for key, name in names.items():
        assert result.scores[key] == pytest.approx(theirs[name], abs=1e-9), key
    assert set(result.measures) == set(MEASURES.split())
    for name, value in result.measures.items():
        assert value == pytest.approx(theirs[name], abs=1e-9), name


def test_gains_are_the_graded_levels_by_hand():
    # q: a at level 2, b at 1; ranked b, a. DCG@10 = 1/log2(2) + 2/log2(3); ideal 2/log2(2) + 1/log2(3).
    # r: only c, at 1, ranked second: nDCG = (1/log2(3)) / 1, RR = 1/2, P@10 = 1/10, AP@10 = 1/2.
    result = reteco.evaluate({"q": {"b": 2.0, "a": 1.0}, "r": {"x": 2.0, "c": 1.0}},
                             {"q": {"a": 2, "b": 1}, "r": {"c": 1, "x": 0}})
    log3 = 1.5849625007211562  # log2(3)
    assert result.per_topic.loc["q", "ndcg_10"] == pytest.approx((1 + 2 / log3) / (2 + 1 / log3), abs=1e-12)
    assert result.per_topic.loc["r", "ndcg_10"] == pytest.approx(1 / log3, abs=1e-12)
    assert result.scores["mrr"] == pytest.approx((1 + 0.5) / 2, abs=1e-12)
    assert result.scores["p_10"] == pytest.approx((0.2 + 0.1) / 2, abs=1e-12)
    assert result.scores["map_10"] == pytest.approx((1 + 0.5) / 2, abs=1e-12)
    assert result.per_topic.loc["q", "domain"] == result.per_topic.loc["r", "domain"]  # one pool, no domains


def test_the_figures_plain_qrels_cannot_have_are_absent_with_a_reason_never_0():
    result = reteco.evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}})
    for key in ("ndcg_10_domain_macro", "tp_10", "tr_10", "tc_10", "ndcg_fc_10"):
        assert key not in result.scores and key in result.absent, key
    assert "no domains" in result.absent["ndcg_10_domain_macro"]
    assert "no temporal labels" in result.absent["tp_10"]
    assert result.warnings == []


def test_every_doc_id_is_accepted_and_topics_outside_the_qrels_are_ignored_with_a_warning():
    result = reteco.evaluate({"q": {"never-judged": 2.0, "a": 1.0}, "other": {"a": 1.0}}, {"q": {"a": 1}})
    assert result.scores["mrr"] == 0.5 and result.details["counts"]["unknown_doc_ids"] == 0
    assert len(result.warnings) == 1 and "'other'" in result.warnings[0]


@pytest.mark.parametrize(
    ("qrels", "expected"),
    [
        ({"q": {"a": -1}}, "qrels dict topic 'q', document 'a': error: relevance '-1' is not an integer >= 0"),
        ({"q": {"a": 2.5}}, "qrels dict topic 'q', document 'a': error: relevance '2.5' is not an integer >= 0"),
        ({"q": {"a": "2"}}, "qrels dict topic 'q', document 'a': error: the relevance must be an integer, not str '2'"),
        ({"q": {"a": True}}, "qrels dict topic 'q', document 'a': error: the relevance must be an integer, not bool"),
        ({"q": {"a b": 1}}, "qrels dict topic 'q', document 'a b': error: the document id 'a b' is empty or holds blanks"),
        ({"q": [("a", 1)]}, "qrels dict topic 'q': error: expected a {doc: relevance} dict, not list"),
        ({}, "qrels dict: error: the qrels are empty: no topic judges a document"),
        ({"q": {}}, "qrels dict: error: the qrels are empty: no topic judges a document"),
        (ranx.Qrels({"q": {"a": -2}}), "ranx Qrels topic 'q', document 'a': error: relevance '-2' is not an integer >= 0"),
        ([ir_measures.Qrel("q", "a", 1), ir_measures.Qrel("q", "b", -1)],
         "ir_measures qrels row 1: error: relevance '-1' is not an integer >= 0"),
        ([], "reference: error: the qrels are empty: the iterable yielded nothing"),
        (pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []}),
         "qrels DataFrame: error: the qrels are empty: the DataFrame has no row"),
        (pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [float("nan")]}, index=[4]),
         "qrels DataFrame row 4: error: relevance 'nan' is not an integer >= 0"),
        (pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]}),
         "qrels DataFrame: error: the qrels' columns are 'query_id', 'doc_id', 'score'; expected (qid, docno, label) "
         "or (query_id, doc_id, relevance)"),
        ([ir_measures.ScoredDoc("q", "a", 1.0)], "reference: error: the reference must be a prepared reference folder, "
         "a Reference, or qrels: a qrels file's path, a {topic: {doc: relevance}} dict, a pandas DataFrame, a ranx "
         "Qrels or ir_measures' Qrel items, not list of ScoredDoc"),
        (ranx.Run({"q": {"a": 1.0}}), "reference: error: the reference must be a prepared reference folder"),
    ],
)
def test_bad_qrels_objects_raise_input_error_naming_the_row(qrels, expected):
    with pytest.raises(reteco.InputError) as caught:
        reteco.evaluate({"q": {"a": 1.0}}, qrels)
    assert str(caught.value).startswith(expected)


def test_all_of_an_objects_errors_are_listed_in_row_order_grouped_and_counted():
    frame = pd.DataFrame({"query_id": ["q"] * 7, "doc_id": ["a", "b", "c", "d", "e", "f", "g h"],
                          "relevance": [1, -1, 2.5, 2, "x", -3, 1]}, index=range(10, 17))
    with pytest.raises(reteco.InputError) as caught:
        reteco.evaluate({"q": {"a": 1.0}}, frame)
    assert str(caught.value).splitlines() == [
        "qrels DataFrame row 11: error: relevance '-1' is not an integer >= 0 (an error of this kind in 3 places: "
        "row 11, row 12, row 15)",
        "qrels DataFrame row 14: error: the relevance must be an integer, not str 'x'",
        "qrels DataFrame row 16: error: the doc_id (document id) 'g h' is empty or holds blanks, which a TREC line "
        "cannot hold",
    ]


def test_bad_qrels_files_get_the_readers_line_numbered_messages(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q 0 a 1\nq 0 b -1\nq 0 c\n", encoding="utf-8")
    with pytest.raises(reteco.InputError) as caught:
        reteco.evaluate({"q": {"a": 1.0}}, path)
    assert str(caught.value).splitlines() == [
        "qrels.txt:2: error: relevance '-1' is not an integer >= 0",
        "qrels.txt:3: error: expected 4 columns: topic iteration docid relevance, found 3",
    ]
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(reteco.InputError, match="^qrels.txt: error: no judgments found$"):
        reteco.evaluate({"q": {"a": 1.0}}, path)


def test_plain_qrels_score_a_run_not_answers():
    with pytest.raises(reteco.InputError, match="plain qrels score a run: use reteco.evaluate"):
        reteco.evaluate_answers({"q": "an answer"}, {"q": {"a": 1}})


def test_the_qrels_written_by_trec_qrels_are_the_ones_given(tmp_path):
    qrels, run = graded_qrels_and_run()
    reteco.evaluate(run, qrels, trec_qrels=tmp_path / "out.txt")
    written = {}
    for line in (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines():
        topic, _, doc, rel = line.split()
        written.setdefault(topic, {})[doc] = int(rel)
    assert written == qrels
