"""check-bundle's knowledge of Codabench's real rules, on the bundles conftest.py builds.

- Submission rule and entries: a phase of several tasks under Force_Last or Force_Best loses
  teams' entries (strategies.py); the single layout is refused for it, the default layout passes.
- Time limit: the worker gets min(600, phase limit) on the default queue (tasks.py).
- Logo: Codabench's logo field accepts PNG, JPEG, GIF and WebP by their bytes (api/fields.py,
  drf-extra-fields, filetype); fact-sheet flags are compared as strings (test_bundle.py).
- Storage: what one upload stores, counted here from the bundle's zip entries independently.
"""

from __future__ import annotations

import argparse
import re
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
import yaml
from support.bundle_edits import rewrite
from support.paths import REPO_ROOT

from reteco.workbench.codabench.bundle import builder
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.check import scoring_check
from reteco.workbench.codabench.check import worker_simulation as worker
from reteco.workbench.codabench.check.check_bundle import check_bundle
from reteco.workbench.codabench.check.competition_rules import effective_time_limit
from reteco.workbench.codabench.check.logo_image import logo_type
from reteco.workbench.commands import bundle as bundle_command
from reteco.workbench.commands import check_bundle as check_bundle_command


def _rule(errors: list[str], rule: str, text: str = "") -> bool:
    return any(e.startswith(f"[{rule}]") and text in e for e in errors)


def _static(path: Path, **kwargs) -> list[str]:
    return check_bundle(path, simulate=False, **kwargs).errors


# ---------------------------------------------------------------------------------------------
# The layout: the default keeps every team's last submission per sub-track


def test_the_default_layout_is_per_subtrack_in_the_makefile_the_command_and_the_builder():
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    (layout,) = re.findall(r"^LAYOUT \?= (\S+)$", makefile, flags=re.M)
    parser = argparse.ArgumentParser()
    bundle_command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["bundle"])
    assert layout == args.layout == builder.BuildOptions().layout == definition.DEFAULT_LAYOUT == "per-subtrack"


def test_every_phase_of_a_per_subtrack_competition_has_one_task():
    for sub in definition.SUBTRACK_IDS:
        content = definition.competition("per-subtrack", sub)
        assert [len(p["tasks"]) for p in content["phases"]] == [1, 1, 1]
        assert content["leaderboards"][0]["submission_rule"] == "Force_Last"


def test_five_tasks_per_phase_under_force_last_lose_entries(single_slim):
    errors = _static(single_slim)
    entries = [e for e in errors if e.startswith("[entries]")]
    assert len(entries) == 3, errors  # Development, Evaluation, Post-evaluation
    for name, error in zip(("Development", "Evaluation", "Post-evaluation"), entries):
        assert f"phase '{name}' loses teams' entries: 5 tasks under Force_Last" in error
        assert "LastestModeStrategy.do_execute" in error and "--layout per-subtrack" in error
    # Its other fault: 2b's rows never have the ranking column, nDCG@10 ([ranking]).
    ranking = [e for e in errors if e.startswith("[ranking]")]
    assert len(ranking) == 3 and all("(sub-track 2b) never writes the ranking column 'ndcg_10'" in e for e in ranking)
    assert sorted(errors) == sorted(entries + ranking)


def test_force_best_loses_entries_too_and_is_not_the_last_submission(single_slim, tmp_path):
    path = rewrite(single_slim, tmp_path / "best.zip",
                   content=lambda c: c["leaderboards"][0].update(submission_rule="Force_Best"))
    errors = _static(path)
    assert _rule(errors, "entries", "5 tasks under Force_Best") and _rule(errors, "entries", "BestModeStrategy")
    assert _rule(errors, "leaderboard", "best-scoring submission stays")


def test_force_latest_multiple_keeps_every_entry_but_not_one_per_team(single_slim, tmp_path):
    path = rewrite(single_slim, tmp_path / "multiple.zip",
                   content=lambda c: c["leaderboards"][0].update(submission_rule="Force_Latest_Multiple"))
    errors = _static(path)
    assert not _rule(errors, "entries")
    assert _rule(errors, "leaderboard", "its own row")


def test_one_task_per_phase_under_force_last_loses_nothing(slim):
    assert not _rule(_static(slim), "entries")


# ---------------------------------------------------------------------------------------------
# Ranking: Codabench lists an empty ranked score first (PostgreSQL, descending, NULLs first)


