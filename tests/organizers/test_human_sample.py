"""``reteco human-sample``: the seeded stratified sample, the rating sheet (no reference data),
the annotators' context file, and the judge's ratings of the same items (from the cache that
generation scoring filled: the same requests)."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY

from reteco.commands import main
from reteco.formats.ratings import read_ratings
from reteco.formats.reference import Reference
from reteco.judge import load_judge_config
from reteco.organizers.human_sample import allocate, read_systems, sample
from reteco.organizers.prepare import prepare_release
from reteco.organizers.synthetic.release import write_synthetic_release
from reteco.organizers.synthetic.sample_answers import write_sample_answers
from reteco.organizers.synthetic.sample_runs import write_sample_runs
from reteco.scoring.generation import read_turns
from reteco.scoring.submission import score_submission
from reteco.subtracks import DIMENSIONS


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The synthetic release (51 dev turns, 3 domains, turns 1-6), its 2b/2c references and
    three systems per sub-track: the sample answers, one answering every other turn, one with
    the answers reversed in order."""
    root = tmp_path_factory.mktemp("human_sample")
    rel = write_synthetic_release(root / "release")
    prepare_release(rel, "dev", root / "ref", subtracks=("2b", "2c"))
    write_sample_answers(rel, root / "samples")
    write_sample_runs(rel, root / "samples")
    for subtrack in ("2b", "2c"):
        lines = (root / "samples" / subtrack / "answers.jsonl").read_text().splitlines(keepends=True)
        variants = {"alpha": lines, "beta": lines[::2], "gamma": lines[::-1]}
        for name, chosen in variants.items():
            if subtrack == "2b":
                folder = root / "subs" / "2b"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{name}.jsonl").write_text("".join(chosen))
            else:
                folder = root / "subs" / "2c" / name
                folder.mkdir(parents=True)
                (folder / "answers.jsonl").write_text("".join(chosen))
                shutil.copy(root / "samples" / "2c" / "run.txt", folder / "run.txt")
    return root


def sheet_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


# --- allocation, by hand ------------------------------------------------------------------------


def test_allocation_is_proportional_with_one_per_stratum_by_hand():
    sizes = {"A": 6, "B": 3, "C": 1}
    assert allocate(sizes, 5, seed=1) == {"A": 3, "B": 1, "C": 1}  # quotas 3, 1.5, 0.5
    assert allocate(sizes, 4, seed=1) == {"A": 2, "B": 1, "C": 1}  # quotas 2.4, 1.2, 0.4
    assert allocate(sizes, 7, seed=1) == {"A": 4, "B": 2, "C": 1}  # 4.2, 2.1, 0.7: floors 4, 2, 1
    # One per stratum pushes the total over n: the stratum furthest above its quota gives back.
    assert allocate({"A": 1, "B": 1, "C": 1, "D": 9}, 4, seed=1) == {"A": 1, "B": 1, "C": 1, "D": 1}
    # Fewer items than strata: the largest remainders (quotas 1.2, 0.6, 0.2 -> A, then B).
    assert allocate(sizes, 2, seed=1) == {"A": 1, "B": 1, "C": 0}
    assert allocate(sizes, 99, seed=1) == sizes


def test_ties_follow_a_seeded_order():
    picks = {seed: allocate({"A": 1, "B": 1}, 1, seed) for seed in range(20)}
    assert {tuple(sorted(k for k, v in p.items() if v)) for p in picks.values()} == {("A",), ("B",)}
    assert all(allocate({"A": 1, "B": 1}, 1, seed) == p for seed, p in picks.items())


def test_allocation_stays_within_one_of_its_quota():
    sizes = {f"s{k}": 1 + (k * 7) % 13 for k in range(12)}
    total = sum(sizes.values())
    for n in range(12, total + 1, 5):
        alloc = allocate(sizes, n, seed=3)
        assert sum(alloc.values()) == n and all(1 <= alloc[h] <= sizes[h] for h in sizes)
        assert all(alloc[h] - n * sizes[h] / total < 1 for h in sizes if n * sizes[h] / total >= 1)


# --- the sample ------------------------------------------------------------------------------------


