"""check-bundle's static rules on a bundle's files: what Codabench's v2 unpacker and serializers accept.

Read from Codabench's source (commit c7dbc75, 2026-03-13), ``src/apps/competitions/tasks.py``
(``unpack_competition``), ``src/apps/competitions/unpackers/v2.py`` and ``base_unpacker.py``, and
the serializers they call; plus the mistakes the unpacker lets through silently. Each problem is
reported with the rule it breaks:

- ``[zip]``/``[layout]``: a valid zip with ``competition.yaml`` at its root;
- ``[yaml]``, ``[version]``: parseable, ``version: 2`` (without it the old v1.5 schema is used);
- ``[required]``: title, image, terms, pages, tasks, phases, leaderboards; ``docker_image`` too
  (``V2Unpacker.__init__`` defaults it to the old ``codalab/codalab-legacy:py37``);
- ``[unknown-key]``: keys Codabench would ignore without a word (typos);
- ``[file]``: every file named (logo, terms, pages, programs, data, solutions, starting kit) is
  in the bundle, non-empty, with a safe relative path; a 36-hex dataset key must be mapped to a
  local file (``--dataset KEY=FILE``) to be simulated;
- ``[image]``: the logo is a PNG, JPEG, GIF or WebP by its bytes (``logo_image``);
- ``[program]``: a program zip has ``metadata.yaml`` with a ``command`` at its root, runnable
  without a shell and without permission bits, and a scoring program carries
  ``vendor/VENDOR.json``;
- ``[reference]``: reference data holds ``reference.json`` and ``phase.json``;
- ``[task]``, ``[solution]``: unique indexes, references to existing tasks, a scoring program per
  task, at least one solution per task (else nothing exercises it);
- ``[fact-sheet]``: the question format ``CompetitionSerializer.validate_fact_sheet`` accepts,
  ``is_required``/``is_on_leaderboard`` as the strings the site compares, within 4096
  characters, asking what the participation rules require teams to disclose.
- ``[image]``: ``docker_image`` within 128 characters (``Competition.docker_image``), a digest
  after ``@`` well formed; a tag is noted (the worker pulls it before every run:
  ``reteco.codabench.program.image``).

The phases and the leaderboard are ``competition_rules``'s.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path, PurePosixPath

import yaml

from reteco.codabench.program import image
from reteco.codabench.program.judge_setup import JUDGE_DIR, SETUP_MANIFEST
from reteco.workbench.codabench.bundle import vendor
from reteco.workbench.codabench.check import worker_simulation as worker
from reteco.workbench.codabench.check.bundle_paths import TASK_FILES, is_dataset_key, safe_path
from reteco.workbench.codabench.check.check_report import BundleTask, Report
from reteco.workbench.codabench.check.logo_image import check_logo

JUDGE_MANIFEST = f"{JUDGE_DIR}/{SETUP_MANIFEST}"

TOP_KEYS = {
    "version", "title", "image", "terms", "pages", "tasks", "solutions", "phases", "leaderboards", "description",
    "registration_auto_approve", "docker_image", "enable_detailed_results",
    "show_detailed_results_in_submission_panel", "show_detailed_results_in_leaderboard", "auto_run_submissions",
    "can_participants_make_submissions_public", "make_programs_available", "make_input_data_available",
    "competition_type", "fact_sheet", "reward", "contact_email", "forum_enabled", "queue",
}
REQUIRED_KEYS = ("title", "image", "terms", "pages", "tasks", "phases", "leaderboards")
PAGE_KEYS = {"title", "file"}
TASK_KEYS = {
    "index", "name", "description", "scoring_program", "reference_data", "input_data", "ingestion_program",
    "ingestion_only_during_scoring", "key",
}
SOLUTION_KEYS = {"index", "tasks", "path", "name", "description", "key"}
FACT_SHEET_FIELDS = {"key", "type", "title", "selection", "is_required", "is_on_leaderboard"}
FACT_SHEET_TYPES = {"checkbox", "text", "select"}
# Compared as strings by the site: SubmissionSerializer.validate (api/serializers/submissions.py,
# ``is_required == 'true'``), submission_upload.tag (``== 'true'`` / ``== 'false'`` picks the
# question's label) and CompetitionViewSet.get_leaderboard (api/views/competitions.py,
# ``is_on_leaderboard == 'true'``). A YAML boolean is stored as a JSON boolean and equals neither.
FACT_SHEET_FLAGS = ("is_required", "is_on_leaderboard")
FACT_SHEET_MAX = 4096
FACT_SHEET_DISCLOSURE = ("team_name", "system_description", "models_used", "apis_used")


def unpack(bundle: Path, root: Path, report: Report) -> dict | None:
    """Extract ``bundle`` into ``root`` and read its competition.yaml, or None after reporting."""
    if not zipfile.is_zipfile(bundle):
        report.error("zip", f"{bundle.name} is not a zip file")
        return None
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        unsafe = [n for n in names if n.startswith("/") or ".." in PurePosixPath(n).parts]
        if unsafe:
            report.error("zip", f"members with unsafe paths: {', '.join(unsafe[:5])}")
            return None
        if "competition.yaml" not in names:
            nested = [n for n in names if n.endswith("/competition.yaml")]
            where = f" (found {nested[0]}: zip the folder's content, not the folder)" if nested else ""
            report.error("layout", f"no competition.yaml at the root of the zip{where}")
            return None
        archive.extractall(root)
    try:
        content = yaml.safe_load((root / "competition.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        report.error("yaml", f"competition.yaml cannot be read: {exc}")
        return None
    if not isinstance(content, dict):
        report.error("yaml", "competition.yaml is not a mapping of keys to values")
        return None
    return content


def check_top_level(content: dict, root: Path, report: Report) -> None:
    """Version, required keys, unknown keys, title, docker image, logo, terms and pages."""
    if str(content.get("version", "1")) != "2":
        report.error(
            "version",
            f"version is {content.get('version', 'absent')!r}, not 2: Codabench would read the file with the old "
            "(v1.5) schema",
        )
    for key in REQUIRED_KEYS:
        if key not in content:
            report.error("required", f"competition.yaml has no {key}")
    if content.get("pages") is None and "pages" in content:
        report.error("required", "pages is empty; write pages: [] for none")
    unknown(content, TOP_KEYS, "competition.yaml", report)
    title = content.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > 256:
        report.error("required", "title must be a non-empty string of at most 256 characters")
    if not content.get("docker_image"):
        report.error(
            "required",
            "no docker_image: Codabench would default to codalab/codalab-legacy:py37, which the scoring program "
            f"was not built for; set docker_image: {image.IMAGE}",
        )
    docker_image = content.get("docker_image")
    if isinstance(docker_image, str) and docker_image:
        _check_docker_image(docker_image, report)
    if isinstance(content.get("image"), str):
        logo = bundle_file(root, content["image"], "image", report)
        if logo is not None:
            check_logo(logo, content["image"], report)
    if isinstance(content.get("terms"), str):
        bundle_file(root, content["terms"], "terms", report)
    pages = content.get("pages") or []
    if not isinstance(pages, list):
        report.error("required", "pages must be a list")
        pages = []
    for i, page in enumerate(pages):
        if not isinstance(page, dict):
            report.error("file", f"page {i} is not a mapping with title and file")
            continue
        unknown(page, PAGE_KEYS, f"page {i}", report)
        if not page.get("title"):
            report.error("file", f"page {i} has no title")
        if not isinstance(page.get("file"), str):
            report.error("file", f"page {i} has no file")
        else:
            bundle_file(root, page["file"], f"page {page.get('title', i)!r}", report)


def unknown(mapping: dict, known: set[str], where: str, report: Report) -> None:
    extra = sorted(str(k) for k in mapping if k not in known)
    if extra:
        report.error("unknown-key", f"{where}: {', '.join(extra)} not read by Codabench (ignored silently; a typo?)")


def bundle_file(root: Path, path: str, what: str, report: Report) -> Path | None:
    """The local path of a bundle file (exists, non-empty), or None after reporting."""
    if not safe_path(path):
        report.error("file", f"{what}: {path!r} is not a relative path inside the bundle")
        return None
    local = root / path
    if not local.exists():
        report.error("file", f"{what}: {path} is not in the bundle")
        return None
    if local.is_dir():
        if not any(p.is_file() for p in local.rglob("*")):
            report.error("file", f"{what}: folder {path} is empty")
            return None
    elif local.stat().st_size == 0:
        report.error("file", f"{what}: {path} is empty")
        return None
    elif local.suffix == ".zip":
        if not zipfile.is_zipfile(local):
            report.error("file", f"{what}: {path} is not a valid zip")
            return None
        with zipfile.ZipFile(local) as archive:
            if not any(not n.endswith("/") for n in archive.namelist()):
                report.error("file", f"{what}: {path} holds no file")
                return None
    return local


def _data(root: Path, value, what: str, datasets: dict[str, Path], report: Report) -> Path | None:
    """A task's or solution's data: a bundle path, or a dataset key mapped to a local file."""
    if not isinstance(value, str) or not value:
        report.error("file", f"{what}: not a path")
        return None
    if is_dataset_key(root, value):
        local = datasets.get(value)
        if local is None:
            report.note(f"{what}: Codabench dataset {value} (not in the bundle; give --dataset {value}=FILE to simulate)")
            return None
        return Path(local)
    return bundle_file(root, value, what, report)


def _members(local: Path) -> dict[str, bytes | None]:
    """Names at the root level of a zip or folder, mapped to the bytes of small json/yaml files."""
    out: dict[str, bytes | None] = {}
    if local.is_dir():
        for p in local.iterdir():
            out[p.name + ("/" if p.is_dir() else "")] = p.read_bytes() if p.is_file() and p.stat().st_size < 1 << 20 else None
        return out
    with zipfile.ZipFile(local) as archive:
        for info in archive.infolist():
            out[info.filename] = (
                archive.read(info) if "/" not in info.filename.rstrip("/") and info.file_size < 1 << 20 else None
            )
    return out


def _check_program(local: Path, what: str, kind: str, report: Report) -> None:
    members = _members(local)
    names = set(members)
    meta = next((n for n in ("metadata.yaml", "metadata") if n in names), None)
    if meta is None:
        nested = sorted(n for n in names if n.endswith("/metadata.yaml"))
        where = f" (found {nested[0]}: zip the program folder's content, not the folder)" if nested else ""
        report.error("program", f"{what}: no metadata.yaml at its root{where}; the worker looks only there")
        return
    try:
        metadata = yaml.safe_load(members[meta] or b"")
    except yaml.YAMLError as exc:
        report.error("program", f"{what}: {meta} is not valid YAML ({exc})")
        return
    command = metadata.get("command") if isinstance(metadata, dict) else None
    if not isinstance(command, str) or not command.strip():
        report.error("program", f"{what}: {meta} has no command")
        return
    for problem in worker.command_problems(command, kind):
        report.error("program", f"{what}: {problem}")
    if kind == "scoring" and f"vendor/{vendor.VENDOR_MANIFEST}" not in names:
        report.error(
            "program",
            f"{what}: no vendor/{vendor.VENDOR_MANIFEST}: the program needs packages the image lacks "
            "(build it with `reteco bundle`)",
        )


def _has_member(local: Path, name: str) -> bool:
    if local.is_dir():
        return (local / name).is_file()
    with zipfile.ZipFile(local) as archive:
        return name in archive.namelist()


def _read_member(local: Path, name: str) -> bytes | None:
    if local.is_dir():
        path = local / name
        return path.read_bytes() if path.is_file() else None
    with zipfile.ZipFile(local) as archive:
        try:
            return archive.read(name)
        except KeyError:
            return None


def check_tasks(content: dict, root: Path, datasets: dict[str, Path], report: Report) -> dict:
    """The tasks by index, each with its local files, sub-track and phase record."""
    tasks: dict = {}
    raw = content.get("tasks")
    if not isinstance(raw, list) or not raw:
        if "tasks" in content:
            report.error("task", "tasks must be a non-empty list")
        return tasks
    for i, task in enumerate(raw):
        if not isinstance(task, dict):
            report.error("task", f"task {i} is not a mapping")
            continue
        unknown(task, TASK_KEYS, f"task {task.get('name', i)!r}", report)
        index = task.get("index")
        if not isinstance(index, int):
            report.error("task", f"task {task.get('name', i)!r} has no integer index")
            continue
        if index in tasks:
            report.error("task", f"duplicate task index {index}")
            continue
        entry = BundleTask(index, str(task.get("name", index)))
        entry.ingestion_only_during_scoring = task.get("ingestion_only_during_scoring") is True
        tasks[index] = entry
        if "key" in task:
            report.note(f"task {index} names an existing Codabench task ({task['key']}): not checked here")
            continue
        if "scoring_program" not in task:
            report.error("task", f"task {entry.name!r} has no scoring_program")
        for kind in TASK_FILES:
            if kind not in task:
                continue
            local = _data(root, task[kind], f"task {entry.name!r} {kind}", datasets, report)
            if local is None:
                continue
            entry.files[kind] = local
            if kind in ("scoring_program", "ingestion_program"):
                _check_program(local, f"task {entry.name!r} {kind}", kind.split("_")[0], report)
        ref = entry.files.get("reference_data")
        if ref is not None:
            manifest = _read_member(ref, "reference.json")
            if manifest is None:
                report.error("reference", f"task {entry.name!r}: reference data has no reference.json at its root")
            else:
                entry.subtrack = json.loads(manifest).get("subtrack")
            entry.judged = _has_member(ref, JUDGE_MANIFEST)
            phase = _read_member(ref, "phase.json")
            if phase is None:
                report.error("reference", f"task {entry.name!r}: reference data has no phase.json (per-topic policy)")
            else:
                entry.phase_record = json.loads(phase)
    return tasks


def check_solutions(content: dict, root: Path, tasks: dict, datasets: dict[str, Path], report: Report) -> None:
    """Unique indexes, existing tasks, a file each, and a solution for every task."""
    solutions = content.get("solutions") or []
    seen = set()
    solved = set()
    for i, solution in enumerate(solutions if isinstance(solutions, list) else []):
        if not isinstance(solution, dict):
            report.error("solution", f"solution {i} is not a mapping")
            continue
        unknown(solution, SOLUTION_KEYS, f"solution {solution.get('name', i)!r}", report)
        index = solution.get("index")
        if not isinstance(index, int):
            report.error("solution", f"solution {solution.get('name', i)!r} has no integer index")
        elif index in seen:
            report.error("solution", f"duplicate solution index {index}")
        seen.add(index)
        refs = solution.get("tasks")
        if not isinstance(refs, list) or not refs:
            report.error("solution", f"solution {solution.get('name', i)!r} names no task")
            refs = []
        for ref in refs:
            if ref not in tasks:
                report.error("solution", f"solution {solution.get('name', i)!r} names task {ref!r}, which does not exist")
            else:
                solved.add(ref)
        if "key" not in solution:
            if "path" not in solution:
                report.error("solution", f"solution {solution.get('name', i)!r} has no path")
            else:
                _data(root, solution["path"], f"solution {solution.get('name', i)!r}", datasets, report)
    for index, task in tasks.items():
        if index not in solved:
            report.error("solution", f"task {task.name!r} has no solution: nothing exercises its scoring program")


def check_fact_sheet(sheet, report: Report) -> None:
    """Codabench's question format (``CompetitionSerializer.validate_fact_sheet``) and our disclosure rules."""
    if sheet is None:
        report.error("fact-sheet", f"no fact_sheet: the participation rules require {', '.join(FACT_SHEET_DISCLOSURE)}")
        return
    if not isinstance(sheet, dict):
        report.error("fact-sheet", "fact_sheet must be a mapping of question key -> question")
        return
    if len(json.dumps(sheet)) > FACT_SHEET_MAX:
        report.error("fact-sheet", f"fact_sheet is longer than {FACT_SHEET_MAX} characters as JSON")
    for name, question in sheet.items():
        if not isinstance(question, dict):
            report.error("fact-sheet", f"question {name!r} is not a mapping")
            continue
        difference = FACT_SHEET_FIELDS ^ set(question)
        if difference:
            report.error("fact-sheet", f"question {name!r}: fields must be exactly {sorted(FACT_SHEET_FIELDS)}; "
                         f"differs in {sorted(difference)}")
        if question.get("key") != name:
            report.error("fact-sheet", f"question {name!r}: its key is {question.get('key')!r}")
        if question.get("type") not in FACT_SHEET_TYPES:
            report.error("fact-sheet", f"question {name!r}: type must be one of {sorted(FACT_SHEET_TYPES)}")
        for flag in FACT_SHEET_FLAGS:
            if flag in question and question[flag] not in ("true", "false"):
                report.error(
                    "fact-sheet",
                    f"question {name!r}: {flag} is {question[flag]!r}, not the string 'true' or 'false' (quote it in "
                    "YAML): the site compares it with the string 'true', so a YAML boolean is never true there",
                )
    lacking = [k for k in FACT_SHEET_DISCLOSURE if k not in sheet]
    if lacking:
        report.error("fact-sheet", f"the participation rules require asking for {', '.join(lacking)}")


def _check_docker_image(name: str, report: Report) -> None:
    """``[image]``: a digest that is one, within the 128 characters of ``Competition.docker_image``;
    a tag noted, since the worker pulls it before every run and a rebuilt tag changes the modules
    the scoring program takes from the image (``reteco.codabench.program.image``)."""

    if len(name) > 128:
        report.error("image", f"docker_image is {len(name)} characters: Codabench stores at most 128")
    if "@" in name:
        if not re.fullmatch(image.DIGEST_PATTERN, name.rsplit("@", 1)[1]):
            report.error("image", f"docker_image {name!r}: what follows @ is not sha256: and 64 hex digits")
        return
    report.note(f"docker_image {name!r} is a tag: the worker pulls it before every run, so a rebuilt image changes "
                "the modules the scoring program takes from it under this bundle; record the digest you tested "
                "(reteco.codabench.program.image.DIGEST: repository@sha256:...)")
