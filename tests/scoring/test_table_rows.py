"""Adding a row: a made-up sub-track row and a made-up benchmark row, scored with changes only in
the table (``reteco.subtracks``) and in the row's own reader (here: the reference built in the
test, as ``reteco prepare`` or ``benchmark_reference`` would build it). Nothing in scoring or
outputs names a sub-track: they read the rows (``tests/test_house.py`` checks that no id is
written there)."""

from __future__ import annotations

import json
import math

import pytest

from reteco.formats.qrels import benchmark_reference
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.outputs.results import write_results
from reteco.problems import InputError
from reteco.scoring.submission import score_submission
from reteco.subtracks import BENCHMARKS, RETRIEVAL, RUN, SUBTRACKS, Benchmark, SubTrack

L2 = math.log2
PHASE = {"phase": "local", "name": "local", "split": "dev", "per_topic": True}


@pytest.fixture
def made_up_rows(monkeypatch):
    """Sub-track "3a": retrieval over the parts of a query (a step-wise sub-track), of a made-up
    benchmark "toy" that has it as its one sub-track."""
    row = SubTrack(
        "3a", 3, "Made-up part-wise retrieval", (RUN,), "part", "q7_part2",
        "per query the mean over its parts", RETRIEVAL, "ndcg_10",
        topic_form="<query id>_part<n>", step_topics=True,
    )
    toy = Benchmark("toy", "A made-up benchmark", "binary", (10,), "ndcg_10", ("3a",))
    monkeypatch.setitem(SUBTRACKS, row.id, row)
    monkeypatch.setitem(BENCHMARKS, toy.id, toy)
    return row


def _toy_reference() -> Reference:
    topics = [Topic("d/q_part1", "d", "q_part1", "d/q"), Topic("d/q_part2", "d", "q_part2", "d/q"),
              Topic("d/r_part1", "d", "r_part1", "d/r")]
    judgments = [Judgment("d/q_part1", "a", 1), Judgment("d/q_part2", "b", 1), Judgment("d/r_part1", "c", 1)]
    manifest = {"subtrack": "3a", "benchmark": "toy", "domains": ["d"]}  # relevance, cutoffs: the defaults
    return Reference(manifest, topics, judgments)


def test_a_made_up_subtrack_row_is_scored_from_its_row(made_up_rows, tmp_path):
    reference = _toy_reference()
    assert reference.row is made_up_rows and reference.benchmark.id == "toy"
    run = tmp_path / "run.txt"
    run.write_text("q_part1 Q0 a 1 9 t\nq_part2 Q0 x 1 9 t\nq_part2 Q0 b 2 8 t\n", encoding="utf-8")
    result = score_submission(reference, run)
    # Part-wise (the row's step_topics): q is the mean of its parts (1 and 1/log2(3)), r scores 0.
    assert result.scores["ndcg_10"] == pytest.approx(((1 + 1 / L2(3)) / 2 + 0) / 2, abs=1e-15)
    assert [u["topics"] for u in result.per_topic["per_unit"]] == [2, 1]
    assert [s["step"] for s in result.per_topic["per_step"]] == ["d/q_part1", "d/q_part2", "d/r_part1"]
    assert "temporal" not in result.details  # the row's keys hold no temporal diagnostic
    # The outputs read the row's keys: every required key written, none reported absent.
    absent = write_results(tmp_path / "out", result, "3a", PHASE)
    assert absent == {} and set(json.loads((tmp_path / "out" / "scores.json").read_text())) >= set(RETRIEVAL)


def test_a_made_up_subtrack_row_names_its_topics_in_messages(made_up_rows, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("nothing_like_it Q0 a 1 9 t\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        score_submission(_toy_reference(), run)
    assert "sub-track 3a expects part ids (<query id>_part<n>)" in str(raised.value)


def test_a_made_up_benchmark_row_is_scored_with_its_preset(monkeypatch, tmp_path):
    toyir = Benchmark("toyir", "A made-up graded benchmark", "graded", (3,), "ndcg_3")
    monkeypatch.setitem(BENCHMARKS, toyir.id, toyir)
    # Its reader: plain qrels, built with the row's preset (as `reteco score --benchmark` does).
    reference = benchmark_reference([Judgment("t", "a", 2), Judgment("t", "b", 1)], benchmark=toyir.id,
                                    cutoffs=list(toyir.cutoffs), official=toyir.official)
    assert reference.row is None and reference.benchmark is toyir
    run = tmp_path / "run.txt"
    run.write_text("t Q0 b 1 9 x\nt Q0 a 2 8 x\n", encoding="utf-8")
    result = score_submission(reference, run)
    assert list(result.scores)[0] == "ndcg_3"
    assert set(result.scores) == {"ndcg_3", "recall_3", "map_3", "p_3", "mrr"}
    # Graded gains (the row's relevance): DCG = 1 + 2/log2(3), ideal 2 + 1/log2(3).
    assert result.scores["ndcg_3"] == pytest.approx((1 + 2 / L2(3)) / (2 + 1 / L2(3)), abs=1e-15)
    assert result.details["reference"]["cutoffs"] == [3]