def test_the_sample_is_stratified_seeded_and_independent_of_file_order(release):
    reference = Reference.read(release / "ref" / "2b")
    paths = sorted((release / "subs" / "2b").iterdir())
    systems, _ = read_systems(reference, paths)
    items, record = sample(reference, systems, 80, seed=11)
    assert len(items) == 80 == record["sampled"] and record["candidates"] == 51 + 26 + 51
    strata = Counter((i.domain, i.depth, i.system) for i in items)
    allocated = {(s["domain"], s["depth"], s["system"]): s["sampled"] for s in record["strata"]}
    available = {(s["domain"], s["depth"], s["system"]): s["available"] for s in record["strata"]}
    assert len(allocated) > 40 and all(v >= 1 for v in allocated.values())  # 80 >= strata: one each
    assert dict(strata) == allocated
    assert allocated == allocate(available, 80, seed=11)
    assert len({(i.system, i.key) for i in items}) == 80  # no item twice
    assert [i.item_id for i in items] == [f"item-{k:04d}" for k in range(1, 81)]
    again, _ = sample(reference, read_systems(reference, paths[::-1])[0], 80, seed=11)
    assert [(i.system, i.key) for i in again] == [(i.system, i.key) for i in items]
    other, _ = sample(reference, systems, 80, seed=12)
    assert [(i.system, i.key) for i in other] != [(i.system, i.key) for i in items]
    # Only answered turns are sampled: beta answered every other turn.
    beta = next(s for s in systems if s.name == "beta")
    assert len(beta.answers) == 26 and {i.turn for i in items if i.system == "beta"} <= set(beta.answers.by_topic)


