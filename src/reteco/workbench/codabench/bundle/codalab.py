"""RETECO on a CodaLab Competitions v1.5 server: ``reteco bundle --platform codalab``.

Public CodaLab Competitions (v1.5) stopped taking submissions at the end of 2025; self-hosted
v1.5 servers still run it, and read a bundle of another schema than Codabench's. What this
module builds rests on v1.5's code (codalab/codalab-competitions, ``apps/web/models.py``
``CompetitionDefBundle.unpack``; ``apps/web/tasks.py`` ``score`` and ``update_submission``) and
its worker (codalab/competitions-v1-compute-worker, ``worker.py`` ``get_bundle`` and ``run``);
``codalab_rules`` checks a bundle against the same facts, each cited there.

One competition per sub-track, as the Codabench default layout (``competition``): bundle
``reteco_<sub>_codalab.zip`` holds

- ``competition.yaml``, the zip's only member whose name holds ``.yaml`` (the unpacker takes
  the first such member): the ``Competition`` model's fields at the top, ``html:`` pages,
  ``phases:`` numbered 1, 2, 3, and a ``leaderboard:`` of one leaderboard whose ``columns:``
  are the sub-track's keys (``reteco.subtracks``, through ``leaderboards.columns``), the
  official figure selected by default (``selection_default``);
- ``pages/*.html``, the participants' pages (``pages/*.md``, rendered by
  ``page_markdown``): ``overview``, ``evaluation``, ``terms`` and ``data`` are the keys v1.5
  requires, the others become extra tabs labelled by their key;
- ``scoring_program.zip``: the Codabench build's program (``score.py`` and its ``vendor/``) plus
  a ``metadata`` file, the only file v1.5's worker reads, whose command
  ``python3 $program/score.py $input $output --scores-txt`` the worker fills in
  (``$program`` -> ``run/program``, ``$input`` -> ``run/input`` holding ``ref/`` and ``res/``,
  ``$output`` -> ``run/output``); ``--scores-txt`` makes the program write ``scores.txt``, which
  the server requires;
- the phases' reference data and the starting kit, at the Codabench bundle's paths;
- ``solutions/<split>_<sub>.zip``, which v1.5 ignores (it has no solutions) and
  ``reteco check-bundle`` scores through its simulated v1.5 worker.

What v1.5 cannot do that the Codabench bundle does is refused at build time: judging in the
scoring program (v1.5 lets the submitter download the scoring output unless the phase hides
its results altogether, and the judge's archive is written there), code submissions (the
ingestion program is written for Codabench's worker), datasets uploaded separately
(``--external``) and the five-task layout.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import zipfile
from pathlib import Path

import yaml

from reteco.codabench.program import image
from reteco.problems import InputError
from reteco.subtracks import SUBTRACK_IDS
from reteco.subtracks import SUBTRACKS as SUBTRACK_ROWS
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle.leaderboards import columns
from reteco.workbench.codabench.bundle.page_markdown import render as render_page

PLATFORMS = ("codabench", "codalab")
DEFAULT_PLATFORM = "codabench"
METADATA = "metadata"  # the only program file v1.5's worker reads
COMMAND = "python3 $program/score.py $input $output --scores-txt"
LEADERBOARD = {"label": "Results", "rank": 1}
# v1.5's html: keys -> the participants' page each shows (pages/<stem>.md). The first
# four are the keys the unpacker requires; the rest become tabs labelled by their key.
HTML_PAGES = {
    "overview": "overview",
    "evaluation": "evaluation",
    "terms": "terms",
    "data": "data",
    "tasks": "tasks",
    "submission_format": "submission_format",
    "judge_and_audit": "judge_and_audit",
    "messages": "messages",
    "other_tools": "other_tools",
    "python_api": "python_api",
}


def html_path(stem: str) -> str:
    return f"{definition.PAGES_FOLDER}/{stem}.html"


def bundle_name(subtrack: str) -> str:
    return f"reteco_{subtrack}_codalab"


def competition(subtrack: str) -> dict:
    """The v1.5 competition.yaml content of one sub-track (module docstring)."""
    if subtrack not in SUBTRACK_IDS:
        raise ValueError(f"unknown sub-track {subtrack!r}")
    phases = {}
    for number, phase in enumerate(definition.PHASES, start=1):
        entry = {
            "phasenumber": number,
            "label": phase.name,
            "description": phase.description,
            "start_date": phase.start,  # a string: the unpacker parses it (localize_datetime), UTC
            "max_submissions": phase.max_submissions,
            "max_submissions_per_day": phase.max_submissions_per_day,
            "execution_time_limit": phase.execution_time_limit,
            "is_scoring_only": True,
            "scoring_program": definition.SCORING_PROGRAM,
            "reference_data": definition.reference_path(phase, subtrack),
            "starting_kit": definition.STARTING_KIT,
        }
        if phase.end is None:
            entry["phase_never_ends"] = True
        phases[number] = entry
    leaderboard_columns = {}
    for column in columns((subtrack,)):
        entry = {
            "leaderboard": dict(LEADERBOARD),
            "label": column.title,
            "rank": column.index + 1,
            "numeric_format": column.precision,
            "sort": column.sorting,
        }
        if column.index == 0:  # the official figure: the column the leaderboard is sorted by
            entry["selection_default"] = 1
        leaderboard_columns[column.key] = entry
    row = SUBTRACK_ROWS[subtrack]
    return {
        "title": f"RETECO {row.name} (SemEval-2027 Task 1)",
        "description": f"Sub-track {row.name} of RETECO, ranked by {columns((subtrack,))[0].title}.",
        "image": definition.LOGO,
        # False: a participant is approved on accepting the terms (CompetitionViewSet.participate,
        # apps/api/views/competition_views.py), as Codabench's registration_auto_approve.
        "has_registration": False,
        "competition_docker_image": image.IMAGE,
        "enable_detailed_results": True,
        # Each finished submission replaces the participant's (or team's) entry: the last one counts,
        # as on Codabench (update_submission, tasks.py -> add_submission_to_leaderboard, models.py).
        "force_submission_to_leaderboard": True,
        "allow_public_submissions": True,
        "enable_forum": True,
        "html": {key: html_path(stem) for key, stem in HTML_PAGES.items()},
        "phases": phases,
        "leaderboard": {"leaderboards": {"RESULTS": dict(LEADERBOARD)}, "columns": leaderboard_columns},
    }


HEADER = (
    "# RETECO (SemEval-2027 Task 1) on a CodaLab Competitions v1.5 server. Generated by `reteco bundle\n"
    "# --platform codalab` from src/reteco/workbench/codabench/bundle/codalab.py (the Codabench ones: competition.yaml).\n"
)


def render(content: dict) -> str:
    """competition.yaml text of a v1.5 bundle (key order kept)."""
    return HEADER + yaml.safe_dump(content, sort_keys=False, allow_unicode=True, width=100)


def render_all(subtracks: tuple[str, ...] = SUBTRACK_IDS) -> str:
    """Every sub-track's v1.5 competition, one YAML document each (for reading)."""
    return HEADER + "".join(
        f"--- # {bundle_name(s)}.zip\n" + yaml.safe_dump(competition(s), sort_keys=False, allow_unicode=True, width=100)
        for s in SUBTRACK_IDS if s in subtracks
    )


