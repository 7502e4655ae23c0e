"""reteco.evaluate and reteco.evaluate_answers (pages/python_api.md): the numbers of `reteco
score` exactly, from a path, a dict and a DataFrame; typed errors that name the row; the page's
own examples run as doctests in the kit's folder on the synthetic release."""

from __future__ import annotations

import doctest
import json
import re
import subprocess
import sys

import pandas as pd
import pytest
from support.paths import REPO_ROOT

import reteco
from reteco.commands import main

RUN_SUBTRACKS = ("1a", "1b", "2a")


def _cli_scores(capsys, *argv) -> dict:
    assert main(["score", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)


def _lines(path):
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("subtrack", RUN_SUBTRACKS)
def test_a_path_a_dict_and_both_dataframes_give_the_commands_numbers(kit, capsys, subtrack):
    run = kit / "sample_submissions" / subtrack / "run.txt"
    ref = kit / "ref" / subtrack
    cli = _cli_scores(capsys, "--ref", ref, "--res", run)
    assert reteco.evaluate(run, ref).scores == cli
    assert reteco.evaluate(str(run), str(ref)).scores == cli
    rows = _lines(run)
    as_dict: dict = {}
    for topic, _, doc, _, score, _ in rows:
        as_dict.setdefault(topic, {})[doc] = float(score)
    assert reteco.evaluate(as_dict, ref).scores == cli
    # PyTerrier's columns with its 0-based rank; ir_measures' and ranx's without a rank.
    terrier = pd.DataFrame({"qid": [r[0] for r in rows], "docno": [r[2] for r in rows],
                            "rank": [int(r[3]) - 1 for r in rows], "score": [float(r[4]) for r in rows]})
    assert reteco.evaluate(terrier, ref).scores == cli
    ranx_like = terrier.rename(columns={"qid": "query_id", "docno": "doc_id"}).drop(columns="rank")
    assert reteco.evaluate(ranx_like, ref).scores == cli


def test_the_result_marks_the_official_figure_and_has_per_topic_rows(kit):
    result = reteco.evaluate(kit / "sample_submissions" / "1b" / "run.txt", kit / "ref" / "1b")
    assert result.official == "ndcg_10" and result.official_value == result.scores["ndcg_10"]
    assert str(result).splitlines()[0].startswith("ndcg_10 (official)")
    # 1b: one row per query, its steps averaged; the official figure is their mean.
    assert len(result.per_topic) == result.details["units"]
    assert result.per_topic["ndcg_10"].mean() == pytest.approx(result.official_value, abs=1e-12)
    assert result.warnings == [] and result.absent == {}


def test_ties_keep_the_order_given_as_a_files_lines_do(kit):
    # Two documents with one score: the rules break the tie by rank, then by line order; a dict
    # has no rank, so its order is the tie-break, the first written ranked first.
    ref = kit / "ref" / "2a"
    topic, _, relevant, _ = (ref / "qrels.txt").read_text(encoding="utf-8").splitlines()[0].split("\t")
    judged = {line.split("\t")[2] for line in (ref / "qrels.txt").read_text(encoding="utf-8").splitlines()
              if line.startswith(topic + "\t")}
    ranked = [r[2] for r in _lines(kit / "sample_submissions" / "2a" / "run.txt") if r[0] == topic]
    unjudged = next(doc for doc in ranked if doc not in judged)
    assert reteco.evaluate({topic: {relevant: 1.0, unjudged: 1.0}}, ref).per_topic.loc[topic, "mrr"] == 1.0
    assert reteco.evaluate({topic: {unjudged: 1.0, relevant: 1.0}}, ref).per_topic.loc[topic, "mrr"] == 0.5


def test_answers_give_the_commands_numbers_without_the_judge(kit, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answers = kit / "sample_submissions" / "2b" / "answers.jsonl"
    cli = _cli_scores(capsys, "--ref", kit / "ref" / "2b", "--res", answers)
    result = reteco.evaluate_answers(answers, kit / "ref" / "2b")
    assert result.scores == cli and "judge_mean" in result.absent
    records = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert reteco.evaluate_answers(records, kit / "ref" / "2b").scores == cli
    assert reteco.evaluate_answers({r["turn_id"]: r["answer"] for r in records}, kit / "ref" / "2b").scores == cli
    both = kit / "sample_submissions" / "2c"
    cli = _cli_scores(capsys, "--ref", kit / "ref" / "2c", "--res", both)
    assert reteco.evaluate_answers(both, kit / "ref" / "2c").scores == cli
    assert reteco.evaluate_answers(both / "answers.jsonl", kit / "ref" / "2c", run=both / "run.txt").scores == cli


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (42, "run: error: the run must be a path, a {topic: {doc: score}} dict, a pandas DataFrame, a ranx Run or "
             "ir_measures' ScoredDoc items, not int"),
        ({"q": ["d1"]}, "run dict topic 'q': error: expected a {doc: score} dict, not list"),
        ({"q": {"d 1": 1.0}}, "run dict topic 'q', document 'd 1': error: the document id 'd 1' is empty or holds blanks"),
        ({"q": {"d1": "high"}}, "run dict topic 'q', document 'd1': error: the score must be a number, not str 'high'"),
        ({"q": {None: 1.0}}, "run dict topic 'q', document 'None': error: the document id must be a string"),
        (pd.DataFrame({"qid": ["q"], "docid": ["d"], "score": [1.0]}),
         "DataFrame: error: the run's columns are 'qid', 'docid', 'score'; expected (qid, docno, score) or "
         "(query_id, doc_id, score), with an optional rank"),
        (pd.DataFrame({"qid": ["q"], "docno": ["d"], "rank": [1.5], "score": [1.0]}),
         "DataFrame row 0: error: rank '1.5' is not a whole number"),
    ],
)
def test_bad_runs_raise_input_error_naming_the_row_never_type_error(kit, run, expected):
    with pytest.raises(reteco.InputError) as caught:
        reteco.evaluate(run, kit / "ref" / "2a")
    assert str(caught.value).startswith(expected)


