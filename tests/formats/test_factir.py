"""FactIR preset: graded qrels, k in every key, stance recall; FactIR's real files when present."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from support.paths import SHARED

from reteco.formats.factir import convert_factir
from reteco.formats.qrels import FACTIR_CUTOFFS, benchmark_reference, read_qrels
from reteco.formats.reference import Judgment
from reteco.problems import InputError
from reteco.scoring.retrieval import score_run

FACTIR = SHARED / "data" / "factir"
needs_factir = pytest.mark.skipif(not (FACTIR / "evidence.csv").exists(), reason="FactIR files not in ../shared/data/factir")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "reteco", *map(str, args)], capture_output=True, text=True)


def test_keys_carry_k_and_stance_recall_by_hand(tmp_path):
    judgments = [Judgment("c1", "a", 2), Judgment("c1", "b", 1), Judgment("c1", "x", 0), Judgment("c2", "d", 1)]
    stance = {("c1", "a"): "Supports", ("c1", "b"): "Refutes", ("c2", "d"): "Supports"}
    ref = benchmark_reference(judgments, benchmark="factir", cutoffs=FACTIR_CUTOFFS, official="ndcg_10", stance=stance)
    run = b"c1 Q0 b 1 3 t\nc1 Q0 x 2 2 t\nc1 Q0 a 3 1 t\nc2 Q0 z 1 1 t\n"
    scores = score_run(ref, run).scores
    assert list(scores)[0] == "ndcg_10"
    for k in FACTIR_CUTOFFS:
        assert f"ndcg_{k}" in scores and f"recall_{k}" in scores
    c1_ndcg5 = (1 + 2 / math.log2(4)) / (2 + 1 / math.log2(3))
    assert scores["ndcg_5"] == pytest.approx(c1_ndcg5 / 2, abs=1e-15)
    assert scores["ndcg_1"] == pytest.approx((1 / 2) / 2, abs=1e-15)  # gain 1 where 2 was ideal
    assert scores["recall_1"] == pytest.approx((1 / 2) / 2, abs=1e-15)
    # supports: c1 has 'a' (rank 3), c2 has 'd' (not ranked); refutes: c1 has 'b' (rank 1)
    assert scores["recall_1_supports"] == 0.0
    assert scores["recall_5_supports"] == pytest.approx((1 + 0) / 2)
    assert scores["recall_1_refutes"] == 1.0


def test_qrels_forms_and_errors(tmp_path):
    text = tmp_path / "q.txt"
    text.write_text("c1 0 a 2\nc1\t0\tb\t1\n\nc1 0 a 1\n")
    assert sorted((j.key, j.doc_id, j.relevance) for j in read_qrels(text)) == [("c1", "a", 2), ("c1", "b", 1)]
    as_json = tmp_path / "q.json"
    as_json.write_text(json.dumps({"c1": {"a": 2, "b": 0}}))
    assert sorted((j.doc_id, j.relevance) for j in read_qrels(as_json)) == [("a", 2), ("b", 0)]
    bad = tmp_path / "bad.txt"
    bad.write_text("c1 0 a 1\nc1 0 b high\nc1 a 1\n")
    with pytest.raises(InputError) as caught:
        read_qrels(bad)
    assert caught.value.problems.lines() == [
        "bad.txt:2: error: relevance 'high' is not an integer >= 0",
        "bad.txt:3: error: expected 4 columns: topic iteration docid relevance, found 3",
    ]


@needs_factir
def test_factir_files_convert_to_the_documented_counts():
    judgments, stance, topics = convert_factir(FACTIR / "evidence.csv", FACTIR / "qrel_processed.json", "claim")
    assert len(topics) == 100 and len(judgments) == 1389
    assert len({j.key for j in judgments if j.relevance > 0}) == 85
    assert set(stance.values()) == {"Supports", "Refutes"}
    judgments, _, topics = convert_factir(FACTIR / "evidence.csv", FACTIR / "qrel_processed.json", "row")
    assert len(topics) == 1412 and sum(j.relevance for j in judgments) == 474


@needs_factir
@pytest.mark.parametrize("grouping, cap", [("claim", 85 / 100), ("row", 474 / 1412)])
def test_a_perfect_run_reaches_exactly_the_cap(tmp_path, grouping, cap):
    done = cli("factir-qrels", "--evidence", FACTIR / "evidence.csv", "--qrels-json", FACTIR / "qrel_processed.json",
               "--by", grouping, "--out", tmp_path / "q")
    assert done.returncode == 0, done.stderr
    lines = [l.split("\t") for l in (tmp_path / "q" / "qrels.txt").read_text().splitlines()]
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{t} Q0 {d} 1 1 perfect\n" for t, _, d, r in lines if int(r) > 0))
    done = cli("score", "--benchmark", "factir", "--qrels", tmp_path / "q" / "qrels.txt",
               "--stance", tmp_path / "q" / "stance.tsv", "--res", run, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    # topics without a relevant document score 0 and count; every other topic scores 1
    for k in FACTIR_CUTOFFS[1:]:
        assert scores[f"ndcg_{k}"] == pytest.approx(cap, abs=1e-12)
    assert scores["recall_100"] == pytest.approx(cap, abs=1e-12)
    assert scores["recall_100_supports"] == pytest.approx(1.0) and scores["recall_100_refutes"] == pytest.approx(1.0)
