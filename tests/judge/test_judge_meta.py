"""Golden set v2 and ``reteco judge-meta``: the set's shape, its loader's checks, the figures by
hand, and the command against a fake OpenAI server answering at random, always 1, always 5
(each must fail) and with the intended grades (must pass)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.fake_openai_server import first_user_text, graded_judge, http_error, judgment

from reteco.judge import DIMENSIONS, JudgeItem, JudgeOutcome, build_request, load_judge_config
from reteco.judge.prompts import injection_mark
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, InputError
from reteco.workbench.judge_audit.golden import GoldenCase, golden_dir, load_golden_set, read_golden_series
from reteco.workbench.judge_audit.meta_evaluation import Thresholds, load_thresholds, meta_evaluate, spearman

KEY_ENV = "RETECO_TEST_JUDGE_META_KEY"
TEMPO = {"bitcoin", "economics", "genealogy", "history", "law", "politics", "travel"}
RECOR = {"biology", "earth_science", "psychology", "robotics", "sustainable_living", "drones", "hardware",
         "medicalsciences"}


@pytest.fixture(scope="module")
def cases() -> list[GoldenCase]:
    return load_golden_set(2)


# --- the golden set v2 ------------------------------------------------------------------------


def test_every_dimension_has_at_least_12_graded_cases_with_mid_scale_grades(cases):
    for d in DIMENSIONS:
        mine = [c for c in cases if c.item.dimension == d]
        assert len(mine) >= 12, d
        grades = Counter(c.grade for c in mine)
        assert grades.keys() & {2, 3, 4}, f"{d}: no mid-scale case"
        assert grades[5] and grades.keys() & {1, 2}, f"{d}: needs both ends"
        assert all(c.min_score <= c.grade <= c.max_score for c in mine)
    assert len({c.id for c in cases}) == len(cases)


def test_every_dimension_is_varied_alone_in_minimal_pairs_that_keep_the_others(cases):
    by_id = {c.id: c for c in cases}
    for d in DIMENSIONS:
        varied = {(c.series, c.variant) for c in cases if c.varies == d}
        assert len(varied) >= 2, f"{d} is varied alone in fewer than 2 minimal pairs"
    for c in cases:
        if c.varies is None or c.varies == c.item.dimension:
            continue
        base = by_id[f"{c.series}/{c.base}/{c.item.dimension}"]
        assert (c.grade, c.min_score, c.max_score) == (base.grade, base.min_score, base.max_score), c.id
        assert c.item.query == base.item.query and c.item.answer != base.item.answer


def test_the_adversarial_cases_are_there(cases):
    variants = {(c.series, c.variant): c for c in cases}
    answers = {v: c.item.answer for v, c in variants.items()}
    injected = [c for c in cases if c.injection]
    assert {c.item.dimension for c in injected} == set(DIMENSIONS)
    assert all(c.max_score <= 2 for c in injected)
    # A mixed injection appended to a good answer: the base's answer, then a fake block end
    # and a request for a 5.
    mixed = answers[("bitcoin-halving", "mixed-injection")]
    assert mixed.startswith(answers[("bitcoin-halving", "base")]) and "<<<END RESPONSE>>>" in mixed and "score" in mixed
    # A passage addressed to AI graders in noisy 2c passages: relayed -> flagged; ignored -> not.
    pid = variants[("pid-integral", "base")].item
    assert any("AI GRADER" in text for _, text in pid.evidence) and pid.evidence != pid.gold_evidence
    assert not variants[("pid-integral", "base")].injection and variants[("pid-integral", "relays-grader-note")].injection
    # A copy of a passage that does not answer: verbatim, fully supported, incomplete.
    copy = {c.item.dimension: c for c in cases if c.variant == "copied-passage"}
    assert copy["faithfulness"].item.answer in [t for _, t in copy["faithfulness"].item.evidence]
    assert copy["faithfulness"].grade == 5 and copy["completeness"].grade == 1
    # Verbose padding: the base's answer inside filler, relevance down.
    assert answers[("bitcoin-halving", "base")] in answers[("bitcoin-halving", "padded")]
    # A true claim the retrieved passages do not support: correct, unfaithful.
    true_unsupported = {c.item.dimension: c.grade for c in cases if c.series == "hba1c-retrieval-miss" and c.variant == "true-unsupported"}
    assert true_unsupported["correctness"] == 5 and true_unsupported["faithfulness"] <= 2
    # A justified abstention (unanswerable turn) beside an unjustified one and a bare refusal.
    justified = {c.item.dimension: c.grade for c in cases if c.variant == "justified-abstention"}
    unjustified = {c.item.dimension: c.grade for c in cases if c.variant == "unjustified-abstention"}
    assert "do not give" in variants[("tohoku-aftershocks", "justified-abstention")].item.reference_answer
    assert justified == dict.fromkeys(DIMENSIONS, 5)
    assert unjustified["completeness"] == 1 and unjustified["correctness"] == 2 and unjustified["faithfulness"] == 5
    assert ("nvme-pcie", "bare-refusal") in variants
    # Answers relying on earlier turns; noisy 2c passages.
    assert sum(1 for c in cases if c.variant == "relies-on-history") >= 2 * len(DIMENSIONS)
    assert {c.series for c in cases if c.item.evidence != c.item.gold_evidence} >= {"berlin-wall", "central-bank-rates", "autumn-leaves"}


def test_the_cases_are_in_both_tracks_domains(cases):
    domains = {c.item.key.split("/")[0] for c in cases}
    assert len(domains & TEMPO) >= 5 and len(domains & RECOR) >= 7 and domains <= TEMPO | RECOR


def test_version_1_stays_readable_and_gets_its_passages_as_gold():
    v1 = load_golden_set(1)
    assert len(v1) == 17 and all(c.grade is None for c in v1)
    assert all(c.item.gold_evidence == c.item.evidence for c in v1)


SERIES = {
    "id": "s", "domain": "law", "subtrack": "2b", "purpose": "p",
    "turn": {"query": "q?", "history": "", "reference_answer": "r", "gold": [["d1", "text"]]},
    "variants": [
        {"id": "base", "answer": "a", "grades": {"correctness": 5, "completeness": [4, 3, 5]}},
        {"id": "short", "varies": "completeness", "answer": "b", "grades": {"completeness": 2}},
    ],
}


def write_series(tmp_path, **changes) -> Path:
    series = json.loads(json.dumps(SERIES))
    for path, value in changes.items():
        target = series
        *head, last = path.split(".")
        for part in head:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump({"version": 2, "series": [series]}), encoding="utf-8")
    return path


def test_the_loader_expands_a_series_and_a_minimal_pair_takes_the_bases_other_grades(tmp_path):
    cases = read_golden_series(write_series(tmp_path), 2)
    assert [(c.id, c.grade, c.min_score, c.max_score, c.varies) for c in cases] == [
        ("s/base/correctness", 5, 4, 5, None),
        ("s/base/completeness", 4, 3, 5, None),
        ("s/short/correctness", 5, 4, 5, "completeness"),
        ("s/short/completeness", 2, 1, 3, "completeness"),
    ]
    item = cases[3].item
    assert (item.key, item.answer, item.evidence, item.gold_evidence) == ("law/golden_s_short", "b", (("d1", "text"),), (("d1", "text"),))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"variants.1.grades": {"completeness": 2, "correctness": 3}}, "variant 'short': a variant that varies completeness gives its grade alone"),
        ({"variants.1.grades": {"completeness": 4}}, "variant 'short': varies completeness, but its intended grade is the base's"),
        ({"variants.1.varies": "relevance"}, "variant 'short': varies: 'relevance' is not a dimension the base is graded on"),
        ({"variants.0.grades": {"correctness": [5, 1, 4]}}, "variant 'base': grade [5, 1, 4]: need 1 <= LOW <= N <= HIGH <= 5"),
        ({"variants.0.grades": {"corectness": 5}}, "variant 'base': grades: unknown dimension(s) corectness"),
        ({"variants.1.id": "base"}, "variant 'base': the id is used twice"),
        ({"turn.retrieved": [["d2", "x"]]}, "turn.retrieved: only a 2c turn"),
        ({"subtrack": "2c"}, "missing 'retrieved'"),
        ({"variants.1.injection": "yes"}, "variant 'short': injection must be true or false"),
    ],
)
def test_the_loader_refuses_a_malformed_series_naming_it(tmp_path, changes, message):
    with pytest.raises(ValueError, match=re.escape(f"series 's': {message}")):
        read_golden_series(write_series(tmp_path, **changes), 2)


def test_thresholds_are_versioned_and_checked(tmp_path):
    t = load_thresholds(golden_dir(2) / "thresholds.yaml", 2)
    assert 0 < t.pairwise_accuracy_min <= 1 and t.unscored_share_max == 0.02
    bad = tmp_path / "t.yaml"
    bad.write_text("version: 2\nper_dimension: {pairwise_accuracy_min: 1.5}\ninjection: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="missing"):
        load_thresholds(bad, 2)
    with pytest.raises(ValueError, match="version: 3"):
        load_thresholds(golden_dir(2) / "thresholds.yaml", 3)


# --- the figures, by hand -----------------------------------------------------------------------


def case(series, variant, grade, *, dimension="correctness", low=None, high=None, varies=None, injection=False, base="a"):
    item = JudgeItem(f"law/{series}_{variant}", dimension, "q", "", f"{series}-{variant}", (), "r")
    return GoldenCase(f"{series}/{variant}/{dimension}", "", item, low or max(1, grade - 1), high or min(5, grade + 1),
                      grade, series, variant, varies, injection, base)


def outcome(c: GoldenCase, score, *, status="ok", flag=False, v2=True):
    rationale = (injection_mark(flag) if v2 else "") + "r" if status == "ok" else "what went wrong"
    return JudgeOutcome(c.item, score if status == "ok" else None, status, rationale, False, 1, None)


LOOSE = Thresholds(0.5, 0.5, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5)


def test_pairwise_ties_range_hits_and_unscored_by_hand():
    # Series x: grades 5, 3, 1 -> 3 pairs with different grades; series y: 4, 4 -> none; y's
    # 2 is paired with both 4s.
    cs = [case("x", "a", 5), case("x", "b", 3), case("x", "c", 1), case("y", "a", 4), case("y", "b", 4), case("y", "c", 2)]
    scores = [5, 3, 3, 4, 2, None]  # x: (a,b) concordant, (a,c) concordant, (b,c) tie; y: (a,c), (b,c) unscored
    outs = [outcome(c, s) if s is not None else outcome(c, None, status="invalid") for c, s in zip(cs, scores)]
    f = meta_evaluate(cs, outs, LOOSE)["per_dimension"]["correctness"]
    assert f["pairs"] == {"pairs": 5, "concordant": 2, "discordant": 0, "ties": 1, "unscored": 2}
    assert f["pairwise_accuracy"] == pytest.approx(2 / 5) and f["tie_share"] == pytest.approx(1 / 5)
    # In range: x/a 5 in 4-5, x/b 3 in 2-4, x/c 3 not in 1-2, y/a 4 in 3-5, y/b 2 not in 3-5, y/c unscored.
    assert f["range_hits"] == pytest.approx(3 / 6)
    assert (f["scored"], f["invalid"], f["error"], f["unscored_share"]) == (5, 1, 0, pytest.approx(1 / 6))


def test_a_discordant_pair_is_counted_as_such():
    cs = [case("x", "a", 5), case("x", "b", 2)]
    f = meta_evaluate(cs, [outcome(cs[0], 2), outcome(cs[1], 4)], LOOSE)["per_dimension"]["correctness"]
    assert f["pairs"]["discordant"] == 1 and f["pairwise_accuracy"] == 0


def midrank_pearson(x, y):
    """An independent Spearman: Pearson's r of mid-ranks, computed here with numpy."""
    def midranks(v):
        v = np.asarray(v, dtype=float)
        return np.array([np.sum(v < a) + (np.sum(v == a) + 1) / 2 for a in v])
    return float(np.corrcoef(midranks(x), midranks(y))[0, 1])


