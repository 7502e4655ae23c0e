"""``reteco human-sample``: the seeded stratified sample; the blind files of each annotator
(sheet, context, guide: item codes only, an order of their own, the judge's rubric text); the
organizers' key, through which ``reteco agreement`` joins ratings keyed by item code; the
judge's ratings of the same items (from the cache that generation scoring filled: the same
requests)."""

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
from reteco.formats.ratings import read_item_key, read_ratings
from reteco.formats.reference import Reference
from reteco.judge import load_judge_config
from reteco.judge.prompts import load_prompt_set
from reteco.problems import InputError
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_answers import write_sample_answers
from reteco.release.synthetic.sample_runs import write_sample_runs
from reteco.scoring.generation import read_turns
from reteco.scoring.submission import score_submission
from reteco.subtracks import DIMENSIONS
from reteco.workbench.judge_audit.human_sample import allocate, read_systems, sample


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The synthetic release (51 dev turns, 3 domains, turns 1-6), its 2b/2c references and
    three systems per sub-track, named so that a name is easy to find in a file: the sample
    answers, one answering every other turn, one with the answers reversed in order."""
    root = tmp_path_factory.mktemp("human_sample")
    rel = write_synthetic_release(root / "release")
    prepare_release(rel, "dev", root / "ref", subtracks=("2b", "2c"))
    write_sample_answers(rel, root / "samples")
    write_sample_runs(rel, root / "samples")
    for subtrack in ("2b", "2c"):
        lines = (root / "samples" / subtrack / "answers.jsonl").read_text().splitlines(keepends=True)
        variants = {"orca-labs": lines, "kestrel-ai": lines[::2], "wombat-nlp": lines[::-1]}
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
    # Only answered turns are sampled: kestrel-ai answered every other turn.
    beta = next(s for s in systems if s.name == "kestrel-ai")
    assert len(beta.answers) == 26 and {i.turn for i in items if i.system == "kestrel-ai"} <= set(beta.answers.by_topic)


SYSTEMS = ("orca-labs", "kestrel-ai", "wombat-nlp")


def run_sample(release, out: Path, subtrack: str = "2b", *more: str) -> int:
    return main(["human-sample", "--ref", str(release / "ref" / subtrack), "--submissions",
                 str(release / "subs" / subtrack), "--seed", "3", "--out", str(out), *more])


def annotator_files(out: Path) -> list[Path]:
    return sorted(p for p in (out / "annotators").rglob("*") if p.is_file())


@pytest.mark.parametrize("subtrack", ["2b", "2c"])
def test_no_system_or_submission_name_is_in_the_annotators_files(release, tmp_path, subtrack, capsys):
    out = tmp_path / "human"
    assert run_sample(release, out, subtrack, "--n", "30", "--annotators", "ann1,ann2") == 0, capsys.readouterr().err
    files = annotator_files(out)
    assert [p.relative_to(out).as_posix() for p in files] == [
        f"annotators/{a}/{f}" for a in ("ann1", "ann2") for f in ("context.jsonl", "guide.md", "sheet.csv")]
    key = sheet_rows(out / "key.csv")
    assert {r["system"] for r in key} == set(SYSTEMS)  # every system is in the sample, and in the key
    submissions = {r["submission"] for r in key}
    assert submissions == ({f"{s}.jsonl" for s in SYSTEMS} if subtrack == "2b" else set(SYSTEMS))
    conversations = {r["conversation_id"] for r in key} | {r["turn"] for r in key}
    for path in files:
        text = path.read_text(encoding="utf-8")
        for name in (*SYSTEMS, *submissions):
            assert name not in text, (path, name)
        for record in (json.loads(line) for line in text.splitlines()) if path.suffix == ".jsonl" else ():
            assert set(record) <= {"item_id", "dimensions", "history", "query", "answer", "evidence", "gold_evidence",
                                   "reference_answer"}
            assert not conversations & set(map(str, record.values()))
    # The sheet: item codes, dimensions, the annotator's name; nothing else.
    rows = sheet_rows(out / "annotators" / "ann1" / "sheet.csv")
    assert list(rows[0]) == ["item_id", "dimension", "rater", "score"] and len(rows) == 30 * 5
    assert all(r["rater"] == "ann1" and r["score"] == "" for r in rows)
    assert {r["item_id"] for r in rows} == {r["item_id"] for r in key}
    assert [r["dimension"] for r in rows[:5]] == list(DIMENSIONS)
    # Nothing of the reference in the sheet: no query, reference answer, passage or gold id.
    text = (out / "annotators" / "ann1" / "sheet.csv").read_text()
    for turn in read_turns(Reference.read(release / "ref" / subtrack)):
        for secret in (turn.query, turn.answer, *turn.gold_doc_ids):
            assert not secret or secret not in text, secret


def test_each_annotator_rates_in_an_order_of_their_own_seeded(release, tmp_path):
    out, again = tmp_path / "a", tmp_path / "b"
    assert run_sample(release, out, "2b", "--n", "25", "--annotators", "3") == 0
    assert run_sample(release, again, "2b", "--n", "25", "--annotators", "3") == 0
    orders = {}
    for name in ("annotator-1", "annotator-2", "annotator-3"):
        rows = sheet_rows(out / "annotators" / name / "sheet.csv")
        order = list(dict.fromkeys(r["item_id"] for r in rows))
        context = [json.loads(line)["item_id"] for line in (out / "annotators" / name / "context.jsonl").open()]
        assert context == order  # the context follows the sheet
        assert (again / "annotators" / name / "sheet.csv").read_bytes() == (out / "annotators" / name / "sheet.csv"
                                                                             ).read_bytes()  # reproducible
        orders[name] = order
    assert len({tuple(o) for o in orders.values()}) == 3 and len({frozenset(o) for o in orders.values()}) == 1
    # The key is in code order: the codes were given in a seeded random order of the sample.
    key = sheet_rows(out / "key.csv")
    assert [r["item_id"] for r in key] == sorted(orders["annotator-1"])


def test_the_guide_is_the_configured_prompt_versions_rubric(release, tmp_path):
    for version in (1, 2):
        config = tmp_path / f"judge-v{version}.yaml"
        config.write_text(f"prompt_version: {version}\nmodel: m\n")
        out = tmp_path / f"v{version}"
        assert run_sample(release, out, "2b", "--n", "4", "--judge-config", str(config),
                          "--dimensions", "correctness,coherence") == 0
        guide = (out / "annotators" / "annotator-1" / "guide.md").read_text()
        prompts = load_prompt_set(version)
        assert prompts.system.strip() in guide
        assert prompts.dimensions["correctness"].text.strip() in guide
        assert prompts.dimensions["coherence"].text.strip() in guide
        assert prompts.dimensions["faithfulness"].text.strip() not in guide  # not rated here
        assert f"prompt version {version}" in guide and prompts.file_hashes["correctness.md"] in guide


def test_filled_sheets_are_joined_to_systems_through_the_key(release, tmp_path, capsys):
    out = tmp_path / "human"
    assert run_sample(release, out, "2b", "--n", "12", "--annotators", "ann1,ann2",
                      "--dimensions", "faithfulness,coherence") == 0
    key = {r["item_id"]: r for r in sheet_rows(out / "key.csv")}
    sheets = []
    for k, name in enumerate(("ann1", "ann2")):
        path = out / "annotators" / name / "sheet.csv"
        rows = sheet_rows(path)
        for r in rows:
            r["score"] = str(1 + (int(r["item_id"][-2:]) + k) % 5)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        sheets.append(path)
    item_key = read_item_key(out / "key.csv")
    ratings = read_ratings(sheets[0], key=item_key)
    assert len(ratings.rows) == 24 and ratings.has_system
    assert all((r.conversation_id, r.system) == (key[r.item_id]["conversation_id"], key[r.item_id]["system"])
               for r in ratings.rows)
    # Without the key a blind sheet cannot be placed in its conversations: refused, by line.
    with pytest.raises(InputError, match="missing column conversation_id"):
        read_ratings(sheets[0])
    # A judge file keyed the same way, and the agreement command over both annotators' sheets.
    judge = tmp_path / "judge.csv"
    judge.write_text("item_id,dimension,rater,score\n" + "".join(
        f"{item},{d},m@0123456789abcdef,3\n" for item in key for d in ("faithfulness", "coherence")))
    capsys.readouterr()
    assert main(["agreement", "--judge", str(judge), "--human", *map(str, sheets), "--key", str(out / "key.csv"),
                 "--out", str(tmp_path / "agreement"), "--resamples", "50"]) == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "agreement" / "agreement.json").read_text())
    assert result["dimensions"]["coherence"]["n_items"] == 12
    # An item code that is not in the key is named with its line.
    stray = tmp_path / "stray.csv"
    stray.write_text("item_id,dimension,rater,score\nitem-0001,coherence,ann3,2\nitem-9999,coherence,ann3,2\n")
    assert main(["agreement", "--judge", str(judge), "--human", str(stray), "--key", str(out / "key.csv"),
                 "--out", str(tmp_path / "a2")]) == 1
    assert f"{stray}:3: error: item 'item-9999' is not in the key" in capsys.readouterr().err


def test_the_judges_ratings_of_the_sample_come_from_the_scoring_cache(release, tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    cache = tmp_path / "cache"
    reference = Reference.read(release / "ref" / "2c")
    config = dataclasses.replace(load_judge_config(), base_url=fake_openai.base_url)
    for system in ("orca-labs", "kestrel-ai", "wombat-nlp"):  # scoring judges every answered turn of every system
        score_submission(reference, release / "subs" / "2c" / system, judge_config=config, cache_dir=cache)
    calls = fake_openai.all_chat_calls
    out, judged = tmp_path / "human", tmp_path / "judge.csv"
    assert main(["human-sample", "--ref", str(release / "ref" / "2c"), "--submissions", str(release / "subs" / "2c"),
                 "--n", "9", "--seed", "4", "--out", str(out), "--judge-out", str(judged), "--judge-cache", str(cache),
                 "--cache-only"]) == 0
    assert fake_openai.all_chat_calls == calls  # every verdict was in the cache: same requests
    ratings = read_ratings(judged, single_rater=True, key=read_item_key(out / "key.csv"))
    assert len(ratings.rows) == 9 * 5 and ratings.raters() == [f"{config.model}@{config.signature}"]
    key = {r["item_id"]: r["system"] for r in sheet_rows(out / "key.csv")}
    assert {(r.item_id, r.dimension, r.system) for r in ratings.rows} == {
        (r["item_id"], r["dimension"], key[r["item_id"]]) for r in sheet_rows(out / "annotators" / "annotator-1" / "sheet.csv")}
    # 2c's evidence is the run's top 5 passages, with their ids (the participant's own).
    context = [json.loads(line) for line in (out / "annotators" / "annotator-1" / "context.jsonl").read_text().splitlines()]
    assert all(1 <= len(c["evidence"]) <= 5 and all("doc_id" in p for p in c["evidence"]) for c in context)


def test_cache_only_leaves_unjudged_items_out_and_exits_4(release, tmp_path, fake_openai, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    judged = tmp_path / "judge.csv"
    code = main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--n", "3", "--seed", "4", "--out", str(tmp_path / "human"), "--judge-out", str(judged),
                 "--judge-cache", str(tmp_path / "empty-cache"), "--cache-only"])
    assert code == 4 and fake_openai.all_chat_calls == 0
    assert judged.read_text().splitlines() == ["item_id,dimension,rater,score"]
    assert "15 failed judgments have no row" in capsys.readouterr().out


def test_inputs_that_cannot_be_used_are_refused(release, tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(release / "subs" / "2b" / "orca-labs.jsonl", subs / "orca-labs.jsonl")
    (subs / "orca-labs.zip").write_bytes(b"")  # the same system name twice
    base = ["human-sample", "--n", "3", "--seed", "1", "--out", str(tmp_path / "human")]
    assert main([*base, "--ref", str(release / "ref" / "2b"), "--submissions", str(subs)]) == 1
    assert "system name 'orca-labs' is also the name of" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"turn_id": "biology/2_turn_1"}\n')
    assert main([*base, "--ref", str(release / "ref" / "2b"), str(bad)]) == 1
    assert "bad.jsonl:1: error:" in capsys.readouterr().err
    assert main([*base, "--ref", str(release / "ref" / "2b"), str(release / "subs" / "2b" / "orca-labs.jsonl"),
                 "--dimensions", "fluency"]) == 1
    assert "unknown dimension(s) 'fluency'" in capsys.readouterr().err
    assert main([*base, "--ref", str(release / "ref" / "2b"), str(release / "subs" / "2b" / "orca-labs.jsonl"),
                 "--annotators", "ann1,../x"]) == 1
    assert "annotator name(s) '../x' cannot be folder names" in capsys.readouterr().err
    assert not (tmp_path / "human").exists()


def test_outputs_that_are_one_file_are_refused_before_any_work(release, tmp_path, capsys):
    """--judge-out onto the key (or an annotator's context, which holds reference data) would
    replace it; --out that is a file cannot be the folder."""
    base = ["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
            "--n", "4", "--seed", "1"]
    out = tmp_path / "human"
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    for judge_out, clash in ((out / "key.csv", "--out's key.csv"),  # the same file
                             (tmp_path / "d" / ".." / "human" / "sample.json", "--out's sample.json"),  # another spelling
                             (out / "annotators" / "annotator-1" / "context.jsonl", "annotator-1's context.jsonl")):
        assert main([*base, "--out", str(out), "--judge-out", str(judge_out)]) == 2
        assert f"--judge-out and {clash} are the same file" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "link" / "h"), "--judge-out", str(tmp_path / "d" / "h" / "key.csv")]) == 2
    assert "are the same file" in capsys.readouterr().err  # through a symbolic link
    (tmp_path / "file").write_text("x")
    assert main([*base, "--out", str(tmp_path / "file")]) == 1
    assert "--out exists and is not a folder" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.glob("**/*.csv")) == []


# ------------------------------------------------------------------ designs (issue 32)

import random  # noqa: E402

from reteco.workbench.judge_audit.human_sample import systematic  # noqa: E402


def test_systematic_sampling_gives_every_position_probability_n_over_size():
    """Over every random start, position p is drawn with probability n / size exactly: checked by
    the share of starts u in [0, size / n) that pick it, on a fine grid of u."""
    size, n = 7, 3
    counts = Counter()
    grid = 7000
    for k in range(grid):
        u = (k + 0.5) / grid

        class _Start(random.Random):
            def random(self, u=u):
                return u

        counts.update(systematic(size, n, _Start()))
    assert all(abs(counts[p] / grid - n / size) < 2 / grid for p in range(size))


def test_no_stratum_has_probability_zero_when_items_are_fewer_than_strata(release):
    """n < strata: every item's recorded inclusion probability is n / N, and over seeds every
    stratum is drawn (the old largest-remainder rule never drew the small ones)."""
    reference = Reference.read(release / "ref" / "2b")
    systems, _ = read_systems(reference, sorted((release / "subs" / "2b").iterdir()))
    seen = Counter()
    for seed in range(200):
        items, record = sample(reference, systems, 5, seed)
        assert len(items) == 5
        total = record["candidates"]
        assert all(item.inclusion_probability == 5 / total for item in items)
        assert all(s["inclusion_probability"] == 5 / total for s in record["strata"])
        seen.update((i.domain, i.depth, i.system) for i in items)
    strata = {(s["domain"], s["depth"], s["system"]) for s in record["strata"]}
    assert len(strata) > 5 and set(seen) == strata
    # With n >= strata, each stratum's probability is its allocation over its size (> 0).
    _, record = sample(reference, systems, 80, 11)
    assert all(s["inclusion_probability"] == s["sampled"] / s["available"] > 0 for s in record["strata"])


def test_the_paired_design_rates_each_sampled_turn_for_every_system(release, tmp_path, capsys):
    out = tmp_path / "paired"
    assert main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--design", "paired", "--turns", "12", "--seed", "4", "--out", str(out)]) == 0
    record = json.loads((out / "sample.json").read_text())
    assert record["design"] == "paired" and record["sampled_turns"] == 12
    key = list(csv.DictReader((out / "key.csv").open(encoding="utf-8")))
    turns = {row["turn"] for row in key}
    assert len(turns) == 12
    reference = Reference.read(release / "ref" / "2b")
    systems, _ = read_systems(reference, sorted((release / "subs" / "2b").iterdir()))
    keys = [t.key for t in read_turns(reference)]
    expected = {(s.submission, keys[i]) for s in systems for i in range(len(keys))
                if keys[i] in turns and s.answers.get(i) is not None}
    assert {(row["submission"], row["turn"]) for row in key} == expected  # every system that answered it
    probability = 12 / record["eligible_turns"]
    assert all(float(row["inclusion_probability"]) == probability for row in key)
    assert record["inclusion_probability"] == probability
    assert sum(s["sampled"] for s in record["strata"]) == 12
    assert all(s["sampled"] >= 1 for s in record["strata"] if s["available"] * probability >= 1)
    assert "12 of 51 turns" in capsys.readouterr().out


def test_the_designs_options_do_not_mix(release, tmp_path, capsys):
    base = ["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
            "--seed", "1", "--out", str(tmp_path / "o")]
    assert main([*base, "--design", "paired", "--n", "5"]) == 2
    assert main([*base, "--turns", "5"]) == 2
    assert "--design paired takes --turns" in capsys.readouterr().err


def test_the_planner_by_hand(capsys):
    """60 systems x 2,000 turns, residual sd 0.2, judge sd 0.2, width 0.1: n is the smallest with
    2 t_{n-1} sqrt(0.04 / n + 0.04 / 2000) <= 0.1."""
    from scipy.stats import t

    from reteco.workbench.judge_audit.sample_plan import plan

    def width(n):
        return 2 * t.ppf(0.975, n - 1) * (0.04 / n + 0.04 / 2000) ** 0.5

    n = next(k for k in range(5, 2000) if width(k) <= 0.1)
    result = plan(60, 2000, hourly_rate=20.0)
    assert result.turns == n == 66
    assert result.items == 66 * 60 and result.ratings == 66 * 60 * 5
    assert result.annotator_hours == pytest.approx(66 * 60 * 3 / 60)
    assert result.cost == pytest.approx(result.annotator_hours * 20)
    assert result.system_width == pytest.approx(width(66))
    unreachable = plan(60, 2000, width=0.02)
    assert unreachable.turns is None and "no sample size reaches" in unreachable.reason
    assert main(["human-sample", "--plan", "--systems", "60", "--phase-turns", "2000"]) == 0
    assert "turns to rate: 66 (each for every system): 3960 items, 19800 ratings" in capsys.readouterr().out


def test_a_budget_below_every_system_per_turn_rates_a_random_subset_with_its_probability(release, tmp_path):
    out = tmp_path / "subset"
    assert main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--design", "paired", "--turns", "20", "--systems-per-turn", "2", "--seed", "9", "--out", str(out)]) == 0
    record = json.loads((out / "sample.json").read_text())
    assert record["systems_per_turn"] == 2
    key = list(csv.DictReader((out / "key.csv").open(encoding="utf-8")))
    reference = Reference.read(release / "ref" / "2b")
    systems, _ = read_systems(reference, sorted((release / "subs" / "2b").iterdir()))
    keys = [t.key for t in read_turns(reference)]
    answering = {keys[i]: sum(s.answers.get(i) is not None for s in systems) for i in range(len(keys))}
    per_turn = Counter(row["turn"] for row in key)
    assert len(per_turn) == 20
    # What each system rated, as the key lists it (fewer than the 20 turns: 2 systems a turn).
    assert record["items_per_system"] == {s.name: sum(1 for row in key if row["system"] == s.name) for s in systems}
    assert sum(record["items_per_system"].values()) == len(key) < 20 * len(systems)
    for row in key:
        s_t = answering[row["turn"]]
        assert per_turn[row["turn"]] == min(2, s_t)
        assert float(row["inclusion_probability"]) == pytest.approx(20 / record["eligible_turns"] * min(2, s_t) / s_t)
    assert main(["human-sample", "--ref", str(release / "ref" / "2b"), "--submissions", str(release / "subs" / "2b"),
                 "--n", "5", "--systems-per-turn", "2", "--seed", "9", "--out", str(tmp_path / "x")]) == 2


def test_the_planner_reads_the_disagreement_of_an_earlier_corrected_leaderboard(tmp_path, capsys):
    board = {"human_corrected": {"systems": [{"figures": {"judge_mean": {"residual_sd": 0.3}}},
                                             {"figures": {"judge_mean": {"residual_sd": 0.1}}},
                                             {"absent": "the judge did not run"}]}}
    path = tmp_path / "leaderboard.json"
    path.write_text(json.dumps(board))
    assert main(["human-sample", "--plan", "--systems", "10", "--phase-turns", "500", "--from-leaderboard",
                 str(path)]) == 0
    rms = (0.3 ** 2 / 2 + 0.1 ** 2 / 2) ** 0.5  # 0.2236...
    assert f"judge-human residual sd {rms:g}" in capsys.readouterr().out
    path.write_text(json.dumps({"systems": []}))
    assert main(["human-sample", "--plan", "--systems", "10", "--phase-turns", "500", "--from-leaderboard",
                 str(path)]) == 1
    assert "no system of this leaderboard has a judge_mean residual_sd" in capsys.readouterr().err