def test_the_command_writes_a_sheet_without_reference_data_and_the_context(release, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    code = main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--n", "12", "--seed", "3", "--out", str(sheet)])
    assert code == 0, capsys.readouterr().err
    rows = sheet_rows(sheet)
    assert list(rows[0]) == ["item_id", "conversation_id", "dimension", "rater", "score", "system"]
    assert len(rows) == 12 * 5 and all(r["rater"] == "" and r["score"] == "" for r in rows)
    assert [r["dimension"] for r in rows[:5]] == list(DIMENSIONS)
    # Nothing of the reference in the sheet: no query, reference answer, passage or gold id.
    text = sheet.read_text()
    reference = Reference.read(release / "ref" / "2b")
    for turn in read_turns(reference):
        for secret in (turn.query, turn.answer, *turn.gold_doc_ids):
            assert not secret or secret not in text, secret
    # The context file: what the judge sees per dimension; 2b's passages without their ids.
    context = [json.loads(line) for line in (tmp_path / "sheet.context.jsonl").read_text().splitlines()]
    assert [c["item_id"] for c in context] == sorted({r["item_id"] for r in rows})
    prompts = load_judge_config().prompts
    first = context[0]
    assert first["dimensions"] == {d: list(prompts.dimensions[d].inputs) for d in DIMENSIONS}
    assert {"query", "history", "answer", "evidence", "reference_answer"} <= set(first)
    assert all(set(p) == {"passage", "text"} for c in context for p in c["evidence"])
    turns = {t.key: t for t in read_turns(reference)}
    assert all(c["reference_answer"] == turns[c["turn"]].answer for c in context)
    record = json.loads((tmp_path / "sheet.sample.json").read_text())
    assert record["seed"] == 3 and record["sampled"] == 12 and record["dimensions"] == list(DIMENSIONS)
    assert "holds reference data" in capsys.readouterr().out


def test_a_filled_sheet_is_what_agreement_reads(release, tmp_path):
    sheet = tmp_path / "sheet.csv"
    assert main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--n", "6", "--seed", "1", "--out", str(sheet), "--dimensions", "faithfulness,coherence"]) == 0
    rows = sheet_rows(sheet)
    assert {r["dimension"] for r in rows} == {"coherence", "faithfulness"} and len(rows) == 12
    for k, r in enumerate(rows):
        r["rater"], r["score"] = "ann1", str(1 + k % 5)
    with open(sheet, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    ratings = read_ratings(sheet)
    assert len(ratings.rows) == 12 and ratings.has_system


def test_the_judges_ratings_of_the_sample_come_from_the_scoring_cache(release, tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    cache = tmp_path / "cache"
    reference = Reference.read(release / "ref" / "2c")
    config = dataclasses.replace(load_judge_config(), base_url=fake_openai.base_url)
    for system in ("alpha", "beta", "gamma"):  # scoring judges every answered turn of every system
        score_submission(reference, release / "subs" / "2c" / system, judge_config=config, cache_dir=cache)
    calls = fake_openai.all_chat_calls
    sheet, judged = tmp_path / "sheet.csv", tmp_path / "judge.csv"
    assert main(["human-sample", "--ref", str(release / "ref" / "2c"), "--submissions", str(release / "subs" / "2c"),
                 "--n", "9", "--seed", "4", "--out", str(sheet), "--judge-out", str(judged), "--judge-cache", str(cache),
                 "--cache-only"]) == 0
    assert fake_openai.all_chat_calls == calls  # every verdict was in the cache: same requests
    ratings = read_ratings(judged, single_rater=True)
    assert len(ratings.rows) == 9 * 5 and ratings.raters() == [f"{config.model}@{config.signature}"]
    assert {(r.item_id, r.dimension, r.system) for r in ratings.rows} == {
        (r["item_id"], r["dimension"], r["system"]) for r in sheet_rows(sheet)}
    # 2c's evidence is the run's top 5 passages, with their ids (the participant's own).
    context = [json.loads(line) for line in (tmp_path / "sheet.context.jsonl").read_text().splitlines()]
    assert all(1 <= len(c["evidence"]) <= 5 and all("doc_id" in p for p in c["evidence"]) for c in context)


def test_cache_only_leaves_unjudged_items_out_and_exits_4(release, tmp_path, fake_openai, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    judged = tmp_path / "judge.csv"
    code = main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--n", "3", "--seed", "4", "--out", str(tmp_path / "s.csv"), "--judge-out", str(judged),
                 "--judge-cache", str(tmp_path / "empty-cache"), "--cache-only"])
    assert code == 4 and fake_openai.all_chat_calls == 0
    assert judged.read_text().splitlines() == ["item_id,conversation_id,dimension,rater,score,system"]
    assert "15 failed judgments have no row" in capsys.readouterr().out


def test_inputs_that_cannot_be_used_are_refused(release, tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(release / "subs" / "2b" / "alpha.jsonl", subs / "alpha.jsonl")
    (subs / "alpha.zip").write_bytes(b"")  # the same system name twice
    base = ["human-sample", "--n", "3", "--seed", "1", "--out", str(tmp_path / "s.csv")]
    assert main([*base, "--ref", str(release / "ref" / "2b"), "--submissions", str(subs)]) == 1
    assert "system name 'alpha' is also the name of" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"turn_id": "biology/2_turn_1"}\n')
    assert main([*base, "--ref", str(release / "ref" / "2b"), str(bad)]) == 1
    assert "bad.jsonl:1: error:" in capsys.readouterr().err
    assert main([*base, "--ref", str(release / "ref" / "2b"), str(release / "subs" / "2b" / "alpha.jsonl"),
                 "--dimensions", "fluency"]) == 1
    assert "unknown dimension(s) 'fluency'" in capsys.readouterr().err
    assert not (tmp_path / "s.csv").exists()


def test_outputs_that_are_one_file_are_refused_before_any_work(release, tmp_path, capsys):
    """--context equal to --out wrote the context (reference data) over the rating sheet, exit 0."""
    base = ["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
            "--n", "4", "--seed", "1"]
    sheet = tmp_path / "sheet.csv"
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    for out, context in ((sheet, sheet),  # the input that triggered it
                         (sheet, tmp_path / "d" / ".." / "sheet.csv"),  # another spelling
                         (tmp_path / "d" / "sheet.csv", tmp_path / "link" / "sheet.csv")):  # through a symbolic link
        assert main([*base, "--out", str(out), "--context", str(context)]) == 2
        err = capsys.readouterr().err
        assert "--context and --out are the same file" in err and str(sheet.name) in err
    assert main([*base, "--out", str(sheet), "--judge-out", str(tmp_path / "sheet.context.jsonl")]) == 2
    assert "--judge-out and --context are the same file" in capsys.readouterr().err
    assert list(tmp_path.glob("**/*.csv")) == [] and list(tmp_path.glob("**/*.jsonl")) == []
