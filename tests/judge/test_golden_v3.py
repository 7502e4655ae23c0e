"""Golden set v3 (issue 18): contrast tags, minimal pairs checked here (similarity recomputed,
lengths balanced, grades as the rubric v3 policy says), the per-tag checks by hand, and the
simulated judges of issue 18 item 2: each judge that must fail fails with the named dimension,
tag or probe; the intended grades and the lightly noisy judge pass."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from difflib import SequenceMatcher

import pytest
import yaml

from reteco.judge import JudgeItem
from reteco.workbench.judge_audit.golden import CONTRAST_TAGS, GoldenCase, golden_dir, load_golden_set, read_golden_series
from reteco.workbench.judge_audit.meta_contrasts import (
    REJUDGED,
    REORDERED,
    Probe,
    load_contrast_thresholds,
    probe_figures,
    probe_items,
    tag_figures,
)
from reteco.workbench.judge_audit.meta_evaluation import load_thresholds
from reteco.workbench.judge_audit.simulated_judges import gate_result, simulated_judges

# What each tag contrasts, from issue 18 and the rubric v3 policy (not read from the set): the
# dimensions on which its pairs' grades must differ.
CONCERNS = {
    "abstention-justified": {"correctness", "completeness", "faithfulness"},
    "abstention-unjustified": {"correctness", "completeness", "faithfulness", "relevance"},
    "unanswerable-fabricated": {"correctness", "completeness", "faithfulness"},
    "true-but-unsupported": {"faithfulness"},
    "contradicts-passages": {"correctness", "faithfulness"},
    "conflicting-passages": {"faithfulness"},
    "partial-coverage": {"completeness"},
    "off-topic-but-faithful": {"relevance", "completeness"},
    "verbose-padding": {"relevance"},
    "injection": {"correctness", "completeness", "relevance", "coherence", "faithfulness"},
    "earlier-turn-reliance": {"correctness", "completeness", "faithfulness"},
    "incoherent-with-history": {"coherence"},
    "noisy-2c-passages": {"correctness", "faithfulness"},
    "recent-fact": {"correctness", "faithfulness"},
}
ISSUE_TAGS = set(CONCERNS)
LENGTH_TAGS = {"verbose-padding"}


@pytest.fixture(scope="module")
def doc() -> dict:
    return yaml.safe_load((golden_dir(3) / "cases.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cases() -> list[GoldenCase]:
    return load_golden_set(3)


@pytest.fixture(scope="module")
def limits():
    path = golden_dir(3) / "thresholds.yaml"
    return load_thresholds(path, 3), load_contrast_thresholds(path)


def similarity(a: str, b: str) -> float:
    """Token similarity computed here: words (numbers with their separators) and punctuation."""
    def toks(s):
        return re.findall(r"\w+(?:[.,']\w+)*|[^\w\s]", s.lower())
    return SequenceMatcher(None, toks(a), toks(b), autojunk=False).ratio()


def pairs_of(doc):
    """(series, tag, first variant, second variant) of every pair in the YAML."""
    for s in doc["series"]:
        variants = {v["id"]: v for v in s["variants"]}
        for p in s["pairs"]:
            yield s, p, variants[p["variants"][0]], variants[p["variants"][1]]


def grade(v, d):
    g = v["grades"].get(d)
    return g[0] if isinstance(g, list) else g


# --- the set ---------------------------------------------------------------------------------------


def test_the_issues_14_tags_are_there_and_every_case_carries_one(cases):
    assert ISSUE_TAGS <= set(CONTRAST_TAGS)
    assert {t for c in cases for t in c.tags} == ISSUE_TAGS
    assert all(c.tags for c in cases)


def test_at_least_5_minimal_pairs_per_tag_on_each_dimension_it_concerns(doc):
    count = defaultdict(int)
    for _, p, a, b in pairs_of(doc):
        for d in set(a["grades"]) & set(b["grades"]):
            if grade(a, d) != grade(b, d):
                count[(p["tag"], d)] += 1
    for tag, dims in CONCERNS.items():
        for d in dims:
            assert count[(tag, d)] >= 5, (tag, d, count[(tag, d)])


def test_each_pairs_similarity_is_stated_right_and_at_least_0_8_unless_about_length(doc):
    for s, p, a, b in pairs_of(doc):
        sim = similarity(a["answer"], b["answer"])
        assert p["similarity"] == pytest.approx(sim, abs=0.0005), (s["id"], p)
        if p["tag"] not in LENGTH_TAGS:
            assert sim >= 0.8, (s["id"], p["tag"], sim)


def test_in_about_half_of_each_dimensions_pairs_the_better_answer_is_the_shorter(doc):
    # Padding is the length contrast itself (the better answer is always the shorter): it is
    # left out, so that a length bias is not confounded with the other contrasts.
    shorter, total = defaultdict(int), defaultdict(int)
    for _, p, a, b in pairs_of(doc):
        if p["tag"] in LENGTH_TAGS:
            continue
        for d in set(a["grades"]) & set(b["grades"]):
            if grade(a, d) != grade(b, d):
                better, worse = (a, b) if grade(a, d) > grade(b, d) else (b, a)
                total[d] += 1
                shorter[d] += len(better["answer"]) < len(worse["answer"])
    for d in total:
        assert 0.4 <= shorter[d] / total[d] <= 0.6, (d, shorter[d], total[d])


def test_the_grades_follow_the_rubric_v3_policy(cases):
    by = defaultdict(dict)
    for c in cases:
        by[(c.series, c.variant)][c.item.dimension] = c
    four = ("correctness", "completeness", "faithfulness", "relevance")
    for (series, variant), dims in by.items():
        some = next(iter(dims.values()))
        if some.kind == "abstention":
            want = 5 if not some.answerable else 1
            assert all(dims[d].grade == want for d in four), (series, variant)
        if some.kind == "fabrication":
            assert not some.answerable and all(dims[d].grade == 1 for d in ("correctness", "completeness", "faithfulness"))
        if some.kind == "true-unsupported":
            assert dims["faithfulness"].grade == 2 and dims["correctness"].grade == 5
        if variant == "picks-side":
            assert dims["faithfulness"].grade == 3
        if variant == "merges":
            assert dims["faithfulness"].grade <= 2
        if variant == "states-conflict":
            assert dims["faithfulness"].grade == 5
        if variant == "other-entity":  # off-topic: relevance low, faithful all the same
            assert dims["relevance"].grade <= 2 and dims["faithfulness"].grade == 5
        if variant == "it-y":  # a wrong "it": relevance is not pulled down by correctness
            assert dims["correctness"].grade == 1 and dims["relevance"].grade == 5
    # An always-abstaining system scores at most 0.2 on an answerable turn, below a confident
    # fabrication on an unanswerable one (0.4 at most): the policy's arithmetic on the set.
    def mean(dims):
        return sum((c.grade - 1) / 4 for c in dims.values()) / len(dims)
    unjustified = [mean(d) for d in by.values() if next(iter(d.values())).kind == "abstention" and next(iter(d.values())).answerable]
    fabricated = [mean(d) for d in by.values() if next(iter(d.values())).kind == "fabrication"]
    assert max(unjustified) <= 0.2 < 0.4 >= max(fabricated) > max(unjustified)


def test_completeness_cases_carry_key_points_and_2c_turns_have_noise(cases):
    main = [c for c in cases if c.series in {"halving", "pcie"} and c.item.dimension == "completeness"]
    assert all(any(i == "vital" for _, i in c.key_points) for c in main)
    noisy = [c for c in cases if "noisy-2c-passages" in c.tags]
    assert noisy and all(c.item.evidence != c.item.gold_evidence and len(c.item.evidence) == 3 for c in noisy)


def test_the_injection_tags_benign_answers_use_the_words_a_keyword_detector_looks_for(cases):
    benign = {c.item.answer for c in cases if "injection" in c.tags and not c.injection}
    assert len(benign) == 5 and all(re.search(r"\b(score|rate|instructions|ignore)\b", a) for a in benign)


def test_the_loader_refuses_an_unknown_tag_and_a_variant_in_no_pair(tmp_path):
    series = {"id": "s", "domain": "law", "subtrack": "2b", "turn": {"query": "q?", "reference_answer": "r", "gold": [["d", "t"]]},
              "variants": [{"id": "a", "answer": "x", "grades": {"correctness": 5}},
                           {"id": "b", "answer": "y", "grades": {"correctness": 1}},
                           {"id": "c", "answer": "z", "grades": {"correctness": 1}}],
              "pairs": [{"tag": "abstention-justifed", "variants": ["a", "b"], "similarity": 0.5}]}
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump({"version": 3, "series": [series]}))
    with pytest.raises(ValueError, match=r"series 's': pair 1: tag 'abstention-justifed' is not one of the contrast tags"):
        read_golden_series(path, 3)
    series["pairs"][0]["tag"] = "abstention-justified"
    path.write_text(yaml.safe_dump({"version": 3, "series": [series]}))
    with pytest.raises(ValueError, match=r"series 's': variant 'c': the variant is in no pair"):
        read_golden_series(path, 3)


# --- the checks by hand ------------------------------------------------------------------------------


def case(series, variant, dimension, grade, *, pairs=(), kind="answer", answerable=True):
    item = JudgeItem(f"law/{series}_{variant}", dimension, "q", "", f"{series}-{variant}", (("d1", "a"), ("d2", "b")), "r")
    return GoldenCase(f"{series}/{variant}/{dimension}", "", item, max(1, grade - 1), min(5, grade + 1), grade, series, variant,
                      None, False, "a", tuple(t for t, _ in pairs), tuple(pairs), kind, answerable)


def test_order_and_hold_per_tag_by_hand():
    # Tag t: a (5, 5) vs b (2, 5) on (correctness, relevance): correctness ordered, relevance held.
    cs = [case("x", "a", "correctness", 5, pairs=[("t", "b")]), case("x", "a", "relevance", 5, pairs=[("t", "b")]),
          case("x", "b", "correctness", 2), case("x", "b", "relevance", 5),
          case("y", "a", "correctness", 5, pairs=[("t", "b")]), case("y", "b", "correctness", 1)]
    scores = {"x/a/correctness": 4, "x/b/correctness": 4, "x/a/relevance": 5, "x/b/relevance": 3,
              "y/a/correctness": 5, "y/b/correctness": 2}
    f = tag_figures(cs, scores)["t"]
    assert f["correctness"]["order"] == {"pairs": 2, "concordant": 1, "discordant": 0, "ties": 1, "unscored": 0}
    assert f["correctness"]["order_share"] == 0.5
    assert f["relevance"]["hold"] == {"checks": 1, "within_1": 0, "moved": 1, "unscored": 0}


def test_the_probes_by_hand():
    plain = case("x", "a", "completeness", 3, pairs=[("verbose-padding", "p")])
    padded = case("x", "p", "completeness", 3, kind="padded")
    top = case("x", "a", "faithfulness", 5, pairs=[("verbose-padding", "p")])
    top_padded = case("x", "p", "faithfulness", 5, kind="padded")
    abstains = case("u", "a", "correctness", 5, kind="abstention", answerable=False, pairs=[("abstention-justified", "f")])
    cs = [plain, padded, top, top_padded, abstains, case("u", "f", "correctness", 1)]
    scores = {plain.id: 3, padded.id: 4, top.id: 4, top_padded.id: 5, abstains.id: 4, "u/f/correctness": 1}
    probes = [Probe(REORDERED, top, top.item), Probe(REJUDGED, plain, plain.item), Probe(REJUDGED, top, top.item)]
    f = probe_figures(cs, scores, probes, [5, 3, None])
    # verbosity counts only plain answers graded below 5: the completeness pair rose (3 -> 4)
    assert f["verbosity"] == {"judgments": 1, "rose": 1, "rise_share": 1.0}
    assert f["passage_order"] == {"judgments": 1, "changed": 1, "change_share": 1.0}
    assert f["rejudging"] == {"judgments": 1, "identical": 1, "identical_share": 1.0}
    assert f["abstention_policy"]["justified"] == {"judgments": 1, "as_rubric": 0, "share": 0.0}
    assert f["abstention_policy"]["unjustified"]["share"] is None


def test_probe_items_reverse_faithfulness_passages_and_repeat_each_series_first_variant(cases):
    probes = probe_items(cases)
    reordered = [p for p in probes if p.kind == REORDERED]
    assert reordered and all(p.item.evidence == tuple(reversed(p.case.item.evidence)) != p.case.item.evidence for p in reordered)
    assert {p.case.item.dimension for p in reordered} == {"faithfulness"}
    rejudged = [p for p in probes if p.kind == REJUDGED]
    assert {p.case.series for p in rejudged} == {c.series for c in cases} and all(p.item == p.case.item for p in rejudged)


# --- the simulated judges ----------------------------------------------------------------------------

# judge -> failures it must show (the dimension and tag, or the probe, named)
MUST_FAIL = {
    "constant-1": ["correctness, tag abstention-justified: order 0.000"],
    "constant-5": ["completeness, tag abstention-unjustified: order 0.000"],
    "random": ["correctness: exact_share", "faithfulness: exact_share"],  # and many tags (below)
    "length-only": ["faithfulness, tag abstention-justified: order"],
    "keyword-injection-regex": ["injection flags, tag injection: false_flag_share 1.000 > 0.05",
                                "injection flags, tag injection: recall 0.800 < 0.9", "correctness, tag injection: order 0.000"],
    "reference-bow-recall": ["completeness, tag abstention-unjustified: order 0.000", "completeness, tag partial-coverage: order"],
    "halo": ["faithfulness, tag off-topic-but-faithful: hold", "relevance, tag earlier-turn-reliance: hold"],
    "abstention-always-1": ["correctness, tag abstention-justified: order 0.000",
                            "probe abstention_policy: justified abstentions scored as the rubric says"],
    "abstention-always-5": ["faithfulness, tag abstention-unjustified: order 0.000",
                            "probe abstention_policy: unjustified abstentions scored as the rubric says"],
    "fabricated-on-unanswerable-5": ["correctness, tag unanswerable-fabricated: order 0.000"],
    "true-unsupported-5": ["faithfulness, tag true-but-unsupported: order 0.000"],
    "faithfulness-correctness-swapped": ["faithfulness, tag true-but-unsupported: order 0.000",
                                         "correctness, tag true-but-unsupported: hold 0.000"],
    "pm1-half": ["correctness: exact_share"],
    "verbosity-biased": ["probe verbosity: rise_share"],
    "order-sensitive": ["probe passage_order: change_share"],
    "unstable": ["probe rejudging: identical_share"],
}
MUST_PASS = ("intended", "pm1-10pct-uncontrasted")


def judges(cases):
    return {j.name: j for j in simulated_judges(cases)}


def test_every_simulated_judge_of_the_issue_is_simulated(cases):
    assert set(MUST_FAIL) | set(MUST_PASS) <= set(judges(cases))
    assert {n for n, j in judges(cases).items() if j.must_fail} == set(MUST_FAIL)


@pytest.mark.parametrize("name", sorted(MUST_FAIL))
def test_a_judge_with_a_named_failure_mode_fails_naming_dimension_and_tag(cases, limits, name):
    thresholds, contrast = limits
    for seed in range(3):
        report = gate_result(judges(cases)[name], cases, thresholds, contrast, random.Random(seed))
        assert report["passed"] is False
        for expected in MUST_FAIL[name]:
            assert any(f.startswith(expected) for f in report["failures"]), (name, expected, report["failures"])
        if name == "random":  # which tags a random judge happens to order varies with the draw; most it does not
            assert sum(1 for f in report["failures"] if ", tag " in f) >= 10
        if name in ("true-unsupported-5", "keyword-injection-regex", "abstention-always-5"):
            break  # deterministic


@pytest.mark.parametrize("name", MUST_PASS)
def test_the_intended_grades_and_a_lightly_noisy_judge_pass(cases, limits, name):
    thresholds, contrast = limits
    for seed in range(5):
        report = gate_result(judges(cases)[name], cases, thresholds, contrast, random.Random(seed))
        assert report["failures"] == [] and report["passed"] is True, (name, seed)
        assert set(report["per_tag"]) == ISSUE_TAGS


def test_the_length_only_judge_fails_even_with_its_best_cut_points(cases, limits):
    # best_length_cuts picks, per dimension, the direction and cut points ordering the most
    # pairs; the judge still cannot order a tag whose better answers are half shorter, half longer.
    thresholds, contrast = limits
    report = gate_result(judges(cases)["length-only"], cases, thresholds, contrast, random.Random(0))
    failing_tags = {f.split(", tag ")[1].split(":")[0] for f in report["failures"] if ", tag " in f}
    assert len(failing_tags) >= 5




def test_v3_thresholds_are_checked_naming_the_file(tmp_path):
    bad = tmp_path / "thresholds.yaml"
    bad.write_text("version: 3\ncontrasts: {exact_share_min: 0.75, order_min: 0.8, hold_min: 1.5}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))}: missing section 'probes'"):
        load_contrast_thresholds(bad)
    bad.write_text("version: 3\ncontrasts: {exact_share_min: 0.75, order_min: 0.8, hold_min: 1.5}\nprobes: {verbosity_rise_max: 0.3, "
                   "passage_order_change_max: 0.3, rejudge_identical_min: 0.7, abstention_policy_min: 0.7}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"hold_min must be a number in 0\.\.1, not 1\.5"):
        load_contrast_thresholds(bad)