def refusals(options) -> list[str]:
    """What a ``BuildOptions`` asks that a v1.5 bundle cannot do (module docstring)."""
    out = []
    if options.layout != definition.DEFAULT_LAYOUT:
        out.append(f"--layout {options.layout}: a v1.5 bundle is one competition per sub-track")
    if options.code_submission:
        out.append("--code-submission: the ingestion program is written for Codabench's worker")
    if options.external:
        out.append("--external: v1.5 bundles carry their data")
    if options.judge_config is not None:
        out.append("--judge-config: v1.5 lets the submitter download the scoring output, where the judge's "
                   "archive is written; judge after the phase with `reteco judge-submissions`")
    return out


def build_codalab(options) -> list:
    """Build the v1.5 bundles of ``options`` (a ``builder.BuildOptions``) into ``options.out``.

    The Codabench build runs first (its bundles go to ``build_dir/codabench``); the v1.5
    bundles are assembled from the files it staged (``assemble``).
    """
    from reteco.workbench.codabench.bundle.builder import build

    refused = refusals(options)
    if refused:
        raise InputError("cannot build for CodaLab Competitions v1.5: " + "; ".join(refused), "command line")
    codabench = build(dataclasses.replace(options, out=Path(options.build_dir) / "codabench"))
    subs = tuple(s for b in codabench for s in b.subtracks)
    return assemble(Path(options.build_dir) / "files", Path(options.out), subs, Path(options.build_dir) / "codalab",
                    compression=options.compression)


def assemble(files: Path, out: Path, subtracks: tuple[str, ...], work: Path, *, compression: int = 6) -> list:
    """The v1.5 bundles of ``subtracks`` from a Codabench build's staged files (``build_dir/files``)."""
    from reteco.workbench.codabench.bundle.builder import Built, write_bundle

    if work.exists():
        shutil.rmtree(work)
    staged = work / "files"
    staged.mkdir(parents=True)
    for stem in HTML_PAGES.values():
        source = files / definition.PAGES_FOLDER / f"{stem}.md"
        target = staged / html_path(stem)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_page(source.read_text(encoding="utf-8")), encoding="utf-8")
    program_with_metadata(files / definition.SCORING_PROGRAM, staged / definition.SCORING_PROGRAM, COMMAND)
    out.mkdir(parents=True, exist_ok=True)
    built = []
    for sub in subtracks:
        content = competition(sub)
        members = {definition.LOGO, definition.SCORING_PROGRAM, definition.STARTING_KIT}
        members |= set(content["html"].values())
        members |= {p["reference_data"] for p in content["phases"].values()}
        members |= {definition.solution_path(split, sub) for split in definition.splits()}
        for member in members - {definition.SCORING_PROGRAM} - set(content["html"].values()):
            _link(files / member, staged / member)
        path = out / f"{bundle_name(sub)}.zip"
        sizes = write_bundle(path, render(content), staged, members, compression)
        built.append(Built(path, definition.DEFAULT_LAYOUT, (sub,), {}, sizes))
    return built


def program_with_metadata(source: Path, dest: Path, command: str) -> None:
    """A copy of program zip ``source`` with a ``metadata`` file holding ``command`` at its root."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(source) as program, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as target:
        for info in program.infolist():
            if info.filename != METADATA:
                target.writestr(info, program.read(info))
        info = zipfile.ZipInfo(METADATA, program.infolist()[0].date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        target.writestr(info, yaml.safe_dump({"command": command}, sort_keys=False))


def _link(source: Path, dest: Path) -> None:
    """``source`` at ``dest`` without copying its bytes where the file system allows."""
    if not source.is_file():
        raise InputError(f"{source.name} was not built", str(source))
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        return
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy(source, dest)
