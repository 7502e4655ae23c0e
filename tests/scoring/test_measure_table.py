"""The measure table (``reteco.metrics.measure_table``): its rows agree with the sub-track table
and with what the scorer wrote before the table, nothing but the table names a measure, and a
made-up row is scored with nothing else changed: docs/development.md's worked example ("Adding a
measure", run from the page itself), a fixed-cutoff row on an existing kernel and a row over the
whole ranking, each against hand-computed figures and pytrec_eval's."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re

import numpy as np
import pytest
from support.paths import REPO_ROOT

import reteco
from reteco.formats.qrels import benchmark_reference
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.metrics import measure_table, ranking
from reteco.metrics.measure_strings import MeasureError, accepted, parse_measure, parse_measures
from reteco.metrics.measure_table import CUTOFFS, MEASURES, WHOLE, RankingMeasure
from reteco.metrics.ranking import RankedRows, TopicJudgments, recall_at_k
from reteco.metrics.trec_eval_engine import trec_eval_measures
from reteco.outputs.results import write_results
from reteco.scoring.submission import score_submission
from reteco.subtracks import BENCHMARKS, DEFAULT_BENCHMARK, KEYS, RETRIEVAL, SUBTRACKS

L2 = math.log2
DEVELOPMENT = REPO_ROOT / "docs" / "development.md"
PHASE = {"phase": "local", "name": "local", "split": "dev", "per_topic": True}
FACTIR_CUTOFFS = (1, 5, 10, 100)


# ---------------------------------------------------------------- the rows

def test_the_rows_are_well_formed():
    for id_, m in MEASURES.items():
        assert id_ == m.id
        assert m.at in (CUTOFFS, WHOLE) or (isinstance(m.at, int) and m.at >= 1), m
        assert m.definition
        assert (m.key is None) == (m.kernel is None), f"{m.id}: a kernel and a key go together"
        if m.computed:
            assert m.title and ("{k}" in m.key or m.at != CUTOFFS) and ("{k}" not in m.key or m.at != WHOLE), m
            assert getattr(ranking, m.kernel.__name__) is m.kernel, "a kernel is a function of reteco.metrics.ranking"
        else:
            assert m.plain is None


def test_every_spelling_names_one_row():
    # -m reads a spelling to one measure: two rows may share a name only with another cutoff rule.
    spellings = {}
    for m in MEASURES.values():
        for spelling in {n.lower() for n in (m.name, *m.aliases)}:
            seen = spellings.setdefault(("ir_measures", spelling, m.takes_cutoff), m.trec_eval)
            assert seen == m.trec_eval, f"{spelling!r} names {seen} and {m.trec_eval}"
        assert spellings.setdefault(("trec_eval", m.trec_eval.lower(), m.takes_cutoff), m.trec_eval) == m.trec_eval


def test_the_figures_and_keys_are_the_ones_the_scorer_wrote_before_the_table():
    # The hard-coded lists the table replaced (rules.per_topic_metrics, retrieval_score_keys).
    before = [f"{m}_{k}" for k in FACTIR_CUTOFFS for m in ("ndcg", "map", "recall", "p")] + ["mrr"]
    assert [f.key for f in measure_table.figures(FACTIR_CUTOFFS)] == before
    plain = [f"{m}_{k}" for m in ("ndcg", "recall", "map", "p") for k in FACTIR_CUTOFFS] + ["mrr"]
    assert measure_table.plain_qrels_keys(FACTIR_CUTOFFS) == plain
    assert measure_table.depth([10]) == 10 and measure_table.whole_ranking_titles() == ["MRR"]


def test_every_retrieval_key_of_the_subtracks_is_a_figure_of_the_table_with_its_title():
    cutoffs = BENCHMARKS[DEFAULT_BENCHMARK].cutoffs
    figures = {f.key: f for f in measure_table.figures(cutoffs)}
    for key in RETRIEVAL:
        figure = figures[key.removesuffix("_domain_macro")]
        if key in figures:
            assert KEYS[key].title == figure.measure.title.format(k=figure.k)
    assert [k for k in RETRIEVAL if k in figures] == list(figures)  # the same figures, in the table's order


def test_the_accepted_spellings_are_the_tables_in_its_order():
    assert accepted() == (
        "nDCG@k, nDCG, AP, AP@k, R@k, P@k (precision@k), RR (MRR), RR@k (MRR@k), R-Prec (r-precision), "
        "Success@k (hit_rate@k), Judged@k, Bpref, or trec_eval's "
        "ndcg_cut.k, ndcg, map, map_cut.k, recall.k, P.k, recip_rank, Rprec, success.k, bpref "
        "(also as trec_eval prints them: ndcg_cut_10)"
    )
    for m in MEASURES.values():  # each spelling the message lists is read back to its row
        k = 7 if m.takes_cutoff else None
        texts = [name + ("@7" if k else "") for name in (m.name, *m.aliases)]
        if m.by_pytrec_eval:  # trec_eval's spelling, and the one trec_eval prints
            texts += [m.trec_eval + (".7" if k else ""), m.trec_eval + ("_7" if k else "")]
        else:  # a measure trec_eval lacks has no trec_eval spelling
            with pytest.raises(MeasureError):
                parse_measure(m.trec_eval + (".7" if k else ""))
        for text in texts:
            assert (parse_measure(text).family, parse_measure(text).cutoff) == (m.trec_eval, k), text


# Literal names of measures in the modules that read the table, each kept for its reason.
READERS = ("scoring/rules.py", "scoring/retrieval.py", "scoring/measures.py", "metrics/measure_strings.py",
           "metrics/trec_eval_engine.py")
NAMED_FOR_A_REASON = {
    ("scoring/retrieval.py", "ndcg_10"): "Track 1's nDCG|FC@10 is defined on the official nDCG@10 (reteco.scoring.temporal)",
}


def measure_names_in(source: str) -> list[str]:
    """The string constants of a module (docstrings aside) that name a measure of the table: a
    name, an alias, a trec_eval name (with a cutoff or not), a key or a title."""
    words = set()
    for m in MEASURES.values():
        words |= {m.name, *m.aliases, m.trec_eval}
    patterns = [re.escape(p).replace(re.escape("{k}"), r"\d+") for m in MEASURES.values() if m.computed
                for p in (m.key, m.title)]
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # f"ndcg_{k}": a key or title pattern with any cutoff
            text = "".join(v.value if isinstance(v, ast.Constant) else "{k}" for v in node.values)
            if any(text in (m.key, m.title) for m in MEASURES.values() if m.computed):
                found.append(text)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if re.sub(r"[.@]\d+$", "", text) in words or any(re.fullmatch(p, text) for p in patterns):
                found.append(text)
    return found


def test_no_reader_of_the_table_names_a_measure():
    package = REPO_ROOT / "src" / "reteco"
    named = [(module, text) for module in READERS
             for text in measure_names_in((package / module).read_text(encoding="utf-8"))]
    assert [n for n in named if n not in NAMED_FOR_A_REASON] == []
    assert measure_names_in('KEYS = ("ndcg_10", "recip_rank", "P.5", "MRR", "nDCG@5", "judge_mean", f"map_{k}")\n') == [
        "ndcg_10", "recip_rank", "P.5", "MRR", "nDCG@5", "map_{k}"]


# ---------------------------------------------------------------- made-up rows, scored

def _worked_example() -> tuple[object, RankingMeasure]:
    """docs/development.md's "Adding a measure" block, run: (its kernel, its row)."""
    section = DEVELOPMENT.read_text(encoding="utf-8").split("## Adding a measure\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    tree = ast.parse(block)
    *statements, last = tree.body
    namespace = {"np": np, "RankedRows": RankedRows, "TopicJudgments": TopicJudgments,
                 "hits_at_k": ranking.hits_at_k, "RankingMeasure": RankingMeasure, "CUTOFFS": CUTOFFS}
    exec(compile(ast.Module(statements, []), str(DEVELOPMENT), "exec"), namespace)
    row = eval(compile(ast.Expression(last.value), str(DEVELOPMENT), "eval"), namespace)
    return namespace["success_at_k"], row


def test_the_docs_signature_of_a_row_is_the_dataclass():
    text = DEVELOPMENT.read_text(encoding="utf-8")
    written = re.search(r"# RankingMeasure\(([^)]*)\)", text).group(1).split(", ")
    assert written == [f.name for f in dataclasses.fields(RankingMeasure)]


def _reference(cutoffs=(10,)) -> Reference:
    """Two topics of one domain of a RETECO sub-track that takes a run and nothing else (2a),
    binary: q has relevant a, b (z judged not relevant); r has relevant c."""
    topics = [Topic("d/q", "d", "q", "d/q"), Topic("d/r", "d", "r", "d/r")]
    judgments = [Judgment("d/q", "a", 1), Judgment("d/q", "b", 1), Judgment("d/q", "z", 0), Judgment("d/r", "c", 1)]
    plain_run = next(s.id for s in SUBTRACKS.values() if s.takes_run and not s.temporal and not s.judged)
    return Reference({"subtrack": plain_run, "domains": ["d"], "cutoffs": list(cutoffs)}, topics, judgments)


def _run(tmp_path, lines: list[str]):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{topic} Q0 {doc} {i + 1} {100 - i} t\n" for i, (topic, doc) in
                            enumerate(line.split() for line in lines)), encoding="utf-8")
    return path


