"""A prompt version's manifest lists its dimensions, and the items, the scores.json keys, the
figures and the tables (the leaderboard's per-turn figures, the detailed results page) of a run
follow the version in use: a made-up version with a sixth dimension, and one
with fewer, load, render and score, while the frozen versions 1-3 (the five) still load and check."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from support.fake_openai_server import asks_injection_flag, judgment, user_text
from support.tiny_track2 import write_tiny_reference

from reteco.commands import main as reteco
from reteco.formats.answers import read_answers
from reteco.formats.turns import TurnRecord
from reteco.judge import JudgeItem, item_from_json, load_judge_config
from reteco.judge.items import validate_items
from reteco.judge.prompts import PACKAGED_PROMPTS, load_prompt_set
from reteco.llm.prompt_files import PromptIntegrityError, read_manifest
from reteco.outputs.page_sections import judge_section
from reteco.scoring.generation import score_generation
from reteco.scoring.judge_run import JudgeOptions, judge_items
from reteco.subtracks import DIMENSION_KEYS, DIMENSIONS, JUDGE, JUDGE_MEAN, KEYS, judged_dimensions
from reteco.workbench.leaderboard.standings import figure_intervals, generation_figure_units, judge_mean_per_turn

SIX = (*DIMENSIONS, "timeliness")
FOUR = ("correctness", "completeness", "coherence", "faithfulness")  # no relevance


def declare(root, version: int, dimensions) -> None:
    """Start a version's manifest entry with its dimensions, as docs/development.md says."""
    path = root / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["versions"][str(version)] = {"dimensions": list(dimensions)}
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def made_up_versions(tmp_path):
    """A copy of the packaged prompts with v5 (v3 and a sixth dimension, 'timeliness') and v6 (v3
    without relevance), each frozen with ``reteco freeze-prompt``."""
    root = tmp_path / "prompts"
    shutil.copytree(PACKAGED_PROMPTS, root)
    shutil.copytree(root / "v3", root / "v5")
    coherence = (root / "v3" / "coherence.md").read_text(encoding="utf-8")
    front, _, _ = coherence.partition("\n---\n")
    (root / "v5" / "timeliness.md").write_text(
        front.replace("dimension: coherence", "dimension: timeliness").replace("conversational coherence", "timeliness")
        + "\n---\nDimension: timeliness. Is the RESPONSE right for the time the question is about?\n"
        + "".join(f"{n} - Anchor {n}.\n" for n in (5, 4, 3, 2, 1)),
        encoding="utf-8",
    )
    shutil.copytree(root / "v3", root / "v6")
    (root / "v6" / "relevance.md").unlink()
    declare(root, 5, SIX)
    declare(root, 6, FOUR)
    for version in (5, 6):
        assert reteco(["freeze-prompt", "--family", "judge", "--root", str(root), str(version)]) == 0
    return root


def test_versions_1_to_4_list_the_five_dimensions_of_the_evaluation_plan():
    """Frozen facts: a later table with more dimensions leaves them as they are."""
    five = ("correctness", "completeness", "relevance", "coherence", "faithfulness")
    versions = read_manifest(PACKAGED_PROMPTS)["versions"]
    assert {"1", "2", "3", "4"} <= set(versions)
    for version in (1, 2, 3, 4):
        assert versions[str(version)]["dimensions"] == list(five)
        assert load_prompt_set(version).dimension_names == five


def test_the_default_versions_dimensions_are_the_tables():
    """The judged sub-tracks' rows (their keys, the leaderboard's columns) hold the default
    version's dimensions, each with its key row: a default version with another dimension needs
    its row in subtracks.py (docs/development.md, "Adding a judge dimension")."""
    assert load_judge_config().prompts.dimension_names == DIMENSIONS == tuple(k.key for k in DIMENSION_KEYS)
    assert JUDGE == (JUDGE_MEAN, *DIMENSIONS) and all(KEYS[d] in DIMENSION_KEYS for d in DIMENSIONS)