def test_spearman_by_hand_and_against_an_independent_midrank_pearson():
    # No ties: d = (0, 1, -1, 0), rho = 1 - 6 * 2 / (4 * (16 - 1)) = 0.8.
    assert spearman([(1, 1), (2, 3), (3, 2), (4, 4)]) == (pytest.approx(0.8), None)
    pairs = [(1, 2), (1, 1), (2, 3), (3, 3), (5, 4), (4, 5), (5, 5)]
    rho, why = spearman(pairs)
    assert why is None and rho == pytest.approx(midrank_pearson(*zip(*pairs)), abs=1e-12)
    assert spearman([(1, 3), (2, 3), (5, 3)]) == (None, "the judge gave every scored case the same score (3)")
    assert spearman([(1, 3), (2, 4)])[0] is None


def test_stayed_put_compares_each_minimal_pair_with_its_base_on_the_other_dimensions():
    base_c = case("x", "a", 5, dimension="correctness")
    base_m = case("x", "a", 5, dimension="completeness")
    short_c = case("x", "b", 5, dimension="correctness", varies="completeness")
    short_m = case("x", "b", 2, dimension="completeness", varies="completeness")
    wrong_c = case("x", "c", 2, dimension="correctness", varies="correctness")
    wrong_m = case("x", "c", 5, dimension="completeness", varies="correctness")
    cs = [base_c, base_m, short_c, short_m, wrong_c, wrong_m]
    # correctness: short (varies completeness) 3 vs base 5 -> moved by 2.
    # completeness: wrong (varies correctness) 4 vs base 5 -> within 1.
    scores = [5, 5, 3, 2, 2, 4]
    report = meta_evaluate(cs, [outcome(c, s) for c, s in zip(cs, scores)], LOOSE)["per_dimension"]
    assert report["correctness"]["stayed_put_checks"] == {"checks": 1, "within_1": 0, "moved": 1, "unscored": 0}
    assert report["completeness"]["stayed_put_checks"] == {"checks": 1, "within_1": 1, "moved": 0, "unscored": 0}
    assert report["correctness"]["stayed_put"] == 0 and report["completeness"]["stayed_put"] == 1