def test_a_ranking_column_a_submission_can_leave_empty_is_refused(slim, tmp_path):
    """1a ranked by Temporal Coverage@10, which a run lacks when no query has a required period."""

    def rank_by_tc_10(content):
        board = content["leaderboards"][0]
        board["primary_index"] = next(c["index"] for c in board["columns"] if c["key"] == "tc_10")

    errors = _static(rewrite(slim, tmp_path / "tc.zip", content=rank_by_tc_10))
    ranking = [e for e in errors if e.startswith("[ranking]")]
    assert len(ranking) == 3, errors  # one per phase's task
    assert "can leave the ranking column 'tc_10' empty (no query of the reference has a required time period)" in ranking[0]


def test_the_default_ranking_columns_are_always_written(slim):
    assert not _rule(_static(slim), "ranking")


# ---------------------------------------------------------------------------------------------
# Exposure: what participants can reach of the reference data (PR #2348)


def test_a_hidden_reference_file_copied_into_the_starting_kit_is_refused(slim, tmp_path):
    import io

    with zipfile.ZipFile(slim) as archive:
        hidden = zipfile.ZipFile(io.BytesIO(archive.read(definition.reference_path(definition.PHASES[1], "1a"))))
        member = max((i for i in hidden.infolist() if not i.is_dir()), key=lambda i: ("qrels" in i.filename, i.file_size))
        kit = zipfile.ZipFile(io.BytesIO(archive.read(definition.STARTING_KIT)))
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as out:
            for info in kit.infolist():
                out.writestr(info, kit.read(info))
            out.writestr("extra/labels.txt", hidden.read(member))
    report = check_bundle(rewrite(slim, tmp_path / "leaky.zip", members={definition.STARTING_KIT: buffer.getvalue()}),
                          simulate=False)
    exposure = [e for e in report.errors if e.startswith("[exposure]")]
    assert exposure == [f"[exposure] {definition.STARTING_KIT}:extra/labels.txt, which participants can download, is a "
                        f"copy of evaluation_1a.zip:{member.filename} of task '1a Temporal retrieval: Evaluation''s reference data"]


def test_every_default_bundle_exposes_no_hidden_file_and_names_what_pr_2348_exposes(built_all):
    bundles, _ = built_all
    for subs, bundle in bundles.items():
        report = check_bundle(bundle.path, simulate=False)
        assert not _rule(report.errors, "exposure"), (subs, report.errors)
        (note,) = [n for n in report.notes if "PR #2348" in n]
        assert "Evaluation' (hidden labels (split test))" in note and "Post-evaluation' (hidden labels" in note


# ---------------------------------------------------------------------------------------------
# Time limit: min(MAX_EXECUTION_TIME_LIMIT = 600, phase limit) on the default queue


def test_effective_time_limit():
    assert effective_time_limit({}) == 600  # the phase model's default
    assert effective_time_limit({"execution_time_limit": 0}) == 600  # 0 is not kept by the unpacker
    assert effective_time_limit({"execution_time_limit": 300}) == 300
    assert effective_time_limit({"execution_time_limit": 1200}) == 600
    assert effective_time_limit({"execution_time_limit": 1200}, 1200) == 1200
    assert effective_time_limit({"execution_time_limit": 1200}, 3600) == 1200


def _check_command(path: Path, *extra: str) -> int:
    parser = argparse.ArgumentParser()
    check_bundle_command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["check-bundle", str(path), "--no-simulate", *extra])
    return args.func(args)


def test_a_1200_s_phase_fails_under_600_and_passes_with_time_limit_1200(slim, tmp_path, capsys):
    path = rewrite(slim, tmp_path / "long.zip", content=lambda c: c["phases"][1].update(execution_time_limit=1200))
    errors = _static(path)
    assert errors == [
        "[time-limit] phase 'Evaluation': execution_time_limit 1200 s exceeds the effective limit of 600 s: the site "
        "sends the worker min(MAX_EXECUTION_TIME_LIMIT, phase limit), 600 s on the default queue, so runs are killed "
        "earlier than the phase says; lower it, or give --time-limit for a custom queue"
    ]
    assert _static(path, time_limit=1200) == []
    assert _check_command(path) == 1
    assert _check_command(path, "--time-limit", "1200") == 0
    capsys.readouterr()


@pytest.mark.slow
def test_the_simulated_worker_gives_each_run_the_phase_effective_limit(built, tmp_path, monkeypatch):
    bundle, options = built
    given = []

    def fake_run(program, root, python, *, timeout, isolation, kind="scoring", network="none"):
        given.append(timeout)
        (root / "output").mkdir(parents=True, exist_ok=True)
        return worker.Run(0, "", "", root / "output", bool(isolation))

    monkeypatch.setattr(scoring_check.worker, "run_program", fake_run)

    def limits(c):
        c["phases"][0]["execution_time_limit"] = 300
        c["phases"][1].pop("execution_time_limit")  # the model's default, 600

    report = check_bundle(rewrite(bundle.path, tmp_path / "limits.zip", content=limits), cache=options.cache)
    assert sorted(given) == [300, 600, 600]
    assert len(report.runs) == 3  # each run then fails for want of scores.json: nothing real ran
    assert report.errors and all("no scores.json" in e for e in report.errors)


