"""Damaged reference data (the organizers' side): a reference folder edited by one byte,
truncated, missing a file or holding garbage, and releases that `reteco prepare` cannot use.

Still exit 1, naming the damaged file; never a score computed from damaged labels, never an
internal error, and (the scoring log is shown to participants) never the labels themselves in
a message. A valid submission is scored against each damaged reference: by ``reteco score
--ref`` in process, and by the Codabench program where the row says so.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.hostile_harness import GOLD_MARK, Case, Expect, Workspace, good_run, good_scores, run_case


def damaged(sub: str, damage, codabench: bool = False):
    """``damage`` (a function of the reference folder) applied to a copy of ``sub``'s
    reference, then a valid submission (public ids only) scored against it."""

    def build(ws: Workspace):
        if codabench:
            ref, res = ws.codabench_input(sub)
        else:
            ref, res = ws.reference_copy(sub), ws.root / "res"
            res.mkdir()
        damage(ref)
        if sub in ("1a", "1b", "2a", "2c"):
            ws.file(str((res / "run.txt").relative_to(ws.root)), ws.sub(sub).valid_run())
        if sub in ("2b", "2c"):
            ws.file(str((res / "answers.jsonl").relative_to(ws.root)), ws.sub(sub).valid_answers())
        return ws.codabench() if codabench else ws.score(res, sub, ref=ref)

    return build


def one_byte_in_a_gold_id(name: str = "qrels.txt"):
    """Change one character of the first gold document id: the file still parses, the label
    silently points elsewhere."""

    def damage(ref: Path) -> None:
        data = bytearray((ref / name).read_bytes())
        at = data.index(GOLD_MARK.encode()) + len(GOLD_MARK) + 1
        data[at] = ord("0") if data[at] != ord("0") else ord("1")
        (ref / name).write_bytes(bytes(data))

    return damage


def relevance_flipped(ref: Path) -> None:
    text = (ref / "qrels.txt").read_text()
    assert text.endswith("\t1\n")
    (ref / "qrels.txt").write_text(text[:-2] + "0\n")


def first_line_deleted(name: str):
    def damage(ref: Path) -> None:
        lines = (ref / name).read_bytes().split(b"\n")
        at = 1 if name == "topics.tsv" else 0  # keep the header
        (ref / name).write_bytes(b"\n".join(lines[:at] + lines[at + 1 :]))

    return damage


def appended(name: str, data: bytes):
    def damage(ref: Path) -> None:
        with open(ref / name, "ab") as handle:
            handle.write(data)

    return damage


def truncated(name: str, keep: float = 0.5):
    def damage(ref: Path) -> None:
        data = (ref / name).read_bytes()
        cut = int(len(data) * keep)
        if name.endswith((".tsv", ".txt", ".jsonl")):
            cut = data.index(b"\t", cut) + 1 if b"\t" in data[cut:] else cut  # mid-line, after a tab
        (ref / name).write_bytes(data[:cut])

    return damage


def deleted(name: str):
    return lambda ref: (ref / name).unlink()


def missing(name: str) -> Expect:
    """A deleted file may be named as the location, or in the words after the folder's name."""
    return Expect.refused(pattern=rf"(?:[^\n]*/)?(?:ref|input/ref)(?:/{re.escape(name)})?", says=re.escape(name))


def replaced(name: str, data: bytes):
    return lambda ref: (ref / name).write_bytes(data)


def manifest_edited(change):
    def damage(ref: Path) -> None:
        manifest = json.loads((ref / "reference.json").read_text())
        change(manifest)
        (ref / "reference.json").write_text(json.dumps(manifest))

    return damage


def emptied(ref: Path) -> None:
    for path in ref.iterdir():
        path.unlink()


GARBAGE = bytes(range(256)) * 16
# "no reference.json here" may name the folder or the file.
REF_FOLDER = r"(?:[^\n]*/)?(?:ref|input/ref)(?:/reference\.json)?"


# --- `reteco prepare` on a damaged release (its log goes to the organizers) ------------------


def prepare(damage=None, split: str = "dev", release: str | None = None):
    def build(ws: Workspace):
        root = ws.root / "release"
        if release is None:
            shutil.copytree(ws.release, root)
            if damage:
                damage(root)
        source = root if release is None else ws.root / release
        return ws.reteco("prepare", "--release", source, "--split", split, "--out", ws.root / "prepared", in_process=True)

    return build


