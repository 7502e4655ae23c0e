"""Opening submissions: containers, ignored entries, choosing files, and safety limits.

Every submission here is built for real in ``tmp_path`` (zips, gzip files, folders,
symbolic links), the way participants and Codabench's worker produce them.
"""

from __future__ import annotations

import gzip
import os
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from reteco.formats.submission import DEFAULT_MAX_BYTES, open_submission
from reteco.problems import InputError

RUN = b"q1 Q0 d1 1 12.5 team\nq1 Q0 d2 2 11.0 team\n"
ANSWERS = b'{"topic_id": "q1", "answer": "text"}\n'
MiB = 1024 * 1024


def make_zip(path: Path, entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """A zip holding ``entries`` (name -> content; a name ending in "/" is a directory entry).

    Names are written as given through ZipInfo, so unsafe names ("../x", "/abs") stay unsafe.
    """
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return path


def message(excinfo: pytest.ExceptionInfo[InputError]) -> str:
    return str(excinfo.value)


def gzip_bomb(decompressed: int) -> bytes:
    """Gzip data that decompresses to ``decompressed`` zero bytes while weighing ~1/1000 of it.

    Built as concatenated gzip members (a valid gzip file) so making a 1 GiB bomb costs one
    16 MiB compression, not 1 GiB of it.
    """
    piece = 16 * MiB
    assert decompressed % piece == 0
    return gzip.compress(bytes(piece), compresslevel=9) * (decompressed // piece)


# --- containers ----------------------------------------------------------------------------


def test_zip_with_top_folder_macosx_and_metadata(tmp_path):
    # What a macOS "Compress" of a folder looks like, plus a metadata file beside the folder.
    path = make_zip(
        tmp_path / "submission.zip",
        {
            "team/": b"",
            "team/run.txt": RUN,
            "__MACOSX/": b"",
            "__MACOSX/team/._run.txt": b"\x00\x05\x16\x07junk",
            "team/.DS_Store": b"junk",
            "metadata": b"description: x\n",
        },
    )
    sub = open_submission(path)
    assert sub.files == ["run.txt"]
    assert sub.find("run") == "run.txt"
    assert sub.read_bytes("run.txt") == RUN
    assert sub.display_name("run.txt") == "submission.zip:team/run.txt"
    assert sorted(sub.ignored) == [
        "submission.zip:__MACOSX/team/._run.txt",
        "submission.zip:metadata",
        "submission.zip:team/.DS_Store",
    ]


def test_codabench_folder_keeps_top_folder_and_adds_metadata(tmp_path):
    # The worker extracts the zip as is into res/, top folder included, and adds metadata.
    res = tmp_path / "res"
    (res / "team").mkdir(parents=True)
    (res / "team" / "run.txt").write_bytes(RUN)
    (res / "metadata").write_text("submitted-by: x\n")
    (res / "__MACOSX" / "team").mkdir(parents=True)
    (res / "__MACOSX" / "team" / "._run.txt").write_bytes(b"junk")
    (res / "team" / "Thumbs.db").write_bytes(b"junk")
    (res / ".hidden").mkdir()
    (res / ".hidden" / "x.txt").write_bytes(b"junk")
    sub = open_submission(res)
    assert sub.files == ["run.txt"]
    assert sub.read_bytes(sub.find("run")) == RUN
    assert sub.display_name("run.txt") == "team/run.txt"
    assert sorted(sub.ignored) == [".hidden/x.txt", "__MACOSX/team/._run.txt", "metadata", "team/Thumbs.db"]


def test_flat_zip(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN})
    sub = open_submission(path)
    assert sub.files == ["run.txt"]
    assert sub.ignored == []
    assert sub.display_name("run.txt") == "s.zip:run.txt"
    assert sub.read_bytes("run.txt") == RUN


def test_zip_recognised_by_magic_bytes_without_zip_name(tmp_path):
    path = make_zip(tmp_path / "upload", {"run.txt": RUN})
    assert open_submission(path).read_bytes("run.txt") == RUN


def test_nested_top_folders_are_all_stripped(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"home/me/out/run.txt": RUN, "home/me/out/answers.jsonl": ANSWERS})
    sub = open_submission(path)
    assert sub.files == ["answers.jsonl", "run.txt"]
    assert sub.display_name("run.txt") == "s.zip:home/me/out/run.txt"


