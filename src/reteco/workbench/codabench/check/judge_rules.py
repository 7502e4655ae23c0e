"""check-bundle's rules on the judge's setup (``[judge]``): where the key is, who sees the archive.

A task whose reference data holds ``judge/`` (``reteco.codabench.program.judge_setup``) judges in the
scoring program, with the API key in that reference data. Then:

- its phase sets ``hide_score_output``: the scoring output holds the judge's archive (every
  request and raw reply) and, in phases with per-topic figures, the per-turn judgments;
- the task does not set ``ingestion_only_during_scoring``: the worker would then run the
  participant's code in the scoring step, beside ``/app/input/ref`` and its key
  (``_send_to_compute_worker``, ``src/apps/competitions/tasks.py``, sends the ingestion program
  to the scoring step only with that flag; ``compute_worker.py`` mounts ``/app/input`` for it);
- the scoring program carries openai (``vendor/VENDOR.json``);
- the judge model's announced shutdown date (``reteco.llm.model_retirement``'s table, no
  network) is not before the end of the task's phase: otherwise a note (the probe asks the
  endpoint itself: ``reteco.codabench.program.judge_probe``);
- the key is in no other file of the bundle: every member, and every member of every zip in it,
  is searched for each judged task's key, except the reference data that carry it. A key shorter
  than ``MIN_SECRET_LENGTH`` is a placeholder (vLLM's "EMPTY") and is not searched.

The runs of the simulated worker (``scoring_check``) search the logs and the output folder of
every judged task's run for its key (``key_leaks``), and the logs for the judge's endpoint
(``read_endpoint_host``): the log is the participant's, and an endpoint without a key of its
own (a self-hosted server) would be open to them.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from reteco.codabench.program.judge_setup import JUDGE_DIR, KEY_FILE
from reteco.llm.config import MIN_SECRET_LENGTH
from reteco.workbench.codabench.check.check_report import Report

KEY_MEMBER = f"{JUDGE_DIR}/{KEY_FILE}"
MAX_NESTING = 3  # zips inside zips searched this deep (a bundle holds zips holding wheels)


def check_judged_tasks(root: Path, tasks: dict, report: Report) -> None:
    """The ``[judge]`` rules of the module docstring, on every judged task (after ``check_phases``)."""
    judged = [t for t in tasks.values() if t.judged]
    if not judged:
        return
    carriers: dict[Path, str] = {}  # local reference data -> its key
    for task in judged:
        what = f"task {task.name!r}"
        phase = task.phase or {}
        if task.phase is not None and not phase.get("hide_score_output"):
            report.error("judge", f"{what} judges in the scoring program but its phase {phase.get('name')!r} does not set "
                         "hide_score_output: participants could download the judge's archive (every request and raw "
                         "reply) from the scoring output")
        if task.ingestion_only_during_scoring:
            report.error("judge", f"{what} judges in the scoring program and sets ingestion_only_during_scoring: the "
                         "participant's code would run in the scoring step, beside the reference data and the judge's key")
        program = task.files.get("scoring_program")
        if program is not None and not _vendors_openai(program):
            report.error("judge", f"{what} judges in the scoring program, but the program does not carry openai "
                         "(vendor/VENDOR.json): build the bundle with --judge-config")
        _check_shutdown(task, report)
        key = read_key(task.files["reference_data"])
        if key is None:
            report.error("judge", f"{what}: its reference data has {JUDGE_DIR}/ but no {KEY_MEMBER}")
        else:
            carriers[Path(task.files["reference_data"]).resolve()] = key
    keys = {k for k in carriers.values() if len(k) >= MIN_SECRET_LENGTH}
    if not keys:
        return
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.resolve() in carriers:
            continue
        name = path.relative_to(root).as_posix()
        for where in _found(path.read_bytes(), name, keys, 0):
            report.error("judge", f"the judge's key is in {where}: it may only be in the judged phases' reference data")


def _check_shutdown(task, report: Report) -> None:
    """An error when the judge model's announced shutdown date (``model_retirement``'s table: no
    network here) falls before the end of the task's judged phase, or the phase has no end: its
    runs would stop judging that day. The organizers may keep it (``--allow-judge-shutdown
    REASON``): then a note with both dates and their reason."""
    from reteco.llm.model_retirement import SOURCE, known_shutdown, retirement_warning

    model = read_judge_setting(task.files["reference_data"], "model")
    phase = task.phase or {}
    if not isinstance(model, str) or task.phase is None:
        return
    end = phase.get("end") if isinstance(phase.get("end"), str) else None
    try:
        warning = retirement_warning(model, known_shutdown(model), str(phase.get("name")), end,
                                     f"reteco's table of announced dates: {SOURCE}")
    except ValueError:
        return  # a malformed end: the [date] rules report it
    if not warning:
        return
    if report.judge_shutdown_allowed:
        report.note(f"task {task.name!r}: {warning}; kept by the organizers (--allow-judge-shutdown): "
                    f"{report.judge_shutdown_allowed}")
    else:
        report.error("judge", f"task {task.name!r}: {warning}; the probe (reteco judge-probe) asks the endpoint "
                     "itself; to keep this model anyway, say why with --allow-judge-shutdown REASON")


def read_judge_setting(reference_data: Path, name: str):
    """A setting of ``judge/judge.yaml`` in a reference data zip or folder, or None."""

    from reteco.codabench.program.judge_setup import JUDGE_CONFIG

    member = f"{JUDGE_DIR}/{JUDGE_CONFIG}"
    path = Path(reference_data)
    try:
        if path.is_dir():
            text = (path / member).read_text(encoding="utf-8")
        else:
            with zipfile.ZipFile(path) as archive:
                text = archive.read(member).decode("utf-8")
        record = yaml.safe_load(text)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, yaml.YAMLError):
        return None
    return record.get(name) if isinstance(record, dict) else None


def read_key(reference_data: Path) -> str | None:
    """The judge's key in a reference data zip or folder, or None."""
    path = Path(reference_data)
    if path.is_dir():
        member = path / KEY_MEMBER
        return member.read_text(encoding="utf-8").strip() if member.is_file() else None
    with zipfile.ZipFile(path) as archive:
        try:
            return archive.read(KEY_MEMBER).decode("utf-8").strip()
        except KeyError:
            return None


