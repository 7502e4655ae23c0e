"""Golden set v4 (issue 31, items 3 and 4): graded for prompt version 4; 2c abstentions both ways
(the run's passages hold the answer: unfaithful; they lack the gold passage: faithful, with
correctness and completeness carrying the missed answer), and the gate that fails a judge grading
faithfulness against the gold passages, which golden v3 could not."""

from __future__ import annotations

import random

import yaml

from reteco.judge.prompts import load_prompt_set
from reteco.workbench.judge_audit.golden import THRESHOLDS_FILE, golden_dir, golden_prompt_version, load_golden_set
from reteco.workbench.judge_audit.golden_templates import TOPICS, build
from reteco.workbench.judge_audit.meta_contrasts import load_contrast_thresholds
from reteco.workbench.judge_audit.meta_evaluation import load_thresholds
from reteco.workbench.judge_audit.simulated_judges import gate_result, simulated_judges

V4 = load_golden_set(4)


def gate(version: int, name: str) -> dict:
    cases = load_golden_set(version)
    folder = golden_dir(version)
    judge = next(j for j in simulated_judges(cases) if j.name == name)
    return gate_result(judge, cases, load_thresholds(folder / THRESHOLDS_FILE, version),
                       load_contrast_thresholds(folder / THRESHOLDS_FILE), random.Random(2027))


def test_the_yaml_is_what_the_templates_write_for_prompt_version_4():
    data = yaml.safe_load((golden_dir(4) / "cases.yaml").read_text(encoding="utf-8"))
    assert data == build(4) and golden_prompt_version(4) == 4
    assert yaml.safe_load((golden_dir(3) / "cases.yaml").read_text(encoding="utf-8")) == build(3)  # v3 untouched


def test_2c_abstentions_both_ways_are_in_the_set_with_their_intended_grades():
    missed = [c for c in V4 if c.series.endswith("-missed")]
    assert len({c.series for c in missed}) == len(TOPICS) >= 5  # one pair per topic: the per-tag checks' 5 pairs
    for c in missed:
        assert not set(c.item.gold_evidence) <= set(c.item.evidence)  # a gold passage the run lacked
    grades = {(c.variant, c.item.dimension): c.grade for c in missed}
    assert grades[("abstains-missed", "faithfulness")] == 5 and grades[("answers-unsupported", "faithfulness")] == 1
    assert grades[("abstains-missed", "correctness")] == grades[("abstains-missed", "completeness")] == 1
    held = [c for c in V4 if c.series.endswith("-noisy") and c.variant == "abstains"]
    assert held and all(set(c.item.gold_evidence) <= set(c.item.evidence) for c in held)
    assert {c.item.dimension: c.grade for c in held if c.series == held[0].series}["faithfulness"] == 1
    # v4's relevance is not shown whether the answer exists: an abstention naming the question is relevant.
    assert {c.grade for c in V4 if c.variant == "abstains" and c.item.dimension == "relevance"} == {5}


def test_prompt_v4_shows_the_missed_cases_faithfulness_no_gold_passage_and_no_reference():
    prompts = load_prompt_set(4)
    for c in (c for c in V4 if c.series.endswith("-missed") and c.item.dimension == "faithfulness"):
        user = prompts.messages(c.item)[1]["content"]
        lacked = [text for doc_id, text in c.item.gold_evidence if (doc_id, text) not in c.item.evidence]
        assert lacked and not any(text.strip() in user for text in lacked)
        assert c.item.reference_answer.strip() not in user


def test_grading_faithfulness_against_the_gold_fails_the_v4_gate_and_passed_v3s():
    v4 = gate(4, "faithfulness-against-gold")
    assert v4["passed"] is False
    assert any(f.startswith("faithfulness, tag abstention-2c-missed: order") for f in v4["failures"])
    assert gate(3, "faithfulness-against-gold")["passed"] is True  # the leak golden v3 could not see
    assert gate(4, "intended")["passed"] is True
