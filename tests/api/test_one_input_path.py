"""One input path for files and objects (issue 35, points 5 and 6): evaluate_answers opens a zip
or a folder given as the run (or the answers) as reteco score does; errors from DataFrames, dicts
and lists of records are grouped and counted like a file's, in row order, naming the rows."""

from __future__ import annotations

import json
import zipfile

import pandas as pd
import pytest

import reteco


@pytest.fixture(scope="module")
def answers(kit):
    return [json.loads(line) for line in (kit / "sample_submissions/2c/answers.jsonl").read_text().splitlines()]


def test_a_zip_or_a_folder_given_as_the_run_is_opened_as_a_submission(kit, answers, tmp_path):
    sample = kit / "sample_submissions/2c"
    expected = reteco.evaluate_answers(sample, kit / "ref/2c").scores
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as archive:
        archive.write(sample / "run.txt", "run.txt")
        archive.write(sample / "answers.jsonl", "answers.jsonl")
    for run in (tmp_path / "sub.zip", sample, sample / "run.txt", str(tmp_path / "sub.zip")):
        assert reteco.evaluate_answers(answers, kit / "ref/2c", run=run).scores == expected, run
    # and the answers from a zip beside a run given apart
    assert reteco.evaluate_answers(tmp_path / "sub.zip", kit / "ref/2c", run=sample / "run.txt").scores == expected


def test_a_list_of_bad_records_reads_as_one_grouped_line_with_the_count_of_the_rest(kit):
    records = [{"turn_id": f"biology/2_turn_{i}", "response": "x"} for i in range(30)]
    with pytest.raises(reteco.InputError) as raised:
        reteco.evaluate_answers(records, kit / "ref/2b")
    lines = str(raised.value).splitlines()
    assert lines == [
        "answers record 0: error: missing the field \"answer\"; found 'response' in its place: rename it \"answer\" "
        "(the same error in 30 places: record 0, record 1, record 2, record 3, record 4, ...)"
    ]


def test_a_dataframes_errors_are_all_listed_in_row_order_and_grouped(kit):
    lines = [line.split() for line in (kit / "sample_submissions/2a/run.txt").read_text().splitlines()]
    frame = pd.DataFrame({"qid": [r[0] for r in lines], "docno": [r[2] for r in lines],
                          "rank": [int(r[3]) for r in lines], "score": [float(r[4]) for r in lines]}).astype({"rank": object})
    frame.loc[3, "docno"] = "two words"
    frame.loc[7, "docno"] = "three more words"
    frame.loc[10, "rank"] = 1.5
    with pytest.raises(reteco.InputError) as raised:
        reteco.evaluate(frame, kit / "ref/2a")
    assert str(raised.value).splitlines() == [
        "DataFrame row 3: error: the docno (document id) 'two words' is empty or holds blanks, which a TREC line cannot "
        "hold (an error of this kind in 2 places: row 3, row 7)",
        "DataFrame row 10: error: rank '1.5' is not a whole number",
    ]


def test_a_dicts_errors_are_all_listed(kit):
    with pytest.raises(reteco.InputError) as raised:
        reteco.evaluate({"biology/2_turn_1": {"a b": 1.0, "c": "high"}, "x y": {"d": 1.0}}, kit / "ref/2a")
    assert str(raised.value).splitlines() == [
        "run dict topic 'biology/2_turn_1', document 'a b': error: the document id 'a b' is empty or holds blanks, "
        "which a TREC line cannot hold",
        "run dict topic 'biology/2_turn_1', document 'c': error: the score must be a number, not str 'high'",
        "run dict topic 'x y': error: the topic id 'x y' is empty or holds blanks, which a TREC line cannot hold",
    ]


def test_a_ranx_run_and_ir_measures_scored_docs_give_the_files_figures(kit):
    ranx = pytest.importorskip("ranx")
    ir_measures = pytest.importorskip("ir_measures")
    path = kit / "sample_submissions/2a/run.txt"
    expected = reteco.evaluate(path, kit / "ref/2a").scores
    assert reteco.evaluate(ranx.Run.from_file(str(path), kind="trec"), kit / "ref/2a").scores == expected
    assert reteco.evaluate(list(ir_measures.read_trec_run(str(path))), kit / "ref/2a").scores == expected
    assert reteco.evaluate(ir_measures.read_trec_run(str(path)), kit / "ref/2a").scores == expected  # a generator
    bad = [ir_measures.ScoredDoc("biology/2_turn_1", "a b", 1.0), ir_measures.ScoredDoc("biology/2_turn_1", "c", 1.0)]
    with pytest.raises(reteco.InputError, match="ir_measures run row 0: error: the doc_id"):
        reteco.evaluate(bad, kit / "ref/2a")
