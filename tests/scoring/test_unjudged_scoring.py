"""Holes in the qrels (``reteco.scoring.judged``, ``reteco.metrics.judged``): unjudged_10, the
augmented and the condensed nDCG@10, against hand-computed values, pytrec_eval (trec_eval 9.x:
``-J`` condensed lists, judged counts) and an independent implementation of ir_measures'
Judged@10 (ir_measures is not a dependency).

Tie-breaking: reteco decides the ranking (score, then rank, then line order); trec_eval re-sorts
by score and breaks ties by doc id. The cross-checks feed pytrec_eval the decided ranking as
strictly descending integer scores, so both see the same order, ties included."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.relevance_round import RelevanceRound
from reteco.metrics.judged import condensed_rows, unjudged_at_k
from reteco.metrics.ranking import RankedRows
from reteco.problems import InputError
from reteco.scoring.judged import NO_ROUND, judged_diagnostics
from reteco.scoring.retrieval import score_run

L2 = math.log2


def make_reference(topics, qrels, subtrack="1a"):
    """A binary reference without a corpus; topics: (domain, topic id, unit key or None, None)."""
    objs = [Topic(f"{d}/{t}", d, t, unit or f"{d}/{t}", "", None) for d, t, unit, _ in topics]
    manifest = {"subtrack": subtrack, "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": sorted({o.domain for o in objs})}
    return Reference(manifest, objs, [Judgment(*j) for j in qrels], None, None)


def run_bytes(lines):
    return "".join(f"{t} Q0 {d} {rank} {score!r} tag\n" for t, d, rank, score in lines).encode()


def write_round(tmp_path, labels, name="round.qrels"):
    path = tmp_path / name
    path.write_text("".join(f"{k} 0 {d} {level}\n" for k, d, level in labels))
    return RelevanceRound.read(path)


# ---------------------------------------------------------------- independent implementations


def judged_at_k(qrels: dict, ranking: list[str], k: int) -> float:
    """ir_measures' Judged@k (after OpenNIR): judged documents in the top k, divided by k."""
    return sum(1 for d in ranking[:k] if d in qrels) / k


def ndcg_condensed(qrels: dict, ranking: list[str], k: int) -> float:
    """Sakai's condensed nDCG@k written out: drop unjudged, cut at k, linear gains, log2(i + 1)."""
    kept = [d for d in ranking if d in qrels][:k]
    dcg = sum(qrels[d] / L2(i + 2) for i, d in enumerate(kept))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / L2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


# ---------------------------------------------------------------- hand-computed


def hand_case(tmp_path):
    # Official qrels: r1, r2 relevant. Round: h1 = 3, h2 = 1 (below threshold 2), n1 = 0.
    ref = make_reference([("d", "q", None, None)], [("d/q", "r1", 1), ("d/q", "r2", 1)])
    run = run_bytes([("q", d, i + 1, 10.0 - i) for i, d in enumerate(["n1", "r1", "h1", "x1", "h2", "r2"])])
    labels = write_round(tmp_path, [("d/q", "h1", 3), ("d/q", "h2", 1), ("d/q", "n1", 0)])
    return ref, run, labels


def test_hand_computed_without_round(tmp_path):
    ref, run, _ = hand_case(tmp_path)
    result = score_run(ref, run)
    section = result.details["unjudged"]
    assert section["overall"]["unjudged_10"] == pytest.approx(1 - 2 / 10, abs=1e-15)
    # Positive-only qrels: unjudged_10 is 1 - P@10, which the section says.
    assert section["overall"]["unjudged_10"] == pytest.approx(1 - result.scores["p_10"], abs=1e-15)
    assert "1 - P@10" in section["judged_means"]
    for key in ("ndcg_10_augmented", "ndcg_10_condensed", "round_labelled_10"):
        assert section["absent"][key] == NO_ROUND and key not in section["overall"]
    assert "unjudged_10" not in result.scores  # a diagnostic, never a scores.json key