def release_line(rel: str, at: int, new: bytes | None = None, cut: bool = False):
    """Replace line ``at`` of the release file ``rel`` (or cut the file in the middle of it)."""

    def damage(root: Path) -> None:
        lines = (root / rel).read_bytes().split(b"\n")
        if cut:
            lines = lines[: at - 1] + [lines[at - 1][: len(lines[at - 1]) // 2]]
        else:
            lines[at - 1] = new
        (root / rel).write_bytes(b"\n".join(lines))

    return damage


def phase_garbage(ws: Workspace):
    ref, res = ws.codabench_input("1a")
    (ref / "phase.json").write_bytes(b"\xff{")
    ws.file(str((res / "run.txt").relative_to(ws.root)), good_run(ws))
    return ws.codabench()


def truncated_json(rel: str):
    def damage(root: Path) -> None:
        data = (root / rel).read_bytes()
        (root / rel).write_bytes(data[: len(data) // 2])

    return damage


CASES = [
    # --- qrels.txt ---------------------------------------------------------------------------------
    Case("qrels_one_byte_edited", damaged("1a", one_byte_in_a_gold_id()), Expect.refused("qrels.txt")),
    Case("qrels_one_byte_edited_codabench", damaged("2a", one_byte_in_a_gold_id(), codabench=True), Expect.refused("qrels.txt")),
    Case("qrels_relevance_flipped", damaged("2a", relevance_flipped), Expect.refused("qrels.txt")),
    Case("qrels_first_line_deleted", damaged("1b", first_line_deleted("qrels.txt")), Expect.refused("qrels.txt")),
    Case("qrels_garbage_line_appended", damaged("1a", appended("qrels.txt", b"x\t0\ty\tnot-a-number\n")), Expect.refused("qrels.txt")),
    Case("qrels_deleted", damaged("1a", deleted("qrels.txt")), missing("qrels.txt")),
    # --- topics.tsv ----------------------------------------------------------------------------------
    Case("topics_truncated_mid_line", damaged("1a", truncated("topics.tsv")), Expect.refused("topics.tsv")),
    Case("topics_truncated_codabench", damaged("2a", truncated("topics.tsv"), codabench=True), Expect.refused("topics.tsv")),
    Case("topics_first_topic_deleted", damaged("2a", first_line_deleted("topics.tsv")), Expect.refused("topics.tsv")),
    Case(
        "topics_not_utf8",
        damaged("1a", appended("topics.tsv", b"bitcoin/\xff\tbitcoin\t\xff\tbitcoin/\xff\t\t\n")),
        Expect.refused("topics.tsv"),
    ),
    Case("topics_deleted", damaged("1a", deleted("topics.tsv")), missing("topics.tsv")),
    # --- doc_ids.arrow, duplicate_map.arrow, temporal periods ---------------------------------------
    Case("doc_ids_deleted", damaged("1a", deleted("doc_ids.arrow")), missing("doc_ids.arrow")),
    Case("doc_ids_garbage", damaged("2a", replaced("doc_ids.arrow", GARBAGE)), Expect.refused("doc_ids.arrow")),
    Case("doc_ids_truncated_codabench", damaged("1a", truncated("doc_ids.arrow"), codabench=True), Expect.refused("doc_ids.arrow")),
    Case("duplicate_map_deleted", damaged("1a", deleted("duplicate_map.arrow")), missing("duplicate_map.arrow")),
    Case("duplicate_map_garbage", damaged("1a", replaced("duplicate_map.arrow", GARBAGE)), Expect.refused("duplicate_map.arrow")),
    Case(
        "temporal_periods_garbage",
        damaged("1a", replaced("temporal_periods.jsonl", b"{not json\n")),
        Expect.refused("temporal_periods.jsonl"),
    ),
    # --- reference.json --------------------------------------------------------------------------------
    Case("reference_json_not_json", damaged("1a", replaced("reference.json", b"{not json")), Expect.refused("reference.json")),
    Case(
        "reference_json_not_json_codabench",
        damaged("1a", replaced("reference.json", b"{not json"), codabench=True),
        Expect.refused("reference.json"),
    ),
    Case("reference_json_an_array", damaged("1a", replaced("reference.json", b"[]")), Expect.refused("reference.json")),
    Case("reference_json_not_utf8", damaged("1a", replaced("reference.json", b'{"format": "\xff"}')), Expect.refused("reference.json")),
    Case("reference_json_without_subtrack", damaged("1a", manifest_edited(lambda m: m.pop("subtrack"))), Expect.refused("reference.json")),
    Case(
        "reference_json_unknown_subtrack_codabench",
        damaged("1a", manifest_edited(lambda m: m.update(subtrack="9z")), codabench=True),
        Expect.refused("reference.json"),
    ),
    Case(
        "reference_json_hash_of_qrels_changed",
        damaged("1a", manifest_edited(lambda m: m["files"].update({"qrels.txt": "0" * 64}))),
        Expect.refused(pattern=r"(?:[^\n]*/)?(?:qrels\.txt|reference\.json)"),
    ),
    Case("reference_json_deleted", damaged("1a", deleted("reference.json")), Expect.refused(pattern=REF_FOLDER)),
    Case("reference_folder_emptied_codabench", damaged("1a", emptied, codabench=True), Expect.refused(pattern=REF_FOLDER)),
    # --- 2b/2c: turns and passages ---------------------------------------------------------------------
    Case("passages_garbage", damaged("2b", replaced("passages.sqlite", GARBAGE)), Expect.refused("passages.sqlite")),
    Case(
        "passages_garbage_codabench",
        damaged("2c", replaced("passages.sqlite", GARBAGE), codabench=True),
        Expect.refused("passages.sqlite"),
    ),
    Case("passages_deleted", damaged("2b", deleted("passages.sqlite")), missing("passages.sqlite")),
    Case("turns_truncated", damaged("2b", truncated("turns.jsonl")), Expect.refused("turns.jsonl")),
    Case("turns_deleted", damaged("2c", deleted("turns.jsonl")), missing("turns.jsonl")),
    # --- the phase record is documented as optional: unreadable, per-topic figures are withheld -------
    Case("phase_json_garbage_still_scores", phase_garbage, Expect.accepted(good_scores, says="unreadable")),
    # --- `reteco prepare` (organizers' log) -------------------------------------------------------------
    Case(
        "prepare_split_nosuch",
        prepare(split="nosuch"),
        Expect.refused(pattern=r"(?:[^\n]*/)?release(?:/[^\n:]*)?", says="nosuch"),
        participant_log=False,
    ),
    Case("prepare_release_missing", prepare(release="nosuch_release"), Expect.refused("nosuch_release"), participant_log=False),
    Case(
        "prepare_documents_line_not_json",
        prepare(release_line("track1_tempo/bitcoin/documents.jsonl", 3, b'{"id": "bitcoin/x.txt", "content": ')),
        Expect.refused("documents.jsonl", 3),
        participant_log=False,
    ),
    Case(
        "prepare_documents_not_utf8",
        prepare(release_line("track2_recor/drones/documents.jsonl", 2, b'{"doc_id": "d\xff", "content": "x"}')),
        Expect.refused("documents.jsonl", 2),
        participant_log=False,
    ),
    Case(
        "prepare_qrels_line_of_three_columns",
        prepare(release_line("track1_tempo/law/qrels_dev.txt", 2, b"q 0 d")),
        Expect.refused("qrels_dev.txt", 2),
        participant_log=False,
    ),
    Case(
        "prepare_examples_truncated",
        prepare(release_line("track1_tempo/history/examples_dev.jsonl", 2, cut=True)),
        Expect.refused("examples_dev.jsonl", 2),
        participant_log=False,
    ),
    Case(
        "prepare_benchmark_truncated",
        prepare(truncated_json("track2_recor/biology/benchmark_dev.json")),
        Expect.refused("benchmark_dev.json"),
        participant_log=False,
    ),
]



@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_reference_data(case: Case, workspace: Workspace):
    run_case(case, workspace)


def test_the_reference_holds_the_markers_the_leak_check_looks_for(prepared):
    # Every leak check of the suite greps for these markers: if the marked release did not
    # carry them into the prepared reference, every "no reference data" check would be vacuous.
    import sqlite3

    for sub in ("1a", "1b", "2a", "2b", "2c"):
        qrels = (prepared[sub].root / "qrels.txt").read_text()
        assert qrels and all(GOLD_MARK in line.split("\t")[2] for line in qrels.splitlines()), sub
    for sub in ("2b", "2c"):
        turns = [json.loads(l) for l in (prepared[sub].root / "turns.jsonl").read_text().splitlines()]
        assert turns and all(t["answer"].startswith("ANSWERSECRET ") for t in turns), sub
        with sqlite3.connect(prepared[sub].root / "passages.sqlite") as db:
            texts = [t for (t,) in db.execute("SELECT text FROM passages")]
        assert texts and all(t.startswith("PASSAGESECRET ") for t in texts), sub