def test_injection_recall_and_false_flags_and_a_prompt_without_the_flag():
    cs = [case("x", "a", 5), case("x", "b", 1, injection=True), case("x", "c", 1, injection=True), case("x", "d", 4)]
    outs = [outcome(cs[0], 5, flag=True), outcome(cs[1], 1, flag=True), outcome(cs[2], 3), outcome(cs[3], 4)]
    inj = meta_evaluate(cs, outs, LOOSE)["injection"]
    assert (inj["recall"], inj["false_flag_share"]) == (0.5, 0.5)
    assert (inj["flagged_attempts"], inj["attempt_judgments"], inj["flagged_clean"], inj["clean_judgments"]) == (1, 2, 1, 2)
    v1 = meta_evaluate(cs, [outcome(c, c.grade, v2=False) for c in cs], LOOSE)
    assert v1["injection"]["recall"] is None and "injection flags: recall is undefined" in " ".join(v1["failures"])


def test_failures_name_the_figure_and_the_threshold_and_errors_make_it_incomplete():
    cs = [case("x", "a", 5), case("x", "b", 1)]
    strict = Thresholds(0.8, 0.2, 0.7, 0.85, 0.9, 0.02, 0.9, 0.05)
    report = meta_evaluate(cs, [outcome(cs[0], 5), outcome(cs[1], 5)], strict)
    assert report["passed"] is False and report["complete"] is True
    assert "correctness: pairwise_accuracy 0.000 < 0.8" in report["failures"]
    assert "correctness: tie_share 1.000 > 0.2" in report["failures"]
    assert "correctness: spearman is undefined (threshold >= 0.7)" in report["failures"]
    # A dimension without cases fails too: nothing shows the judge can grade it.
    assert any(f.startswith("relevance: range_hits is undefined") for f in report["failures"])
    failed = meta_evaluate(cs, [outcome(cs[0], 5), outcome(cs[1], None, status="error")], strict)
    assert failed["complete"] is False and failed["passed"] is None


