"""Temporal diagnostics in scores.json and details.json: hand-computed 1a and 1b cases, with the
offline oracle and with frozen labels, and a plain-Python recomputation on the synthetic release."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import SAMPLES

from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.temporal_labels import LABELS_DIR, LabelRow, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, Period, QueryPeriods, write_periods
from reteco.formats.trec_run import read_trec_run
from reteco.outputs.scores import check_finite
from reteco.problems import InputError, Problems
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.retrieval import score_run
from reteco.scoring.rules import apply_rules, per_topic_metrics
from reteco.scoring.temporal import TemporalSource, temporal_diagnostics

L2 = math.log2


def run_bytes(lines):
    return "".join(f"{t} Q0 {d} {i + 1} {100 - i} tag\n" for t, docs in lines for i, d in enumerate(docs)).encode()


def write_reference(root: Path, subtrack, topics, judgments, periods: list[QueryPeriods] | None, corpus=None, split="dev"):
    """topics: (domain, topic id, unit key or None)."""
    topic_objs = [Topic(f"{d}/{t}", d, t, u or f"{d}/{t}") for d, t, u in topics]
    domains = sorted({t.domain for t in topic_objs})
    index = DocIdIndex.from_pairs([(d, x) for d, xs in (corpus or {}).items() for x in xs], domains) if corpus else None
    manifest = {"subtrack": subtrack, "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": domains, "split": split}
    root.mkdir(parents=True, exist_ok=True)
    if periods is not None:
        write_periods(root / PERIODS_FILE, periods, oracle=True)
    ref = Reference(manifest, topic_objs, [Judgment(k, d, 1) for k, d in judgments], index)
    ref.write(root)
    return Reference.read(root)


def period(pid, step_id, docs):
    return Period(pid, step_id, f"step {step_id}", "", "2017", "2017", "year", tuple(docs))


# 1a: q1 (two periods), q2 (one period), q3 (no step: no required period).
QUERIES_1A = [
    QueryPeriods("d/q1", "query one", (period("p1", "q1_step1", ["a"]), period("p2", "q1_step2", ["b", "c"])),
                 ("2017",), True, ("a", "b")),
    QueryPeriods("d/q2", "query two", (period("p1", "q2_step1", ["e"]),), (), True, ("e",)),
    QueryPeriods("d/q3", "query three", (), (), False, ("f",)),
]
JUDGMENTS_1A = [("d/q1", "a"), ("d/q1", "b"), ("d/q2", "e"), ("d/q3", "f")]
RUN_1A = [("q1", ["x", "a", "y", "c", "z"]), ("q2", ["e"])]  # q3 not ranked
NDCG_Q1 = (1 / L2(3)) / (1 + 1 / L2(3))


@pytest.fixture
def ref_1a(tmp_path):
    return write_reference(
        tmp_path / "1a", "1a", [("d", "q1", None), ("d", "q2", None), ("d", "q3", None)], JUDGMENTS_1A, QUERIES_1A
    )


def test_oracle_1a_hand_computed(ref_1a):
    result = score_run(ref_1a, run_bytes(RUN_1A))
    s = result.scores
    # q1: v = [0,1,0,0,0] -> TP 1/2, TR 1/10; a covers p1, c covers p2 -> TC 1. q2: TP 1, TR 1/10,
    # TC 1. q3: unranked -> TP = TR = 0, no required period -> not in TC.
    assert s["tp_10"] == pytest.approx((0.5 + 1 + 0) / 3, abs=1e-15)
    assert s["tr_10"] == pytest.approx((0.1 + 0.1 + 0) / 3, abs=1e-15)
    assert s["tc_10"] == pytest.approx(1.0, abs=1e-15)
    assert result.details["temporal"]["fully_covered_queries"] == 2 and "ndcg_fc_10_queries" not in s
    assert s["ndcg_fc_10"] == pytest.approx((NDCG_Q1 + 1.0) / 2, abs=1e-15)
    check_finite(s)
    t = result.details["temporal"]
    assert t["source"] == "oracle" and "offline oracle" in t["source_description"]
    assert (t["queries"], t["queries_with_required_periods"], t["queries_without_required_periods"]) == (3, 2, 1)
    assert t["fully_covered_queries"] == 2 and t["required_periods"] == 3
    assert t["unlabelled_top10"].startswith("not applicable")
    per_unit = {u["unit"]: u for u in result.per_topic["per_unit"]}
    assert per_unit["d/q1"]["tp_10"] == pytest.approx(0.5) and per_unit["d/q1"]["tc_10"] == 1.0
    assert per_unit["d/q3"]["tc_10"] is None and per_unit["d/q3"]["required_periods"] == 0
    assert result.details["per_domain"]["d"]["tc_10"] == 1.0
    # With oracle relevance = the qrels, TR@10 is P@10.
    assert s["tr_10"] == pytest.approx(s["p_10"], abs=1e-15)


def test_ndcg_fc_left_out_when_no_query_is_fully_covered(ref_1a):
    result = score_run(ref_1a, run_bytes([("q1", ["a", "x"]), ("q2", ["x"])]))
    assert "ndcg_fc_10" not in result.scores
    assert result.details["temporal"]["fully_covered_queries"] == 0
    assert result.scores["tc_10"] == pytest.approx((0.5 + 0.0) / 2)
    t = result.details["temporal"]
    assert t["overall"]["ndcg_fc_10"] is None
    assert t["ndcg_fc_10_status"] == "undefined: no query reaches full temporal coverage at 10"
    assert result.absent == {"ndcg_fc_10": "undefined: no query reaches full temporal coverage at 10"}  # typed, for scores.json's readers
    assert result.details["per_domain"]["d"]["ndcg_fc_10"] is None


def test_a_query_ranked_by_nobody_counts_zero_everywhere(ref_1a):
    result = score_run(ref_1a, run_bytes([("q2", ["e"])]))
    # q1 unranked: TP 0, TR 0, TC 0 (it has periods); q3 unranked and without periods.
    assert result.scores["tp_10"] == pytest.approx(1 / 3)
    assert result.scores["tc_10"] == pytest.approx(0.5)


def test_run_rules_apply_before_the_diagnostics(tmp_path):
    corpus = {"d": {"a", "b", "x"}}
    ref = write_reference(
        tmp_path / "1a", "1a", [("d", "q1", None)], [("d/q1", "a")],
        [QueryPeriods("d/q1", "", (period("p1", "q1_step1", ["a"]),), (), True, ("a",))], corpus=corpus,
    )
    # 'unknown' is dropped, the second 'x' removed: the decided ranking is x, a.
    result = score_run(ref, run_bytes([("q1", ["unknown", "x", "x", "a"])]))
    assert result.scores["tp_10"] == pytest.approx(0.5)
    assert result.scores["tc_10"] == 1.0


def test_only_the_top_ten_count(tmp_path):
    ref = write_reference(
        tmp_path / "1a", "1a", [("d", "q1", None)], [("d/q1", "a")],
        [QueryPeriods("d/q1", "", (period("p1", "q1_step1", ["a"]),), (), True, ("a",))],
    )
    result = score_run(ref, run_bytes([("q1", [f"n{i}" for i in range(10)] + ["a"])]))
    assert result.scores["tp_10"] == 0.0 and result.scores["tc_10"] == 0.0
    assert "ndcg_fc_10" not in result.scores


# ---------------------------------------------------------------- frozen labels


def add_labels(root: Path, periods, rows):
    labels = TemporalLabels.create(root / LABELS_DIR, periods, "dev", "test labels")
    labels.append(rows, "test verdicts")
    return labels


def llm(query, doc, relevant, covers=()):
    return LabelRow(query, doc, relevant, tuple(covers), "llm", "fake-model", "2027-01-20T10:00:00Z", "temporal/1")


def test_frozen_labels_1a_hand_computed(ref_1a):
    root = ref_1a.root
    add_labels(root, QUERIES_1A, [llm("d/q1", "x", True, ["p1"]), llm("d/q1", "a", False), llm("d/q1", "c", True, ["p2"])])
    result = score_run(Reference.read(root), run_bytes(RUN_1A))
    s = result.scores
    # q1: v = [1,0,0,1,0] -> TP (1/1 + 2/4)/2 = 0.75, TR 0.2; x covers p1, c covers p2 -> TC 1.
    # q2: e has no label -> not relevant, covers nothing: TP 0, TR 0, TC 0. q3: 0, 0, no periods.
    assert s["tp_10"] == pytest.approx(0.75 / 3, abs=1e-15)
    assert s["tr_10"] == pytest.approx(0.2 / 3, abs=1e-15)
    assert s["tc_10"] == pytest.approx(0.5, abs=1e-15)
    assert result.details["temporal"]["fully_covered_queries"] == 1
    assert s["ndcg_fc_10"] == pytest.approx(NDCG_Q1, abs=1e-15)  # nDCG still comes from the qrels
    t = result.details["temporal"]
    assert t["source"] == "frozen"
    assert len(t["labels"]["content_hash"]) == 64
    assert t["unlabelled_top10"] == {"documents": 6, "unlabelled": 3, "share": 0.5, "queries_with_unlabelled": 2}
    per_unit = {u["unit"]: u for u in result.per_topic["per_unit"]}
    assert per_unit["d/q1"]["unlabelled_top10"] == 2 and per_unit["d/q2"]["unlabelled_top10"] == 1
    assert t["per_domain"]["d"]["unlabelled_top10"]["unlabelled"] == 3


def test_a_human_override_wins(ref_1a):
    root = ref_1a.root
    labels = add_labels(root, QUERIES_1A, [llm("d/q1", "x", True, ["p1"]), llm("d/q1", "a", False)])
    before = score_run(Reference.read(root), run_bytes(RUN_1A)).details["temporal"]["labels"]["content_hash"]
    first = labels.label_of("d/q1", "a")
    labels.append(
        [LabelRow("d/q1", "a", True, ("p1",), "human", "alice", "2027-01-21T09:00:00Z", None, "dated", first.line)],
        "review",
    )
    result = score_run(Reference.read(root), run_bytes(RUN_1A))
    # q1: v = [1,1,0,0,0] -> TP 1, TR 0.2.
    assert result.per_topic["per_unit"][0]["tp_10"] == pytest.approx(1.0)
    assert result.per_topic["per_unit"][0]["tr_10"] == pytest.approx(0.2)
    assert result.details["temporal"]["labels"]["content_hash"] != before
    assert result.details["temporal"]["labels"]["counts"]["human_overrides"] == 1


def test_labels_changed_outside_reteco_fail_loudly_without_revealing_them(ref_1a):
    root = ref_1a.root
    add_labels(root, QUERIES_1A, [llm("d/q1", "x", True, ["p1"])])
    path = root / LABELS_DIR / "labels.jsonl"
    path.write_text(path.read_text().replace('"temporally_relevant": true', '"temporally_relevant": false'))
    with pytest.raises(InputError) as excinfo:
        score_run(Reference.read(root), run_bytes(RUN_1A))
    message = str(excinfo.value)
    assert "does not match the sha256" in message and "never changed silently" in message
    assert '"x"' not in message and "temporally_relevant" not in message


def test_labels_of_another_split_are_refused(ref_1a):
    TemporalLabels.create(ref_1a.root / LABELS_DIR, QUERIES_1A, "test", "wrong split")
    with pytest.raises(InputError, match="split 'test'"):
        score_run(Reference.read(ref_1a.root), run_bytes(RUN_1A))


# ---------------------------------------------------------------- 1b


QUERIES_1B = [
    QueryPeriods("d/Q", "", (period("p1", "Q_step1", ["a"]), period("p2", "Q_step2", ["b"])), (), True, ("a", "b")),
    QueryPeriods("d/R", "", (period("p1", "R_step1", ["c"]),), (), True, ("c",)),
]
STEPS_1B = [("d", "Q_step1", "d/Q"), ("d", "Q_step2", "d/Q"), ("d", "R_step1", "d/R")]
STEP_QRELS = [("d/Q_step1", "a"), ("d/Q_step2", "b"), ("d/R_step1", "c")]
RUN_1B = [("Q_step1", ["x", "a"]), ("Q_step2", ["a", "y"]), ("R_step1", ["c"])]


def test_oracle_1b_hand_computed(tmp_path):
    ref = write_reference(tmp_path / "1b", "1b", STEPS_1B, STEP_QRELS, QUERIES_1B)
    result = score_run(ref, run_bytes(RUN_1B))
    s = result.scores
    # Steps are judged against the query's labels (a and b relevant to Q):
    # Q_step1 v=[0,1]: TP 1/2; Q_step2 v=[1,0]: TP 1; Q: mean 3/4. R_step1: TP 1.
    assert s["tp_10"] == pytest.approx((0.75 + 1.0) / 2, abs=1e-15)
    assert s["tr_10"] == pytest.approx((0.1 + 0.1) / 2, abs=1e-15)
    # Union of Q's lists {x, a, y}: p1 covered, p2 not -> 1/2. R: 1.
    assert s["tc_10"] == pytest.approx(0.75, abs=1e-15)
    assert result.details["temporal"]["fully_covered_queries"] == 1
    assert s["ndcg_fc_10"] == pytest.approx(1.0)  # R's step mean nDCG
    t = result.details["temporal"]
    assert t["coverage_over"].startswith("the union of the query's step rankings")
    steps = {r["step"]: r for r in result.per_topic["per_step"]}
    assert steps["d/Q_step1"]["tc_10"] == pytest.approx(0.5) and steps["d/Q_step1"]["own_period_covered"] is True
    assert steps["d/Q_step2"]["tc_10"] == pytest.approx(0.5) and steps["d/Q_step2"]["own_period_covered"] is False
    assert t["step_mean"]["tc_10"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert t["step_mean"]["own_period_covered_share"] == pytest.approx(2 / 3)


def test_1b_union_reaches_full_coverage_that_no_single_step_reaches(tmp_path):
    ref = write_reference(tmp_path / "1b", "1b", STEPS_1B, STEP_QRELS, QUERIES_1B)
    result = score_run(ref, run_bytes([("Q_step1", ["a"]), ("Q_step2", ["b"])]))
    steps = {r["step"]: r for r in result.per_topic["per_step"]}
    assert steps["d/Q_step1"]["tc_10"] == 0.5 and steps["d/Q_step2"]["tc_10"] == 0.5
    assert result.per_topic["per_unit"][0]["tc_10"] == 1.0 and result.per_topic["per_unit"][0]["fully_covered"]
    assert result.details["temporal"]["fully_covered_queries"] == 1  # Q; R is unranked


def test_1b_without_periods_file_derives_the_oracle_from_step_qrels():
    topics = [Topic(f"d/{t}", "d", t, u) for _, t, u in STEPS_1B]
    manifest = {"subtrack": "1b", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "official": "ndcg_10",
                "domains": ["d"]}
    ref = Reference(manifest, topics, [Judgment(k, d, 1) for k, d in STEP_QRELS])
    result = score_run(ref, run_bytes(RUN_1B))
    # Same figures as with the periods file: the steps' qrels are the same oracle.
    assert result.scores["tc_10"] == pytest.approx(0.75)
    assert result.scores["tp_10"] == pytest.approx(0.875)
    assert "derived from the reference's qrels" in result.details["temporal"]["source_description"]


def test_1a_without_periods_file_has_no_coverage_and_says_so():
    manifest = {"subtrack": "1a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "official": "ndcg_10",
                "domains": ["d"]}
    ref = Reference(manifest, [Topic("d/q1", "d", "q1", "d/q1")], [Judgment("d/q1", "a", 1)])
    result = score_run(ref, run_bytes([("q1", ["a"])]))
    assert result.scores["tp_10"] == 1.0
    assert "tc_10" not in result.scores and "ndcg_fc_10" not in result.scores
    assert result.details["temporal"]["tc_10_status"] == "undefined: no query has a required period"
    assert result.absent == {"tc_10": "undefined: no query has a required period", "ndcg_fc_10": "undefined: no query has a required period"}


def test_track_2_has_no_temporal_keys():
    manifest = {"subtrack": "2a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "official": "ndcg_10",
                "domains": ["d"]}
    ref = Reference(manifest, [Topic("d/c_turn_1", "d", "c_turn_1", "d/c_turn_1", "d/c", 1)], [Judgment("d/c_turn_1", "a", 1)])
    result = score_run(ref, run_bytes([("c_turn_1", ["a"])]))
    assert not {"tp_10", "tr_10", "tc_10"} & set(result.scores) and "temporal" not in result.details


# ---------------------------------------------------------------- random cases against plain Python


@st.composite
def stepwise_cases(draw):
    """A random 1a or 1b reference, random frozen-style labels and a random run."""
    stepwise = draw(st.booleans())
    n_queries = draw(st.integers(1, 4))
    docs = [f"x{i}" for i in range(8)]
    topics, judgments, periods, relevant, covers, labelled = [], [], {}, set(), {}, set()
    for q in range(n_queries):
        domain = draw(st.sampled_from(["a", "b"]))
        key = f"{domain}/q{q}"
        n_steps = draw(st.integers(1, 3)) if stepwise else 1
        for s in range(n_steps):
            tid = f"q{q}_step{s + 1}" if stepwise else f"q{q}"
            topics.append((domain, tid, key if stepwise else None))
            judgments.append((f"{domain}/{tid}", draw(st.sampled_from(docs))))
        ids = [f"p{m + 1}" for m in range(draw(st.integers(0, 3)))]
        periods[key] = ids
        for doc in docs:
            if draw(st.booleans()):
                labelled.add((key, doc))
                if draw(st.booleans()):
                    relevant.add((key, doc))
                covered = [p for p in ids if draw(st.booleans())]
                if covered:
                    covers[(key, doc)] = covered
    lines = []
    for domain, tid, _ in topics:
        ranking = draw(st.lists(st.sampled_from(docs), max_size=12))
        lines.append((tid if not any(t == tid and d != domain for d, t, _ in topics) else f"{domain}/{tid}", ranking))
    return stepwise, topics, judgments, TemporalSource("frozen", "random", periods, relevant, covers, labelled), lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stepwise_cases())
def test_random_cases_match_a_plain_recomputation(case):
    stepwise, topics, judgments, source, lines = case
    topic_objs = [Topic(f"{d}/{t}", d, t, u or f"{d}/{t}") for d, t, u in topics]
    manifest = {"subtrack": "1b" if stepwise else "1a", "benchmark": "reteco", "relevance": "binary",
                "cutoffs": [10], "official": "ndcg_10", "domains": sorted({t.domain for t in topic_objs})}
    ref = Reference(manifest, topic_objs, [Judgment(k, d, 1) for k, d in judgments])
    if not any(ranking for _, ranking in lines):
        return  # a run with no line at all is an input error, tested elsewhere
    problems = Problems()
    ranked = apply_rules(ref, read_trec_run(run_bytes(lines)), problems)
    ndcg = per_topic_metrics(ref, ranked)["ndcg_10"]
    result = temporal_diagnostics(ref, ranked, ndcg, source=source)

    # Plain Python: the decided top 10 of each topic (first occurrences, in order).
    top: dict[str, list[str]] = {}
    for tid, ranking in lines:
        key = tid if "/" in tid else next(t.key for t in topic_objs if t.topic_id == tid)
        top[key] = list(dict.fromkeys(ranking))[:10]
    units: dict[str, list[int]] = {}
    for i, t in enumerate(topic_objs):
        units.setdefault(t.unit, []).append(i)
    tps, trs, tcs, fc = [], [], [], []
    for u, (unit, members) in enumerate(units.items()):
        step_tp, step_tr = [], []
        for i in members:
            v = [(unit, d) in source.relevant for d in top.get(topic_objs[i].key, [])]
            ranks = [r + 1 for r, x in enumerate(v) if x]
            step_tp.append(sum(sum(1 for j in ranks if j <= r) / r for r in ranks) / len(ranks) if ranks else 0.0)
            step_tr.append(sum(v) / 10)
        tps.append(sum(step_tp) / len(step_tp))
        trs.append(sum(step_tr) / len(step_tr))
        row = result.per_unit[u]
        assert row["tp_10"] == pytest.approx(tps[-1], abs=1e-12) and row["tr_10"] == pytest.approx(trs[-1], abs=1e-12)
        required = source.periods.get(unit, [])
        union = {d for i in members for d in top.get(topic_objs[i].key, [])}
        covered = {p for d in union for p in source.covers.get((unit, d), [])}
        if required:
            tcs.append(len(covered) / len(required))
            assert row["tc_10"] == pytest.approx(tcs[-1], abs=1e-12)
            assert 0.0 <= row["tc_10"] <= 1.0
            if len(covered) == len(required):
                fc.append(sum(ndcg[i] for i in members) / len(members))
        else:
            assert row["tc_10"] is None
        assert row["fully_covered"] == (bool(required) and len(covered) == len(required))
        assert row["unlabelled_top10"] == sum((unit, d) not in source.labelled for d in union)
    scores = result.scores
    assert scores["tp_10"] == pytest.approx(sum(tps) / len(tps), abs=1e-12)
    assert scores["tr_10"] == pytest.approx(sum(trs) / len(trs), abs=1e-12)
    assert ("tc_10" in scores) == bool(tcs)
    if tcs:
        assert scores["tc_10"] == pytest.approx(sum(tcs) / len(tcs), abs=1e-12)
    assert ("ndcg_fc_10" in scores) == bool(fc)
    if fc:
        assert scores["ndcg_fc_10"] == pytest.approx(sum(fc) / len(fc), abs=1e-12)
    assert result.details["fully_covered_queries"] == len(fc)
    for value in scores.values():
        assert math.isfinite(value) and 0.0 <= value <= 1.0


# ---------------------------------------------------------------- the synthetic release, recomputed


def _independent(ref_root: Path, run: bytes, stepwise: bool) -> dict:
    """Plain-Python TP/TR/TC/nDCG|FC@10 from the files (oracle), for cross-checking."""
    periods = {}
    for line in (ref_root / PERIODS_FILE).read_text().splitlines():
        r = json.loads(line)
        periods[r["query"]] = r
    topics = [l.split("\t") for l in (ref_root / "topics.tsv").read_text().splitlines()[1:]]
    unit_of = {t[0]: t[3] for t in topics}
    key_of = {t[2]: t[0] for t in topics}
    rankings: dict[str, list[tuple[float, str]]] = {}
    for line in run.decode().splitlines():
        topic, _, doc, _, score, _ = line.split()
        rankings.setdefault(key_of[topic], []).append((-float(score), doc))
    top = {k: [d for _, d in sorted(v)][:10] for k, v in rankings.items()}
    qrels: dict[str, set[str]] = {}
    for line in (ref_root / "qrels.txt").read_text().splitlines():
        k, _, d, _ = line.split("\t")
        qrels.setdefault(k, set()).add(d)

    def tp(v):
        ranks = [i + 1 for i, x in enumerate(v) if x]
        return sum(sum(1 for j in ranks if j <= r) / r for r in ranks) / len(ranks) if ranks else 0.0

    def ndcg(k):
        docs = top.get(k, [])
        dcg = sum(1 / L2(i + 2) for i, d in enumerate(docs) if d in qrels.get(k, ()))
        ideal = sum(1 / L2(i + 2) for i in range(min(10, len(qrels.get(k, ())))))
        return dcg / ideal

    units = sorted(set(unit_of.values()))
    tps, trs, tcs, fc = [], [], [], []
    for u in units:
        steps = [k for k, v in unit_of.items() if v == u]
        relevant = set(periods[u]["oracle_relevant"])
        tps.append(sum(tp([d in relevant for d in top.get(k, [])]) for k in steps) / len(steps))
        trs.append(sum(sum(d in relevant for d in top.get(k, [])) / 10 for k in steps) / len(steps))
        union = {d for k in steps for d in top.get(k, [])}
        counted = [p for p in periods[u]["periods"] if p["oracle_docs"]]
        if counted:
            tc = sum(any(d in union for d in p["oracle_docs"]) for p in counted) / len(counted)
            tcs.append(tc)
            if tc == 1.0:
                fc.append(sum(ndcg(k) for k in steps) / len(steps))
    return {"tp_10": sum(tps) / len(tps), "tr_10": sum(trs) / len(trs), "tc_10": sum(tcs) / len(tcs),
            "ndcg_fc_10": sum(fc) / len(fc), "ndcg_fc_10_queries": len(fc)}


@pytest.fixture(scope="module")
def synthetic_reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref", subtracks=("1a", "1b"))
    return root / "ref"


@pytest.mark.parametrize("subtrack", ["1a", "1b"])
def test_synthetic_sample_runs_match_an_independent_recomputation(synthetic_reference, subtrack):
    run = (SAMPLES / subtrack / "run.txt").read_bytes()
    ref = Reference.read(synthetic_reference / subtrack)
    result = score_run(ref, run)
    scores = result.scores | {"ndcg_fc_10_queries": result.details["temporal"]["fully_covered_queries"]}
    expected = _independent(synthetic_reference / subtrack, run, subtrack == "1b")
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value, abs=1e-12), key
    check_finite(result.scores)