def test_a_readers_error_names_the_dataframes_row_not_a_line(kit):
    frame = pd.DataFrame({"query_id": ["biology/2_turn_1"] * 3, "doc_id": ["a", "b", "c"],
                          "score": [3.0, float("nan"), 1.0]}, index=[10, 11, 12])
    with pytest.raises(reteco.InputError) as caught:
        reteco.evaluate(frame, kit / "ref" / "2a")
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("DataFrame row 11: error: ") and "nan" in lines[0]


def test_bad_arguments_are_input_errors(kit):
    with pytest.raises(reteco.InputError, match="unknown measure 'nDCG@x'"):
        reteco.evaluate({"q": {"d": 1.0}}, kit / "ref" / "2a", measures="nDCG@x")
    with pytest.raises(reteco.InputError, match="not int"):
        reteco.evaluate({"q": {"d": 1.0}}, 7)
    with pytest.raises(reteco.InputError, match="use reteco.evaluate_answers"):
        reteco.evaluate({"q": {"d": 1.0}}, kit / "ref" / "2b")
    with pytest.raises(reteco.InputError, match=r"use reteco.evaluate_answers\(answers, reference, run=...\)"):
        reteco.evaluate({"q": {"d": 1.0}}, kit / "ref" / "2c")
    with pytest.raises(reteco.InputError, match="give run="):
        reteco.evaluate_answers({"biology/2_turn_1": "an answer"}, kit / "ref" / "2c")
    with pytest.raises(reteco.InputError, match="record 0"):
        reteco.evaluate_answers([{"turn_id": "biology/2_turn_1", "response": "x"}], kit / "ref" / "2b")


def test_measures_equal_the_leaderboard_keys_they_name(kit, capsys):
    ref, run = kit / "ref" / "2a", kit / "sample_submissions" / "2a" / "run.txt"
    result = reteco.evaluate(run, ref, measures="nDCG@10 P@10 recall.10 map_cut.10 MRR")
    keys = result.details["measures"]["reteco_keys"]
    assert keys == {"nDCG@10": "ndcg_10", "P@10": "p_10", "R@10": "recall_10", "AP@10": "map_10", "RR": "mrr"}
    for name, key in keys.items():
        assert result.measures[name] == pytest.approx(result.scores[key], abs=1e-12)
    assert main(["score", "--ref", str(ref), "--res", str(run), "-m", "nDCG@10 P@10 recall.10 map_cut.10 MRR"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ndcg_10 (official)\tall\t{result.scores['ndcg_10']!r}"
    assert lines[1:] == [f"{name}\tall\t{value!r}" for name, value in result.measures.items()]


def test_import_reteco_loads_no_scoring_until_the_api_is_used():
    code = ("import sys, reteco; assert 'reteco.api' not in sys.modules; reteco.evaluate; "
            "assert 'reteco.api' in sys.modules; print(sorted(reteco.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(sorted(["__version__", "Evaluation", "InputError", "compare", "evaluate", "evaluate_answers"]))


# ---------------------------------------------------------------------------- the page's examples

PAGE = REPO_ROOT / "pages" / "python_api.md"


def page_examples() -> str:
    """The page's ```python blocks, joined: one doctest."""
    return "\n".join(re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M))


def test_the_pages_examples_run_in_the_kits_folder(kit, monkeypatch):
    monkeypatch.chdir(kit)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    text = page_examples()
    assert text.count(">>>") >= 15
    test = doctest.DocTestParser().get_doctest(text, {}, "pages/python_api.md", str(PAGE), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    output: list[str] = []
    runner.run(test, out=output.append)
    assert runner.failures == 0, "".join(output)


def test_the_pages_numbers_are_the_commands(kit, capsys):
    # The figures the page prints come from `reteco score` too, to the last digit.
    text = PAGE.read_text(encoding="utf-8")
    cli = _cli_scores(capsys, "--ref", kit / "ref" / "2a", "--res", kit / "sample_submissions" / "2a" / "run.txt")
    assert f"('ndcg_10', {cli['ndcg_10']!r})" in text and f'"ndcg_10":\n{cli["ndcg_10"]!r}' in text
    assert main(["score", "--ref", str(kit / "ref" / "1b"), "--res", str(kit / "sample_submissions" / "1b"),
                 "-m", "nDCG@10 P@5 R@100 MRR"]) == 0
    printed = dict(line.split("\tall\t") for line in capsys.readouterr().out.splitlines())
    for name in ("nDCG@10", "P@5", "R@100", "RR"):
        assert f"'{name}': {printed[name]}" in text
    assert f"\n{printed['nDCG@10 (mean over steps)']}\n" in text