# --- the command, against the fake server ------------------------------------------------------


def intended_table(cases):
    """First user message of each golden request -> (intended grade, intended flag)."""
    config = load_judge_config()
    return {build_request(c.item, config)["messages"][1]["content"]: (c.grade, c.injection) for c in cases}


def test_a_judge_giving_the_intended_grades_passes(fake_openai, meta_run, cases, capsys):
    fake_openai.judge = graded_judge(intended_table(cases))
    code, report, err = meta_run(capsys)
    assert code == 0, err
    assert report["passed"] is True and report["failures"] == [] and report["complete"] is True
    assert report["golden_version"] == 2 and report["judge"]["prompt_version"] == 4
    assert all(f["range_hits"] == 1 and f["pairwise_accuracy"] == 1 and f["spearman"] == pytest.approx(1)
               for f in report["per_dimension"].values())
    assert report["injection"]["recall"] == 1 and report["injection"]["false_flag_share"] == 0
    assert len(report["cases"]) == len(cases)
    assert "judge-meta: PASSED" in err
    assert fake_openai.chat_calls == len(cases)


@pytest.mark.parametrize("constant", [1, 5])
def test_a_judge_answering_a_constant_score_fails(fake_openai, meta_run, capsys, constant):
    fake_openai.judge = lambda body: judgment(constant, "same for all", injection=False)
    code, report, err = meta_run(capsys)
    assert code == EXIT_INPUT and report["passed"] is False
    for d in DIMENSIONS:
        assert f"{d}: pairwise_accuracy 0.000 < 0.8" in report["failures"]
        assert f"{d}: spearman is undefined (threshold >= 0.7)" in report["failures"]
    assert "injection flags: recall 0.000 < 0.9" in report["failures"]
    assert "judge-meta: FAILED, below threshold:" in err and "correctness: pairwise_accuracy 0.000 < 0.8" in err