def test_subfolders_below_differing_tops_are_kept(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"runs/run.txt": RUN, "docs/README.md": b"hi"})
    sub = open_submission(path)
    assert sub.files == ["docs/README.md", "runs/run.txt"]
    assert sub.find("run") == "runs/run.txt"


def test_folder_with_a_single_zip_inside(tmp_path):
    res = tmp_path / "res"
    res.mkdir()
    make_zip(res / "submission.zip", {"team/run.txt": RUN, "__MACOSX/team/._run.txt": b"junk"})
    (res / "metadata").write_text("x\n")
    sub = open_submission(res)
    assert sub.files == ["run.txt"]
    assert sub.read_bytes("run.txt") == RUN
    assert sub.display_name("run.txt") == "submission.zip:team/run.txt"
    assert sorted(sub.ignored) == ["metadata", "submission.zip:__MACOSX/team/._run.txt"]


def test_zip_holding_only_a_zip_is_refused(tmp_path):
    inner = make_zip(tmp_path / "inner.zip", {"run.txt": RUN}).read_bytes()
    path = make_zip(tmp_path / "outer.zip", {"inner.zip": inner})
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo) == (
        "outer.zip: error: the zip holds only another zip ('inner.zip'); zip the files themselves"
    )


def test_plain_file(tmp_path):
    path = tmp_path / "my_run.trec"
    path.write_bytes(RUN)
    sub = open_submission(path)
    assert sub.files == ["my_run.trec"]
    assert sub.find("run") == "my_run.trec"
    assert sub.read_bytes("my_run.trec") == RUN
    assert sub.display_name("my_run.trec") == "my_run.trec"


def test_gzipped_file(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(RUN))
    sub = open_submission(path)
    assert sub.files == ["run.txt.gz"]
    assert sub.find("run") == "run.txt.gz"
    assert sub.read_bytes("run.txt.gz") == RUN