def read_endpoint_host(reference_data: Path) -> str | None:
    """The host (and port) of the judge's endpoint in a reference data folder's setup, or None."""

    from reteco.codabench.program.judge_setup import JUDGE_CONFIG

    path = Path(reference_data) / JUDGE_DIR / JUDGE_CONFIG
    try:
        url = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("base_url")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    if not isinstance(url, str):
        return None
    return urlsplit(url).netloc.rsplit("@", 1)[-1] or None  # without user info: credentials are not searched here


def key_leaks(key: str | None, texts: dict[str, str], folder: Path | None) -> list[str]:
    """Where ``key`` appears among ``texts`` (name -> text: the logs) and the files below
    ``folder`` (the output; zips searched inside), as names; [] for no key or a placeholder."""
    if not key or len(key) < MIN_SECRET_LENGTH:
        return []
    found = [name for name, text in texts.items() if key in (text or "")]
    if folder is not None and Path(folder).is_dir():
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            found += _found(path.read_bytes(), path.relative_to(folder).as_posix(), {key}, 0)
    return found


def _found(data: bytes, name: str, keys: set[str], depth: int) -> list[str]:
    hits = [name] if any(k.encode("utf-8") in data for k in keys) else []
    if depth < MAX_NESTING and data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        hits += _found(archive.read(info), f"{name}:{info.filename}", keys, depth + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError):
            pass  # not a readable zip: its raw bytes were searched above
    return hits


def _vendors_openai(program: Path) -> bool:
    name = "vendor/VENDOR.json"
    try:
        if Path(program).is_dir():
            record = json.loads((Path(program) / name).read_text(encoding="utf-8"))
        else:
            with zipfile.ZipFile(program) as archive:
                record = json.loads(archive.read(name))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False  # the [program] rules report a missing VENDOR.json
    return "openai" in (record.get("packages") or {})
