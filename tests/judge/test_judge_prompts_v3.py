"""Prompt version 3: the prefix-cache layout and rubric v3 (issues 20 item 3 and 18 item 4).

The five requests of one answer start with the same bytes (the system message with the rules and
every dimension's rubric, then every data block up to the RESPONSE) and differ only in the closing
line naming the dimension;
the share of a turn's prompt tokens in that shared prefix is measured per sub-track, on the
golden cases' own texts, with the fake server's documented token rule. Version 2's verdicts stay
readable and are never served for version 3 (another signature, another cache key)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from support.fake_openai_server import FakeOpenAI, common_prefix_length, prompt_text, rule_tokens
from support.golden_turns import golden_turns

from reteco.formats.turns import parse_key_points
from reteco.judge import JudgeItem, item_from_json, item_to_json, run_judge
from reteco.judge.prompts import PACKAGED_PROMPTS, freeze, load_prompt_set
from reteco.subtracks import DIMENSIONS


def shared_share(version: int, item: JudgeItem) -> float:
    """The share of the turn's five prompts' tokens lying in their common prefix."""
    prompts = load_prompt_set(version)
    texts = [prompt_text({"messages": prompts.messages(dataclasses.replace(item, dimension=d))}) for d in DIMENSIONS]
    prefix = min(common_prefix_length(texts[0], t) for t in texts)
    return len(texts) * rule_tokens(texts[0][:prefix]) / sum(rule_tokens(t) for t in texts)


@pytest.mark.parametrize(("subtrack", "target"), [("2c", 0.70), ("2b", 0.60)])
def test_most_of_each_turns_prompt_tokens_lie_in_the_prefix_its_five_requests_share(subtrack, target):
    items = golden_turns(subtrack)
    assert subtrack == "2b" or all(len(i.evidence) == 5 for i in items)
    v3 = [shared_share(3, i) for i in items]
    assert min(v3) >= target, f"{subtrack}: the least shared turn has {min(v3):.0%} in the shared prefix"
    # The rubrics sit in the shared system message: only the closing line (~30 tokens of ~3,000)
    # differs, so 98% or more of every golden turn's prompt tokens are shared (measured: 98.9%).
    assert min(v3) >= 0.98, f"{subtrack}: the least shared turn has {min(v3):.1%} in the shared prefix"
    # Version 2 starts each request with its own rubric after the common rules: far less is shared.
    assert max(shared_share(2, i) for i in items) < target


def test_the_five_requests_differ_only_in_the_closing_line_naming_the_dimension():
    prompts = load_prompt_set(3)
    item = golden_turns("2c")[0]
    messages = [prompts.messages(dataclasses.replace(item, dimension=d)) for d in DIMENSIONS]
    systems = {m[0]["content"] for m in messages}
    assert len(systems) == 1  # one system message for every request, and for every answer
    other = prompts.messages(dataclasses.replace(golden_turns("2b")[1], dimension="coherence"))
    assert other[0]["content"] in systems
    # Every dimension's rubric, word for word as its file, in the system message.
    (system,) = systems
    assert all(prompts.dimensions[d].text.strip() in system for d in DIMENSIONS)
    users = [m[1]["content"] for m in messages]
    cut = users[0].index("<<<END RESPONSE")
    cut = users[0].index("\n", cut) + 1
    assert len({u[:cut] for u in users}) == 1
    # The rest is one short line naming the dimension, and no rubric.
    titles = [prompts.dimensions[d].title for d in DIMENSIONS]
    assert all(u[cut:].strip() == f"Grade the RESPONSE for {t} only, with the {t} rubric and the rules of the system "
               "message. Reply with the JSON object only." for t, u in zip(titles, users))
    assert not any("Dimension:" in u for u in users)


def test_2b_does_not_repeat_the_gold_passages_and_2c_names_one_it_already_showed():
    prompts = load_prompt_set(3)
    both = (("d1", "The bridge opened in 1932."),)
    text_2b = prompts.messages(JudgeItem("law/1_turn_1", "correctness", "When?", "", "1932.", both, "1932.", both))[1]
    assert text_2b["content"].count("The bridge opened in 1932.") == 1
    assert "the gold passages are the PASSAGES above" in text_2b["content"]
    had = (("d0", "Unrelated."), ("d1", "The bridge opened in 1932."))
    text_2c = prompts.messages(JudgeItem("law/1_turn_1", "correctness", "When?", "", "1932.", had, "1932.", both))[1]
    assert text_2c["content"].count("The bridge opened in 1932.") == 1
    assert "document id: d1\n\n(the same text as PASSAGE 2 above)" in text_2c["content"]


def test_key_points_reach_the_judge_in_version_3_and_change_nothing_in_version_2():
    points = (("The bridge opened in 1932.", "vital"), ("It took six years.", "okay"))
    item = JudgeItem("law/1_turn_1", "completeness", "When?", "", "1932.", (), "In 1932.", key_points=points)
    v3 = load_prompt_set(3).messages(item)[1]["content"]
    assert "1. [vital] The bridge opened in 1932.\n2. [okay] It took six years." in v3
    assert "KEY POINTS" in load_prompt_set(3).messages(dataclasses.replace(item, key_points=()))[1]["content"]
    v2 = load_prompt_set(2)
    assert v2.messages(item) == v2.messages(dataclasses.replace(item, key_points=()))
    assert item_from_json(json.loads(json.dumps(item_to_json(item)))) == item


@pytest.mark.parametrize(("raw", "message"), [
    ({"text": "x", "importance": "vital"}, "must be a list"),
    ([{"text": "x", "importance": "high"}], "entry 1: \"importance\" must be one of vital, okay"),
    ([{"text": " ", "importance": "okay"}], "entry 1: \"text\" must be a non-empty string"),
    ([{"text": "x"}], "entry 1 must be an object with exactly"),
])
def test_malformed_key_points_are_refused_naming_the_entry(raw, message):
    with pytest.raises(ValueError, match=message):
        parse_key_points(raw)


def test_the_rubric_states_the_v3_policy():
    prompts = load_prompt_set(3)
    system = prompts.system
    assert "Unjustified abstention (answerable turn" in system and "Correctness 1, completeness 1, faithfulness 1" in system
    assert "Justified abstention (unanswerable turn" in system and "Correctness 5, completeness 5" in system
    assert "Conflicting passages" in system and "Recent facts" in system
    assert "never truth" in prompts.dimensions["relevance"].text
    assert "history" in prompts.dimensions["faithfulness"].inputs
    assert "A true claim the passages do not support is unsupported" in prompts.dimensions["faithfulness"].text
    assert "4 - Every vital point; an okay point is missing." in prompts.dimensions["completeness"].text


def test_version_2_verdicts_stay_readable_and_are_never_served_for_version_3(judge_config, tmp_path):
    server = FakeOpenAI()
    server.start()
    try:
        v2 = dataclasses.replace(judge_config, prompt_version=2, prompts=load_prompt_set(2), base_url=server.base_url)
        v3 = dataclasses.replace(v2, prompt_version=3, prompts=load_prompt_set(3))
        assert v2.signature != v3.signature
        items = [dataclasses.replace(golden_turns("2b")[0], dimension=d) for d in DIMENSIONS]
        first = run_judge(items, v2, cache_dir=tmp_path, progress=False)
        calls = server.chat_calls
        third = run_judge(items, v3, cache_dir=tmp_path, progress=False)
        assert server.chat_calls == calls + len(DIMENSIONS) and not any(o.cached for o in third)
        assert {o.cache_key for o in third}.isdisjoint(o.cache_key for o in first)
        again = run_judge(items, v2, cache_dir=tmp_path, progress=False)
        assert all(o.cached for o in again) and [o.score for o in again] == [o.score for o in first]
        assert server.chat_calls == calls + len(DIMENSIONS)
    finally:
        server.stop()


def test_version_3_revised_in_place_is_another_judge_and_no_verdict_of_its_first_layout_is_served(judge_config, tmp_path):
    """Version 3 first ended each request with the dimension's rubric (``rubric_at_end``); it now
    holds every rubric in the system message (``rubrics_in_system``), the rubric files unchanged.
    A verdict cached under the first layout must not be served for the revised one: rebuild the
    first layout from today's files in a folder of its own, judge with it, then with the packaged v3."""
    root = tmp_path / "prompts"
    shutil.copytree(PACKAGED_PROMPTS, root)
    layout = root / "v3" / "layout.yaml"
    layout.write_text(layout.read_text(encoding="utf-8").replace("rubrics_in_system: true", "rubric_at_end: true"),
                      encoding="utf-8")
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["versions"]["3"] = {"dimensions": manifest["versions"]["3"]["dimensions"]}  # declared, not frozen
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    freeze(3, root)
    first_layout, revised = load_prompt_set(3, root), load_prompt_set(3)
    assert first_layout.file_hashes["layout.yaml"] != revised.file_hashes["layout.yaml"]
    assert {k: v for k, v in first_layout.file_hashes.items() if k.endswith(".md")} == \
        {k: v for k, v in revised.file_hashes.items() if k.endswith(".md")}
    item = dataclasses.replace(golden_turns("2c")[0], dimension="faithfulness")
    assert first_layout.messages(item)[1]["content"].count("Dimension: faithfulness.") == 1  # the first layout's end
    server = FakeOpenAI()
    server.start()
    try:
        old = dataclasses.replace(judge_config, prompt_version=3, prompts=first_layout, base_url=server.base_url)
        new = dataclasses.replace(old, prompts=revised)
        assert old.signature != new.signature
        items = [dataclasses.replace(item, dimension=d) for d in DIMENSIONS]
        first = run_judge(items, old, cache_dir=tmp_path / "cache", progress=False)
        calls = server.chat_calls
        second = run_judge(items, new, cache_dir=tmp_path / "cache", progress=False)
        assert server.chat_calls == calls + len(DIMENSIONS) and not any(o.cached for o in second)
        assert {o.cache_key for o in second}.isdisjoint(o.cache_key for o in first)
    finally:
        server.stop()