def test_gzip_recognised_by_magic_bytes_without_gz_name(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(gzip.compress(RUN))
    assert open_submission(path).read_bytes("run.txt") == RUN


def test_gz_name_without_gzip_data_is_refused(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(RUN)
    sub = open_submission(path)
    with pytest.raises(InputError) as excinfo:
        sub.read_bytes("run.txt.gz")
    assert message(excinfo) == (
        "run.txt.gz: error: named .gz but not gzip data; compress it with gzip, or drop the .gz from its name"
    )


def test_gz_member_in_zip(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt.gz": gzip.compress(RUN), "answers.jsonl.gz": gzip.compress(ANSWERS)})
    sub = open_submission(path)
    assert sub.find("run") == "run.txt.gz"
    assert sub.find("answers") == "answers.jsonl.gz"
    assert sub.read_bytes("run.txt.gz") == RUN
    assert sub.read_bytes("answers.jsonl.gz") == ANSWERS


def test_gz_member_in_folder(tmp_path):
    (tmp_path / "run.txt.gz").write_bytes(gzip.compress(RUN))
    sub = open_submission(tmp_path)
    assert sub.read_bytes(sub.find("run")) == RUN


# --- choosing the run and answers files ----------------------------------------------------


def test_two_candidate_run_files_are_listed(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"bm25.txt": RUN, "dense.txt": RUN, "README.md": b"notes"})
    sub = open_submission(path)
    with pytest.raises(InputError) as excinfo:
        sub.find("run")
    assert message(excinfo) == (
        "s.zip: error: 2 files could be the run: 'bm25.txt', 'dense.txt'; "
        "name the run file run.txt (and remove the other run files)"
    )


@pytest.mark.parametrize("run_name", ["run.txt", "run", "run.trec", "run.tsv", "RUN.TXT", "run.txt.gz"])
def test_run_file_name_is_preferred_among_candidates(tmp_path, run_name):
    data = gzip.compress(RUN) if run_name.endswith(".gz") else RUN
    path = make_zip(tmp_path / "s.zip", {"team/" + run_name: data, "team/bm25.txt": b"other", "team/notes.pdf": b"%PDF"})
    sub = open_submission(path)
    assert sub.find("run") == run_name
    assert sub.read_bytes(run_name) == RUN


def test_two_preferred_run_names_are_still_ambiguous(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, "run.tsv": RUN})
    with pytest.raises(InputError) as excinfo:
        open_submission(path).find("run")
    assert "2 files could be the run: 'run.tsv', 'run.txt'" in message(excinfo)


def test_answers_and_run_together(tmp_path):
    # A 2c submission: retrieval run plus generated answers, with a README and a config.
    path = make_zip(
        tmp_path / "s.zip",
        {"sub/run.txt": RUN, "sub/answers.jsonl": ANSWERS, "sub/README": b"x", "sub/config.json": b"{}"},
    )
    sub = open_submission(path)
    assert sub.find("run") == "run.txt"
    assert sub.find("answers") == "answers.jsonl"
    assert sub.read_bytes("answers.jsonl") == ANSWERS
    assert sub.read_bytes("run.txt") == RUN


def test_no_answers_file(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, "answers.json": b"[]"})
    with pytest.raises(InputError) as excinfo:
        open_submission(path).find("answers")
    assert message(excinfo) == (
        "s.zip: error: no answers file found: the answers must be one .jsonl (or .jsonl.gz) file; "
        "files in the submission: 'answers.json', 'run.txt'"
    )


def test_several_answers_files(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, "a.jsonl": ANSWERS, "b.jsonl.gz": gzip.compress(ANSWERS)})
    with pytest.raises(InputError) as excinfo:
        open_submission(path).find("answers")
    assert message(excinfo) == "s.zip: error: 2 answers files (.jsonl): 'a.jsonl', 'b.jsonl.gz'; keep exactly one"


def test_no_run_file(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"answers.jsonl": ANSWERS, "README.md": b"x"})
    with pytest.raises(InputError) as excinfo:
        open_submission(path).find("run")
    assert message(excinfo) == (
        "s.zip: error: no run file found; files in the submission: 'README.md', 'answers.jsonl'; "
        "add the run file, named run.txt"
    )


def test_unknown_kind_is_a_programming_error(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN})
    with pytest.raises(ValueError):
        open_submission(path).find("qrels")


# --- empty and broken submissions ----------------------------------------------------------


def test_empty_zip(tmp_path):
    path = make_zip(tmp_path / "s.zip", {})
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo) == "s.zip: error: no file found in the submission; submit the run file, e.g. run.txt"


def test_folder_with_only_system_files_is_empty(tmp_path):
    (tmp_path / "metadata").write_text("x")
    (tmp_path / ".DS_Store").write_bytes(b"x")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError) as excinfo:
        open_submission(tmp_path)
    assert message(excinfo) == (
        "submission: error: no file found in the submission (ignored: '.DS_Store', 'metadata'); "
        "submit the run file, e.g. run.txt"
    )


def test_missing_path(tmp_path):
    with pytest.raises(InputError) as excinfo:
        open_submission(tmp_path / "nope.zip")
    assert message(excinfo).endswith("nope.zip: error: no such file or folder")


def test_corrupt_zip(tmp_path):
    path = tmp_path / "s.zip"
    path.write_bytes(b"this is not a zip at all")
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo) == "s.zip: error: not a valid zip file (File is not a zip file); create the zip again"