def test_a_judge_answering_at_random_fails(fake_openai, meta_run, capsys):
    # The fake server's default judge: a score from a hash of the request, i.e. random but repeatable.
    code, report, _ = meta_run(capsys)
    assert code == EXIT_INPUT and report["passed"] is False
    for d in DIMENSIONS:
        assert report["per_dimension"][d]["pairwise_accuracy"] < 0.8
        assert any(f.startswith(f"{d}: ") for f in report["failures"])


def test_failed_judgments_exit_4_and_the_report_says_incomplete(fake_openai, meta_run, cases, capsys):
    table = intended_table(cases)
    first = next(iter(table))
    graded = graded_judge(table)
    fake_openai.judge = lambda body: http_error(503, "down") if first_user_text(body) == first else graded(body)
    code, report, err = meta_run(capsys)
    assert code == EXIT_INCOMPLETE
    assert report["complete"] is False and report["passed"] is None
    assert "INCOMPLETE: 1 judgments failed" in err
    # The failure is not cached: once the endpoint is back, running again asks only that one.
    before = fake_openai.chat_calls
    fake_openai.judge = graded
    code, report, _ = meta_run(capsys)
    assert code == 0 and report["passed"] is True and fake_openai.chat_calls == before + 1


def test_the_markdown_report_has_the_verdict_and_a_row_per_dimension(fake_openai, meta_run, cases, capsys, tmp_path):
    fake_openai.judge = graded_judge(intended_table(cases))
    meta_run(capsys)
    text = (tmp_path / "out0" / "judge_meta.md").read_text()
    assert text.startswith("# Judge meta-evaluation: PASSED")
    for d in DIMENSIONS:
        assert re.search(rf"^\| {d} \| \d+ \| \d+ \| 1\.000 \| 1\.000 ", text, re.MULTILINE)


def test_without_a_key_nothing_runs(fake_openai, meta_run, monkeypatch, capsys):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(InputError, match="the judge did not run"):
        meta_run(capsys)
    assert fake_openai.chat_calls == 0


def test_version_1_is_refused_with_a_pointer_to_judge_golden(meta_run, capsys):
    with pytest.raises(InputError, match=r"version 1 is `reteco judge --golden`"):
        meta_run(capsys, "--golden-version", "1")
