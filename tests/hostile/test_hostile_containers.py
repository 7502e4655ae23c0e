"""Hostile containers: zips that escape, lie or explode, gzip that is not, special files where a
submission should be, links out of the folder, and the Codabench worker's own layout.

Each is refused at once (exit 1, the file named) or, where the container is fine, scored
exactly. The size cap itself (2 GiB) is shown once at full scale by a gzip bomb in a child
process; its logic is shown in process with a small ``max_bytes`` (``CAP_CASES``).
"""

from __future__ import annotations

import gzip
import os
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from support.hostile_harness import Case, Expect, GiB, MiB, Workspace, good_run, good_scores, run_case

from reteco.formats.submission import open_submission
from reteco.problems import InputError

ZIP = "sub.zip"
# A message about a zip may name the zip or one of its members (``sub.zip:run.txt``).
IN_ZIP = r"(?:[^\n]*/)?sub\.zip(?::[^\n:]+)?"


def patch_zip(path: Path, *, size: int | None = None, flags: int | None = None, method: int | None = None) -> Path:
    """Rewrite the only member's headers (local and central) in place: the declared
    uncompressed size, the general-purpose flags (bit 0: encrypted), the compression method."""
    with zipfile.ZipFile(path) as archive:
        (info,) = archive.infolist()
        central = archive.start_dir
    data = bytearray(path.read_bytes())
    local = info.header_offset
    assert data[local : local + 4] == b"PK\x03\x04" and data[central : central + 4] == b"PK\x01\x02"
    for offset, size_at, flags_at, method_at in ((local, 22, 6, 8), (central, 24, 8, 10)):
        if size is not None:
            struct.pack_into("<I", data, offset + size_at, size)
        if flags is not None:
            struct.pack_into("<H", data, offset + flags_at, flags)
        if method is not None:
            struct.pack_into("<H", data, offset + method_at, method)
    path.write_bytes(bytes(data))
    return path


def zipped(members, name: str = ZIP, **patch):
    """A zip of ``members`` (a function of the workspace giving (name, bytes) pairs), scored for 1a."""

    def build(ws: Workspace):
        path = ws.zip_file(name, members(ws))
        if patch:
            patch_zip(path, **patch)
        return ws.score(path, in_process=not patch.get("size"))

    return build


def valid(ws: Workspace) -> bytes:
    return ws.sub("1a").valid_run().encode()


