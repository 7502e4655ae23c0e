"""`reteco prepare`: release and sample layouts -> reference folders, checked against hand counts."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from support.paths import REPO_ROOT, SAMPLES, SHARED_SAMPLE

from reteco.commands import main
from reteco.formats import release as rel
from reteco.formats.reference import Reference
from reteco.problems import InputError
from reteco.release.prepare import format_summary, prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission

# ---------------------------------------------------------------------------------------------
# helpers


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def qrels_of(ref: Reference) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for j in ref.judgments:
        assert j.relevance == 1
        out.setdefault(j.key, set()).add(j.doc_id)
    return out


def passages(path: Path) -> dict[tuple[str, str], str]:
    conn = sqlite3.connect(str(path))
    try:
        return {(d, i): t for d, i, t in conn.execute("SELECT domain, doc_id, text FROM passages")}
    finally:
        conn.close()


def in_corpus(ref: Reference, domain: str, doc_id: str) -> bool:
    index = ref.doc_index
    bits = np.array([index.domain_bit(domain)], dtype=np.uint64)
    return bool(index.lookup(pa.array([doc_id]), bits)[0] >= 0)


def build_release(root: Path) -> Path:
    """A small release-layout folder with every trap the release format has."""
    t1 = root / "track1_tempo"
    # bitcoin: qrels (tab-separated) decide; a duplicate map; nested steps.
    write_jsonl(
        t1 / "bitcoin" / "documents.jsonl",
        [{"id": f"bitcoin/{n}.txt", "content": f"text {n}"} for n in ("a", "b", "c", "kept")],
    )
    write_text(t1 / "bitcoin" / "duplicate_map.json", json.dumps({"bitcoin/old.txt": "bitcoin/kept.txt"}))
    write_jsonl(
        t1 / "bitcoin" / "examples_dev.jsonl",
        [
            {"id": "q1", "query": "first", "gold_ids": ["bitcoin/a.txt", "bitcoin/b.txt"], "gold_answers": ["x"]},
            {"id": "q2", "query": "second", "gold_ids": ["bitcoin/old.txt"]},
            {"id": "q3", "query": "third", "gold_ids": ["bitcoin/c.txt"]},  # not in qrels: dropped
        ],
    )
    write_jsonl(t1 / "bitcoin" / "examples.jsonl", [{"id": "stale", "gold_ids": ["bitcoin/a.txt"]}])
    write_text(
        t1 / "bitcoin" / "qrels_dev.txt",
        "q1\t0\tbitcoin/a.txt\t1\nq1\t0\tbitcoin/b.txt\t1\nq2\t0\tbitcoin/old.txt\t1\n"
        "q3\t0\tbitcoin/c.txt\t0\nzzz\t0\tbitcoin/a.txt\t1\n",
    )
    write_jsonl(
        t1 / "bitcoin" / "steps_dev.jsonl",
        [
            {
                "id": "q1",
                "query": "first",
                "steps": [
                    {"step_id": "q1_step1", "step": "s", "step_instruction": "i", "gold_ids": ["bitcoin/a.txt"]},
                    {"step_id": "q1_step2", "step": "s", "step_instruction": "i", "gold_ids": ["bitcoin/b.txt"]},
                ],
            },
            {"id": "q2", "query": "second", "steps": [{"step_id": "q2_step1", "gold_ids": ["bitcoin/old.txt"]}]},
        ],
    )
    # law: the same query id "q1" as bitcoin; no qrels file (gold ids decide); a gold id absent
    # from the corpus.
    write_jsonl(t1 / "law" / "documents.jsonl", [{"id": "law/x.txt", "content": "x"}])
    write_jsonl(t1 / "law" / "examples_dev.jsonl", [{"id": "q1", "query": "law", "gold_ids": ["law/x.txt", "law/gone.txt"]}])
    write_jsonl(t1 / "law" / "steps_dev.jsonl", [{"id": "q1", "steps": [{"step_id": "q1_step1", "gold_ids": ["law/x.txt"]}]}])

    t2 = root / "track2_recor"
    # biology: benchmark as a pretty-printed JSON array, integer conversation id 2, qrels in
    # both turn spellings.
    write_jsonl(t2 / "biology" / "documents.jsonl", [{"doc_id": "d1", "content": "bio one"}, {"doc_id": "d2", "content": "bio two"}])
    conversation = {
        "id": 2,
        "task": "biology",
        "turns": [
            {"turn_id": 1, "query": "b q1", "answer": "b a1", "gold_doc_ids": ["d1"], "conversation_history": "No previous conversation."},
            {"turn_id": 2, "query": "b q2", "answer": "b a2", "gold_doc_ids": ["d2"], "conversation_history": "Q: b q1\nA: b a1"},
        ],
        "metadata": {"num_turns": 2},
    }
    write_text(t2 / "biology" / "benchmark_dev.json", json.dumps([conversation], indent=2))
    write_text(t2 / "biology" / "qrels_dev.txt", "2_turn_1\t0\td1\t1\n2#turn2 0 d2 1\n")
    # drones: conversation id "2" again, task spelled "Drones", JSONL benchmark, no qrels, a turn
    # without gold ids (dropped), a document id shared with biology's corpus.
    write_jsonl(
        t2 / "drones" / "documents.jsonl",
        [{"doc_id": "d1", "content": "drone one"}, {"doc_id": "d3", "content": "drone three"}, {"doc_id": "d4", "content": "drone four"}],
    )
    write_jsonl(
        t2 / "drones" / "benchmark_dev.jsonl",
        [
            {
                "id": "2",
                "task": "Drones",
                "turns": [
                    {"turn_id": 1, "query": "d q1", "answer": "d a1", "gold_doc_ids": ["d1", "d3"], "conversation_history": ""},
                    {"turn_id": 2, "query": "d q2", "answer": "d a2", "gold_doc_ids": ["d3"], "conversation_history": "Q: d q1"},
                    {"turn_id": 3, "query": "d q3", "answer": "d a3", "gold_doc_ids": [], "conversation_history": "Q: d q2"},
                ],
            }
        ],
    )
    return root


# ---------------------------------------------------------------------------------------------
# the organizers' public sample (flat layout)


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory):
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"the organizers' sample is not at {SHARED_SAMPLE} (expected beside the repository, in ../shared)")
    out = tmp_path_factory.mktemp("sample_ref")
    summary = prepare_release(SHARED_SAMPLE, "dev", out)
    return out, summary


def test_sample_track1_counts(sample_out):
    out, summary = sample_out
    assert summary["tracks"]["track1_tempo"]["layout"] == "sample"
    assert summary["tracks"]["track1_tempo"]["domains"] == ["bitcoin", "economics", "genealogy", "history", "hsm"]
    assert summary["tracks"]["track1_tempo"]["documents"] == 26
    ref = Reference.read(out / "1a")
    assert len(ref.topics) == 5 and len(ref.judgments) == 26
    assert ref.manifest["counts"]["topics"] == 5
    assert {t.key for t in ref.topics} == {
        "bitcoin/122291_22", "economics/59375_163", "genealogy/9808_315", "history/79305_12", "hsm/18988_650",
    }
    assert all(t.unit == t.key for t in ref.topics)
    assert len(qrels_of(ref)["genealogy/9808_315"]) == 7
    assert ref.manifest["source"] == {"release": "reteco_sample", "layout": "sample"}
    assert ref.manifest["unit"] == "query" and ref.manifest["official"] == "ndcg_10"
    assert len(ref.doc_index) == 26
    assert in_corpus(ref, "bitcoin", "bitcoin/25785deb_4434.txt")
    assert not in_corpus(ref, "economics", "bitcoin/25785deb_4434.txt")
    # Its only warnings: a corpus of gold passages (test_prepare_warns_for_every_ranked_subtrack_...),
    # and its steps without step ids (test_sample_steps_are_flattened_records).
    assert [w for w in summary["warnings"] if "over half of the corpus is judged relevant" not in w] == [
        "1b: 5 records of the steps file have no step id (a query's record without its steps, as in the public "
        "sample): each is taken as its query's one step, '<query id>_step1', the id a run must use"
    ]


def test_sample_steps_are_flattened_records(sample_out):
    out, _ = sample_out
    ref = Reference.read(out / "1b")
    # The sample's steps.jsonl has one record per query, the query's id and gold, no "steps"
    # list and no step id: each record is its query's one step, named as the kit tells
    # participants to name steps (<query id>_step<n>), so its parent query is the record's.
    assert len(ref.topics) == 5 and len(ref.judgments) == 26
    queries = {t.key for t in Reference.read(out / "1a").topics}
    assert {t.unit for t in ref.topics} == queries
    assert {t.key for t in ref.topics} == {f"{q}_step1" for q in queries}
    assert ref.manifest["unit"] == "query"


def test_the_kits_1b_line_scores_against_the_sample(sample_out, tmp_path):
    """The input that triggered it (issue 22): the kit's 1b example line, a step id
    ``122291_22_step1``; the sample's reference refused it with a message whose example
    ('122291_22') broke its own rule (<query id>_step<n>)."""
    out, _ = sample_out
    kit = (REPO_ROOT / "starting_kit" / "README.md").read_text(encoding="utf-8")
    line = re.search(r"\| 1b \| `run.txt` \| `([^`]+)` \|", kit).group(1)
    assert line.split()[0] == "122291_22_step1"
    run = tmp_path / "run.txt"
    run.write_text(line + "\n")
    result = score_submission(Reference.read(out / "1b"), run)
    assert result.details["counts"]["topics_missing"] == 4  # the one step ranked, its gold doc at rank 1
    assert result.scores["ndcg_10"] > 0
    run.write_text("122291_22_step3 Q0 bitcoin/25785deb_4434.txt 1 14.2 my_system\n")
    with pytest.raises(InputError) as caught:
        score_submission(Reference.read(out / "1b"), run)
    assert str(caught.value).endswith(
        "sub-track 1b expects step ids (<query id>_step<n>), e.g. '122291_22_step1'"
    )


def test_sample_track2_counts(sample_out):
    out, summary = sample_out
    track = summary["tracks"]["track2_recor"]
    assert track["domains"] == ["biology", "drones", "earth_science", "law"]  # "Drones" canonicalised
    assert track["conversations"] == 4 and track["documents"] == 15
    for sub in ("2a", "2b", "2c"):
        ref = Reference.read(out / sub)
        assert len(ref.topics) == 13 and len(ref.judgments) == 32, sub
        assert ref.manifest["unit"] == "turn"
        assert ref.manifest["counts"]["conversations"] == 4
    ref = Reference.read(out / "2a")
    by_key = {t.key: t for t in ref.topics}
    assert by_key["biology/2_turn_3"].conversation == "biology/2" and by_key["biology/2_turn_3"].depth == 3
    assert by_key["drones/ex_3025_turn_4"].depth == 4
    assert qrels_of(ref)["earth_science/5_turn_1"] == {
        f"humidity_and_rain/Kelvin_equation{n}.txt" for n in (1, 2, 4, 5)
    }
    assert summary["subtracks"]["2a"]["topics_qrels_gold_disagree"] == 0
    # 2b and 2c: turns.jsonl and passages (the sample corpus is all gold, so both hold 15).
    turns = [json.loads(line) for line in (out / "2b" / "turns.jsonl").read_text().splitlines()]
    assert len(turns) == 13
    assert set(turns[0]) == {"key", "domain", "conversation", "turn", "query", "history", "answer", "gold_doc_ids"}
    assert len(passages(out / "2b" / "passages.sqlite")) == 15
    assert len(passages(out / "2c" / "passages.sqlite")) == 15


# ---------------------------------------------------------------------------------------------
# the release layout


@pytest.fixture()
def release_out(tmp_path):
    root = build_release(tmp_path / "release_v1.1")
    out = tmp_path / "ref"
    summary = prepare_release(root, "dev", out)
    return root, out, summary


def test_release_track1_queries(release_out):
    _, out, summary = release_out
    ref = Reference.read(out / "1a")
    assert ref.manifest["domains"] == ["bitcoin", "law"]
    assert ref.manifest["source"] == {"release": "release_v1.1", "layout": "release"}
    qrels = qrels_of(ref)
    # The same query id in two domains stays two topics.
    assert qrels["bitcoin/q1"] == {"bitcoin/a.txt", "bitcoin/b.txt"}
    assert qrels["law/q1"] == {"law/x.txt", "law/gone.txt"}
    # A removed id in the qrels is mapped to its kept id.
    assert qrels["bitcoin/q2"] == {"bitcoin/kept.txt"}
    # q3 is judged 0 in the qrels: no relevant document, dropped.
    assert "bitcoin/q3" not in qrels
    assert [t.key for t in ref.topics] == ["bitcoin/q1", "bitcoin/q2", "law/q1"]
    info = summary["subtracks"]["1a"]
    assert info["topics"] == 3 and info["judgments"] == 5 and info["dropped_topics"] == 1
    assert info["gold_missing_from_corpus"] == 1
    assert info["qrels_ids_remapped"] == 1 and info["gold_ids_remapped"] == 1
    assert info["qrels_lines_unknown_topic"] == 1
    assert info["topics_qrels_gold_disagree"] == 1 and info["gold_ids_not_in_qrels"] == 1
    assert info["topics_judged_by_qrels"] == 3 and info["topics_judged_by_gold_ids"] == 1
    # The corpus index and the duplicate map travel with the reference.
    assert len(ref.doc_index) == 5
    assert in_corpus(ref, "bitcoin", "bitcoin/kept.txt") and not in_corpus(ref, "law", "bitcoin/kept.txt")
    mapped, changed = ref.duplicate_map.apply(pa.array(["bitcoin/old.txt", "bitcoin/a.txt"]))
    assert mapped.to_pylist() == ["bitcoin/kept.txt", "bitcoin/a.txt"] and changed == 1
    # Warnings give counts, never document ids.
    text = "\n".join(summary["warnings"])
    assert "1 judgments name documents absent from the corpus" in text
    assert "examples.jsonl has no split suffix" not in text  # the suffixed file exists: nothing to say
    assert ".txt" not in text


def test_release_track1_steps_point_to_parent_queries(release_out):
    _, out, summary = release_out
    ref = Reference.read(out / "1b")
    units = {t.key: t.unit for t in ref.topics}
    assert units == {
        "bitcoin/q1_step1": "bitcoin/q1",
        "bitcoin/q1_step2": "bitcoin/q1",
        "bitcoin/q2_step1": "bitcoin/q2",
        "law/q1_step1": "law/q1",
    }
    assert qrels_of(ref)["bitcoin/q2_step1"] == {"bitcoin/kept.txt"}
    assert ref.manifest["counts"]["units"] == 3 and ref.manifest["counts"]["topics"] == 4
    assert summary["subtracks"]["1b"]["topics_judged_by_gold_ids"] == 4


def test_release_track2_colliding_conversations_stay_separate(release_out):
    _, out, summary = release_out
    ref = Reference.read(out / "2a")
    assert ref.manifest["domains"] == ["biology", "drones"]
    by_key = {t.key: t for t in ref.topics}
    assert set(by_key) == {"biology/2_turn_1", "biology/2_turn_2", "drones/2_turn_1", "drones/2_turn_2"}
    assert by_key["biology/2_turn_2"].conversation == "biology/2"
    assert by_key["drones/2_turn_1"].conversation == "drones/2" and by_key["drones/2_turn_1"].topic_id == "2_turn_1"
    qrels = qrels_of(ref)
    assert qrels["biology/2_turn_1"] == {"d1"} and qrels["biology/2_turn_2"] == {"d2"}
    assert qrels["drones/2_turn_1"] == {"d1", "d3"}
    info = summary["subtracks"]["2a"]
    assert info["conversations"] == 2 and info["topics"] == 4 and info["judgments"] == 5
    assert info["dropped_topics"] == 1  # drones turn 3 has no gold document
    assert summary["tracks"]["track2_recor"]["documents"] == 4  # d1 counted once, in two domains
    assert summary["tracks"]["track2_recor"]["documents_per_domain"] == {"biology": 2, "drones": 3}
    assert in_corpus(ref, "drones", "d4") and not in_corpus(ref, "biology", "d4")
    assert ref.duplicate_map is None
    # "task": "Drones" in the drones folder is the same domain: nothing to warn about.
    assert not any("task" in w for w in summary["warnings"])


def test_release_track2_turns_and_passages(release_out):
    _, out, _ = release_out
    turns = [json.loads(line) for line in (out / "2c" / "turns.jsonl").read_text().splitlines()]
    assert [t["key"] for t in turns] == ["biology/2_turn_1", "biology/2_turn_2", "drones/2_turn_1", "drones/2_turn_2"]
    assert turns[1] == {
        "key": "biology/2_turn_2",
        "domain": "biology",
        "conversation": "biology/2",
        "turn": 2,
        "query": "b q2",
        "history": "Q: b q1\nA: b a1",
        "answer": "b a2",
        "gold_doc_ids": ["d2"],
    }
    assert (out / "2b" / "turns.jsonl").read_text() == (out / "2c" / "turns.jsonl").read_text()
    # 2b: the gold passages of its turns; 2c: the whole corpus, each text under its own domain.
    assert passages(out / "2b" / "passages.sqlite") == {
        ("biology", "d1"): "bio one", ("biology", "d2"): "bio two", ("drones", "d1"): "drone one", ("drones", "d3"): "drone three",
    }
    full = passages(out / "2c" / "passages.sqlite")
    assert len(full) == 5 and full[("drones", "d4")] == "drone four"
    assert Reference.read(out / "2b").manifest["counts"]["passages"] == 4
    assert Reference.read(out / "2c").manifest["counts"]["passages"] == 5
    assert not (out / "2a" / "passages.sqlite").exists() and not (out / "2a" / "turns.jsonl").exists()


def test_round_trip_and_manifest(release_out):
    _, out, _ = release_out
    for sub in ("1a", "1b", "2a", "2b", "2c"):
        ref = Reference.read(out / sub)
        assert ref.subtrack == sub and ref.relevance == "binary"
        assert ref.manifest["benchmark"] == "reteco" and ref.manifest["split"] == "dev"
        assert ref.manifest["cutoffs"] == [10]
        assert ref.manifest["created_by"].startswith("reteco ")
        assert set(ref.manifest["files"]) >= {"topics.tsv", "qrels.txt", "doc_ids.arrow"}
        keys = {t.key for t in ref.topics}
        assert {j.key for j in ref.judgments} == keys  # no judged key without a topic and vice versa
        assert ref.manifest["counts"]["topics"] == len(ref.topics)
        assert ref.manifest["counts"]["judgments"] == len(ref.judgments)
    assert sorted(p.name for p in out.iterdir()) == ["1a", "1b", "2a", "2b", "2c"]  # nothing half-built left


def test_prepare_twice_gives_identical_references(tmp_path):
    root = build_release(tmp_path / "rel")
    prepare_release(root, "dev", tmp_path / "a")
    prepare_release(root, "dev", tmp_path / "b")
    prepare_release(root, "dev", tmp_path / "b")  # over an existing reference: replaced
    for sub in ("1a", "1b", "2a", "2b", "2c"):
        assert Reference.read(tmp_path / "a" / sub).fingerprint() == Reference.read(tmp_path / "b" / sub).fingerprint()


def test_refuses_to_overwrite_a_foreign_folder(tmp_path):
    root = build_release(tmp_path / "rel")
    write_text(tmp_path / "out" / "1a" / "notes.txt", "mine")
    with pytest.raises(InputError, match="not overwriting"):
        prepare_release(root, "dev", tmp_path / "out")
    assert (tmp_path / "out" / "1a" / "notes.txt").read_text() == "mine"


def test_absent_track_is_skipped_and_said(tmp_path):
    root = build_release(tmp_path / "rel")
    import shutil

    shutil.rmtree(root / "track2_recor")
    summary = prepare_release(root, "dev", tmp_path / "out")
    assert summary["tracks"]["track2_recor"]["status"] == "absent"
    assert summary["subtracks"]["2a"] == {"status": "skipped", "reason": "track2_recor/ absent"}
    assert (tmp_path / "out" / "1a" / "reference.json").is_file()
    assert not (tmp_path / "out" / "2a").exists()
    assert "2a: skipped" in format_summary(summary)


def test_only_2b_builds_its_passages_without_leftovers(tmp_path):
    root = build_release(tmp_path / "rel")
    out = tmp_path / "out"
    summary = prepare_release(root, "dev", out, subtracks=("2b",))
    assert sorted(p.name for p in out.iterdir()) == ["2b"]
    assert len(passages(out / "2b" / "passages.sqlite")) == 4
    assert summary["tracks"]["track1_tempo"] == {"status": "not requested"}


def test_missing_split_files_are_reported(tmp_path):
    # A split without files used to give an empty 1a (0 topics, with this warning): now it is
    # refused, with the same account of the missing files, and nothing is written.
    root = build_release(tmp_path / "rel")
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "train", tmp_path / "out", subtracks=("1a",))
    text = _error_text(excinfo)
    assert (
        "sub-track 1a: split 'train' gives no topic: no examples_train.jsonl in 2 domain(s): bitcoin, law; "
        "files without split suffix (not used) in: bitcoin"
        in text
    )
    assert not (tmp_path / "out").exists()


def test_unknown_subtrack_and_missing_release(tmp_path):
    with pytest.raises(InputError, match="unknown sub-track"):
        prepare_release(tmp_path, "dev", tmp_path / "out", subtracks=("3a",))
    with pytest.raises(InputError, match="not found"):
        prepare_release(tmp_path / "nope", "dev", tmp_path / "out")
    with pytest.raises(InputError, match="neither"):
        prepare_release(tmp_path, "dev", tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# malformed files: InputError naming file and line


def _error_text(excinfo) -> str:
    return "\n".join(excinfo.value.problems.lines())


def test_malformed_examples_line(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track1_tempo" / "law" / "examples_dev.jsonl"
    path.write_text(path.read_text() + '{"id": "q9", "gold_ids": [\n')
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out")
    assert f"{path}:2: error: not valid JSON" in _error_text(excinfo)
    # 1a and 1b read law/ after bitcoin/: nothing was staged, and nothing half-built is left.
    out = tmp_path / "out"
    assert not out.exists() or not any(p.name.endswith(".preparing") for p in out.iterdir())


def test_malformed_qrels_line(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track2_recor" / "biology" / "qrels_dev.txt"
    path.write_text(path.read_text() + "2_turn_1 0 d1\n")
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out")
    assert f"{path}:3: error: expected 4 columns" in _error_text(excinfo)


def test_malformed_json_array_benchmark_names_the_line(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track2_recor" / "biology" / "benchmark_dev.json"
    lines = path.read_text().splitlines()
    assert lines[6].strip() == '"turn_id": 1,'
    lines[6] = lines[6].replace('"', "", 1)  # breaks the JSON on line 7
    path.write_text("\n".join(lines))
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out")
    assert f"{path}:7: error: not valid JSON" in _error_text(excinfo)


def test_wrong_field_types_name_the_line(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track1_tempo" / "bitcoin" / "steps_dev.jsonl"
    write_jsonl(path, [{"id": "q1", "steps": [{"step_id": "q1_step1", "gold_ids": []}]}, {"id": "q2", "steps": [{"gold_ids": []}]}])
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out", subtracks=("1b",))
    assert f"{path}:2: error: \"step_id\" of step 1 is missing" in _error_text(excinfo)
    # 1a reads the steps too (they are its required periods): the bad step must go first.
    write_jsonl(path, [{"id": "q1", "steps": [{"step_id": "q1_step1", "gold_ids": []}]}])

    path = root / "track1_tempo" / "law" / "documents.jsonl"
    write_jsonl(path, [{"id": "law/x.txt"}, {"content": "no id"}])
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out", subtracks=("1a",))
    assert f"{path}:2: error: document has no" in _error_text(excinfo)


def test_repeated_topic_is_an_error(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track1_tempo" / "law" / "examples_dev.jsonl"
    path.write_text(path.read_text() * 2)
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out", subtracks=("1a",))
    assert f"{path}:2: error: topic 'q1' of domain 'law' repeats (first at {path}:1)" in _error_text(excinfo)


# ---------------------------------------------------------------------------------------------
# flat layout with colliding ids, and the readers on their own


def test_flat_qrels_with_colliding_conversation_ids(tmp_path):
    t2 = tmp_path / "flat" / "track2_recor"
    write_jsonl(
        t2 / "benchmark.jsonl",
        [
            {"id": 2, "task": "biology", "turns": [{"turn_id": 1, "query": "b", "gold_doc_ids": ["bio/x.txt"]}]},
            {"id": "2", "task": "Drones", "turns": [{"turn_id": 1, "query": "d", "gold_doc_ids": ["dr_1"]}]},
        ],
    )
    write_jsonl(t2 / "documents.jsonl", [{"doc_id": "bio/x.txt", "content": "b"}, {"doc_id": "dr_1", "content": "d"}, {"doc_id": "free", "content": "f"}])
    write_text(t2 / "qrels.txt", "2#turn1 0 bio/x.txt 1\n2#turn1 0 dr_1 1\n2#turn1 0 other 1\n")
    summary = prepare_release(tmp_path / "flat", "test", tmp_path / "out", subtracks=("2a",))
    ref = Reference.read(tmp_path / "out" / "2a")
    assert qrels_of(ref) == {"biology/2_turn_1": {"bio/x.txt"}, "drones/2_turn_1": {"dr_1"}}
    assert summary["subtracks"]["2a"]["qrels_lines_ambiguous"] == 1
    # Documents are attributed to the domains citing them; an uncited one to every domain.
    assert in_corpus(ref, "drones", "dr_1") and not in_corpus(ref, "biology", "dr_1")
    assert in_corpus(ref, "biology", "free") and in_corpus(ref, "drones", "free")
    assert ref.manifest["domains"] == ["biology", "drones"]


def test_json_array_reader_keeps_line_numbers(tmp_path):
    path = tmp_path / "b.json"
    path.write_text('[\n  {"id": 1, "turns": []},\n\n  {"id": 2,\n   "turns": []}\n]\n')
    assert [(line, r["id"]) for line, r in rel.iter_json_records(path)] == [(2, 1), (4, 2)]
    path.write_text("[]")
    assert list(rel.iter_json_records(path)) == []
    path.write_text('[{"id": 1} {"id": 2}]')
    with pytest.raises(InputError, match="expected ',' or ']'"):
        list(rel.iter_json_records(path))
    path.write_text('{"id": 1}\n{"id": 2}\n')  # JSONL under a .json name still reads
    assert [line for line, _ in rel.iter_json_records(path)] == [1, 2]


def test_steps_reader_both_shapes(tmp_path):
    path = tmp_path / "steps.jsonl"
    write_jsonl(
        path,
        [
            {"id": "7_3", "gold_ids": ["a"]},  # flattened, sample style
            {"id": "7_4_step2", "gold_ids": ["b"]},  # flattened, step id spelled out
            {"id": "8_1", "steps": [{"step_id": "8_1_step1", "gold_ids": ["c"]}, {"step_id": "x_step1", "gold_ids": []}]},
        ],
    )
    got = [(s.step_id, s.parent_id, s.parent_disagrees, s.numbered) for s in rel.read_steps(path)]
    assert got == [
        ("7_3_step1", "7_3", False, True),  # no step id: the query's one step
        ("7_4_step2", "7_4", False, False),
        ("8_1_step1", "8_1", False, False),
        ("x_step1", "8_1", True, False),
    ]


def test_failure_after_staging_leaves_nothing_half_built(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track2_recor" / "drones" / "documents.jsonl"
    path.write_text(path.read_text() + '{"doc_id": 5, "content": 7}\n')
    out = tmp_path / "out"
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", out)
    assert f"{path}:4: error: \"content\" must be a string" in _error_text(excinfo)
    # Track 1 was complete and stays; Track 2 failed while streaming its corpus into staging.
    assert sorted(p.name for p in out.iterdir()) == ["1a", "1b"]


def test_layout_detection(tmp_path):
    track = tmp_path / "track1_tempo"
    write_jsonl(track / "bitcoin" / "documents.jsonl", [{"id": "bitcoin/a.txt"}])
    (track / "notes").mkdir()  # no data file: not a domain
    assert rel.detect_layout(track) == rel.RELEASE
    assert list(rel.domain_dirs(track)) == ["bitcoin"]
    write_jsonl(track / "Bitcoin" / "documents.jsonl", [{"id": "bitcoin/a.txt"}])
    with pytest.raises(InputError, match="two folders for domain 'bitcoin'"):
        rel.detect_layout(track)
    (track / "Bitcoin" / "documents.jsonl").unlink()
    (track / "Bitcoin").rmdir()
    write_jsonl(track / "examples.jsonl", [{"id": "q"}])
    with pytest.raises(InputError, match="both flat data files and domain folders"):
        rel.detect_layout(track)
    assert rel.detect_layout(tmp_path / "absent") is None


# ---------------------------------------------------------------------------------------------
# duplicate-map chains and cycles


def raw_duplicate_map(path: Path) -> dict[str, str]:
    """duplicate_map.arrow as written, read without DuplicateMap (which resolves chains itself)."""
    table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    return dict(zip(table.column("removed").to_pylist(), table.column("kept").to_pylist()))


def test_duplicate_map_chains_are_written_resolved(tmp_path):
    root = build_release(tmp_path / "rel")
    # old -> mid -> kept: the qrels' "old" is mapped to "kept" (as before), and so is the
    # reference's map, so a run naming "old" or "mid" is mapped the same way.
    write_text(
        root / "track1_tempo" / "bitcoin" / "duplicate_map.json",
        json.dumps({"bitcoin/old.txt": "bitcoin/mid.txt", "bitcoin/mid.txt": "bitcoin/kept.txt"}),
    )
    prepare_release(root, "dev", tmp_path / "out", subtracks=("1a",))
    ref = Reference.read(tmp_path / "out" / "1a")
    assert qrels_of(ref)["bitcoin/q2"] == {"bitcoin/kept.txt"}
    assert raw_duplicate_map(tmp_path / "out" / "1a" / "duplicate_map.arrow") == {
        "bitcoin/old.txt": "bitcoin/kept.txt",
        "bitcoin/mid.txt": "bitcoin/kept.txt",
    }


def test_a_duplicate_map_cycle_is_an_error_naming_the_ids_and_the_file(tmp_path):
    root = build_release(tmp_path / "rel")
    path = root / "track1_tempo" / "bitcoin" / "duplicate_map.json"
    write_text(path, json.dumps({"bitcoin/old.txt": "bitcoin/a.txt", "bitcoin/a.txt": "bitcoin/b.txt",
                                 "bitcoin/b.txt": "bitcoin/a.txt"}))
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out")
    assert _error_text(excinfo) == (
        f"{path}: error: removed ids form a cycle, 'bitcoin/a.txt' -> 'bitcoin/b.txt' -> 'bitcoin/a.txt': "
        "no id is kept for them"
    )
    assert not (tmp_path / "out").exists()


def test_a_cycle_across_domains_names_both_files(tmp_path):
    root = build_release(tmp_path / "rel")
    bitcoin = root / "track1_tempo" / "bitcoin" / "duplicate_map.json"
    law = root / "track1_tempo" / "law" / "duplicate_map.json"
    write_text(bitcoin, json.dumps({"shared/x.txt": "shared/y.txt"}))
    write_text(law, json.dumps({"shared/y.txt": "shared/x.txt"}))
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out", subtracks=("1a",))
    text = _error_text(excinfo)
    assert "removed ids form a cycle across domains, 'shared/x.txt' -> 'shared/y.txt' -> 'shared/x.txt'" in text
    assert str(bitcoin) in text and str(law) in text


# ---------------------------------------------------------------------------------------------
# splits that do not exist, sub-tracks without a topic: refused, nothing written


def test_a_split_that_does_not_exist_is_refused_listing_the_splits(tmp_path):
    release = write_synthetic_release(tmp_path / "synthetic")
    out = tmp_path / "out"
    with pytest.raises(InputError) as excinfo:
        prepare_release(release, "nosuch", out)
    text = _error_text(excinfo)
    for sub in ("1a", "1b", "2a", "2b", "2c"):
        assert f"sub-track {sub}: split 'nosuch' gives no topic" in text
    assert "no examples_nosuch.jsonl in 3 domain(s)" in text
    assert text.endswith(
        f"{release}: error: split 'nosuch' is not in this release: the splits its file names give are "
        "dev, test, train; nothing was written"
    )
    assert not out.exists()
    # The same through the command: exit 1, the splits listed, no traceback.
    done = subprocess.run(
        [sys.executable, "-m", "reteco", "prepare", "--release", str(release), "--split", "nosuch", "--out", str(out)],
        capture_output=True, text=True,
    )
    assert done.returncode == 1 and "dev, test, train" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_a_subtrack_without_topics_is_refused_and_nothing_is_written(tmp_path):
    root = build_release(tmp_path / "rel")
    for path in (root / "track2_recor").glob("*/benchmark_dev.json*"):
        path.rename(path.with_name(path.name.replace("_dev", "_train")))
    out = tmp_path / "out"
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", out)
    text = _error_text(excinfo)
    assert "sub-track 2a: split 'dev' gives no topic" in text and "sub-track 1a" not in text
    assert "sub-track 2a: split 'dev' gives no topic: no benchmark_dev.json(l) in 2 domain(s): biology, drones" in text
    assert "(the splits its file names give: dev, train); nothing was written" in text
    assert not out.exists()  # Track 1 had topics, but nothing is written when a sub-track asked for has none
    summary = prepare_release(root, "dev", out, subtracks=("1a", "1b"))  # what does exist still prepares
    assert sorted(p.name for p in out.iterdir()) == ["1a", "1b"] and summary["subtracks"]["1a"]["topics"] == 3


def test_topics_without_any_relevant_document_are_no_topics(tmp_path):
    root = build_release(tmp_path / "rel")
    (root / "track1_tempo" / "law" / "examples_dev.jsonl").unlink()
    write_text(root / "track1_tempo" / "bitcoin" / "qrels_dev.txt", "q1\t0\tbitcoin/a.txt\t0\n")
    with pytest.raises(InputError) as excinfo:
        prepare_release(root, "dev", tmp_path / "out", subtracks=("1a",))
    text = _error_text(excinfo)
    assert "sub-track 1a: split 'dev' gives no topic: its 3 topics have no relevant document" in text
    assert "have no relevant document; no examples_dev.jsonl in 1 domain(s): law" in text


def sample_copy(tmp_path: Path, suffix: str | None) -> Path:
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"the organizers' sample is not at {SHARED_SAMPLE} (expected beside the repository, in ../shared)")
    copy = tmp_path / "sample"
    shutil.copytree(SHARED_SAMPLE, copy)
    if suffix is not None:
        for path in [*copy.glob("track*/*.jsonl"), *copy.glob("track*/qrels*.txt")]:
            if path.name != "documents.jsonl":
                path.rename(path.with_name(f"{path.stem}_{suffix}{path.suffix}"))
    return copy


def test_the_sample_with_split_suffixes_refuses_another_split(tmp_path):
    copy = sample_copy(tmp_path, "train")
    with pytest.raises(InputError) as excinfo:
        prepare_release(copy, "nosuch", tmp_path / "out")
    text = _error_text(excinfo)
    assert "the splits its file names give are train; nothing was written" in text
    assert "sub-track 1a: split 'nosuch' gives no topic: no examples file in flat track1_tempo/" in text
    assert not (tmp_path / "out").exists()
    summary = prepare_release(copy, "train", tmp_path / "out")
    assert summary["subtracks"]["1a"]["topics"] == 5 and summary["subtracks"]["2a"]["topics"] == 13


def test_the_sample_without_a_topic_file_is_refused(tmp_path):
    copy = sample_copy(tmp_path, None)
    (copy / "track2_recor" / "benchmark.jsonl").unlink()
    with pytest.raises(InputError) as excinfo:
        prepare_release(copy, "dev", tmp_path / "out", subtracks=("1a", "2b"))
    text = _error_text(excinfo)
    assert "sub-track 2b: split 'dev' gives no topic: no benchmark file in flat track2_recor/" in text
    assert "no file name of this release names a split (the flat sample's files serve any split)" in text
    assert not (tmp_path / "out").exists()


def test_the_sample_files_without_a_split_serve_any_split(tmp_path):
    # The public sample's file names carry no split: whatever split is asked, they are its data.
    copy = sample_copy(tmp_path, None)
    summary = prepare_release(copy, "anything", tmp_path / "out", subtracks=("1a",))
    assert summary["subtracks"]["1a"]["topics"] == 5
    assert Reference.read(tmp_path / "out" / "1a").manifest["split"] == "anything"


# ---------------------------------------------------------------------------------------------
# a corpus of mostly relevant documents: said by prepare too, in scoring's words


def _gold_only_track1_corpus(release: Path) -> None:
    """Cut each Track-1 domain's corpus to the documents its dev qrels (queries and steps) judge
    relevant: every document left is relevant to some topic of its domain."""
    for folder in rel.domain_dirs(release / rel.TRACK1_DIR).values():
        relevant = {line.doc_id for name in ("qrels_dev.txt", "qrels_steps_dev.txt")
                    for line in rel.read_qrels(folder / name)}
        lines = (folder / "documents.jsonl").read_text(encoding="utf-8").splitlines()
        kept = [x for x in lines if json.loads(x)["id"] in relevant]
        (folder / "documents.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")


def _scoring_warning(reference_folder: Path, submission: Path) -> str | None:
    """What scoring says of the reference's corpus (its "reference" warning), without the prefix."""
    result = score_submission(Reference.read(reference_folder), submission)
    said = [p.message for p in result.problems if p.file == "reference"]
    assert len(said) <= 1, said
    return said[0] if said else None