def test_truncated_zip(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN * 100})
    path.write_bytes(path.read_bytes()[:-30])  # cut into the central directory
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo).startswith("s.zip: error: not a valid zip file (")


def test_corrupt_member_data(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": os.urandom(4096)}, zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    offset = raw.index(b"run.txt") + len("run.txt") + 100  # inside the stored data
    raw[offset] ^= 0xFF
    path.write_bytes(bytes(raw))
    sub = open_submission(path)
    with pytest.raises(InputError) as excinfo:
        sub.read_bytes("run.txt")
    assert message(excinfo) == (
        "s.zip:run.txt: error: cannot be read from the zip (Bad CRC-32 for file 'run.txt'); "
        "the zip is damaged, create it again"
    )


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(RUN * 1000)[:-50])  # truncated
    sub = open_submission(path)
    with pytest.raises(InputError) as excinfo:
        sub.read_bytes("run.txt.gz")
    assert message(excinfo) == (
        "run.txt.gz: error: not valid gzip data (Compressed file ended before the end-of-stream marker "
        "was reached); compress it again with gzip, or submit it uncompressed"
    )


def test_encrypted_member(tmp_path):
    # zipfile cannot write encrypted zips: set the "encrypted" flag bit in both headers.
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN}, zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"PK\x03\x04") + 6] |= 0x1
    raw[raw.index(b"PK\x01\x02") + 8] |= 0x1
    path.write_bytes(bytes(raw))
    sub = open_submission(path)
    with pytest.raises(InputError) as excinfo:
        sub.read_bytes("run.txt")
    assert message(excinfo) == (
        "s.zip:run.txt: error: encrypted in the zip; zip the files again without a password"
    )


def test_duplicate_member_names(tmp_path):
    path = tmp_path / "s.zip"
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "w") as archive:
        archive.writestr("run.txt", RUN)
        archive.writestr("run.txt", b"other")
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo) == "s.zip: error: member 'run.txt' appears twice in the zip; zip it again"


# --- safety ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../x.txt", "team/../../x.txt", "/abs/run.txt", "C:/run.txt", "..\\x.txt", "C:\\x.txt", "\\abs.txt"])
def test_unsafe_member_paths_are_refused(tmp_path, bad):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, bad: b"x"})
    with pytest.raises(InputError) as excinfo:
        open_submission(path)
    assert message(excinfo) == (
        f"s.zip: error: member {bad!r} has an unsafe path (absolute, a drive letter, or '..'); "
        "zip the files with paths relative to the zip"
    )


def test_unsafe_path_is_refused_even_under_macosx(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, "__MACOSX/../../evil": b"x"})
    with pytest.raises(InputError, match="unsafe path"):
        open_submission(path)


def test_backslash_separators_from_old_windows_tools_are_accepted(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"team\\run.txt": RUN})
    sub = open_submission(path)
    assert sub.files == ["run.txt"]
    assert sub.read_bytes("run.txt") == RUN


def test_symlink_out_of_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    res = tmp_path / "res"
    res.mkdir()
    (res / "run.txt").write_bytes(RUN)
    (res / "extra.txt").symlink_to(secret)
    with pytest.raises(InputError) as excinfo:
        open_submission(res)
    assert message(excinfo) == (
        "extra.txt: error: a symbolic link pointing outside the submission folder; submit the file itself"
    )


def test_symlinked_folder_out_of_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("private")
    res = tmp_path / "res"
    res.mkdir()
    (res / "run.txt").write_bytes(RUN)
    (res / "more").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InputError, match="^more: error: a symbolic link pointing outside"):
        open_submission(res)


def test_symlink_inside_the_folder_is_followed_and_loops_end(tmp_path):
    res = tmp_path / "res"
    (res / "team").mkdir(parents=True)
    (res / "team" / "run.txt").write_bytes(RUN)
    (res / "team" / "again").symlink_to(res / "team", target_is_directory=True)  # a loop
    sub = open_submission(res)
    assert sub.files == ["run.txt"]
    assert sub.read_bytes("run.txt") == RUN


