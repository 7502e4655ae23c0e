"""``reteco synth --scale``: a rehearsal release of the test set's real size (issue 37 item 5),
fast, with ids that never collide, and the default release unchanged."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from support.synthetic_ids import check_unique_ids

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import release_sizes, write_synthetic_release

DEFAULT_RELEASE_SHA256 = "e8c3ff53c1440fe9d05f37a937f45b8d547ec928d7307b1cb99a39cee60240d9"


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_scale_52_gives_2000_test_turns_in_under_a_minute_with_no_id_twice(tmp_path, capsys):
    started = time.perf_counter()
    assert main(["synth", "--out", str(tmp_path / "release"), "--scale", "52"]) == 0
    elapsed = time.perf_counter() - started
    assert elapsed < 60, f"synth --scale 52 took {elapsed:.1f} s"
    assert "  test: 936 Track 1 queries, 2,239 Track 2 turns" in capsys.readouterr().out.splitlines()
    assert check_unique_ids(tmp_path / "release") == []
    # The release prepares as a real one: every turn a 2a topic of its own.
    prepare_release(tmp_path / "release", "test", tmp_path / "ref", subtracks=("2a",))
    assert len(Reference.read(tmp_path / "ref" / "2a").topics) == 2239


def test_scale_1_is_the_default_release_byte_for_byte_and_scales_multiply(tmp_path):
    write_synthetic_release(tmp_path / "default")
    write_synthetic_release(tmp_path / "one", scale=1)
    assert _digest(tmp_path / "default") == _digest(tmp_path / "one")
    # The default release of commit 4eb9731, before --scale existed (that commit's
    # write_synthetic_release, digested the same way): --scale changed none of its bytes.
    assert _digest(tmp_path / "default") == DEFAULT_RELEASE_SHA256
    write_synthetic_release(tmp_path / "three", scale=3)
    one, three = release_sizes(tmp_path / "one"), release_sizes(tmp_path / "three")
    assert all(three[s][0] == 3 * one[s][0] for s in one)  # Track 1: 3 x the queries of every domain
    assert all(three[s][1] > 2 * one[s][1] for s in one)  # Track 2: 3 x the conversations, 2-6 turns each
    assert check_unique_ids(tmp_path / "three") == []


def test_a_collision_would_be_found(tmp_path):
    release = write_synthetic_release(tmp_path / "r")
    documents = release / "track2_recor" / "drones" / "documents.jsonl"
    first = documents.read_text().splitlines()[0]
    documents.write_text(documents.read_text() + first + "\n")
    assert check_unique_ids(release) == [f"{documents}: 1 repeated document ids"]


def test_the_scale_is_a_count(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path / "r"), "--scale", "0"]) == 2
    assert "--scale" in capsys.readouterr().err