# ---------------------------------------------------------------------------------------------
# The logo: an image by its bytes


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IHDR = _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
IDAT = _png_chunk(b"IDAT", zlib.compress(b"\x00\x00"))
IEND = _png_chunk(b"IEND", b"")


@pytest.mark.parametrize(
    "data, expected",
    [
        (PNG_SIGNATURE + IHDR + IDAT + IEND, "png"),
        (PNG_SIGNATURE + IHDR + _png_chunk(b"acTL", b"\x00" * 8) + IDAT + IEND, "apng"),
        (PNG_SIGNATURE + IHDR + IDAT + _png_chunk(b"acTL", b"\x00" * 8) + IEND, "png"),  # acTL after IDAT
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "jpg"),
        (b"GIF89a\x01\x00\x01\x00", "gif"),
        (b"GIF87a\x01\x00\x01\x00", "gif"),
        (b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00", "webp"),
        (b"\x89PNG\x00\x00\x00\x00", None),  # filetype's 4 bytes, not the signature Pillow opens
        (b"GIF8", None),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"BM\x00\x00\x00\x00", None),
        (b"PK\x03\x04", None),
        (b"", None),
    ],
)
def test_logo_type_by_bytes(data, expected):
    assert logo_type(data) == expected


def test_a_logo_that_is_not_an_image_fails(slim, tmp_path):
    errors = _static(rewrite(slim, tmp_path / "text.zip", members={"logo.png": b"not an image\n"}))
    assert _rule(errors, "image", "logo.png is not a PNG, JPEG, GIF or WebP image by its content")
    errors = _static(rewrite(slim, tmp_path / "apng.zip",
                             members={"logo.png": PNG_SIGNATURE + IHDR + _png_chunk(b"acTL", b"\0" * 8) + IDAT + IEND}))
    assert _rule(errors, "image", "animated PNG")


def test_a_gif_named_png_is_accepted(slim, tmp_path):
    # Codabench goes by the bytes, not the name.
    assert _static(rewrite(slim, tmp_path / "gif.zip", members={"logo.png": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"})) == []


def test_the_repository_logo_is_a_png():
    assert logo_type((REPO_ROOT / definition.LOGO).read_bytes()) == "png"


# ---------------------------------------------------------------------------------------------
# Storage: what one upload stores, summed here from the zip's entries


def test_storage_of_a_built_bundle_is_the_sum_of_its_parts(built):
    bundle, _ = built
    storage = check_bundle(bundle.path, simulate=False).storage
    with zipfile.ZipFile(bundle.path) as archive:
        size = {info.filename: info.file_size for info in archive.infolist()}
        content = yaml.safe_load(archive.read("competition.yaml"))
        text = {name: len(archive.read(name).decode("utf-8").encode("utf-8")) for name in size if name.endswith(".md")}
    tasks = sum(size[t[k]] for t in content["tasks"] for k in ("scoring_program", "reference_data", "ingestion_program",
                                                                 "input_data") if k in t)
    solutions = sum(size[s["path"]] for s in content["solutions"])
    kits = sum(size[p["starting_kit"]] for p in content["phases"])  # one copy per phase
    pages = text[content["terms"]] + sum(text[p["file"]] for p in content["pages"])
    parts = tasks + solutions + kits + size[content["image"]] + pages
    assert storage.unpacked == parts
    assert storage.total == parts + bundle.path.stat().st_size
    # The scoring program is stored once per task: 3 phases, one task each.
    copies, program_bytes = storage.by_role()["scoring_program"]
    assert copies == 3 and program_bytes == 3 * size["scoring_program.zip"]
    assert storage.by_role()["starting_kit"][0] == 3
    assert storage.by_role()["page"][0] == len(content["pages"]) + 1  # the terms are stored apart


def test_storage_of_the_single_layout_copies_the_program_for_each_of_its_15_tasks(single_slim):
    storage = check_bundle(single_slim, simulate=False).storage
    with zipfile.ZipFile(single_slim) as archive:
        program = archive.getinfo(definition.SCORING_PROGRAM).file_size
    assert storage.by_role()["scoring_program"] == (15, 15 * program)
    assert storage.by_role()["reference_data"][0] == 15


def test_the_storage_report_is_printed(slim, capsys):
    assert _check_command(slim) == 0
    out = capsys.readouterr().out
    assert "storage: one upload stores" in out and "scoring_program: 3 copies" in out