def _pytrec_eval(reference: Reference, ranked: dict[str, list[str]], trec_eval: str, result_key: str) -> list[float]:
    qrels = {}
    for j in reference.judgments:
        qrels.setdefault(j.key, {})[j.doc_id] = j.relevance
    found = trec_eval_measures(qrels, ranked, [trec_eval], [result_key], binary=True)
    return [found[t.key][result_key] for t in reference.topics]


@pytest.fixture
def success_row(monkeypatch):
    kernel, row = _worked_example()
    assert row.id == "Success@k" and MEASURES[row.id].kernel is None  # it replaces the -m-only row
    monkeypatch.setattr(ranking, "success_at_k", kernel, raising=False)  # "its kernel in ranking.py"
    monkeypatch.setitem(MEASURES, row.id, row)
    return row


def test_the_worked_example_is_scored_from_its_row(success_row, tmp_path):
    reference = _reference(cutoffs=(1, 10))
    # q: z (judged 0), then b (relevant): Success@1 = 0, Success@10 = 1; r: x only: 0 and 0.
    run = _run(tmp_path, ["q z", "q b", "r x"])
    result = score_submission(reference, run)
    overall = result.details["overall"]
    assert (overall["success_1"], overall["success_10"]) == (0.0, 0.5)
    assert list(overall) == ["ndcg_1", "map_1", "recall_1", "p_1", "success_1",
                             "ndcg_10", "map_10", "recall_10", "p_10", "success_10", "mrr"]
    assert [u["success_10"] for u in result.per_topic["per_unit"]] == [1.0, 0.0]
    assert list(result.scores) == list(RETRIEVAL)  # a RETECO sub-track's scores.json keys are its row's
    rankings = {"d/q": ["z", "b"], "d/r": ["x"]}
    for k in (1, 10):
        assert [u[f"success_{k}"] for u in result.per_topic["per_unit"]] == _pytrec_eval(
            reference, rankings, f"success.{k}", f"success_{k}")
    by_pytrec_eval = score_submission(reference, run, engine="pytrec_eval")
    assert by_pytrec_eval.details["overall"] == pytest.approx(overall, abs=1e-12)
    # -m names the figure it equals.
    requested = score_submission(reference, run, measures=parse_measures("Success@10 Success@2"))
    assert requested.details["measures"]["overall"] == {"Success@10": 0.5, "Success@2": 0.5}
    assert requested.details["measures"]["reteco_keys"] == {"Success@10": "success_10"}


