"""The synthetic release and its sample runs: layout, traps, consistency, determinism.

Every check reads the written files back with plain json/str parsing, independently of the
generator's internals, so a generator bug cannot confirm itself.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from support.paths import SAMPLES

from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_runs import write_sample_runs

SPLITS = ("train", "dev", "test")
SUBTRACKS = ("1a", "1b", "2a", "2c")
NO_HISTORY = "No previous conversation."


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        assert len(fields) == 4 and fields[1] == "0" and fields[3] == "1", line
        pairs.append((fields[0], fields[2]))
    return pairs


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_synthetic_release(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def runs(release, tmp_path_factory) -> dict[str, Path]:
    return write_sample_runs(release, tmp_path_factory.mktemp("runs"), "dev")


def _track1(release: Path) -> list[Path]:
    return sorted(p for p in (release / "track1_tempo").iterdir() if p.is_dir())


def _track2(release: Path) -> list[Path]:
    return sorted(p for p in (release / "track2_recor").iterdir() if p.is_dir())


def _doc_ids(folder: Path, key: str) -> list[str]:
    return [d[key] for d in _jsonl(folder / "documents.jsonl")]


# --------------------------------------------------------------------------- determinism


def test_same_seed_gives_byte_identical_files(tmp_path):
    first = _files(write_synthetic_release(tmp_path / "a"))
    second = _files(write_synthetic_release(tmp_path / "b"))
    assert first and first == second
    other = _files(write_synthetic_release(tmp_path / "c", seed=7))
    assert other.keys() == first.keys()
    assert other != first


def test_release_is_small_and_complete(release):
    files = _files(release)
    assert sum(len(b) for b in files.values()) < 2_000_000
    for folder in _track1(release):
        names = {p.name for p in folder.iterdir()}
        expected = {"documents.jsonl", "duplicate_map.json"}
        for split in SPLITS:
            expected |= {f"examples_{split}.jsonl", f"steps_{split}.jsonl", f"guidance_{split}.jsonl",
                         f"qrels_{split}.txt", f"qrels_steps_{split}.txt"}
        assert names == expected, folder.name
    for folder in _track2(release):
        names = {p.name for p in folder.iterdir()}
        expected = {"documents.jsonl"} | {f"benchmark_{s}.json" for s in SPLITS} | {f"qrels_{s}.txt" for s in SPLITS}
        assert names == expected, folder.name
    assert len(_track1(release)) >= 3 and len(_track2(release)) >= 3


# --------------------------------------------------------------------------- Track 1


def test_track1_records_have_the_release_shapes(release):
    for folder in _track1(release):
        domain = folder.name
        doc_pattern = re.compile(rf"^{re.escape(domain)}/[0-9a-f]{{8}}_\d{{4}}\.txt$")
        docs = _jsonl(folder / "documents.jsonl")
        assert all(set(d) == {"id", "content"} and doc_pattern.match(d["id"]) for d in docs)
        for split in SPLITS:
            examples = _jsonl(folder / f"examples_{split}.jsonl")
            assert 4 <= len(examples) <= 8
            for example in examples:
                assert set(example) == {"id", "query", "gold_ids", "gold_answers"}
                assert re.fullmatch(r"\d+_\d+", example["id"])
                assert example["gold_answers"] and all(isinstance(a, str) for a in example["gold_answers"])
            steps = _jsonl(folder / f"steps_{split}.jsonl")
            assert [s["id"] for s in steps] == [e["id"] for e in examples]
            for record, example in zip(steps, examples):
                assert set(record) == {"id", "query", "steps"} and record["query"] == example["query"]
                assert 2 <= len(record["steps"]) <= 4
                union: set[str] = set()
                for n, step in enumerate(record["steps"], start=1):
                    assert set(step) == {"step_id", "step", "step_instruction", "gold_ids"}
                    assert step["step_id"] == f"{record['id']}_step{n}"
                    assert step["step_id"].rsplit("_step", 1)[0] == record["id"]
                    assert 1 <= len(step["gold_ids"]) <= 3
                    union |= set(step["gold_ids"])
                # The query's gold is the union of its steps' gold, each id once.
                assert set(example["gold_ids"]) == union
                assert len(example["gold_ids"]) == len(union)


def test_track1_query_ids_are_unique_across_domains_and_splits(release):
    ids = [e["id"] for f in _track1(release) for s in SPLITS for e in _jsonl(f / f"examples_{s}.jsonl")]
    assert len(ids) == len(set(ids))


def test_track1_qrels_match_examples_and_steps(release):
    for folder in _track1(release):
        for split in SPLITS:
            examples = _jsonl(folder / f"examples_{split}.jsonl")
            expected = [(e["id"], d) for e in examples for d in e["gold_ids"]]
            assert _qrels(folder / f"qrels_{split}.txt") == expected
            steps = [s for r in _jsonl(folder / f"steps_{split}.jsonl") for s in r["steps"]]
            expected_steps = [(s["step_id"], d) for s in steps for d in s["gold_ids"]]
            assert _qrels(folder / f"qrels_steps_{split}.txt") == expected_steps


def test_track1_gold_docs_exist_and_negatives_dominate(release):
    for folder in _track1(release):
        ids = _doc_ids(folder, "id")
        assert len(ids) == len(set(ids))
        gold = {d for s in SPLITS for e in _jsonl(folder / f"examples_{s}.jsonl") for d in e["gold_ids"]}
        assert gold <= set(ids)
        assert len(ids) - len(gold) >= 5 * len(gold)


def test_duplicate_maps_point_from_absent_v10_ids_to_present_ids(release):
    for folder in _track1(release):
        mapping = json.loads((folder / "duplicate_map.json").read_text(encoding="utf-8"))
        ids = set(_doc_ids(folder, "id"))
        gold = {d for s in SPLITS for e in _jsonl(folder / f"examples_{s}.jsonl") for d in e["gold_ids"]}
        assert len(mapping) >= 2
        assert not set(mapping) & ids
        assert set(mapping.values()) <= ids
        assert all(removed.startswith(f"{folder.name}/") for removed in mapping)
        # The trap only bites if a removed copy stood for a gold document.
        assert set(mapping.values()) & gold


def test_track1_texts_are_dated(release):
    year = re.compile(r"\b\d{4}s?\b")  # "in 2015", "during the 1870s"
    for folder in _track1(release):
        assert all(year.search(d["content"]) for d in _jsonl(folder / "documents.jsonl"))
        for split in SPLITS:
            guidance = {g["id"]: g for g in _jsonl(folder / f"guidance_{split}.jsonl")}
            for example in _jsonl(folder / f"examples_{split}.jsonl"):
                query_guidance = guidance[example["id"]]["query_guidance"]
                if query_guidance["is_temporal_query"]:
                    assert year.search(example["query"].split("\n", 1)[0])
                    assert query_guidance["key_time_anchors"]
                else:
                    assert query_guidance["key_time_anchors"] == []


def _mentioned_years(signal: str) -> tuple[int, int]:
    """The years a date phrase refers to, resolving "k years after YYYY" and decades."""
    relative = re.search(r"(\d+) years after (\d{4})", signal)
    if relative:
        year = int(relative.group(2)) + int(relative.group(1))
        return year, year
    decade = re.search(r"the (\d{4})s", signal)
    if decade:
        return int(decade.group(1)), int(decade.group(1)) + 9
    years = [int(y) for y in re.findall(r"\b\d{4}\b", signal)]
    assert years, signal
    return min(years), max(years)


def test_guidance_time_scopes_match_the_gold_texts(release):
    for folder in _track1(release):
        content = {d["id"]: d["content"] for d in _jsonl(folder / "documents.jsonl")}
        for split in SPLITS:
            examples = {e["id"]: e for e in _jsonl(folder / f"examples_{split}.jsonl")}
            records = _jsonl(folder / f"guidance_{split}.jsonl")
            assert [g["id"] for g in records] == list(examples)
            for record in records:
                guidance = record["query_guidance"]
                assert isinstance(guidance["is_temporal_query"], bool)
                assert guidance["temporal_reasoning_class_primary"]
                assert isinstance(guidance["retrieval_plan"], list) and guidance["retrieval_plan"]
                annotations = record["gold_passage_annotations"]
                assert [a["doc_id"] for a in annotations] == examples[record["id"]]["gold_ids"]
                for annotation in annotations:
                    scope = annotation["time_scope_guess"]
                    assert set(scope) == {"start_iso", "end_iso", "granularity"}
                    assert scope["start_iso"] <= scope["end_iso"]
                    assert 0.0 <= annotation["confidence"] <= 1.0
                    first, last = int(scope["start_iso"][:4]), int(scope["end_iso"][:4])
                    text = content[annotation["doc_id"]]
                    assert annotation["passage_temporal_signals"]
                    for signal in annotation["passage_temporal_signals"]:
                        # A signal is quoted from the passage (modulo sentence-initial capitals).
                        assert signal.lower() in text.lower(), (signal, text)
                        low, high = _mentioned_years(signal)
                        assert first <= low and high <= last, (signal, scope)


# --------------------------------------------------------------------------- Track 2


def _conversations(folder: Path, split: str) -> list[dict]:
    data = json.loads((folder / f"benchmark_{split}.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def test_track2_records_have_the_release_shapes(release):
    for folder in _track2(release):
        docs = _jsonl(folder / "documents.jsonl")
        assert all(set(d) == {"doc_id", "content"} for d in docs)
        for split in SPLITS:
            for conversation in _conversations(folder, split):
                assert {"id", "task", "turns", "metadata"} <= set(conversation)
                assert re.fullmatch(r"\d+|ex_\d+", conversation["id"])
                turns = conversation["turns"]
                assert 2 <= len(turns) <= 6
                assert [t["turn_id"] for t in turns] == list(range(1, len(turns) + 1))
                exchanges: list[str] = []
                for turn in turns:
                    assert 1 <= len(turn["gold_doc_ids"]) <= 4
                    # The history is every earlier exchange, in order, as "Q: ...\nA: ..." lines.
                    assert turn["conversation_history"] == ("\n".join(exchanges) if exchanges else NO_HISTORY)
                    exchanges += [f"Q: {turn['query']}", f"A: {turn['answer']}"]


def test_drones_folder_has_task_spelled_upstream(release):
    tasks = {f.name: {c["task"] for s in SPLITS for c in _conversations(f, s)} for f in _track2(release)}
    assert tasks["drones"] == {"Drones"}
    assert all(spelling == {name} for name, spelling in tasks.items() if name != "drones")


def test_integer_conversation_ids_collide_across_domains(release):
    for split in SPLITS:
        domains_of = defaultdict(set)
        for folder in _track2(release):
            for conversation in _conversations(folder, split):
                domains_of[conversation["id"]].add(folder.name)
        colliding = {conv for conv, domains in domains_of.items() if len(domains) > 1}
        assert colliding, split
        assert all(conv.isdigit() for conv in colliding)
        assert any(conv.startswith("ex_") for conv in domains_of), split
    dev = {f.name: {c["id"] for c in _conversations(f, "dev")} for f in _track2(release)}
    assert "2" in dev["biology"] and "2" in dev["earth_science"]


def test_track2_doc_id_styles(release):
    for folder in _track2(release):
        ids = _doc_ids(folder, "doc_id")
        integer_ids = all(c["id"].isdigit() for s in SPLITS for c in _conversations(folder, s))
        if integer_ids:
            # BRIGHT-derived: "<page slug>/<Title><n>.txt", no domain prefix.
            assert all(re.fullmatch(r"[^/]+/[^/]+\d\.txt", d) for d in ids)
            assert not any(d.startswith(f"{folder.name}/") for d in ids)
        else:
            assert all(re.fullmatch(rf"{folder.name}_ex_\d+_doc_\d+", d) for d in ids)
    styles = {all(c["id"].isdigit() for s in SPLITS for c in _conversations(f, s)) for f in _track2(release)}
    assert styles == {True, False}


def test_track2_qrels_match_benchmark_and_gold_docs_exist(release):
    for folder in _track2(release):
        ids = _doc_ids(folder, "doc_id")
        assert len(ids) == len(set(ids))
        gold: set[str] = set()
        for split in SPLITS:
            expected = [
                (f"{c['id']}_turn_{t['turn_id']}", d)
                for c in _conversations(folder, split)
                for t in c["turns"]
                for d in t["gold_doc_ids"]
            ]
            assert _qrels(folder / f"qrels_{split}.txt") == expected
            gold |= {d for _, d in expected}
        assert gold <= set(ids)
        assert len(ids) - len(gold) >= 5 * len(gold)


def test_every_split_reaches_every_turn_depth(release):
    for split in SPLITS:
        depths = {t["turn_id"] for f in _track2(release) for c in _conversations(f, split) for t in c["turns"]}
        assert {1, 2, 3, 4} <= depths and max(depths) >= 5, split


# --------------------------------------------------------------------------- sample runs


def _read_run(path: Path) -> dict[str, list[tuple[str, int, float]]]:
    topics: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split(" ")
        assert len(fields) == 6 and fields[1] == "Q0" and fields[5], line
        topics[fields[0]].append((fields[2], int(fields[3]), float(fields[4])))
    return topics


def _dev_track2_turns(release: Path) -> list[tuple[str, str, list[str]]]:
    """(domain, bare turn id, gold ids) of every dev turn."""
    return [
        (f.name, f"{c['id']}_turn_{t['turn_id']}", t["gold_doc_ids"])
        for f in _track2(release)
        for c in _conversations(f, "dev")
        for t in c["turns"]
    ]


def _dev_topics(release: Path) -> dict[str, dict[str, tuple[str, set[str]]]]:
    """Expected topic -> (domain, gold ids) of every sub-track, derived from the release."""
    queries, steps, turns = {}, {}, {}
    for folder in _track1(release):
        for example in _jsonl(folder / "examples_dev.jsonl"):
            queries[example["id"]] = (folder.name, set(example["gold_ids"]))
        for record in _jsonl(folder / "steps_dev.jsonl"):
            for step in record["steps"]:
                steps[step["step_id"]] = (folder.name, set(step["gold_ids"]))
    dev_turns = _dev_track2_turns(release)
    count = Counter(bare for _, bare, _ in dev_turns)
    for domain, bare, gold in dev_turns:
        turns[f"{domain}/{bare}" if count[bare] > 1 else bare] = (domain, set(gold))
    return {"1a": queries, "1b": steps, "2a": turns, "2c": turns}


def test_sample_runs_are_well_formed(release, runs):
    corpora = {f.name: set(_doc_ids(f, "id")) for f in _track1(release)}
    corpora |= {f.name: set(_doc_ids(f, "doc_id")) for f in _track2(release)}
    expected = _dev_topics(release)
    for subtrack in SUBTRACKS:
        run = _read_run(runs[subtrack])
        assert set(run) == set(expected[subtrack]), subtrack
        for topic, rows in run.items():
            domain = expected[subtrack][topic][0]
            assert len(rows) == min(100, len(corpora[domain]))
            assert [rank for _, rank, _ in rows] == list(range(1, len(rows) + 1))
            scores = [score for _, _, score in rows]
            assert all(a > b for a, b in zip(scores, scores[1:])), topic
            docs = [doc for doc, _, _ in rows]
            assert len(docs) == len(set(docs))
            assert set(docs) <= corpora[domain], topic


def test_colliding_turn_ids_are_qualified_in_track2_runs(release, runs):
    run = _read_run(runs["2a"])
    dev_turns = _dev_track2_turns(release)
    count = Counter(bare for _, bare, _ in dev_turns)
    qualified = [t for t in run if "/" in t]
    assert qualified
    for domain, bare, _ in dev_turns:
        if count[bare] > 1:
            assert f"{domain}/{bare}" in run and bare not in run
        else:
            assert bare in run
    assert runs["2a"].read_bytes() == runs["2c"].read_bytes()


def _ndcg10(ranking: list[str], gold: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranking[:10]) if doc in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(gold))))
    return dcg / ideal


def test_lexical_runs_beat_chance_but_are_not_perfect(release, runs):
    expected = _dev_topics(release)
    for subtrack in ("1a", "1b", "2a"):
        run = _read_run(runs[subtrack])
        values = [_ndcg10([d for d, _, _ in rows], expected[subtrack][topic][1]) for topic, rows in run.items()]
        mean = sum(values) / len(values)
        # Chance is a few gold docs among hundreds: nDCG@10 of a random ranking is ~0.02.
        assert 0.2 < mean < 0.9, (subtrack, mean)
        assert min(values) < 1.0


def test_starting_kit_runs_equal_a_fresh_regeneration(tmp_path):
    fresh = write_sample_runs(write_synthetic_release(tmp_path / "release"), tmp_path / "runs")
    for subtrack in SUBTRACKS:
        committed = SAMPLES / subtrack / "run.txt"
        assert committed.is_file(), "regenerate with: reteco synth --out build/synthetic_release --samples starting_kit/sample_submissions"
        assert committed.read_bytes() == fresh[subtrack].read_bytes(), subtrack
