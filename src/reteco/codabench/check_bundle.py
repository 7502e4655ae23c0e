"""``reteco check-bundle BUNDLE.zip``: validate a bundle offline, as Codabench would unpack and run it.

Two passes. Every problem is reported at once, each prefixed with the rule it breaks.

1. The unpacker's rules (Codabench's v2 unpacker and its serializers), plus the mistakes it
   lets through silently:

   - ``[zip]``/``[layout]``: a valid zip with ``competition.yaml`` at its root;
   - ``[yaml]``, ``[version]``: parseable, ``version: 2`` (without it the old schema is used);
   - ``[required]``: title, image, terms, pages, tasks, phases, leaderboards; ``docker_image``
     too (its default is an old Python 2/3.7 image) and equal to the one the vendored wheels
     target;
   - ``[unknown-key]``: keys Codabench would ignore without a word (typos);
   - ``[file]``: every file named (logo, terms, pages, programs, data, solutions, starting
     kit) is in the bundle, non-empty, with a safe relative path; a 36-hex dataset key must be
     mapped to a local file (``--dataset KEY=FILE``) to be simulated;
   - ``[program]``: a program zip has ``metadata.yaml`` with a ``command`` at its root, runnable
     without a shell and without permission bits (``python3 /app/program/x.py``), and a
     scoring program carries ``vendor/VENDOR.json``;
   - ``[reference]``: reference data holds ``reference.json`` and the ``phase.json`` of the
     phase that uses it;
   - ``[task]``, ``[solution]``: unique indexes, references to existing tasks, a scoring
     program per task, at least one solution per task (else nothing exercises it);
   - ``[phase]``, ``[date]``: names, tasks, dates as quoted ``'YYYY-MM-DD HH:MM:SS'`` UTC strings
     (an unquoted date loses its time; an offset is discarded), every phase but the last ends,
     each starts after the previous ends, limits within the default queue's;
   - ``[leaderboard]``, ``[column]``: one leaderboard (only the first is used), ``Force_Last``,
     key and titles within 36 characters (64 for a leaderboard's title), unique column keys and
     indexes, a column at index 0 (the ranking), valid sorting and computations;
   - ``[keys]``: every leaderboard key of every task's sub-track has a column (else its score
     is dropped silently); a one-sub-track competition has exactly its keys, official first;
   - ``[fact-sheet]``: Codabench's question format, within 4096 characters, asking what the
     participation rules require teams to disclose.

2. ``[worker]``/``[scores]``/``[leak]``: the simulated compute worker (``reteco.codabench.worker_simulation``)
   scores every solution of every task, and ``scores.json`` must hold every leaderboard key of
   the task's sub-track as a finite number, except the keys allowed to be absent, whose reason
   ``details.json`` must give; a phase without per-topic figures must write none.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

import yaml

from reteco.codabench import image, vendor
from reteco.codabench import worker_simulation as worker
from reteco.codabench.leaderboards import MAX_KEY_LENGTH, ranking_key
from reteco.problems import InputError
from reteco.subtracks import KEYS as SCORE_KEYS
from reteco.subtracks import SUBTRACKS

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
TASK_FILES = ("scoring_program", "reference_data", "input_data", "ingestion_program")
SOLUTION_KEYS = {"index", "tasks", "path", "name", "description", "key"}
PHASE_KEYS = {
    "index", "name", "description", "start", "end", "tasks", "max_submissions_per_day", "max_submissions",
    "auto_migrate_to_this_phase", "execution_time_limit", "hide_output", "hide_prediction_output",
    "hide_score_output", "starting_kit", "public_data",
}
LEADERBOARD_KEYS = {"title", "key", "columns", "submission_rule", "hidden", "primary_index"}
COLUMN_KEYS = {"title", "key", "index", "sorting", "computation", "computation_indexes", "precision", "hidden"}
FACT_SHEET_FIELDS = {"key", "type", "title", "selection", "is_required", "is_on_leaderboard"}
FACT_SHEET_TYPES = {"checkbox", "text", "select"}
FACT_SHEET_MAX = 4096
FACT_SHEET_DISCLOSURE = ("team_name", "system_description", "models_used", "apis_used")
SUBMISSION_RULE = "Force_Last"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
DEFAULT_QUEUE_LIMIT = 1200  # seconds: Codabench's default queue caps execution time
MISSING_PACKAGE = re.compile(r"No module named|not installed|cannot be read")
UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


@dataclass
class Report:
    bundle: Path
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)

    def error(self, rule: str, message: str) -> None:
        self.errors.append(f"[{rule}] {message}")

    def note(self, message: str) -> None:
        self.notes.append(message)


@dataclass
class _Task:
    index: object
    name: str
    files: dict[str, Path] = field(default_factory=dict)  # file type -> local zip or folder
    subtrack: str | None = None
    phase_record: dict | None = None
    phase: dict | None = None


def check_bundle(
    bundle: Path,
    *,
    datasets: dict[str, Path] | None = None,
    simulate: bool = True,
    cache: Path = Path("build/wheels"),
    python_exe: Path | None = None,
    wheels: str | None = None,
) -> Report:
    """Check ``bundle`` (a zip); ``datasets`` maps Codabench dataset keys to local files."""
    report = Report(Path(bundle))
    with tempfile.TemporaryDirectory(prefix="reteco-check-") as tmp:
        root = Path(tmp) / "bundle"
        content = _unpack(Path(bundle), root, report)
        if content is None:
            return report
        tasks = _check_static(content, root, datasets or {}, report)
        if simulate and not report.errors:
            _simulate(content, root, tasks, datasets or {}, report, cache, python_exe, wheels, Path(tmp))
        elif simulate:
            report.note("the compute worker was not simulated: fix the errors above first")
    return report


# =============================================================================================
# Pass 1: the unpacker's rules


def _unpack(bundle: Path, root: Path, report: Report) -> dict | None:
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


def _check_static(content: dict, root: Path, datasets: dict[str, Path], report: Report) -> dict:
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
    _unknown(content, TOP_KEYS, "competition.yaml", report)
    title = content.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > 256:
        report.error("required", "title must be a non-empty string of at most 256 characters")
    _check_docker_image(content, root, report)

    for key in ("image", "terms"):
        if isinstance(content.get(key), str):
            _file(root, content[key], key, report)
    pages = content.get("pages") or []
    if not isinstance(pages, list):
        report.error("required", "pages must be a list")
        pages = []
    for i, page in enumerate(pages):
        if not isinstance(page, dict):
            report.error("file", f"page {i} is not a mapping with title and file")
            continue
        _unknown(page, PAGE_KEYS, f"page {i}", report)
        if not page.get("title"):
            report.error("file", f"page {i} has no title")
        if not isinstance(page.get("file"), str):
            report.error("file", f"page {i} has no file")
        else:
            _file(root, page["file"], f"page {page.get('title', i)!r}", report)

    tasks = _check_tasks(content, root, datasets, report)
    _check_solutions(content, root, tasks, datasets, report)
    _check_phases(content, root, tasks, report)
    _check_leaderboards(content, tasks, report)
    _check_fact_sheet(content.get("fact_sheet"), report)
    return tasks


def _unknown(mapping: dict, known: set[str], where: str, report: Report) -> None:
    extra = sorted(str(k) for k in mapping if k not in known)
    if extra:
        report.error("unknown-key", f"{where}: {', '.join(extra)} not read by Codabench (ignored silently; a typo?)")


def _check_docker_image(content: dict, root: Path, report: Report) -> None:
    docker_image = content.get("docker_image")
    if not docker_image:
        report.error(
            "required",
            "no docker_image: Codabench would default to codalab/codalab-legacy:py37, which the scoring program "
            f"was not built for; set docker_image: {image.IMAGE}",
        )


def _safe(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


def _file(root: Path, path: str, what: str, report: Report) -> Path | None:
    """The local path of a bundle file (exists, non-empty), or None after reporting."""
    if not _safe(path):
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
    if UUID.match(value) and not (root / value).exists():
        local = datasets.get(value)
        if local is None:
            report.note(f"{what}: Codabench dataset {value} (not in the bundle; give --dataset {value}=FILE to simulate)")
            return None
        return Path(local)
    return _file(root, value, what, report)


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


def _read_member(local: Path, name: str) -> bytes | None:
    if local.is_dir():
        path = local / name
        return path.read_bytes() if path.is_file() else None
    with zipfile.ZipFile(local) as archive:
        try:
            return archive.read(name)
        except KeyError:
            return None


def _check_tasks(content: dict, root: Path, datasets: dict[str, Path], report: Report) -> dict:
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
        _unknown(task, TASK_KEYS, f"task {task.get('name', i)!r}", report)
        index = task.get("index")
        if not isinstance(index, int):
            report.error("task", f"task {task.get('name', i)!r} has no integer index")
            continue
        if index in tasks:
            report.error("task", f"duplicate task index {index}")
            continue
        entry = _Task(index, str(task.get("name", index)))
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
            phase = _read_member(ref, "phase.json")
            if phase is None:
                report.error("reference", f"task {entry.name!r}: reference data has no phase.json (per-topic policy)")
            else:
                entry.phase_record = json.loads(phase)
    return tasks


def _check_solutions(content: dict, root: Path, tasks: dict, datasets: dict[str, Path], report: Report) -> None:
    solutions = content.get("solutions") or []
    seen = set()
    solved = set()
    for i, solution in enumerate(solutions if isinstance(solutions, list) else []):
        if not isinstance(solution, dict):
            report.error("solution", f"solution {i} is not a mapping")
            continue
        _unknown(solution, SOLUTION_KEYS, f"solution {solution.get('name', i)!r}", report)
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


def _date(value, what: str, report: Report) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        report.error(
            "date",
            f"{what} is an unquoted YAML date ({value!r}): Codabench loses its time of day; write it quoted, "
            "'YYYY-MM-DD HH:MM:SS' (UTC)",
        )
        return None
    if re.search(r"(Z|[+-]\d{2}:?\d{2})$", value.strip()):
        report.error("date", f"{what} {value!r} has a UTC offset, which Codabench discards (not converts): write UTC")
        return None
    try:
        return datetime.strptime(value, DATE_FORMAT)
    except ValueError:
        report.error("date", f"{what} {value!r} is not 'YYYY-MM-DD HH:MM:SS' (UTC)")
        return None


def _check_phases(content: dict, root: Path, tasks: dict, report: Report) -> None:
    phases = content.get("phases")
    if not isinstance(phases, list) or not phases:
        if "phases" in content:
            report.error("phase", "phases must be a non-empty list")
        return
    ordered = sorted(
        (p for p in phases if isinstance(p, dict)), key=lambda p: p.get("index", 0) if isinstance(p.get("index", 0), int) else 0
    )
    if [id(p) for p in ordered] != [id(p) for p in phases if isinstance(p, dict)]:
        report.error("phase", "phases are not declared in index order; Codabench orders them by index")
    queue = content.get("queue")
    previous = None
    for i, phase in enumerate(ordered):
        name = phase.get("name")
        what = f"phase {name or i!r}"
        _unknown(phase, PHASE_KEYS, what, report)
        if not name:
            report.error("phase", f"phase {i} has no name")
        refs = phase.get("tasks")
        if not isinstance(refs, list) or not refs:
            report.error("phase", f"{what} has no tasks")
            refs = []
        for ref in refs:
            if ref not in tasks:
                report.error("phase", f"{what} names task {ref!r}, which does not exist")
                continue
            task = tasks[ref]
            task.phase = phase
            record = task.phase_record
            if record is not None and record.get("name") != name:
                report.error(
                    "reference",
                    f"{what} uses task {task.name!r} whose phase.json is for phase {record.get('name')!r}",
                )
        if "start" not in phase:
            report.error("date", f"{what} has no start")
        start = _date(phase.get("start"), f"{what} start", report)
        end = _date(phase.get("end"), f"{what} end", report)
        if i < len(ordered) - 1 and "end" not in phase:
            report.error("date", f"{what} has no end, but a phase follows it")
        if start and end and end <= start:
            report.error("date", f"{what} ends before it starts")
        if previous is not None:
            prev_name, prev_end = previous
            if prev_end and start and start <= prev_end:
                report.error("date", f"{what} starts before (or when) phase {prev_name!r} ends; phases run in sequence")
        previous = (name, end)
        if i == 0 and phase.get("auto_migrate_to_this_phase"):
            report.error("phase", f"{what}: the first phase cannot be auto-migrated to")
        limit = phase.get("execution_time_limit", 600)
        if not isinstance(limit, int) or limit <= 0:
            report.error("phase", f"{what}: execution_time_limit must be a positive number of seconds")
        elif limit > DEFAULT_QUEUE_LIMIT and not queue:
            report.error("phase", f"{what}: execution_time_limit {limit} s exceeds the default queue's {DEFAULT_QUEUE_LIMIT} s")
        for key in ("max_submissions_per_day", "max_submissions"):
            if key in phase and (not isinstance(phase[key], int) or phase[key] < 1):
                report.error("phase", f"{what}: {key} must be a positive integer")
        for key in ("starting_kit", "public_data"):
            if key in phase:
                _file(root, phase[key], f"{what} {key}", report)
    used = {ref for p in ordered for ref in (p.get("tasks") or []) if isinstance(p.get("tasks"), list)}
    for index, task in tasks.items():
        if index not in used:
            report.note(f"task {task.name!r} is in no phase")


def _check_leaderboards(content: dict, tasks: dict, report: Report) -> None:
    boards = content.get("leaderboards")
    if not isinstance(boards, list) or not boards:
        if "leaderboards" in content:
            report.error("leaderboard", "leaderboards must be a non-empty list")
        return
    if len(boards) > 1:
        report.error("leaderboard", f"{len(boards)} leaderboards: Codabench uses only the first one, for every phase")
    board = boards[0]
    if not isinstance(board, dict):
        report.error("leaderboard", "the leaderboard is not a mapping")
        return
    _unknown(board, LEADERBOARD_KEYS, "leaderboard", report)
    title, key = board.get("title"), board.get("key")
    if not isinstance(title, str) or not title or len(title) > 64:
        report.error("leaderboard", "the leaderboard's title must be 1 to 64 characters")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        report.error("leaderboard", f"the leaderboard's key must be 1 to {MAX_KEY_LENGTH} characters")
    if board.get("submission_rule") != SUBMISSION_RULE:
        report.error(
            "leaderboard",
            f"submission_rule is {board.get('submission_rule', 'absent (Add)')!r}, not {SUBMISSION_RULE}: with the "
            "default a submission reaches the leaderboard only when the participant adds it",
        )
    cols = board.get("columns")
    if not isinstance(cols, list) or not cols:
        report.error("column", "the leaderboard has no columns")
        return
    keys: dict[str, dict] = {}
    indexes: dict[int, dict] = {}
    for j, col in enumerate(cols):
        if not isinstance(col, dict):
            report.error("column", f"column {j} is not a mapping")
            continue
        _unknown(col, COLUMN_KEYS, f"column {col.get('key', j)!r}", report)
        ckey, ctitle, cindex = col.get("key"), col.get("title"), col.get("index")
        if not isinstance(ckey, str) or not ckey or len(ckey) > MAX_KEY_LENGTH:
            report.error("column", f"column {j}: key must be 1 to {MAX_KEY_LENGTH} characters")
        elif ckey in keys:
            report.error("column", f"column key {ckey!r} repeats")
        else:
            keys[ckey] = col
        if not isinstance(ctitle, str) or not ctitle or len(ctitle) > MAX_KEY_LENGTH:
            report.error("column", f"column {ckey or j!r}: title must be 1 to {MAX_KEY_LENGTH} characters")
        if not isinstance(cindex, int) or cindex < 0:
            report.error("column", f"column {ckey or j!r}: index must be a non-negative integer")
        elif cindex in indexes:
            report.error("column", f"column index {cindex} repeats")
        else:
            indexes[cindex] = col
        if col.get("sorting", "desc") not in ("desc", "asc"):
            report.error("column", f"column {ckey or j!r}: sorting must be desc or asc")
        computed = "computation" in col or col.get("computation_indexes")
        if computed and (col.get("computation") not in ("avg", "sum", "min", "max") or not col.get("computation_indexes")):
            report.error("column", f"column {ckey or j!r}: a computation needs a function and computation_indexes")
    primary = board.get("primary_index", 0)
    if primary not in indexes:
        report.error("column", f"no column has index {primary}: Codabench ranks the leaderboard by it")

    # Our rules: every key a task writes has a column; a one-sub-track competition has exactly its keys.
    subtracks = {t.subtrack for t in tasks.values() if t.subtrack}
    for sub in sorted(s for s in subtracks if s in SUBTRACKS):
        lacking = [k for k in SUBTRACKS[sub].keys if k not in keys]
        if lacking:
            report.error("keys", f"sub-track {sub}: no column for {', '.join(lacking)}; its scores would be dropped silently")
    if len(subtracks) == 1:
        (sub,) = subtracks
        if sub in SUBTRACKS:
            if set(keys) != set(SUBTRACKS[sub].keys):
                report.error("keys", f"a {sub} competition's columns must be exactly {', '.join(SUBTRACKS[sub].keys)}")
            ranked = indexes.get(primary, {}).get("key")
            if ranked != ranking_key(sub):
                report.error("keys", f"the ranking column (index {primary}) is {ranked!r}, not {ranking_key(sub)!r}")
    elif subtracks:
        ranked = indexes.get(primary, {}).get("key")
        empty = sorted(s for s in subtracks if s in SUBTRACKS and ranked not in SUBTRACKS[s].keys)
        if empty:
            report.note(f"the ranking column {ranked!r} stays empty for sub-track(s) {', '.join(empty)} in this layout")


def _check_fact_sheet(sheet, report: Report) -> None:
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
    lacking = [k for k in FACT_SHEET_DISCLOSURE if k not in sheet]
    if lacking:
        report.error("fact-sheet", f"the participation rules require asking for {', '.join(lacking)}")


# =============================================================================================
# Pass 2: the simulated compute worker


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` (X.Y) on this machine: this one, pyenv's, or PATH's.

    Each candidate is asked its version: a pyenv shim on PATH may exist and still fail.
    """
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return worker.base_python()
    candidates = sorted(Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"), reverse=True)
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        probe = subprocess.run(
            [str(candidate), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def _simulate(content, root, tasks, datasets, report, cache, python_exe, wheels, tmp: Path) -> None:
    programs: dict[Path, Path] = {}

    def extracted(local: Path) -> Path:
        if local not in programs:
            target = tmp / "programs" / f"{len(programs)}"
            if local.is_dir():
                shutil.copytree(local, target)
            else:
                worker.extract(local, target)
            programs[local] = target
        return programs[local]

    runnable = {i: t for i, t in tasks.items() if "scoring_program" in t.files and "reference_data" in t.files}
    if not runnable:
        report.note("no task could be simulated")
        return
    manifests = {}
    for task in runnable.values():
        program = extracted(task.files["scoring_program"])
        manifests[program] = json.loads((program / "vendor" / vendor.VENDOR_MANIFEST).read_text(encoding="utf-8"))
    targets = {(m["python"], m["source"]) for m in manifests.values()}
    if len(targets) > 1:
        report.error("program", f"scoring programs built for different Pythons or sources: {sorted(targets)}")
        return
    version, source = targets.pop()
    if wheels is not None and wheels != source:
        report.note(f"the scoring program's wheels come from {source}, not {wheels}")
    docker_image = content.get("docker_image")
    built_for = {m.get("image") for m in manifests.values()}
    if docker_image not in built_for:
        report.error("required", f"docker_image is {docker_image!r} but the scoring program was built for {sorted(built_for)}")
    interpreter = Path(python_exe) if python_exe else find_python(version)
    if interpreter is None:
        report.error(
            "worker",
            f"no Python {version} here to simulate the worker (the image's interpreter); install it, pass "
            "--python-exe, or build with --python for an interpreter you have",
        )
        return
    try:
        # Code submissions run the baseline, whose bm25s needs the image's scipy too.
        extra = ("scipy",) if any("ingestion_program" in t.files for t in runnable.values()) else ()
        taken = sorted({name for m in manifests.values() for name in m.get("from_image", image.SIMULATED)})
        site = vendor.image_site(version, source, cache, tuple(taken) + extra)
        python = worker.make_interpreter(interpreter, site, cache / f"sim-{version}-{source}")
    except (InputError, subprocess.CalledProcessError, OSError) as exc:
        report.error("worker", f"cannot set up the image's Python {version} ({interpreter}): {exc}")
        return
    isolation = worker.network_isolation()
    if not isolation:
        report.note("no network namespace here (unshare --net): the simulated runs had network access blocked only by proxies")
    report.note(f"simulated worker: Python {version} ({interpreter}), image packages from {source}")

    jobs = []
    for solution in content.get("solutions") or []:
        if "path" not in solution:
            continue
        path = solution["path"]
        local = datasets.get(path) if path in datasets else (root / path)
        if not Path(local).exists():
            continue
        for ref in solution.get("tasks", []):
            task = runnable.get(ref)
            if task is not None:
                jobs.append((task, solution, Path(local)))
    for task, _, _ in jobs:  # extract every program before the runs share them
        for kind in ("scoring_program", "ingestion_program"):
            if kind in task.files:
                extracted(task.files[kind])
    # Runs are subprocesses: a few at a time use the machine's cores.
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        list(pool.map(lambda job: _run_one(*job, extracted, python, isolation, report, tmp), jobs))
    report.runs.sort(key=lambda r: (str(r["task"]), str(r["solution"])))
    report.errors.sort()


def _run_one(task: _Task, solution: dict, submission: Path, extracted, python, isolation, report, tmp: Path) -> None:
    label = f"solution {solution.get('name', solution.get('index'))!r} on task {task.name!r}"
    limit = (task.phase or {}).get("execution_time_limit", 600)
    run_root = Path(tempfile.mkdtemp(prefix="run-", dir=tmp))
    started = time.monotonic()
    try:
        res = run_root / "input" / "res"
        if "ingestion_program" in task.files:
            predict_root = run_root / "predict"
            worker.extract(submission, predict_root / "ingested_program") if submission.is_file() else shutil.copytree(
                submission, predict_root / "ingested_program"
            )
            if "input_data" in task.files:
                worker.extract(task.files["input_data"], predict_root / "input_data")
            ingestion = extracted(task.files["ingestion_program"])
            run = worker.run_program(ingestion, predict_root, python, timeout=limit, isolation=isolation, kind="ingestion")
            if run.returncode != 0:
                report.error("worker", f"{label}: the ingestion program exited {run.returncode}\n{worker.tail(run.stderr)}")
                return
            shutil.copytree(run.output, res)
        elif submission.is_file():
            worker.extract(submission, res)
        else:
            shutil.copytree(submission, res)
        worker.write_worker_metadata(res)
        worker.extract(task.files["reference_data"], run_root / "input" / "ref") if task.files[
            "reference_data"
        ].is_file() else shutil.copytree(task.files["reference_data"], run_root / "input" / "ref")
        program = extracted(task.files["scoring_program"])
        run = worker.run_program(program, run_root, python, timeout=limit, isolation=isolation)
    except worker.WorkerError as exc:
        report.error("worker", f"{label}: {exc}")
        return
    seconds = time.monotonic() - started
    entry = {"task": task.name, "solution": solution.get("name"), "returncode": run.returncode, "seconds": round(seconds, 2)}
    report.runs.append(entry)
    if run.timed_out:
        report.error("worker", f"{label}: did not finish within the phase's execution_time_limit ({limit} s)")
        return
    if run.returncode != 0:
        report.error("worker", f"{label}: the scoring program exited {run.returncode}\n{worker.tail(run.stderr or run.stdout)}")
        return
    _check_outputs(task, label, run.output, report)


def _check_outputs(task: _Task, label: str, output: Path, report: Report) -> None:
    scores_path = output / "scores.json"
    if not scores_path.is_file():
        report.error("scores", f"{label}: no scores.json")
        return

    def refuse(constant):
        raise ValueError(f"{constant} is not a finite number")

    try:
        scores = json.loads(scores_path.read_text(encoding="utf-8"), parse_constant=refuse)
    except ValueError as exc:
        report.error("scores", f"{label}: scores.json is not a JSON object of finite numbers ({exc})")
        return
    if not isinstance(scores, dict):
        report.error("scores", f"{label}: scores.json is not a JSON object")
        return
    bad = [k for k, v in scores.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        report.error("scores", f"{label}: not finite numbers: {', '.join(bad)}")
    details = {}
    if (output / "details.json").is_file():
        details = json.loads((output / "details.json").read_text(encoding="utf-8"))
    sub = task.subtrack
    if sub not in SUBTRACKS:
        report.error("scores", f"{label}: unknown sub-track {sub!r}")
        return
    reasons = details.get("absent_scores", {}) if isinstance(details, dict) else {}
    for key in SUBTRACKS[sub].keys:
        if key in scores:
            continue
        if SCORE_KEYS[key].absent_when is None:
            report.error("scores", f"{label}: scores.json lacks {key}")
        elif not (isinstance(reasons.get(key), str) and reasons[key].strip()):
            report.error("scores", f"{label}: {key} is absent and details.json does not say why (absent_scores)")
        elif MISSING_PACKAGE.search(reasons[key]):
            # Allowed to be absent, but not because the bundle left out what computes it.
            report.error("scores", f"{label}: {key} is absent because the bundle lacks a package or its data: "
                         f"{reasons[key].splitlines()[0]}")
    if not (output / "detailed_results.html").is_file():
        report.error("scores", f"{label}: no detailed_results.html")
    record = task.phase_record or {}
    if record.get("per_topic") is False:
        leaked = sorted(_keys_named(details, {"per_unit", "per_step", "per_turn", "per_topic", "per_query"}))
        if leaked:
            report.error("leak", f"{label}: per-topic figures ({', '.join(leaked)}) written in a phase that withholds them")


def scoring_output_errors(subtrack: str, per_topic: bool, output: Path, label: str = "output") -> list[str]:
    """check-bundle's verdict on one scoring run's output folder (scores.json, details.json, page)."""
    report = Report(output)
    task = _Task(0, label, subtrack=subtrack, phase_record={"per_topic": per_topic})
    _check_outputs(task, label, output, report)
    return report.errors


def _keys_named(value, names: set[str]) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in names and isinstance(item, (list, dict)) and item:
                found.add(key)
            found |= _keys_named(item, names)
    elif isinstance(value, list):
        for item in value:
            found |= _keys_named(item, names)
    return found


# =============================================================================================
# Command line


def print_report(report: Report) -> None:
    for run in report.runs:
        print(f"  ran {run['solution']} on {run['task']}: exit {run['returncode']} in {run['seconds']} s")
    for note in report.notes:
        print(f"  note: {note}")
    for error in report.errors:
        print(f"  error: {error}", file=sys.stderr)
    verdict = "FAILED" if report.errors else "passed"
    print(f"check-bundle {report.bundle}: {verdict} ({len(report.errors)} errors, {len(report.runs)} simulated runs)")


def add_check_bundle_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``reteco check-bundle`` on the CLI's subparsers."""
    p = subparsers.add_parser("check-bundle", help="validate a Codabench bundle offline and simulate the worker")
    p.add_argument("bundle", type=Path)
    p.add_argument("--dataset", action="append", default=[], metavar="KEY=FILE",
                   help="a Codabench dataset key named by the bundle, and the local file it holds (repeatable)")
    p.add_argument("--no-simulate", action="store_true", help="check the unpacker's rules only")
    p.add_argument("--cache", type=Path, default=Path("build/wheels"), help="where image wheels are cached")
    p.add_argument("--python-exe", type=Path, help="interpreter of the bundle's target Python (default: found here)")
    p.set_defaults(func=cmd_check_bundle)
    return p


def cmd_check_bundle(args) -> int:
    datasets = {}
    for item in args.dataset:
        key, sep, path = item.partition("=")
        if not sep:
            raise InputError(f"--dataset expects KEY=FILE, got {item!r}", "command line")
        datasets[key] = Path(path)
    if not args.bundle.is_file():
        raise InputError("no such file", str(args.bundle))
    report = check_bundle(
        args.bundle, datasets=datasets, simulate=not args.no_simulate, cache=args.cache, python_exe=args.python_exe
    )
    print_report(report)
    return 1 if report.errors else 0
