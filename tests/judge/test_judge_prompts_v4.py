"""Prompt version 4 (issue 31, items 3 and 4): each dimension is shown only what it judges, the
blocks every dimension shares first.

Faithfulness sees the history, the query, the response and the passages the system had (2b: the
gold passages; 2c: the run's top five), never the gold passages of 2c or the reference; relevance
and coherence see no evidence; correctness sees the gold passages and the reference, completeness
these and the key points. A turn's five requests are the same bytes up to the end of the RESPONSE
block. The system message states the abstention rule once, per sub-track, and the rubric anchors
agree with it. Version 3 stays readable for the verdicts it made.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from support.fake_openai_server import common_prefix_length, prompt_text, rule_tokens
from support.golden_turns import every_dimension, golden_turns

from reteco.judge import JudgeItem, build_request, load_judge_config
from reteco.judge.config import PLAN_GPT4O_CONFIG
from reteco.judge.prompts import load_prompt_set

V4 = load_prompt_set(4)
V4_CONFIG = dataclasses.replace(load_judge_config(), prompt_version=4, prompts=V4)
RUN_PASSAGE = ("run_doc_7", "The museum opened its east wing in 1998 after a long renovation.")
GOLD_PASSAGE = ("gold_doc_3", "The bridge over the Elbe was completed in 1892 by the city's engineers.")
REFERENCE = "The bridge was completed in 1892."
KEY_POINT = ("It was completed in 1892.", "vital")
# A 2c turn whose run missed the gold passage: its top five hold none of it.
ITEM_2C = JudgeItem(key="bridges/4_turn_2", dimension="", query="And when was it finished?",
                    history="Q: Which bridge crosses the Elbe here?\nA: The old stone bridge.",
                    answer="The passages do not say when the bridge was finished.", evidence=(RUN_PASSAGE,),
                    reference_answer=REFERENCE, gold_evidence=(GOLD_PASSAGE,), key_points=(KEY_POINT,))


def user_text(dimension: str, item: JudgeItem = ITEM_2C) -> str:
    return V4.messages(JudgeItem(**{**item.__dict__, "dimension": dimension}))[1]["content"]


def test_v4_loads_beside_v3_with_the_plans_five_dimensions():
    # The packaged default: the one version valid per the plan (separate focused evidence) and the
    # sub-track rules (2c abstentions by the run's passages), though version 2 costs less
    # (bench/README.md); the plan's gpt-4o config is on it too.
    assert load_judge_config().prompt_version == 4
    assert load_judge_config(PLAN_GPT4O_CONFIG).prompt_version == 4
    assert load_prompt_set(3).dimension_names == V4.dimension_names  # the plan's five, in the same order


def test_faithfulness_in_2c_sees_the_runs_passages_never_the_gold_it_lacked_nor_the_reference():
    text = user_text("faithfulness")
    assert RUN_PASSAGE[1] in text and RUN_PASSAGE[0] in text
    assert GOLD_PASSAGE[1] not in text and GOLD_PASSAGE[0] not in text and "1892" not in text
    assert REFERENCE not in text and KEY_POINT[0] not in text
    assert "GOLD PASSAGE" not in text and "REFERENCE ANSWER" not in text and "KEY POINTS" not in text


@pytest.mark.parametrize("dimension", ["relevance", "coherence"])
def test_relevance_and_coherence_see_no_reference_key_points_gold_or_passages(dimension):
    text = user_text(dimension)
    for hidden in (REFERENCE, KEY_POINT[0], GOLD_PASSAGE[1], RUN_PASSAGE[1], "1892", "1998"):
        assert hidden not in text, hidden
    assert ITEM_2C.answer in text and ITEM_2C.query in text and "old stone bridge" in text


def test_correctness_and_completeness_see_what_they_need_and_not_the_runs_passages():
    correctness, completeness = user_text("correctness"), user_text("completeness")
    for text in (correctness, completeness):
        assert GOLD_PASSAGE[1] in text and REFERENCE in text and RUN_PASSAGE[1] not in text
    assert KEY_POINT[0] in completeness and KEY_POINT[0] not in correctness


def test_every_dimension_shows_exactly_its_inputs_shared_ones_first():
    assert {d: s.inputs for d, s in V4.dimensions.items()} == {
        "correctness": ("history", "query", "answer", "gold_evidence", "reference_answer"),
        "completeness": ("history", "query", "answer", "gold_evidence", "reference_answer", "key_points"),
        "relevance": ("history", "query", "answer"),
        "coherence": ("history", "query", "answer"),
        "faithfulness": ("history", "query", "answer", "evidence"),
    }


def test_a_turns_five_requests_are_the_same_bytes_up_to_the_end_of_the_response_block():
    texts = [prompt_text(build_request(JudgeItem(**{**ITEM_2C.__dict__, "dimension": d}), V4_CONFIG))
             for d in V4.dimension_names]
    prefix = min(common_prefix_length(texts[0], t) for t in texts)
    shared = texts[0][:prefix]
    assert ITEM_2C.answer in shared and shared.count("<<<END RESPONSE ") == 1
    tag = re.search(r"<<<END RESPONSE (\w+)>>>", shared).group(1)
    assert all(t.count(tag) >= 2 for t in texts)  # one fence tag for every request of the answer
    # Relevance and coherence differ only from their rubric on.
    relevance, coherence = user_text("relevance"), user_text("coherence")
    rubric = relevance.index("Dimension: relevance.")
    assert relevance[:rubric] == coherence[:rubric]


@pytest.mark.parametrize("subtrack", ["2b", "2c"])
def test_most_of_a_turns_prompt_tokens_lie_in_the_prefix_its_five_requests_share(subtrack):
    """Measured on the golden turns (bench/README.md): 80 % (2b) and 78 % (2c), mean; version 2
    shares 50 % and 48 %."""
    def share(version, item):
        c = dataclasses.replace(V4_CONFIG, prompt_version=version, prompts=load_prompt_set(version))
        texts = [prompt_text(build_request(i, c)) for i in every_dimension([item])]
        prefix = min(common_prefix_length(texts[0], t) for t in texts)
        return sum(rule_tokens(t[:prefix]) for t in texts) / sum(rule_tokens(t) for t in texts)

    turns = golden_turns(subtrack)
    v4 = [share(4, t) for t in turns]
    assert min(v4) >= 0.75 and min(v4) > max(share(2, t) for t in turns)


def test_the_system_message_states_the_abstention_rule_once_per_subtrack_and_the_anchors_agree():
    system = V4.system
    assert system.count("In sub-track 2b the PASSAGES are the gold passages") == 1
    assert system.count("In sub-track 2c they are the system's own retrieved passages") == 1
    assert "an abstention that says so is true to its passages and faithful" in system
    assert "correctness and completeness carry the penalty for the missed answer" in system
    faithfulness = V4.dimensions["faithfulness"].text
    assert "an abstention true to the PASSAGES (they do not hold the answer)" in faithfulness.splitlines()[2]
    assert "an abstention although the PASSAGES hold the answer" in faithfulness.splitlines()[-1]
    for dimension in ("correctness", "completeness"):
        lines = V4.dimensions[dimension].text.strip().splitlines()
        assert "an abstention on an unanswerable turn" in lines[2] and "an abstention on an answerable turn" in lines[-1]
    # No rubric of version 4 says the reference decides faithfulness (version 3's contradiction).
    assert "unjustified abstention" not in faithfulness and "REFERENCE" not in faithfulness