def test_hand_computed_with_round(tmp_path):
    ref, run, labels = hand_case(tmp_path)
    result = score_run(ref, run, relevance_round=labels)
    overall = result.details["unjudged"]["overall"]
    assert overall["unjudged_10"] == pytest.approx(1 - 5 / 10, abs=1e-15)  # n1 r1 h1 h2 r2 judged; x1 not
    assert overall["round_labelled_10"] == pytest.approx(3 / 10, abs=1e-15)  # n1 h1 h2
    ideal = 3 * (1 + 1 / L2(3) + 1 / L2(4))  # r1, r2 (gold: 3) and h1 (3)
    # Ranks: n1 1, r1 2, h1 3, x1 4, h2 5 (label 1 < 2: gain 0), r2 6.
    assert overall["ndcg_10_augmented"] == pytest.approx((3 / L2(3) + 3 / L2(4) + 3 / L2(7)) / ideal, abs=1e-15)
    # Condensed: x1 removed, r2 moves up to rank 5.
    assert overall["ndcg_10_condensed"] == pytest.approx((3 / L2(3) + 3 / L2(4) + 3 / L2(6)) / ideal, abs=1e-15)
    assert result.scores["ndcg_10"] == pytest.approx((1 / L2(3) + 1 / L2(7)) / (1 + 1 / L2(3)), abs=1e-15)  # untouched
    assert result.details["unjudged"]["round"]["fingerprint"] == labels.fingerprint
    assert result.per_topic["per_unit"][0]["unjudged_10"] == pytest.approx(0.5, abs=1e-15)


def test_official_qrels_win_over_the_round(tmp_path):
    # The round labels a gold document 0: it stays gold (gain 3) and is not counted as the round's.
    ref = make_reference([("d", "q", None, None)], [("d/q", "r1", 1)])
    run = run_bytes([("q", "r1", 1, 2.0), ("q", "a", 2, 1.0)])
    labels = write_round(tmp_path, [("d/q", "r1", 0), ("d/q", "a", 2)])
    overall = score_run(ref, run, relevance_round=labels).details["unjudged"]["overall"]
    assert overall["round_labelled_10"] == pytest.approx(1 / 10, abs=1e-15)
    assert overall["ndcg_10_augmented"] == pytest.approx((3 + 2 / L2(3)) / (3 + 2 / L2(3)), abs=1e-15)


def test_ties_follow_the_official_rules_not_doc_ids(tmp_path):
    # Equal scores: rank decides ('z' before 'a'), as for the official nDCG@10; trec_eval would put 'a' first.
    ref = make_reference([("d", "q", None, None)], [("d/q", "a", 1)])
    run = run_bytes([("q", "z", 1, 1.0), ("q", "u", 2, 1.0), ("q", "a", 3, 1.0)])
    labels = write_round(tmp_path, [("d/q", "z", 0)])
    overall = score_run(ref, run, relevance_round=labels).details["unjudged"]["overall"]
    assert overall["ndcg_10_condensed"] == pytest.approx((3 / L2(3)) / 3, abs=1e-15)  # z, a: a at condensed rank 2
    assert overall["ndcg_10_augmented"] == pytest.approx((3 / L2(4)) / 3, abs=1e-15)


def test_1b_averages_steps_per_query_then_queries(tmp_path):
    topics = [("d", "q_step1", "d/q", None), ("d", "q_step2", "d/q", None), ("d", "p_step1", "d/p", None)]
    ref = make_reference(topics, [("d/q_step1", "g", 1), ("d/q_step2", "g", 1), ("d/p_step1", "g", 1)], subtrack="1b")
    run = run_bytes([("q_step1", "g", 1, 2.0), ("q_step1", "x", 2, 1.0), ("p_step1", "y", 1, 1.0)])
    overall = score_run(ref, run).details["unjudged"]["overall"]
    # q_step1: 1 - 1/10; q_step2 (nothing ranked): 1; p_step1: 1. Query q: 0.95, query p: 1.
    assert overall["unjudged_10"] == pytest.approx((0.95 + 1.0) / 2, abs=1e-15)