def test_the_worked_example_enters_a_plain_benchmarks_scores_after_mrr(success_row, tmp_path):
    reference = benchmark_reference([Judgment("t", "a", 2), Judgment("t", "b", 1), Judgment("u", "c", 1)],
                                    benchmark="toyir", cutoffs=[1, 2], official="ndcg_2")
    run = _run(tmp_path, ["t x", "t a", "u c"])
    result = score_submission(reference, run)
    assert list(result.scores) == ["ndcg_2", "ndcg_1", "recall_1", "recall_2", "map_1", "map_2", "p_1", "p_2",
                                   "mrr", "success_1", "success_2"]
    assert (result.scores["success_1"], result.scores["success_2"]) == (0.5, 1.0)
    written = write_results(tmp_path / "out", result, None, PHASE)
    assert written == {} and json.loads((tmp_path / "out" / "scores.json").read_text())["success_2"] == 1.0


def test_a_fixed_cutoff_row_on_an_existing_kernel(monkeypatch, tmp_path):
    # R@20 on every reference, whatever its cutoffs: the ranking is cut at 20, not at 10.
    row = RankingMeasure("R", "recall", 20, "relevant in the top 20 / relevant judged", recall_at_k,
                         "recall_20", "Recall@20")
    monkeypatch.setitem(MEASURES, row.id, row)
    reference = _reference(cutoffs=(10,))
    # q: a at rank 1, b at rank 15; r: c at rank 25.
    run = _run(tmp_path, [f"q {d}" for d in ["a", *(f"n{i}" for i in range(13)), "b"]]
               + [f"r {d}" for d in [*(f"m{i}" for i in range(24)), "c"]])
    result = score_submission(reference, run)
    units = result.per_topic["per_unit"]
    assert ([u["recall_10"] for u in units], [u["recall_20"] for u in units]) == ([0.5, 0.0], [1.0, 0.0])
    assert list(result.details["overall"])[-2:] == ["mrr", "recall_20"]  # after the cutoffs', in table order
    assert list(result.scores) == list(RETRIEVAL)  # a RETECO sub-track's keys are its row's
    by_pytrec_eval = score_submission(reference, run, engine="pytrec_eval")
    assert by_pytrec_eval.details["overall"] == pytest.approx(result.details["overall"], abs=1e-12)
    rankings = {"d/q": ["a", *(f"n{i}" for i in range(13)), "b"], "d/r": [*(f"m{i}" for i in range(24)), "c"]}
    assert [u["recall_20"] for u in units] == _pytrec_eval(reference, rankings, "recall.20", "recall_20")
    # On a reference whose cutoffs hold 20, the figure is computed once.
    assert [f.key for f in measure_table.figures([20])].count("recall_20") == 1


