"""check-bundle's ``[exposure]`` rules: what of the reference data participants can reach.

What Codabench exposes (its source at c7dbc75; which fixes a given site runs cannot be seen from
it): before PR #2348 (April 2026) the competition API lists every reference-data key and
``/datasets/download/<key>/`` serves the file to any user, anonymous included; before PR #2525
another team's submission, logs and fact-sheet answers were readable without logging in. So:

- a note names the tasks whose reference data holds hidden labels (a split of
  ``HIDDEN_SPLITS``) or the judge's key: on a site without PR #2348 anyone can download them;
  docs/codabench_judge.md says how to upload them as late as the platform allows;
- an error for every participant-visible file that is a copy of a hidden reference file: the
  pages, each phase's ``starting_kit`` and ``public_data``, and the scoring and ingestion
  programs when ``make_programs_available`` is on (their members, and members of zips in them,
  compared by sha256 with every member of the hidden reference data; files under
  ``MIN_COMPARED_BYTES`` are skipped, as an empty file or a tiny record is no leak). The judge's
  key in any other file is ``judge_rules``'s.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

from reteco.workbench.codabench.bundle.competition import HIDDEN_SPLITS
from reteco.workbench.codabench.check.check_report import Report
from reteco.workbench.codabench.check.judge_rules import MAX_NESTING

MIN_COMPARED_BYTES = 64


def check_exposure(content: dict, root: Path, tasks: dict, report: Report) -> None:
    """The ``[exposure]`` rules of the module docstring (after ``check_phases``)."""
    hidden: dict[str, str] = {}  # sha256 -> "task 'X' reference data member"
    exposed = []
    for task in tasks.values():
        split = (task.phase_record or {}).get("split")
        holds = [f"hidden labels (split {split})"] if split in HIDDEN_SPLITS else []
        holds += ["the judge's key"] if task.judged else []
        if holds:
            exposed.append(f"{task.name!r} ({' and '.join(holds)})")
        reference = task.files.get("reference_data")
        if split in HIDDEN_SPLITS and reference is not None:
            for name, data in _members(Path(reference)):
                if len(data) >= MIN_COMPARED_BYTES:
                    hidden.setdefault(hashlib.sha256(data).hexdigest(), f"{name} of task {task.name!r}'s reference data")
    if exposed:
        report.note("the reference data of " + ", ".join(exposed) + " is listed by the competition API and served by "
                    "/datasets/download/<key>/ to anyone, anonymous included, on a Codabench without PR #2348 (April "
                    "2026): upload hidden labels as late as the platform allows and scope the judge's key "
                    "(docs/codabench_judge.md, \"What the platform exposes\")")
    if not hidden:
        return
    for what, path in _visible_files(content, root, tasks):
        for name, data in _members(path, what):
            found = hidden.get(hashlib.sha256(data).hexdigest()) if len(data) >= MIN_COMPARED_BYTES else None
            if found:
                report.error("exposure", f"{name}, which participants can download, is a copy of {found}")


def _visible_files(content: dict, root: Path, tasks: dict) -> list[tuple[str, Path]]:
    """(bundle path, local path) of the files participants can read."""
    paths = [p.get("file") for p in content.get("pages") or [] if isinstance(p, dict)]
    for phase in content.get("phases") or []:
        if isinstance(phase, dict):
            paths += [phase.get("starting_kit"), phase.get("public_data")]
    found = {(p, root / p) for p in paths if isinstance(p, str) and (root / p).exists()}
    if content.get("make_programs_available"):
        for task in tasks.values():
            for kind in ("scoring_program", "ingestion_program"):
                local = task.files.get(kind)
                if local is not None and Path(local).exists():
                    found.add((Path(local).name if not Path(local).is_relative_to(root)
                               else Path(local).relative_to(root).as_posix(), Path(local)))
    return sorted(found)


def _members(path: Path, name: str | None = None) -> list[tuple[str, bytes]]:
    """(name, bytes) of a file, a folder's files, and the members of zips in them (nested)."""
    name = name or path.name
    if path.is_dir():
        return [item for p in sorted(path.rglob("*")) if p.is_file()
                for item in _members(p, f"{name}/{p.relative_to(path).as_posix()}")]
    return _unzipped(path.read_bytes(), name, 0)


def _unzipped(data: bytes, name: str, depth: int) -> list[tuple[str, bytes]]:
    if depth >= MAX_NESTING or data[:4] != b"PK\x03\x04":
        return [(name, data)]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [item for info in archive.infolist() if not info.is_dir()
                    for item in _unzipped(archive.read(info), f"{name}:{info.filename}", depth + 1)]
    except (zipfile.BadZipFile, OSError, RuntimeError):
        return [(name, data)]