def test_default_limit_is_two_gib():
    assert DEFAULT_MAX_BYTES == 2 * 1024**3


def test_zip_bomb_is_refused_from_declared_sizes_before_decompressing(tmp_path):
    # 64 MiB of zeros deflate to ~64 KiB: the zip is small, the content is not.
    path = make_zip(tmp_path / "s.zip", {"run.txt": bytes(64 * MiB)})
    assert path.stat().st_size < MiB
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as excinfo:
            open_submission(path, max_bytes=MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB  # nothing was decompressed
    assert message(excinfo) == (
        "s.zip: error: the files in the submission declare 67108864 bytes (64 MiB) in total, over the "
        "limit of 1048576 bytes (1 MiB); to fit under it, submit only the files the task asks for "
        "(run file, and answers file where required) with no more results per topic than the task "
        "asks for; a gzipped file counts at its decompressed size"
    )


def _read_bomb(sub, name):
    """Read a bomb member, returning the error and the peak traced memory."""
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as excinfo:
            sub.read_bytes(name)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return excinfo, peak


def test_gzip_bomb_is_stopped_at_the_cap(tmp_path):
    # 1 GiB once decompressed, ~1 MiB on disk: its declared (on-disk) size passes the up-front
    # check, so only the cap enforced while reading can stop it.
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip_bomb(1024 * MiB))
    sub = open_submission(path, max_bytes=2 * MiB)
    excinfo, peak = _read_bomb(sub, "run.txt.gz")
    assert message(excinfo) == (
        "run.txt.gz: error: larger than the limit of 2097152 bytes (2 MiB) once decompressed; to fit "
        "under it, submit only the files the task asks for (run file, and answers file where required) "
        "with no more results per topic than the task asks for; a gzipped file counts at its "
        "decompressed size"
    )
    # Reading all of it would need 1 GiB; stopping at the cap needs a few MiB.
    assert peak < 16 * MiB


def test_gzip_bomb_inside_a_zip_is_stopped_at_the_cap(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"team/run.txt.gz": gzip_bomb(1024 * MiB)}, zipfile.ZIP_STORED)
    sub = open_submission(path, max_bytes=2 * MiB)
    excinfo, peak = _read_bomb(sub, "run.txt.gz")
    assert message(excinfo).startswith(
        "s.zip:team/run.txt.gz: error: larger than the limit of 2097152 bytes (2 MiB) once decompressed; to fit"
    )
    assert peak < 16 * MiB


def test_cap_is_on_the_total_over_members(tmp_path):
    # Each gzipped member is small on disk and 600 KiB decompressed; the cap is 1 MiB.
    chunk = b"q1 Q0 d1 1 1.0 t\n" * (600 * 1024 // 17)
    path = make_zip(tmp_path / "s.zip", {"run.txt.gz": gzip.compress(chunk), "answers.jsonl.gz": gzip.compress(chunk)})
    sub = open_submission(path, max_bytes=MiB)
    assert sub.read_bytes("run.txt.gz") == chunk
    assert sub.read_bytes("run.txt.gz") == chunk  # reading the same member again does not count twice
    with pytest.raises(InputError) as excinfo:
        sub.read_bytes("answers.jsonl.gz")
    assert message(excinfo).startswith(
        "s.zip:answers.jsonl.gz: error: with the files read before it ('s.zip:run.txt.gz'), the submission "
        "is over the limit of 1048576 bytes (1 MiB) once decompressed; to fit under it"
    )


def test_declared_sizes_in_a_folder_are_checked_up_front(tmp_path):
    (tmp_path / "run.txt").write_bytes(b"x" * 2000)
    with pytest.raises(InputError, match=r"^submission: error: the files in the submission declare 2000 bytes"):
        open_submission(tmp_path, max_bytes=1000)


def test_member_exactly_at_the_cap_is_read(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"x" * 5000))
    assert open_submission(path, max_bytes=5000).read_bytes("run.txt.gz") == b"x" * 5000
    with pytest.raises(InputError, match="larger than the limit of 4999 bytes"):
        open_submission(path, max_bytes=4999).read_bytes("run.txt.gz")