def gzip_bomb(decompressed: int) -> bytes:
    """Gzip data that decompresses to ``decompressed`` zero bytes at ~1/1000 of the size:
    concatenated gzip members (a valid gzip file), so building it costs one 1 MiB compression."""
    assert decompressed % MiB == 0
    return gzip.compress(bytes(MiB), compresslevel=9, mtime=0) * (decompressed // MiB)


def gzip_bomb_over_the_cap(ws: Workspace):
    path = ws.root / "run.txt.gz"
    path.write_bytes(gzip_bomb(2 * GiB + MiB))
    return ws.score(path, in_process=False)


def special_file(kind: str):
    def build(ws: Workspace):
        if kind == "fifo":
            path = ws.root / "run.fifo"
            os.mkfifo(path)
        else:
            path = Path("/dev/zero")
        return ws.score(path, in_process=False)

    return build


def folder(files, links: dict[str, str] | None = None, fifo: str | None = None, in_process: bool = True):
    """A folder submission: ``files`` (a function of the workspace), symbolic links
    (name -> target, relative to the workspace) and a FIFO named ``fifo``."""

    def build(ws: Workspace):
        root = ws.folder("sub", files(ws))
        for name, target in (links or {}).items():
            (root / name).symlink_to(ws.root / target if not target.startswith("/") else target)
        if fifo:
            os.mkfifo(root / fifo)
        return ws.score(root, in_process=in_process)

    return build


def outside(ws: Workspace) -> dict[str, bytes]:
    ws.file("outside.txt", good_run(ws))
    return {"README.md": b"our run"}


def codabench(files, links: dict[str, str] | None = None, fifo: str | None = None, zips: dict | None = None):
    """The scoring program as the worker runs it: INPUT/ref, INPUT/res holding ``files``."""

    def build(ws: Workspace):
        _, res = ws.codabench_input("1a")
        for rel, data in files(ws).items():
            ws.file(str((res / rel).relative_to(ws.root)), data)
        for name, members in (zips or {}).items():
            ws.zip_file(str((res / name).relative_to(ws.root)), members(ws))
        for name, target in (links or {}).items():
            (res / name).symlink_to(target)
        if fifo:
            os.mkfifo(res / fifo)
        return ws.codabench()

    return build


def no_res_folder(ws: Workspace):
    ref, res = ws.codabench_input("1a")
    res.rmdir()
    return ws.codabench()


CASES = [
    # --- zip member paths ----------------------------------------------------------------------
    Case("zip_member_dotdot", zipped(lambda ws: [("../run.txt", valid(ws))]), Expect.refused(ZIP, None, "unsafe path")),
    Case("zip_member_absolute", zipped(lambda ws: [("/tmp/run.txt", valid(ws))]), Expect.refused(ZIP, None, "unsafe path")),
    Case(
        "zip_member_backslash_dotdot",
        zipped(lambda ws: [("team\\..\\..\\run.txt", valid(ws))]),
        Expect.refused(ZIP, None, "unsafe path"),
    ),
    Case("zip_member_drive_letter", zipped(lambda ws: [("C:/run.txt", valid(ws))]), Expect.refused(ZIP, None, "unsafe path")),
    Case(
        "zip_member_dotdot_beside_a_good_run",
        zipped(lambda ws: [("run.txt", good_run(ws)), ("__MACOSX/../../evil", b"x")]),
        Expect.refused(ZIP, None, "unsafe path"),
    ),
    Case(
        "zip_member_name_with_terminal_escapes",
        zipped(lambda ws: [("\x1b[2J\x1b[31mrun.txt", b"bad line\n")]),
        Expect.refused(pattern=r"sub\.zip:\S*run\.txt", line=1),
    ),
    Case(
        "zip_member_name_of_10000_characters",
        zipped(lambda ws: [("r" * 10_000 + ".txt", b"bad line\n")]),
        Expect.refused(pattern=r"sub\.zip:r+[^\n]*?", line=1),
    ),
    Case("zip_member_twice", zipped(lambda ws: [("run.txt", valid(ws)), ("run.txt", valid(ws))]), Expect.refused(ZIP, None, "twice")),
    # --- zips that lie or explode ----------------------------------------------------------------
    Case(
        "zip_bomb_declaring_3_gib",
        zipped(lambda ws: [("run.txt", bytes(4 * MiB))], size=3 * GiB),
        Expect.refused(pattern=IN_ZIP, says="limit"),
        seconds=10,
    ),
    Case(
        "zip_member_declaring_less_than_it_holds",
        zipped(lambda ws: [("run.txt", valid(ws) * 1000)], size=100),
        Expect.refused(pattern=IN_ZIP),
    ),
    Case(
        "zip_member_encrypted",
        zipped(lambda ws: [("run.txt", valid(ws))], flags=0x1),
        Expect.refused(f"{ZIP}:run.txt", None, "encrypted"),
    ),
    Case(
        "zip_member_unknown_compression_method",
        zipped(lambda ws: [("run.txt", valid(ws))], method=98),
        Expect.refused(pattern=IN_ZIP, says="compress"),
    ),
    Case("zip_with_10001_entries", zipped(lambda ws: [(f"f{i}.txt", b"") for i in range(10_001)]), Expect.refused(ZIP, None, "entries")),
    Case(
        "zip_that_is_not_a_zip",
        lambda ws: ws.score(ws.file(ZIP, b"PK\x03\x04 this is not really a zip" * 10)),
        Expect.refused(ZIP, None, "not a valid zip"),
    ),
    Case(
        "zip_truncated_and_named_run_txt",
        lambda ws: ws.score(ws.file("run.txt", ws.zip_file("whole.zip", [("run.txt", valid(ws))]).read_bytes()[:60])),
        Expect.refused("run.txt"),
    ),
    # --- what a zip holds ------------------------------------------------------------------------------
    Case("zip_empty", zipped(lambda ws: []), Expect.refused(ZIP, None, "no file")),
    Case(
        "zip_holding_only_a_zip",
        lambda ws: ws.score(ws.zip_file(ZIP, [("inner.zip", ws.zip_file("inner.zip", [("run.txt", valid(ws))]).read_bytes())])),
        Expect.refused(ZIP, None, "another zip"),
    ),
    Case(
        "zip_several_candidate_runs",
        zipped(lambda ws: [("bm25.txt", valid(ws)), ("dense.txt", valid(ws))]),
        Expect.refused(ZIP, None, "could be the run"),
    ),
    Case(
        "zip_no_run_file",
        zipped(lambda ws: [("README.md", b"# our system\n"), ("answers.jsonl", b"{}\n")]),
        Expect.refused(ZIP, None, "no run file"),
    ),
    Case(
        "zip_only_system_files",
        zipped(lambda ws: [("__MACOSX/._run.txt", b"\x00\x05"), (".DS_Store", b"\x00"), ("metadata", b"x: y\n")]),
        Expect.refused(ZIP, None, "no file"),
    ),
    # --- gzip ----------------------------------------------------------------------------------------------
    Case("gzip_named_without_gz", lambda ws: ws.score(ws.gzip_file("run.txt", good_run(ws))), Expect.accepted(good_scores)),
    Case("gzip_inside_a_zip", zipped(lambda ws: [("team/run.txt.gz", gzip.compress(good_run(ws), mtime=0))]), Expect.accepted(good_scores)),
    Case("gz_name_but_not_gzip", lambda ws: ws.score(ws.file("run.txt.gz", good_run(ws))), Expect.refused("run.txt.gz", None, "gzip")),
    Case(
        "gzip_truncated",
        lambda ws: ws.score(ws.file("run.txt.gz", gzip.compress(valid(ws) * 50, mtime=0)[:-200])),
        Expect.refused("run.txt.gz", None, "gzip"),
    ),
    Case(
        "gzip_with_trailing_garbage",
        lambda ws: ws.score(ws.file("run.txt.gz", gzip.compress(valid(ws), mtime=0) + b"garbage after the stream")),
        Expect.refused("run.txt.gz", None, "gzip"),
    ),
    Case(
        "gzip_bomb_over_the_2_gib_cap",
        gzip_bomb_over_the_cap,
        Expect.refused("run.txt.gz", None, "limit"),
        seconds=60,
        rss=2 * GiB + 256 * MiB,
    ),
    # --- special files: refused at once, never read forever ---------------------------------------------
    Case("fifo_as_res", special_file("fifo"), Expect.refused("run.fifo"), seconds=6),
    Case("dev_zero_as_res", special_file("zero"), Expect.refused("zero"), seconds=6),
    Case(
        "fifo_in_a_folder",
        folder(lambda ws: {"README.md": b"x"}, fifo="run.txt", in_process=False),
        Expect.refused("run.txt"),
        seconds=10,
    ),
    Case("res_does_not_exist", lambda ws: ws.score(ws.root / "nosuch.zip"), Expect.refused("nosuch.zip")),
    # --- folders ------------------------------------------------------------------------------------------
    Case("folder_empty", folder(lambda ws: {}), Expect.refused("submission", None, "no file")),
    Case("folder_only_metadata", folder(lambda ws: {"metadata": b"submitted-by: x\n"}), Expect.refused("submission", None, "no file")),
    Case(
        "folder_only_hidden_files",
        folder(lambda ws: {".run.txt": valid(ws), ".git/config": b"[core]\n"}),
        Expect.refused("submission", None, "no file"),
    ),
    Case("folder_symlink_out_of_it", folder(outside, links={"run.txt": "outside.txt"}), Expect.refused("run.txt", None, "outside")),
    Case(
        "folder_symlink_to_etc_passwd",
        folder(lambda ws: {}, links={"run.txt": "/etc/passwd"}),
        Expect.refused("run.txt", None, "outside"),
    ),
    Case("folder_broken_symlink", folder(lambda ws: {}, links={"run.txt": "gone.txt"}), Expect.refused("run.txt")),
    Case(
        "folder_symlink_loop_beside_a_good_run",
        folder(lambda ws: {"run.txt": good_run(ws)}, links={"loop": "sub"}),
        Expect.accepted(good_scores),
    ),
    # --- the Codabench worker's layout (score.py INPUT OUTPUT, child process) -------------------------
    Case(
        "codabench_metadata_macosx_and_top_folder",
        codabench(lambda ws: {"metadata": b"by: x\n", "team/run.txt": good_run(ws), "team/__MACOSX/._run.txt": b"\x00\x05\x16\x07"}),
        Expect.accepted(good_scores),
    ),
    Case(
        "codabench_only_metadata",
        codabench(lambda ws: {"metadata": b"submitted-by: x\n"}),
        Expect.refused("submission", None, "no file"),
    ),
    Case(
        "codabench_zip_with_dotdot_member",
        codabench(lambda ws: {}, zips={ZIP: lambda ws: [("../../ref/qrels.txt", valid(ws))]}),
        Expect.refused(ZIP, None, "unsafe path"),
    ),
    Case(
        "codabench_other_subtracks_folders_only",
        codabench(lambda ws: {"1b/run.txt": valid(ws), "2a/run.txt": valid(ws)}),
        Expect.refused("submission", None, "1a/"),
    ),
    Case(
        "codabench_symlink_to_the_reference",
        codabench(lambda ws: {}, links={"run.txt": "../ref/qrels.txt"}),
        Expect.refused("run.txt", None, "outside"),
    ),
    Case("codabench_fifo_in_res", codabench(lambda ws: {"README.md": b"x"}, fifo="run.txt"), Expect.refused("run.txt"), seconds=10),
    Case("codabench_no_res_folder", no_res_folder, Expect.refused("res")),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_container(case: Case, workspace: Workspace):
    run_case(case, workspace)


# ---------------------------------------------------------------------------------------------
# The cap's logic, in process with a small cap: the read stops at the cap (time and Python
# allocations bounded by it, not by the bomb) and the message names the file.

CAP = 1 * MiB


def cap_gzip(ws: Workspace) -> Path:
    path = ws.root / "run.txt.gz"
    path.write_bytes(gzip_bomb(1024 * MiB))  # 1 GiB of zeros, 1,024 times the cap
    return path


def cap_gzip_in_zip(ws: Workspace) -> Path:
    return ws.zip_file(ZIP, [("run.txt.gz", gzip_bomb(512 * MiB))], compression=zipfile.ZIP_STORED)


def cap_stored_zip_member(ws: Workspace) -> Path:
    return ws.zip_file(ZIP, [("run.txt", b"x" * (CAP + 1))], compression=zipfile.ZIP_STORED)


def cap_plain_file(ws: Workspace) -> Path:
    return ws.file("run.txt", b"x" * (CAP + 1))


def cap_two_files_together(ws: Workspace) -> Path:
    """2c: run and answers each under the cap once decompressed, together over it (gzipped, so
    that their sizes on disk declare nothing)."""
    half = CAP // 2 + 1024
    run = ws.sub("2c").valid_run().encode()
    answers = ws.sub("2c").valid_answers().encode()
    files = {"run.txt.gz": run + b" " * (half - len(run)), "answers.jsonl.gz": answers + b"\n" * (half - len(answers))}
    return ws.folder("sub", {name: gzip.compress(data, mtime=0) for name, data in files.items()})


CAP_CASES = [
    pytest.param(cap_gzip, "run.txt.gz", id="gzip_bomb_1024x_the_cap"),
    pytest.param(cap_gzip_in_zip, f"{ZIP}:run.txt.gz", id="gzip_bomb_inside_a_zip"),
    pytest.param(cap_stored_zip_member, ZIP, id="zip_member_one_byte_over"),
    pytest.param(cap_plain_file, "run.txt", id="plain_file_one_byte_over"),
    pytest.param(cap_two_files_together, "answers.jsonl.gz", id="run_and_answers_together_over"),
]


def read_everything(path: Path) -> None:
    """Open a submission with the small cap and read its run (and answers, if any), as scoring
    does: the run first."""
    submission = open_submission(path, max_bytes=CAP)
    for kind in ("run", "answers") if len(submission.files) > 1 else ("run",):
        submission.read_bytes(submission.find(kind))


@pytest.mark.parametrize("build, named", CAP_CASES)
def test_cap_stops_the_read_and_names_the_file(build, named, workspace):
    path = build(workspace)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(InputError) as refused:
            read_everything(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    seconds = time.monotonic() - started
    lines = refused.value.problems.lines()
    assert any(l.startswith(f"{named}: error: ") for l in lines), lines
    assert any("limit" in l for l in lines), lines
    # A read that went on past the cap would take seconds and hold the bomb: a 1 GiB bomb
    # stopped at 1 MiB costs milliseconds and a few MiB.
    assert seconds < 5, f"{seconds:.1f} s to refuse a submission over a {CAP:,}-byte cap"
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB allocated to refuse a submission over a {CAP:,}-byte cap"
