"""A Codabench bulk download that is damaged or hostile, read by ``reteco judge-submissions``:
each bad entry is named (and its submission reported, the others still judged), never an
internal error, never a silent drop; the zip itself unreadable is exit 1 naming it. Every zip
is built by hand here, the damage written into its bytes."""

from __future__ import annotations

import csv
import io
import struct
import warnings
import zipfile
from pathlib import Path

import pytest
from support.judged_program import judge_yaml
from support.paths import SAMPLES

from reteco.commands import main
from reteco.problems import InputError
from reteco.workbench.leaderboard import bulk_download as bd

ALICE = "15_alice_PhaseId4_2027-01-21_02-00_final.zip"
BOB = "12_bob_PhaseId4_2027-01-20_03-00_bob.zip"
CAROL = "17_carol_PhaseId4_2027-01-22_03-00_c.zip"


def _answers_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("answers.jsonl", (SAMPLES / "2b" / "answers.jsonl").read_text())
    return buffer.getvalue()


def _bulk(path: Path, files: list[tuple[str, bytes]], compression=zipfile.ZIP_STORED) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a repeated name: that is the point
        with zipfile.ZipFile(path, "w", compression) as z:
            for name, data in files:
                z.writestr(name, data)
    return path


def _central_headers(data: bytes) -> list[int]:
    """Offsets of the central directory's file headers."""
    offsets, at = [], data.find(b"PK\x01\x02")
    while at != -1:
        offsets.append(at)
        at = data.find(b"PK\x01\x02", at + 1)
    return offsets


def _set_flag(path: Path, name: str, bit: int) -> None:
    """Set general-purpose flag ``bit`` of entry ``name`` in the central directory and its local header."""
    data = bytearray(path.read_bytes())
    for at in _central_headers(bytes(data)):
        length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46 : at + 46 + length]) == name.encode():
            struct.pack_into("<H", data, at + 8, struct.unpack_from("<H", data, at + 8)[0] | bit)
            local = struct.unpack_from("<I", data, at + 42)[0]
            struct.pack_into("<H", data, local + 6, struct.unpack_from("<H", data, local + 6)[0] | bit)
    path.write_bytes(bytes(data))