def test_reading_a_large_member_needs_about_its_size_in_memory(tmp_path):
    size = 64 * MiB
    path = make_zip(tmp_path / "s.zip", {"run.txt": bytes(size)})
    sub = open_submission(path)
    tracemalloc.start()
    try:
        data = sub.read_bytes("run.txt")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(data) == size
    assert peak < 2 * size


def test_the_cli_and_the_scoring_program_read_the_kits_all_tasks_zip_the_same_way(tmp_path):
    """One folder per sub-track (the starting kit's all-tasks zip): each sub-track's reading
    takes its own folder, with the other folders listed as ignored; a sub-track without a
    folder is refused naming the folders present."""
    import zipfile

    from reteco.formats.submission import open_submission

    path = tmp_path / "all.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("my_run/1a/run.txt", "q1 Q0 d1 1 1.0 t\n")
        archive.writestr("my_run/2c/run.txt", "c_turn_1 Q0 d2 1 1.0 t\n")
        archive.writestr("my_run/2c/answers.jsonl", '{"turn_id": "c_turn_1", "answer": "a"}\n')
    whole = open_submission(path)
    assert whole.files == ["1a/run.txt", "2c/answers.jsonl", "2c/run.txt"]  # a top folder is stripped, never a sub-track's
    one = open_submission(path, subtrack="2c")
    assert one.files == ["answers.jsonl", "run.txt"] and one.find("run") == "run.txt"
    assert one.display_name("run.txt") == "all.zip:my_run/2c/run.txt"
    assert one.ignored == ["all.zip:my_run/1a/run.txt (not in 2c/)"]
    assert open_submission(path, subtrack="1a").read_bytes("run.txt") == b"q1 Q0 d1 1 1.0 t\n"
    with pytest.raises(InputError, match=r"holds the sub-track folders 1a/, 2c/ but none named 2a/"):
        open_submission(path, subtrack="2a")
    only = tmp_path / "only.zip"
    with zipfile.ZipFile(only, "w") as archive:
        archive.writestr("2c/run.txt", "c_turn_1 Q0 d2 1 1.0 t\n")
    with pytest.raises(InputError, match="none named 1a/"):
        open_submission(only, subtrack="1a")  # one sub-track's folder is not taken for another's


# --- read_buffer: what the run reader is given ------------------------------------------------


def test_a_gzipped_run_is_given_to_the_reader_mapped_from_a_temporary_file_decompressed_once(tmp_path):
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(RUN * 1000))
    opened = open_submission(path)
    first = opened.read_buffer(opened.find("run"))
    assert isinstance(first, memoryview) and bytes(first) == RUN * 1000
    path.unlink()  # a second read (the reader naming a line) maps the same file again, no decompression
    assert bytes(opened.read_buffer(opened.find("run"))) == RUN * 1000


def test_a_zip_member_is_given_mapped_too(tmp_path):
    path = make_zip(tmp_path / "s.zip", {"run.txt": RUN, "answers.jsonl": ANSWERS})
    opened = open_submission(path)
    view = opened.read_buffer("run.txt")
    assert isinstance(view, memoryview) and bytes(view) == RUN
    assert opened.read_buffer("answers.jsonl") == ANSWERS
    assert bytes(opened.read_buffer("run.txt")) == RUN  # counted once under the cap


