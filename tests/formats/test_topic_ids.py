"""One rule for turn numbers in both spellings (``<conv>_turn_<n>``, ``<conv>#turn<n>``): ASCII
digits only, leading zeros mean the same number, an absurdly long number is no turn number."""

from __future__ import annotations

import json

import pytest
from support.tiny_track2 import write_tiny_reference

from reteco.formats.answers import read_answers
from reteco.formats.topic_ids import MAX_TURN_DIGITS, NOT_FOUND, TopicResolver, normalize_topic_id, parse_turn
from reteco.formats.trec_run import read_trec_run
from reteco.problems import InputError, Problems
from reteco.scoring.rules import apply_rules


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ex_3025_turn_1", ("ex_3025", 1)),
        ("ex_3025#turn1", ("ex_3025", 1)),
        ("ex_3025_turn_01", ("ex_3025", 1)),  # ignored before: only "#turn" was rewritten
        ("ex_3025#turn01", ("ex_3025", 1)),
        ("ex_3025_turn_0000001", ("ex_3025", 1)),  # 7 characters, 1 significant digit
        ("ex_3025_turn_12", ("ex_3025", 12)),
        ("a_turn_2_turn_3", ("a_turn_2", 3)),  # the last "_turn_" ends the conversation id
        ("2#turn" + "9" * MAX_TURN_DIGITS, ("2", 999_999)),
    ],
)
def test_both_spellings_read_the_same_turn_number(text, expected):
    assert parse_turn(text) == expected
    assert normalize_topic_id(text) == f"{expected[0]}_turn_{expected[1]}"


@pytest.mark.parametrize(
    "text",
    [
        "ex_3025_turn_\uff11",  # fullwidth 1: Unicode's \d matched it and int() read it as 1
        "ex_3025#turn\u0663",  # Arabic-Indic 3
        "ex_3025_turn_\u0661\u0662",
        "ex_3025#turn1\u0662",
        "ex_3025_turn_1" + "0" * MAX_TURN_DIGITS,  # 7 significant digits
        "ex_3025#turn" + "9" * 5000,  # int() of these raised ValueError (over 4,300 digits)
        "ex_3025_turn_" + "9" * 5000,
        "ex_3025_turn_1\n",  # a final newline is not part of a number
        "ex_3025_turn_",
        "ex_3025_turn_-1",
        "122291_22",
        "122291_22_step1",
    ],
)
def test_anything_else_is_not_a_turn_number_and_stays_as_written(text):
    assert parse_turn(text) is None
    assert normalize_topic_id(text) == text


@pytest.fixture
def ref_2a(tmp_path):
    return write_tiny_reference(tmp_path / "ref" / "2a", "2a")


@pytest.mark.parametrize("written", ["biology/2_turn_01", "biology/2#turn01", "biology/2_turn_2", "Biology/2#turn002"])
def test_a_run_resolves_every_spelling_of_a_turn(ref_2a, written):
    resolver = TopicResolver(ref_2a)
    expected = next(i for i, t in enumerate(ref_2a.topics) if t.key == f"biology/2_turn_{written[-1]}")
    assert resolver.resolve(written) == expected


@pytest.mark.parametrize("written", ["biology/2_turn_\uff11", "biology/2#turn\u0661", "biology/2_turn_" + "0" * 3 + "1" + "0" * 6])
def test_a_run_resolves_no_look_alike_turn(ref_2a, written):
    assert TopicResolver(ref_2a).resolve(written) == NOT_FOUND


def test_a_run_with_zero_padded_turns_is_scored_on_those_turns(ref_2a):
    run = read_trec_run(b"biology/2_turn_01 Q0 b1 1 1.0 t\nbiology/2#turn02 Q0 b2 1 1.0 t\n", "run.txt")
    problems = Problems()
    ranked = apply_rules(ref_2a, run, problems)
    assert ranked.counts["topics_ignored"] == 0 and ranked.counts["topics_missing"] == 1
    keys = [t.key for t in ref_2a.topics]
    assert ranked.top_documents(keys.index("biology/2_turn_1"), 10) == ["b1"]
    assert ranked.top_documents(keys.index("biology/2_turn_2"), 10) == ["b2"]


def test_answers_follow_the_same_rule(tmp_path):
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    lines = [
        {"turn_id": "biology/2_turn_01", "answer": "a"},
        {"turn_id": "biology/2#turn\uff12", "answer": "b"},  # fullwidth 2: not turn 2
        {"turn_id": "earth_science/2#turn" + "9" * 5000, "answer": "c"},  # no ValueError: not a turn
    ]
    problems = Problems()
    answers = read_answers("".join(json.dumps(x) + "\n" for x in lines).encode(), "answers.jsonl", ref, problems)
    assert [ref.topics[i].key for i in answers.by_topic] == ["biology/2_turn_1"]
    assert answers.counts["turns_ignored"] == 2
    (warning,) = [p for p in problems.lines() if "not a turn of the reference" in p]
    assert "(line 2)" in warning and "(line 3)" in warning and "(5020 characters in all)" in warning
    assert len(warning) < 400


def test_a_turn_written_zero_padded_and_plain_is_answered_twice(tmp_path):
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    data = (json.dumps({"turn_id": "biology/2_turn_1", "answer": "a"}) + "\n"
            + json.dumps({"turn_id": "biology/2_turn_001", "answer": "b"}) + "\n").encode()  # fmt: skip
    with pytest.raises(InputError) as caught:
        read_answers(data, "answers.jsonl", ref)
    assert caught.value.problems.lines() == [
        "answers.jsonl:2: error: turn 'biology/2_turn_001' is answered twice, on lines 1 and 2; "
        "give exactly one answer per turn"
    ]