def test_each_damaged_entry_is_named_and_only_its_submission_is_lost(tmp_path):
    answers = _answers_zip()
    long_name = "21_" + "d" * 280 + "_PhaseId4_2027-01-22_04-00_long.zip"
    assert len(long_name.encode()) > 300
    source = _bulk(tmp_path / bd.BULK_ZIP, [
        (ALICE, answers), (BOB, answers), (CAROL, answers), (long_name, answers),
        ("18_erin_PhaseId4_2027-01-22_05-00_e.zip", b"first"), ("18_erin_PhaseId4_2027-01-22_05-00_e.zip", b"second"),
        ("../19_frank_PhaseId4_2027-01-22_06-00_f.zip", answers), ("../x", b"x"),
    ])
    data = bytearray(source.read_bytes())
    # Flip one byte of bob's stored content: the CRC no longer matches.
    at = data.find(answers, data.find(BOB.encode()))
    data[at + len(answers) // 2] ^= 0xFF
    source.write_bytes(bytes(data))
    _set_flag(source, CAROL, 0x1)  # carol's entry claims to be encrypted

    bulk = bd.read_bulk_download(source, tmp_path / "work")
    by_name = {s.name: s for s in bulk.submissions}
    assert by_name[ALICE].problem is None and by_name[ALICE].path.read_bytes() == answers
    assert by_name[long_name].problem is None and by_name[long_name].path.read_bytes() == answers
    assert by_name[long_name].path.suffix == ".zip"  # the local name is short, the kind of file kept
    bob = by_name[BOB].problem
    assert f"{bd.BULK_ZIP}:{BOB}" in bob and "Bad CRC-32" in bob and not by_name[BOB].path.exists()
    assert f"{bd.BULK_ZIP}:{CAROL}" in by_name[CAROL].problem and "encrypted" in by_name[CAROL].problem
    refused = dict(bulk.refused)
    assert "appears 2 times" in refused["18_erin_PhaseId4_2027-01-22_05-00_e.zip"]
    assert "unsafe path" in refused["../x"] and "unsafe path" in refused["../19_frank_PhaseId4_2027-01-22_06-00_f.zip"]
    assert not any(s.owner in ("erin", "frank") for s in bulk.submissions)
    assert not (tmp_path / "x").exists() and not (tmp_path / "work" / "x").exists()


def test_a_file_over_the_cap_is_stopped_at_the_cap(tmp_path):
    bomb = b"\0" * (8 * 1024**2)  # deflates to a few KiB
    source = _bulk(tmp_path / bd.BULK_ZIP, [(ALICE, _answers_zip()), (BOB, bomb)], zipfile.ZIP_DEFLATED)
    assert source.stat().st_size < 200_000
    bulk = bd.read_bulk_download(source, tmp_path / "work", max_member_bytes=1024**2)
    bob = next(s for s in bulk.submissions if s.name == BOB)
    assert "larger than the limit of 1048576 bytes (1 MiB) per file" in bob.problem and BOB in bob.problem
    assert not bob.path.exists()
    assert next(s for s in bulk.submissions if s.name == ALICE).problem is None
    # Declared sizes over the total cap: the download is refused before anything is read.
    with pytest.raises(InputError, match=r"declare .* over the limit of 4194304 bytes \(4 MiB\); download fewer"):
        bd.read_bulk_download(source, tmp_path / "work2", max_bulk_bytes=4 * 1024**2)
    assert not any((tmp_path / "work2").glob("bulk/*"))


def test_a_name_flagged_utf8_that_is_not_refuses_the_download_naming_it(tmp_path, capsys):
    source = _bulk(tmp_path / bd.BULK_ZIP, [(ALICE, b"x"), ("16_bob_PhaseId4_2027-01-20_03-00_X.zip", b"x")])
    data = source.read_bytes().replace(b"_X.zip", b"_\xff.zip")  # a byte that starts no UTF-8 character
    raw = bytearray(data)
    for at in _central_headers(data):
        if b"\xff" in raw[at + 46 : at + 46 + struct.unpack_from("<H", raw, at + 28)[0]]:
            struct.pack_into("<H", raw, at + 8, struct.unpack_from("<H", raw, at + 8)[0] | 0x800)
    source.write_bytes(bytes(raw))
    with pytest.raises(InputError) as caught:
        bd.read_bulk_download(source, tmp_path / "work")
    message = str(caught.value)
    assert message.startswith(f"{bd.BULK_ZIP}: error: member '16_bob_PhaseId4_2027-01-20_03-00_\\xff.zip'")
    assert "marked as UTF-8 that is not valid UTF-8" in message


def test_the_command_judges_the_others_and_names_the_damaged_one(ref_root, tmp_path, server, capsys):
    answers = _answers_zip()
    source = _bulk(tmp_path / bd.BULK_ZIP, [(ALICE, answers), (BOB, answers), ("../x", b"x")])
    data = bytearray(source.read_bytes())
    at = data.find(answers, data.find(BOB.encode()))
    data[at + 100] ^= 0xFF
    source.write_bytes(bytes(data))
    out = tmp_path / "out"
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(source), "--out", str(out),
                   "--judge-config", str(judge_yaml(tmp_path, server.base_url)), "--judge-cache", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"2b: {BOB}: not scored: {bd.BULK_ZIP}:{BOB}: error: cannot be read from the zip (Bad CRC-32" in err
    assert "2b: refused '../x': an unsafe path" in err
    table = list(csv.DictReader(io.StringIO((out / "judged_submissions_2b.csv").read_text())))
    assert [(r["rank"], r["team"]) for r in table] == [("1", "alice"), ("", "bob")]
    assert "Bad CRC-32" in table[1]["notes"]
    assert "Refused (never read from the download):" in (out / "judged_submissions_2b.md").read_text()


def test_the_command_refuses_an_unreadable_download_with_exit_1(ref_root, tmp_path, server, capsys):
    whole = _bulk(tmp_path / "whole.zip", [(ALICE, _answers_zip())]).read_bytes()
    source = tmp_path / bd.BULK_ZIP
    source.write_bytes(whole[: len(whole) // 2])  # cut short: no central directory
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(source), "--out",
                   str(tmp_path / "out"), "--judge-config", str(judge_yaml(tmp_path, server.base_url))])
    err = capsys.readouterr().err
    assert status == 1 and f"{bd.BULK_ZIP}: error: not a zip" in err and "Traceback" not in err