def test_a_version_with_a_sixth_or_fewer_dimensions_loads_renders_and_the_frozen_ones_still_check(tmp_path, capsys):
    root = made_up_versions(tmp_path)
    six, four = load_prompt_set(5, root), load_prompt_set(6, root)
    assert six.dimension_names == SIX and four.dimension_names == FOUR
    assert "timeliness.md" in six.file_hashes and "relevance.md" not in four.file_hashes
    item = JudgeItem(key="q_turn_1", dimension="timeliness", query="When?", history="", answer="In 2017.",
                     evidence=(("d1", "In 2017."),), reference_answer="2017")
    system, user = six.messages(item)
    assert "Dimension: timeliness." in system["content"] and user["content"].rstrip().endswith(
        "Grade the RESPONSE for timeliness only, with the timeliness rubric and the rules of the system message. "
        "Reply with the JSON object only.")
    assert "Dimension: timeliness." not in four.messages(dataclasses.replace(item, dimension="coherence"))[0]["content"]
    # The items made follow the version; one of another version's dimensions is refused.
    assert [i.dimension for i in judge_items_of(six)] == list(SIX)
    validate_items(judge_items_of(six), six.dimension_names)
    with pytest.raises(ValueError, match="'relevance' is not one of correctness, completeness, coherence, faithfulness"):
        validate_items(judge_items_of(six), four.dimension_names)
    assert item_from_json({"key": "k", "dimension": "timeliness", "query": "q", "answer": "a"}, SIX).dimension == "timeliness"
    with pytest.raises(ValueError, match="'timeliness' is not one of"):
        item_from_json({"key": "k", "dimension": "timeliness", "query": "q", "answer": "a"})
    # The frozen versions beside them are untouched: every one checks, by the same command.
    capsys.readouterr()
    assert reteco(["freeze-prompt", "--family", "judge", "--root", str(root), "--check"]) == 0
    assert [line.split(" matches ")[0] for line in capsys.readouterr().out.splitlines()] == [
        f"judge prompt version {v}" for v in (1, 2, 3, 4, 5, 6)]
    for version in (1, 2, 3, 4):
        assert load_prompt_set(version, root).file_hashes == load_prompt_set(version).file_hashes


def judge_items_of(prompts) -> list:
    turn = TurnRecord("t/1_turn_1", "t", 1, "When?", "", "In 2017.", ("d1",))
    return judge_items(turn, "an answer", (), (), prompts.dimension_names)


def test_a_changed_dimension_list_is_another_version(tmp_path):
    root = made_up_versions(tmp_path)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["versions"]["3"]["dimensions"] = list(FOUR)
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(PromptIntegrityError, match=r"judge prompt version 3 differs from its frozen manifest"):
        load_prompt_set(3, root)
    manifest["versions"]["3"]["dimensions"] = ["correctness", "judge_mean"]
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(PromptIntegrityError, match="dimensions must be a non-empty list"):
        load_prompt_set(3, root)


def test_the_keys_and_figures_of_a_run_follow_the_version_in_use(tmp_path, fake_openai, monkeypatch):
    """2b scored with the six-dimension version: scores.json gains its key, judge_mean is the
    mean of six; with the four-dimension version, relevance is neither asked nor reported."""
    root = made_up_versions(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123456789")

    def judge(body):  # 5 on timeliness, 3 on every other dimension
        last = user_text(body).rstrip().splitlines()[-1]
        return judgment(5 if "for timeliness only" in last else 3, "fake", injection=False if asks_injection_flag(body) else None)

    fake_openai.judge = judge
    ref = write_tiny_reference(tmp_path / "2b", "2b")
    answers = read_answers(b'{"turn_id": "biology/2_turn_1", "answer": "cells"}\n', "answers.jsonl", ref)
    packaged = load_judge_config()
    for version, dimensions in ((5, SIX), (6, FOUR)):
        config = dataclasses.replace(packaged, prompt_version=version, prompts=load_prompt_set(version, root),
                                     base_url=fake_openai.base_url, max_retries=0)
        scores, details, _, absent = score_generation(
            ref, answers, judge=JudgeOptions(config=config, cache_dir=tmp_path / "cache"))
        judged = {k for k in scores if k not in ("rouge_l", "meteor")}
        assert judged == {*dimensions, JUDGE_MEAN}, version
        assert set(details["judge"]["per_dimension"]) == set(dimensions)
        turns = 3  # the tiny reference's; one answered, two missing (0)
        three = (3 - 1) / 4 / turns
        assert scores["correctness"] == pytest.approx(three)
        expected = {d: ((5 - 1) / 4 / turns if d == "timeliness" else three) for d in dimensions}
        assert scores[JUDGE_MEAN] == pytest.approx(sum(expected.values()) / len(dimensions))
        assert list(details["per_turn"][0]["judgments"]) == list(dimensions)
        assert not {d for d in DIMENSIONS if d not in dimensions} & set(absent)
        # The tables follow the run: the leaderboard's per-turn figures, the detailed results page.
        assert judged_dimensions(details["judge"]) == dimensions
        keys, values, why = judge_mean_per_turn(details["per_turn"], dimensions)
        assert why is None and sum(values) / len(values) == pytest.approx(scores[JUDGE_MEAN])
        units = generation_figure_units(details["per_turn"], scores, dimensions)
        assert set(units) == {*dimensions, "rouge_l", "meteor"}
        systems = [{}]
        figure_intervals(systems, [{"figure_units": units}], resamples=20, seed=1, confidence=0.95)
        assert list(systems[0]["figure_intervals"]) == [*dimensions, "rouge_l", "meteor"]
        page = judge_section(details, [])
        words = {6: "six", 4: "four"}[len(dimensions)]
        assert f"The {words} judge dimensions (0-1)" in page and page.count("<tr><td>") == len(dimensions)
        assert ("timeliness" in page) == ("timeliness" in dimensions) and ("Relevance (judge)" in page) == (
            "relevance" in dimensions)