def _r_precision(rows: RankedRows, judgments: TopicJudgments) -> np.ndarray:
    """R-Prec: relevant documents in the top R / R, R = relevant judged (trec_eval ``Rprec``)."""
    within = (rows.position < judgments.num_relevant[rows.topic]) & rows.relevant
    found = np.bincount(rows.topic[within], minlength=rows.n_topics).astype(np.float64)
    out = np.zeros(rows.n_topics)
    np.divide(found, judgments.num_relevant, out=out, where=judgments.num_relevant > 0)
    return out


def test_a_whole_ranking_row_is_scored_uncut_and_named_in_the_rules(monkeypatch, tmp_path):
    row = dataclasses.replace(MEASURES["R-Prec"], kernel=_r_precision, key="rprec", title="R-Prec")
    monkeypatch.setattr(ranking, "_r_precision", _r_precision, raising=False)
    monkeypatch.setitem(MEASURES, row.id, row)
    # Cutoff 1: R-Prec still sees the whole ranking (t: R = 2, the top 2 are z, b: 1/2; u: 1).
    reference = benchmark_reference([Judgment("t", "a", 1), Judgment("t", "b", 1), Judgment("t", "z", 0),
                                     Judgment("u", "c", 1)], benchmark="toyir", cutoffs=[1], official="ndcg_1")
    run = _run(tmp_path, ["t z", "t b", "u c"])
    result = score_submission(reference, run)
    assert [u["rprec"] for u in result.per_topic["per_unit"]] == [0.5, 1.0]
    assert [u["rprec"] for u in result.per_topic["per_unit"]] == _pytrec_eval(
        reference, {"t": ["z", "b"], "u": ["c"]}, "Rprec", "Rprec")
    assert "cut at the largest cutoff (MRR and R-Prec over the whole ranking)" in result.details["rules"]
    assert "rprec" not in result.scores  # no plain place: details.json only
    by_pytrec_eval = score_submission(reference, run, engine="pytrec_eval")
    assert by_pytrec_eval.details["overall"] == pytest.approx(result.details["overall"], abs=1e-12)
    assert parse_measure("R-Prec").reteco_key([1]) == "rprec"


def test_the_table_is_what_the_python_api_reads_too(success_row, tmp_path):
    result = reteco.evaluate({"q": {"z": 2.0, "b": 1.0}, "r": {"c": 1.0}}, _reference(), measures="Success@10")
    assert result.details["overall"]["success_10"] == 1.0 and result.measures == {"Success@10": 1.0}


def test_the_other_tools_pages_table_of_equal_figures_is_the_tables():
    # pages/other_tools.md: | reteco's key | trec_eval's | ir_measures' | ranx's |
    page = (REPO_ROOT / "pages" / "other_tools.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `([\w.]+)` \| `([\w@-]+)` \| `([\w@]+)` \|$", page, re.M)
    assert len(rows) == len(measure_table.figures([10]))
    for key, trec_eval, ir_measures, ranx in rows:
        measure = parse_measure(trec_eval)
        assert parse_measure(ir_measures) == parse_measure(ranx) == measure and measure.reteco_key([10]) == key