def test_round_of_another_subtrack_is_refused(tmp_path):
    ref, run, _ = hand_case(tmp_path)
    labels = write_round(tmp_path, [("other/q", "h1", 3)], "foreign.qrels")
    with pytest.raises(InputError, match="none of the round's topics"):
        score_run(ref, run, relevance_round=labels)


def test_label_off_the_scale_is_refused_naming_the_file(tmp_path):
    (tmp_path / "bad.qrels").write_text("d/q 0 a 4\n")
    with pytest.raises(InputError, match="bad.qrels.*above 3"):
        RelevanceRound.read(tmp_path / "bad.qrels")


# ---------------------------------------------------------------- cross-checks


def random_case(seed: int):
    rng = random.Random(seed)
    n_topics = 6
    docs = [f"d{i}" for i in range(40)]
    qrels, labels, rankings, lines = [], [], {}, []
    for t in range(n_topics):
        key = f"x/t{t}"
        pool = rng.sample(docs, 20)
        for d in pool[:rng.randint(0, 4)]:
            qrels.append((key, d, 1))
        for d in pool[5:5 + rng.randint(0, 8)]:
            labels.append((key, d, rng.randint(0, 3)))
        if t == n_topics - 1:
            continue  # a reference topic the run leaves out: scores count it
        ranking = rng.sample(docs, rng.randint(1, 25))
        rankings[key] = ranking
        # Scores with ties; ranks decide them (the official rule), so the decided order is `ranking`.
        lines += [(f"t{t}", d, i + 1, float(25 - i // 3)) for i, d in enumerate(ranking)]
    ref = make_reference([("x", f"t{t}", None, None) for t in range(n_topics)], qrels)
    return ref, run_bytes(lines), qrels, labels, rankings


@pytest.mark.parametrize("seed", range(8))
def test_equal_to_pytrec_eval_and_judged_at_10(tmp_path, seed):
    ref, run, qrels, labels, rankings = random_case(seed)
    relevance_round = write_round(tmp_path, labels)
    result = score_run(ref, run, relevance_round=relevance_round)
    per_unit = result.per_topic["per_unit"]
    official = {}
    for key, d, _ in qrels:
        official.setdefault(key, {})[d] = 3
    augmented = {key: dict(docs) for key, docs in official.items()}
    judged = {key: dict(docs) for key, docs in official.items()}
    for key, d, level in labels:
        if d not in official.get(key, {}):
            augmented.setdefault(key, {})[d] = level if level >= 2 else 0
            judged.setdefault(key, {})[d] = level
    keys = [t.key for t in ref.topics]
    # trec_eval -J on the decided order (strictly descending scores), graded augmented qrels.
    as_run = {k: {d: float(len(r) - i) for i, d in enumerate(r)} for k, r in rankings.items()}
    with_docs = {k: v for k, v in augmented.items() if v}
    condensed = pytrec_eval.RelevanceEvaluator(with_docs, {"ndcg_cut.10"}, judged_docs_only_flag=True).evaluate(as_run)
    full = pytrec_eval.RelevanceEvaluator(with_docs, {"ndcg_cut.10"}).evaluate(
        {k: {d: float(len(r) - i) for i, d in enumerate(r[:10])} for k, r in rankings.items()}
    )
    counts = pytrec_eval.RelevanceEvaluator(with_docs, {"num_rel_ret", "num_nonrel_judged_ret"}).evaluate(
        {k: {d: float(len(r) - i) for i, d in enumerate(r[:10])} for k, r in rankings.items()}
    )
    for i, key in enumerate(keys):
        row = per_unit[i]
        ranking = rankings.get(key, [])
        assert row["unjudged_10"] == pytest.approx(1 - judged_at_k(judged.get(key, {}), ranking, 10), abs=1e-9)
        c = counts.get(key, {})
        trec_judged = c.get("num_rel_ret", 0.0) + c.get("num_nonrel_judged_ret", 0.0)
        assert row["unjudged_10"] == pytest.approx(1 - trec_judged / 10, abs=1e-9)
        assert row["ndcg_10_condensed"] == pytest.approx(condensed.get(key, {}).get("ndcg_cut_10", 0.0), abs=1e-9)
        assert row["ndcg_10_condensed"] == pytest.approx(ndcg_condensed(augmented.get(key, {}), ranking, 10), abs=1e-9)
        assert row["ndcg_10_augmented"] == pytest.approx(full.get(key, {}).get("ndcg_cut_10", 0.0), abs=1e-9)
        assert all(math.isfinite(v) for v in row.values() if isinstance(v, float))


def test_unjudged_at_k_and_condensed_rows_by_hand():
    # topic 0: judged, unjudged, judged; topic 1: nothing ranked; topic 2: one unjudged.
    rows = RankedRows(np.array([0, 0, 0, 2]), np.array([0, 1, 2, 0]), np.array([1.0, 0.0, 2.0, 0.0]), 3)
    judged = np.array([True, False, True, False])
    assert unjudged_at_k(rows, judged, 10).tolist() == pytest.approx([0.8, 1.0, 1.0], abs=1e-15)
    assert unjudged_at_k(rows, judged, 2).tolist() == pytest.approx([0.5, 1.0, 1.0], abs=1e-15)
    condensed = condensed_rows(rows, judged)
    assert condensed.topic.tolist() == [0, 0] and condensed.position.tolist() == [0, 1]
    assert condensed.gain.tolist() == [1.0, 2.0]


def test_diagnostics_of_a_run_without_rows_are_finite(tmp_path):
    ref = make_reference([("d", "q", None, None), ("d", "p", None, None)], [("d/q", "a", 1)])
    ranked = score_run(ref, run_bytes([("q", "b", 1, 1.0)])).ranked
    result = judged_diagnostics(ref, ranked, write_round(tmp_path, [("d/q", "b", 2)]))
    assert result.overall["unjudged_10"] == pytest.approx((0.9 + 1.0) / 2, abs=1e-15)
    assert all(math.isfinite(v) for v in result.overall.values())


def test_graded_qrels_with_judged_non_relevant_documents(tmp_path):
    # FactIR-like graded qrels: 'n' judged 0 counts as judged; the words no longer say 1 - P@10.
    topics = [Topic("d/q", "d", "q", "d/q", "", None)]
    manifest = {"subtrack": None, "benchmark": "graded-test", "relevance": "graded", "cutoffs": [10],
                "official": "ndcg_10", "domains": ["d"]}
    ref = Reference(manifest, topics, [Judgment("d/q", "a", 2), Judgment("d/q", "n", 0)], None, None)
    result = score_run(ref, run_bytes([("q", "n", 1, 3.0), ("q", "x", 2, 2.0), ("q", "a", 3, 1.0)]))
    section = result.details["unjudged"]
    assert section["overall"]["unjudged_10"] == pytest.approx(1 - 2 / 10, abs=1e-15)
    assert "0 included" in section["judged_means"] and "P@10" not in section["judged_means"]
    # With a round: graded official gains keep their level (2), a round label >= 2 its label.
    labels = write_round(tmp_path, [("d/q", "x", 3)])
    overall = score_run(ref, run_bytes([("q", "n", 1, 3.0), ("q", "x", 2, 2.0), ("q", "a", 3, 1.0)]),
                        relevance_round=labels).details["unjudged"]["overall"]
    assert overall["ndcg_10_augmented"] == pytest.approx((3 / L2(3) + 2 / L2(4)) / (3 + 2 / L2(3)), abs=1e-15)
    assert overall["ndcg_10_condensed"] == pytest.approx(overall["ndcg_10_augmented"], abs=1e-15)  # nothing unjudged