def test_prepare_warns_of_a_mostly_relevant_corpus_in_scorings_words(tmp_path, capsys):
    release = write_synthetic_release(tmp_path / "release")
    _gold_only_track1_corpus(release)
    assert main(["prepare", "--release", str(release), "--split", "dev", "--out", str(tmp_path / "ref")]) == 0
    out = capsys.readouterr().out
    warned = {line.split(": ", 2)[1]: line.split(": ", 2)[2] for line in out.splitlines()
              if line.startswith("  warning: ") and "judged relevant" in line}
    # Track 1's corpora are gold documents only; Track 2's synthetic corpora are 4-5 % relevant.
    assert sorted(warned) == ["1a", "1b"], out
    assert warned["1a"].startswith("over half of the corpus is judged relevant in 3 of 3 domains (bitcoin, history, "
                                   "law): any ranking finds relevant documents there")
    for sub in ("1a", "1b"):
        assert warned[sub] == _scoring_warning(tmp_path / "ref" / sub, SAMPLES / sub)
    assert _scoring_warning(tmp_path / "ref" / "2a", SAMPLES / "2a") is None


def test_prepare_warns_for_every_ranked_subtrack_of_the_organizers_sample(tmp_path):
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"the organizers' sample is not at {SHARED_SAMPLE} (expected beside the repository, in ../shared)")
    summary = prepare_release(SHARED_SAMPLE, "dev", tmp_path / "ref")
    warned = sorted(w.split(": ", 1)[0] for w in summary["warnings"] if "judged relevant" in w)
    # 2b's corpus is as gold-only, but 2b ranks nothing: scoring says nothing there, nor does prepare.
    assert warned == ["1a", "1b", "2a", "2c"], summary["warnings"]
    text = format_summary(summary)
    for sub in warned:
        assert f"  warning: {sub}: over half of the corpus is judged relevant in " in text
