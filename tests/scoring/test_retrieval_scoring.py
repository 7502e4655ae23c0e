"""Retrieval scoring against hand-computed values, an independent implementation and pytrec_eval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import independent_scorer as ind

from reteco.formats.corpus_index import DocIdIndex, DuplicateMap
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.problems import InputError
from reteco.scoring.retrieval import score_run
from reteco.scoring.rules import _blocks_in_topic_order, _topics_grouped_in_rule_order

L2 = math.log2


def make_reference(topics, judgments, corpus=None, subtrack="1a", relevance="binary", cutoffs=(10,), dup=None):
    """topics: list of (domain, topic_id, unit or None, depth or None)."""
    topic_objs = []
    for domain, tid, unit, depth in topics:
        key = f"{domain}/{tid}"
        topic_objs.append(Topic(key, domain, tid, unit or key, "", depth))
    domains = sorted({t.domain for t in topic_objs})
    index = None
    if corpus is not None:
        index = DocIdIndex.from_pairs([(d, doc) for d, docs in corpus.items() for doc in docs], domains)
    manifest = {
        "subtrack": subtrack,
        "benchmark": "reteco" if relevance == "binary" else "graded-test",
        "relevance": relevance,
        "cutoffs": list(cutoffs),
        "official": f"ndcg_{cutoffs[0]}" if relevance != "binary" else "ndcg_10",
        "domains": domains,
    }
    js = [Judgment(k, d, r) for k, d, r in judgments]
    return Reference(manifest, topic_objs, js, index, DuplicateMap.from_mapping(dup) if dup else None)


def run_bytes(lines):
    return "".join(f"{t} Q0 {d} {r} {s!r} tag\n" for t, d, r, s in lines).encode()


# ---------------------------------------------------------------- hand-computed cases


def test_hand_computed_binary_ranking():
    # ranking n1, r1, n2, r2 against three relevant documents r1 r2 r3
    ref = make_reference([("d", "q", None, None)], [("d/q", "r1", 1), ("d/q", "r2", 1), ("d/q", "r3", 1)])
    run = run_bytes([("q", "n1", 1, 4.0), ("q", "r1", 2, 3.0), ("q", "n2", 3, 2.0), ("q", "r2", 4, 1.0)])
    scores = score_run(ref, run).scores
    assert scores["ndcg_10"] == pytest.approx((1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3) + 1 / L2(4)), abs=1e-15)
    assert scores["map_10"] == pytest.approx((1 / 2 + 2 / 4) / 3, abs=1e-15)  # divides by R = 3
    assert scores["recall_10"] == pytest.approx(2 / 3, abs=1e-15)
    assert scores["p_10"] == pytest.approx(2 / 10, abs=1e-15)
    assert scores["mrr"] == pytest.approx(1 / 2, abs=1e-15)


def test_ideal_dcg_is_capped_at_ten_relevant_documents():
    qrels = [("d/q", f"r{i}", 1) for i in range(15)]
    ref = make_reference([("d", "q", None, None)], qrels)
    run = run_bytes([("q", f"r{i}", i + 1, 100.0 - i) for i in range(10)])
    scores = score_run(ref, run).scores
    assert scores["ndcg_10"] == pytest.approx(1.0, abs=1e-15)
    assert scores["recall_10"] == pytest.approx(10 / 15, abs=1e-15)
    assert scores["map_10"] == pytest.approx(10 / 15, abs=1e-15)


def test_ties_broken_by_rank_then_file_order_never_by_doc_id():
    ref = make_reference([("d", "q", None, None)], [("d/q", "a", 1)])
    # Same score: rank decides, so 'z' (rank 1) precedes 'a' (rank 2): relevant at rank 2.
    tied_by_rank = run_bytes([("q", "a", 2, 5.0), ("q", "z", 1, 5.0)])
    assert score_run(ref, tied_by_rank).scores["mrr"] == pytest.approx(0.5)
    # Same score and rank: file order decides ('z' first), although trec_eval would put 'z' first
    # only by reverse doc-id order: flip the file order to see the rule, not the id, decides.
    tied_fully = run_bytes([("q", "a", 1, 5.0), ("q", "z", 1, 5.0)])
    assert score_run(ref, tied_fully).scores["mrr"] == pytest.approx(1.0)


def test_scores_closer_than_float32_precision_are_not_ties():
    # pytrec_eval stores scores as 32-bit floats: these two would tie there and be ordered by doc id.
    ref = make_reference([("d", "q", None, None)], [("d/q", "a", 1)])
    run = run_bytes([("q", "z", 1, 1.0), ("q", "a", 2, 1.00000001)])
    for engine in ("numpy", "pytrec_eval"):
        assert score_run(ref, run, engine=engine).scores["mrr"] == pytest.approx(1.0)


def test_score_order_beats_rank_column_and_warns():
    ref = make_reference([("d", "q", None, None)], [("d/q", "a", 1)])
    run = run_bytes([("q", "z", 1, 1.0), ("q", "a", 2, 9.0)])
    result = score_run(ref, run)
    assert result.scores["mrr"] == pytest.approx(1.0)
    assert result.details["counts"]["topics_rank_score_disagree"] == 1
    assert any("disagrees with the scores" in str(p) for p in result.problems)


def test_rank_disagreement_counts_lines_dropped_for_unknown_ids():
    # The file as written: 'ghost' (not in the corpus) has rank 1 below a score-9 line of rank 2.
    ref = make_reference([("d", "q", None, None), ("d", "r", None, None)], [("d/q", "a", 1)], corpus={"d": {"a", "b"}})
    grouped = run_bytes([("q", "a", 2, 9.0), ("q", "ghost", 1, 5.0), ("r", "b", 1, 1.0)])
    shuffled = run_bytes([("r", "b", 1, 1.0), ("q", "ghost", 1, 5.0), ("q", "a", 2, 9.0)])
    for run in (grouped, shuffled):
        result = score_run(ref, run)
        assert result.details["counts"]["topics_rank_score_disagree"] == 1
        assert result.details["counts"]["unknown_doc_ids"] == 1
        assert result.scores["mrr"] == pytest.approx(0.5)  # q: 1.0, r: 0 (no relevant document)
    in_order = run_bytes([("q", "a", 1, 9.0), ("q", "ghost", 2, 5.0), ("r", "b", 1, 1.0)])
    assert score_run(ref, in_order).details["counts"]["topics_rank_score_disagree"] == 0


def test_unknown_duplicate_and_remapped_ids():
    corpus = {"d": {"a", "b", "kept"}}
    ref = make_reference(
        [("d", "q", None, None)], [("d/q", "kept", 1), ("d/q", "b", 1)], corpus=corpus, dup={"old": "kept"}
    )
    # 'x' unknown (dropped), 'a' repeated (second dropped), 'old' is the v1.0 id of 'kept' and
    # collides with the explicit 'kept' line after mapping (dropped as duplicate).
    run = run_bytes(
        [("q", "x", 1, 9.0), ("q", "a", 2, 8.0), ("q", "a", 3, 7.0), ("q", "old", 4, 6.0), ("q", "kept", 5, 5.0), ("q", "b", 6, 4.0)]
    )
    result = score_run(ref, run)
    counts = result.details["counts"]
    assert (counts["unknown_doc_ids"], counts["duplicate_doc_ids"], counts["doc_ids_remapped"]) == (1, 2, 1)
    # decided ranking: a, kept(old), b -> relevant at ranks 2 and 3
    assert result.scores["ndcg_10"] == pytest.approx((1 / L2(3) + 1 / L2(4)) / (1 + 1 / L2(3)), abs=1e-15)


def test_doc_from_another_domain_is_unknown():
    corpus = {"bio": {"b1"}, "geo": {"g1"}}
    ref = make_reference(
        [("bio", "2_turn_1", None, 1), ("geo", "2_turn_1", None, 1)],
        [("bio/2_turn_1", "b1", 1), ("geo/2_turn_1", "g1", 1)],
        corpus=corpus,
        subtrack="2a",
    )
    run = run_bytes([("bio/2_turn_1", "g1", 1, 2.0), ("bio/2_turn_1", "b1", 2, 1.0), ("geo/2#turn1", "g1", 1, 1.0)])
    result = score_run(ref, run)
    assert result.details["counts"]["unknown_doc_ids"] == 1
    assert result.scores["ndcg_10"] == pytest.approx(1.0)


def test_missing_topics_score_zero_and_count():
    ref = make_reference([("d", "q1", None, None), ("d", "q2", None, None)], [("d/q1", "a", 1), ("d/q2", "b", 1)])
    result = score_run(ref, run_bytes([("q1", "a", 1, 1.0)]))
    assert result.scores["ndcg_10"] == pytest.approx(0.5)
    assert result.details["counts"]["topics_missing"] == 1


def test_stepwise_averages_steps_within_query_first():
    # query A has steps A_step1 (perfect) and A_step2 (nothing); query B one perfect step.
    topics = [("d", "A_step1", "d/A", None), ("d", "A_step2", "d/A", None), ("d", "B_step1", "d/B", None)]
    qrels = [("d/A_step1", "a1", 1), ("d/A_step2", "a2", 1), ("d/B_step1", "b1", 1)]
    ref = make_reference(topics, qrels, subtrack="1b")
    result = score_run(ref, run_bytes([("A_step1", "a1", 1, 1.0), ("B_step1", "b1", 1, 1.0)]))
    assert result.scores["ndcg_10"] == pytest.approx((0.5 + 1.0) / 2)  # not the step mean 2/3
    assert result.details["step_mean"]["ndcg_10"] == pytest.approx(2 / 3)


def test_domain_macro_differs_from_unit_mean():
    topics = [("a", "q1", None, None), ("a", "q2", None, None), ("b", "q3", None, None)]
    qrels = [("a/q1", "x", 1), ("a/q2", "y", 1), ("b/q3", "z", 1)]
    ref = make_reference(topics, qrels)
    result = score_run(ref, run_bytes([("q1", "x", 1, 1.0), ("q2", "y", 1, 1.0)]))
    assert result.scores["ndcg_10"] == pytest.approx(2 / 3)
    assert result.scores["ndcg_10_domain_macro"] == pytest.approx((1.0 + 0.0) / 2)


def test_depth_groups():
    topics = [("d", f"c_turn_{n}", None, n) for n in range(1, 8)]
    qrels = [(f"d/c_turn_{n}", "x", 1) for n in range(1, 8)]
    ref = make_reference(topics, qrels, subtrack="2a")
    # only turns 1 and 6 retrieve the relevant doc
    result = score_run(ref, run_bytes([("c_turn_1", "x", 1, 1.0), ("c#turn6", "x", 1, 1.0)]))
    depth = result.details["per_depth"]
    assert list(depth) == ["T1", "T2", "T3", "T4", "T5+"]
    assert depth["T1"]["ndcg_10"] == 1.0 and depth["T2"]["ndcg_10"] == 0.0
    assert depth["T5+"]["units"] == 3 and depth["T5+"]["ndcg_10"] == pytest.approx(1 / 3)


def test_graded_gains():
    ref = make_reference([("d", "q", None, None)], [("d/q", "a", 2), ("d/q", "b", 1), ("d/q", "c", 0)], relevance="graded", cutoffs=(1, 5))
    result = score_run(ref, run_bytes([("q", "c", 1, 3.0), ("q", "b", 2, 2.0), ("q", "a", 3, 1.0)]))
    assert result.scores["ndcg_5"] == pytest.approx((1 / L2(3) + 2 / L2(4)) / (2 + 1 / L2(3)), abs=1e-15)
    assert result.scores["ndcg_1"] == 0.0
    assert result.scores["recall_5"] == 1.0


def test_grouped_runs_are_recognised_and_their_topics_reordered():
    # Rule 2 over (topic, score, rank); topic -1 marks lines of topics outside the reference.
    score = np.array([3.0, 1.0, 1.0, 9.0, 2.0, 5.0])
    rank = np.array([1, 2, 3, 1, 2, 1])
    grouped = np.array([2, 0, 0, 1, 1, -1])  # each topic together and best first, topics shuffled
    assert _topics_grouped_in_rule_order(grouped, score, rank)
    topic, doc = _blocks_in_topic_order(grouped[:5], np.array([10, 11, 12, 13, 14]))
    assert topic.tolist() == [0, 0, 1, 1, 2] and doc.tolist() == [11, 12, 13, 14, 10]
    in_order = np.array([0, 0, 1, 1, 2])
    topic, doc = _blocks_in_topic_order(in_order, np.array([10, 11, 12, 13, 14]))
    assert topic.tolist() == [0, 0, 1, 1, 2] and doc.tolist() == [10, 11, 12, 13, 14]
    # topic 0 in two places, its later lines scoring higher: only a full sort is right
    assert not _topics_grouped_in_rule_order(np.array([0, 1, 0, 1, 1, 2]), score, rank)
    # lines outside the reference between two topics do not matter
    assert _topics_grouped_in_rule_order(np.array([0, -1, -1, 1, 1, 2]), np.array([3.0, 1.0, 4.0, 9.0, 2.0, 5.0]), rank)
    # a tie on score ordered by rank is in order; by a decreasing rank it is not
    assert _topics_grouped_in_rule_order(np.array([0, 0, 0]), np.array([2.0, 1.0, 1.0]), np.array([1, 2, 3]))
    assert not _topics_grouped_in_rule_order(np.array([0, 0, 0]), np.array([2.0, 1.0, 1.0]), np.array([1, 3, 2]))


def test_ambiguous_bare_topic_is_an_error_with_line():
    ref = make_reference(
        [("bio", "2_turn_1", None, 1), ("geo", "2_turn_1", None, 1)],
        [("bio/2_turn_1", "b1", 1), ("geo/2_turn_1", "g1", 1)],
        subtrack="2a",
    )
    run = b"\n" + run_bytes([("bio/2_turn_1", "b1", 1, 1.0), ("2_turn_1", "g1", 1, 1.0)])
    with pytest.raises(InputError) as caught:
        score_run(ref, run, "run.txt")
    message = str(caught.value)
    assert message.startswith("run.txt:3: error: topic '2_turn_1' exists in several domains")
    assert "'bio/2_turn_1' or 'geo/2_turn_1'" in message
    assert "b1" not in message and "g1" not in message  # no reference doc id leaks


def test_run_without_any_reference_topic_is_an_error():
    ref = make_reference([("d", "q_step1", "d/q", None)], [("d/q_step1", "a", 1)], subtrack="1b")
    with pytest.raises(InputError, match="expects step ids"):
        score_run(ref, run_bytes([("q", "a", 1, 1.0)]), "run.txt")


@pytest.mark.parametrize(
    "topic_id, example",
    [
        ("q_step2", "q_step2"),  # a reference step: the example is one of the reference's ids
        # A reference whose ids break the rule (the public sample as prepared before the fix,
        # '122291_22'): the message said "step ids (<query id>_step<n>), e.g. '122291_22'".
        ("122291_22", "122291_22_step1"),
    ],
)
def test_the_step_id_example_follows_the_rule_its_message_states(topic_id, example):
    ref = make_reference([("d", topic_id, "d/q", None)], [(f"d/{topic_id}", "a", 1)], subtrack="1b")
    with pytest.raises(InputError) as caught:
        score_run(ref, run_bytes([("x", "a", 1, 1.0)]), "run.txt")
    assert str(caught.value).endswith(f"sub-track 1b expects step ids (<query id>_step<n>), e.g. '{example}'")


# ---------------------------------------------------------------- properties vs the independent scorer


@st.composite
def scenarios(draw):
    n_domains = draw(st.integers(1, 3))
    domains = [f"dom{i}" for i in range(n_domains)]
    docs = [f"doc{i}" for i in range(12)]
    corpus = {d: set(draw(st.lists(st.sampled_from(docs), min_size=1, max_size=10))) for d in domains}
    graded = draw(st.booleans())
    stepwise = draw(st.booleans())
    topics, qrels = [], []
    for d in domains:
        for q in range(draw(st.integers(1, 3))):
            # the same bare id in every domain: collisions are the normal case here
            steps = draw(st.integers(1, 3)) if stepwise else 1
            for s in range(steps):
                tid = f"{q}_step{s + 1}" if stepwise else f"{q}"
                unit = f"{d}/{q}" if stepwise else None
                topics.append((d, tid, unit, None))
                judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=6, unique=True))
                levels = draw(st.lists(st.integers(0, 3 if graded else 1), min_size=len(judged), max_size=len(judged)))
                if not any(levels):
                    levels[0] = 1
                qrels += [(f"{d}/{tid}", doc, lvl) for doc, lvl in zip(judged, levels)]
    lines = []
    keys = [f"{d}/{tid}" for d, tid, _, _ in topics]
    present = draw(st.lists(st.sampled_from(keys), unique=True))  # other topics are missing
    for key in present:
        for _ in range(draw(st.integers(1, 14))):
            doc = draw(st.sampled_from(docs + ["unknown1", "old1"]))
            rank = draw(st.integers(1, 5))  # many repeated ranks
            score = float(draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1.0000001])))  # many ties
            lines.append((key, doc, rank, score))
    if draw(st.booleans()):
        lines.append(("not_a_topic", "doc0", 1, 1.0))
    # Files in every arrangement the scorer treats differently: shuffled lines; each topic's
    # lines together and best first but topics in another order; fully in rule order.
    # "split": each topic's best-first lines cut in two, the worse half written first;
    # "by_score": grouped and by score, but ties on score in any rank order.
    arrangement = draw(st.sampled_from(["shuffled", "grouped", "in_order", "split", "by_score"]))
    lines = draw(st.permutations(lines))
    if arrangement != "shuffled":
        topic_order = ["not_a_topic"] + keys if arrangement == "in_order" else draw(st.permutations(keys + ["not_a_topic"]))
        if arrangement == "by_score":
            lines = sorted(lines, key=lambda line: (topic_order.index(line[0]), -line[3]))
        else:
            lines = sorted(lines, key=lambda line: (topic_order.index(line[0]), -line[3], line[2]))
    if arrangement == "split":
        halves = [[], []]
        for key in topic_order:
            block = [line for line in lines if line[0] == key]
            halves[0] += block[len(block) // 2 :]
            halves[1] += block[: len(block) // 2]
        lines = halves[0] + halves[1]
    cutoffs = draw(st.sampled_from([(10,), (1, 5, 10), (3,)]))
    return domains, corpus, topics, qrels, lines, graded, stepwise, cutoffs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_matches_independent_implementation_and_pytrec_eval(scenario):
    domains, corpus, topics, qrels, lines, graded, stepwise, cutoffs = scenario
    dup = {"old1": "doc0"}
    ref = make_reference(
        topics,
        qrels,
        corpus=corpus,
        subtrack="1b" if stepwise else "1a",
        relevance="graded" if graded else "binary",
        cutoffs=cutoffs if graded else (10,),
        dup=dup,
    )
    if not any(t != "not_a_topic" for t, *_ in lines):
        with pytest.raises(InputError):
            score_run(ref, run_bytes(lines))
        return
    topic_domain = {f"{d}/{tid}": d for d, tid, _, _ in topics}
    topic_unit = {f"{d}/{tid}": (u or f"{d}/{tid}") for d, tid, u, _ in topics}
    kept = [(t, doc, r, s) for t, doc, r, s in lines if t != "not_a_topic"]
    decided = ind.decide_rankings(kept, topic_domain, corpus, dup)
    if ref.doc_index is not None and not any(decided.values()):
        # No document of the run is in the corpus (issue 35): refused, with the likely cause.
        with pytest.raises(InputError, match="none of the run's document ids is in the corpus"):
            score_run(ref, run_bytes(lines))
        return
    result = score_run(ref, run_bytes(lines))
    other = score_run(ref, run_bytes(lines), engine="pytrec_eval")
    qrels_by_topic = {}
    for key, doc, lvl in qrels:
        qrels_by_topic.setdefault(key, {})[doc] = lvl
    for k in (cutoffs if graded else (10,)):
        # cut at the largest cutoff for everything but MRR
        depth = max(cutoffs if graded else (10,))
        overall, macro = ind.official_scores(
            {t: d[:depth] for t, d in decided.items()}, qrels_by_topic, topic_unit, topic_domain, k, graded
        )
        overall_full, _ = ind.official_scores(decided, qrels_by_topic, topic_unit, topic_domain, k, graded)
        for metric in (f"ndcg_{k}", f"map_{k}", f"recall_{k}", f"p_{k}"):
            expected = overall[metric]
            assert result.details["overall"][metric] == pytest.approx(expected, abs=1e-12), metric
            assert other.details["overall"][metric] == pytest.approx(expected, abs=1e-12), metric
        assert result.details["overall"]["mrr"] == pytest.approx(overall_full["mrr"], abs=1e-12)
        assert other.details["overall"]["mrr"] == pytest.approx(overall_full["mrr"], abs=1e-12)
        assert result.details["domain_macro"][f"ndcg_{k}"] == pytest.approx(macro[f"ndcg_{k}"], abs=1e-12)
    for value in result.scores.values():
        assert math.isfinite(value) and 0.0 <= value <= 1.0


def test_a_byte_order_mark_inside_the_run_is_an_error_naming_its_line():
    """Two files joined: the second's byte-order mark would make its first topic silently
    unknown; it is refused on the line where it stands (a mark opening the file is skipped)."""
    reference = _bom_reference()
    run = b"\xef\xbb\xbfq1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\n\xef\xbb\xbfq2 Q0 d1 1 1.0 t\n"
    with pytest.raises(InputError) as caught:
        score_run(reference, run, "run.txt")
    (line,) = caught.value.problems.lines()
    assert line.startswith("run.txt:3: error: topic '\\ufeffq2' holds a byte-order mark (U+FEFF)")
    assert score_run(reference, run.replace(b"\n\xef\xbb\xbf", b"\n"), "run.txt").scores["ndcg_10"] == 1.0


def _bom_reference() -> Reference:
    topics = [Topic(f"d/{q}", "d", q, f"d/{q}") for q in ("q1", "q2")]
    return Reference(
        {"subtrack": "1a", "benchmark": "other", "relevance": "binary", "cutoffs": [10], "domains": ["d"]},
        topics, [Judgment("d/q1", "d1", 1), Judgment("d/q2", "d1", 1)],
    )