def test_standard_input_already_in_memory_is_given_as_is_not_spooled():
    """Standard input's plain bytes are held whole once read: the reader gets that very object,
    with no temporary copy written (a gzipped one is still decompressed into a spool)."""
    import subprocess
    import sys

    code = (
        "from pathlib import Path\n"
        "from reteco.formats.submission import open_submission\n"
        "s = open_submission(Path('-'))\n"
        "name = s.find('run')\n"
        "buffer = s.read_buffer(name)\n"
        "print(buffer is s._members[name].data, len(s._spooled), bytes(buffer) == s.read_bytes(name))\n"
    )
    for piped, expected in ((RUN, "True 0 True"), (gzip.compress(RUN), "False 1 True")):
        done = subprocess.run([sys.executable, "-c", code], input=piped, capture_output=True, check=False, timeout=120)
        assert done.stdout.decode().split("\n")[0] == expected, done.stdout + done.stderr


@pytest.mark.parametrize("where", ["no temporary file", "disk full"])
def test_without_room_for_a_temporary_file_the_bytes_are_read_into_memory(tmp_path, monkeypatch, where):
    import tempfile

    class FullDisk:
        def write(self, _):
            raise OSError(28, "No space left on device")

        def close(self):
            pass

    def temporary_file(**_):
        if where == "no temporary file":
            raise OSError(28, "No space left on device")
        return FullDisk()

    monkeypatch.setattr(tempfile, "TemporaryFile", temporary_file)
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(RUN))
    opened = open_submission(path)
    assert opened.read_buffer(opened.find("run")) == RUN  # not "not valid gzip data"


def test_read_buffer_refuses_what_read_bytes_refuses_in_the_same_words(tmp_path):
    bomb = tmp_path / "run.txt.gz"
    bomb.write_bytes(gzip_bomb(32 * MiB))
    with pytest.raises(InputError) as by_buffer:
        open_submission(bomb, max_bytes=16 * MiB).read_buffer("run.txt.gz")
    with pytest.raises(InputError) as by_bytes:
        open_submission(bomb, max_bytes=16 * MiB).read_bytes("run.txt.gz")
    assert message(by_buffer) == message(by_bytes) and "larger than the limit of 16777216 bytes (16 MiB)" in message(by_buffer)
    broken = tmp_path / "b.txt.gz"
    broken.write_bytes(gzip.compress(RUN)[:-6])
    with pytest.raises(InputError, match="not valid gzip data"):
        open_submission(broken).read_buffer("b.txt.gz")


def test_refusing_a_gzip_bomb_costs_one_chunk_not_the_decompressed_size(tmp_path):
    """In a child process (its own peak RSS): a 512 MiB bomb through read_buffer and the run
    reader stays far below 512 MiB, where decompressing into memory needs all of it."""
    import subprocess
    import sys

    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status to read the child's peak memory (VmHWM) from")
    bomb = tmp_path / "run.txt.gz"
    piece = gzip.compress(b"q Q0 d 1 1\n" * (16 * MiB // 11), compresslevel=1)
    bomb.write_bytes(piece * 32)  # concatenated gzip members: one file of 32 x 16 MiB
    code = (
        "import sys\n"
        "from reteco.formats.submission import open_submission\n"
        "from reteco.formats.trec_run import read_trec_run\n"
        "from reteco.problems import InputError\n"
        "s = open_submission(__import__('pathlib').Path(sys.argv[1]))\n"
        "try:\n"
        "    read_trec_run(s.read_buffer('run.txt.gz'), 'run.txt.gz')\n"
        "except InputError as e:\n"
        "    print(str(e).splitlines()[0])\n"
        # VmHWM, not ru_maxrss: ru_maxrss starts from the spawning parent's resident size.
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, check=False, timeout=300)
    first, peak_kib = done.stdout.splitlines()[0], int(done.stdout.splitlines()[-1])
    assert first.startswith("run.txt.gz:1: error: expected 6 columns"), done.stdout + done.stderr
    assert peak_kib < 256 * 1024, f"peak {peak_kib // 1024} MiB"  # 512 MiB + when decompressed into memory
