"""``reteco check-bundle`` on a CodaLab Competitions v1.5 bundle (``reteco bundle --platform codalab``).

The facts, read from v1.5's code (codalab/codalab-competitions, ``codalab/apps/web/``) and its
worker (codalab/competitions-v1-compute-worker, ``worker.py``); each rule's tag is in brackets:

- ``[codalab-zip]``: the unpacker reads the first member whose name holds ``.yaml``
  (``CompetitionDefBundle.unpack``, ``models.py``): it must be ``competition.yaml``.
- ``[codalab-key]``: every top-level key except ``html``, ``phases``, ``leaderboard`` and
  ``admin_names`` is passed to ``Competition(**keys)`` (``unpack``), so each must be a field of
  the ``Competition`` model (``COMPETITION_FIELDS``); any other makes the upload fail. A
  phase's keys go to ``CompetitionPhase.objects.get_or_create(**phase)`` (``datasets`` taken
  out first): ``PHASE_FIELDS``.
- ``[codalab-html]``: ``html:`` must name ``overview``, ``evaluation``, ``terms`` and ``data``
  (``unpack`` reads them by key; ``data`` "is required"), each an HTML file of the bundle.
- ``[codalab-image]``: ``competition_docker_image``, else the server's default worker image
  runs the program (``_prepare_compute_worker_run``, ``tasks.py``); it must be the image the
  scoring program was built for.
- ``[codalab-phase]``: ``phases:`` a mapping numbered 1, 2, ... in order, each ``phasenumber``
  its number, a ``start_date`` the unpacker parses (``localize_datetime``), later than the
  previous phase's (a v1.5 phase ends when the next starts), ``label`` within 50 characters
  (``CompetitionPhase.label``), ``scoring_program`` and ``reference_data`` zips of the bundle
  (``unpack`` reads them by name; a phase without reference data stops the upload), a valid
  ``leaderboard_management_mode`` (``LeaderboardManagementMode``).
- ``[codalab-reference]``: reference data holds ``reference.json`` and ``phase.json`` whose
  phase is the phase's, and every phase is of one sub-track.
- ``[codalab-leaderboard]``: ``leaderboard:`` with ``leaderboards:`` (each a ``label`` and a
  ``rank``) and ``columns:``, each column's ``leaderboard`` naming a leaderboard by its label
  (``unpack`` looks it up by label), keys and labels within 50 characters
  (``SubmissionScoreDef``), no colon in a key (``update_submission`` splits each ``scores.txt``
  line at its colon), ``sort`` ``asc`` or ``desc``, and the columns exactly the sub-track's
  keys (``reteco.subtracks``): a figure without a column is dropped with a log line, a column
  without a figure stays empty.
- ``[codalab-program]``: the scoring program has a ``metadata`` file, the only one the worker
  reads (``get_bundle``: at the root, or the root's only folder holding one), with a
  ``command`` that runs ``python3`` on a file of ``$program`` with ``$input`` and ``$output``
  (the worker replaces ``$program``, ``$predictions``, ``$input``, ``$output``, ``$tmp``,
  ``$shared``, then splits the command at single spaces, without a shell, ``run``).

Then the simulated v1.5 worker (``codalab_worker``) scores each phase's solution.

Not checked: the server's Django validation beyond the fields' existence and lengths, the
queue and worker set-up of a given server, and the pages' look.
"""

from __future__ import annotations

import datetime as dt
import json
import zipfile
from pathlib import Path

from reteco.subtracks import SUBTRACKS
from reteco.workbench.codabench.check import codalab_worker
from reteco.workbench.codabench.check.check_report import BundleTask, Report
from reteco.workbench.codabench.check.unpacker_rules import bundle_file

# Competition's fields (models.py) a yaml key can set: the model's fields less the relations
# (queue, creator, modified_by, admins, teams, pagecontainers) and what unpack overwrites.
COMPETITION_FIELDS = frozenset({
    "title", "description", "url_redirect", "image", "image_url_base", "has_registration", "start_date",
    "end_date", "last_modified", "published", "last_phase_migration", "is_migrating",
    "force_submission_to_leaderboard", "disallow_leaderboard_modifying", "secret_key",
    "enable_medical_image_viewer", "enable_detailed_results", "show_datasets_from_yaml", "reward",
    "is_migrating_delayed", "allow_teams", "enable_per_submission_metadata", "allow_public_submissions",
    "enable_forum", "anonymous_leaderboard", "enable_teams", "require_team_approval", "hide_top_three",
    "hide_chart", "allow_organizer_teams", "upper_bound_max_submission_size", "competition_docker_image",
    "deleted",
})
BLOCKS = frozenset({"html", "phases", "leaderboard", "admin_names"})  # taken out before Competition(**keys)
# CompetitionPhase's fields (models.py) less the relations unpack sets itself, plus datasets.
PHASE_FIELDS = frozenset({
    "description", "phasenumber", "label", "start_date", "max_submissions", "max_submissions_per_day",
    "is_scoring_only", "scoring_program", "reference_data", "input_data", "datasets", "leaderboard_management_mode",
    "force_best_submission_to_leaderboard", "auto_migration", "is_migrated", "execution_time_limit", "color",
    "max_submission_size", "participant_max_storage_use", "delete_submissions_except_best_and_last",
    "phase_never_ends", "scoring_program_docker_image", "default_docker_image", "disable_custom_docker_image",
    "starting_kit", "public_data", "ingestion_program", "ingestion_program_docker_image",
})
PHASE_FILES = ("scoring_program", "reference_data", "input_data", "starting_kit", "public_data", "ingestion_program")
REQUIRED_HTML = ("overview", "evaluation", "terms", "data")
LEADERBOARD_MODES = frozenset({"default", "hide_results"})
COLUMN_KEYS = frozenset({"leaderboard", "label", "rank", "numeric_format", "sort", "selection_default", "computed",
                         "column_group"})
MAX_LABEL = 50  # SubmissionScoreDef.key and .label, SubmissionResultGroup.label, CompetitionPhase.label
MAX_DESCRIPTION = 1000  # CompetitionPhase.description


def is_codalab(content: dict) -> bool:
    """Whether a competition.yaml is of the v1.5 schema (html pages, numbered phases) rather than Codabench's."""
    return content.get("version") != 2 and (isinstance(content.get("phases"), dict) or "html" in content)


def check(bundle: Path, content: dict, root: Path, report: Report, *, simulate: bool, cache: Path,
          python_exe: Path | None, wheels: str | None, tmp: Path) -> None:
    """Every rule of the module docstring on an unpacked v1.5 bundle, then the simulated worker."""
    with zipfile.ZipFile(bundle) as archive:
        first = next((n for n in archive.namelist() if ".yaml" in n), None)
    if first != "competition.yaml":
        report.error("codalab-zip", f"the server reads the first member whose name holds .yaml, {first}, "
                     "not competition.yaml: put competition.yaml first and name no other member *.yaml*")
    extra = sorted(str(k) for k in content if k not in COMPETITION_FIELDS and k not in BLOCKS)
    if extra:
        report.error("codalab-key", f"{', '.join(extra)}: not fields of v1.5's Competition model; the upload "
                     "fails (Competition(**keys), CompetitionDefBundle.unpack)")
    if not content.get("title"):
        report.error("codalab-key", "no title")
    _check_html(content.get("html"), root, report)
    if not content.get("competition_docker_image"):
        report.error("codalab-image", "no competition_docker_image: the server's default worker image runs the program")
    if "image" in content:
        bundle_file(root, str(content["image"]), "image (logo)", report)
    phases = _check_phases(content.get("phases"), root, report)
    subtrack = _check_reference(phases, report)
    _check_leaderboard(content.get("leaderboard"), subtrack, report)
    programs = {}
    for number, phase in phases.items():
        local = phase.files.get("scoring_program")
        if local is not None and local not in programs:
            programs[local] = _check_program(local, f"phase {number} scoring_program", tmp / "programs" / str(len(programs)),
                                             report)
    if not simulate:
        return
    if report.errors:
        report.note("the v1.5 worker was not simulated: fix the errors above first")
        return
    codalab_worker.simulate(content, root, phases, programs, subtrack, report, cache=cache, python_exe=python_exe, wheels=wheels,
              tmp=tmp)


def _check_html(html, root: Path, report: Report) -> None:
    if not isinstance(html, dict):
        report.error("codalab-html", "no html: mapping of pages")
        return
    for key in REQUIRED_HTML:
        if key not in html:
            report.error("codalab-html", f"html: has no {key} page (the unpacker reads it by that key)")
    for key, path in html.items():
        local = bundle_file(root, str(path), f"html page {key}", report)
        if local is not None:
            try:
                local.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                report.error("codalab-html", f"html page {key}: {path} is not UTF-8 text")


def _parse_date(value):
    """A start date as the unpacker takes it (a datetime, a date, or a string Django parses), or None."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time())
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.strip()).replace(tzinfo=None)
        except ValueError:
            return None
    return None


def _check_phases(phases, root: Path, report: Report) -> dict[int, BundleTask]:
    """The phases by number, each with its local files and phase.json (``BundleTask``)."""
    out: dict[int, BundleTask] = {}
    if not isinstance(phases, dict) or not phases:
        report.error("codalab-phase", "phases: must be a mapping of numbered phases")
        return out
    previous = None
    for position, (number, phase) in enumerate(phases.items(), start=1):
        where = f"phase {number}"
        if not isinstance(phase, dict):
            report.error("codalab-phase", f"{where} is not a mapping")
            continue
        if number != position or phase.get("phasenumber") != position:
            report.error("codalab-phase", f"{where}: phases must be numbered 1, 2, ... in order, each phasenumber its "
                         f"number (found key {number!r}, phasenumber {phase.get('phasenumber')!r})")
        extra = sorted(str(k) for k in phase if k not in PHASE_FIELDS)
        if extra:
            report.error("codalab-key", f"{where}: {', '.join(extra)} not fields of CompetitionPhase; the upload fails")
        start = _parse_date(phase.get("start_date"))
        if start is None:
            report.error("codalab-phase", f"{where}: start_date {phase.get('start_date')!r} is not a date-time")
        elif previous is not None and start <= previous:
            report.error("codalab-phase", f"{where}: starts at {start}, not after the previous phase ({previous})")
        previous = start or previous
        if len(str(phase.get("label", ""))) > MAX_LABEL:
            report.error("codalab-phase", f"{where}: label longer than {MAX_LABEL} characters")
        if len(str(phase.get("description", ""))) > MAX_DESCRIPTION:
            report.error("codalab-phase", f"{where}: description longer than {MAX_DESCRIPTION} characters")
        mode = phase.get("leaderboard_management_mode", "default")
        if mode not in LEADERBOARD_MODES:
            report.error("codalab-phase", f"{where}: leaderboard_management_mode {mode!r} is not one of "
                         f"{', '.join(sorted(LEADERBOARD_MODES))}")
        task = BundleTask(number, str(phase.get("label", number)), phase=phase)
        out[number] = task
        for kind in PHASE_FILES:
            if kind not in phase:
                if kind in ("scoring_program", "reference_data"):
                    report.error("codalab-phase", f"{where}: no {kind}")
                continue
            path = str(phase[kind])
            if not path.endswith(".zip"):
                report.error("codalab-phase", f"{where}: {kind} {path!r} is not a .zip of the bundle")
                continue
            local = bundle_file(root, path, f"{where} {kind}", report)
            if local is not None:
                task.files[kind] = local
    return out


def _check_reference(phases: dict[int, BundleTask], report: Report) -> str | None:
    """Each phase's reference.json and phase.json; returns the one sub-track of the phases."""
    subtracks = set()
    for number, task in phases.items():
        ref = task.files.get("reference_data")
        if ref is None:
            continue
        with zipfile.ZipFile(ref) as archive:
            names = set(archive.namelist())
            manifest = json.loads(archive.read("reference.json")) if "reference.json" in names else None
            record = json.loads(archive.read("phase.json")) if "phase.json" in names else None
        if manifest is None or record is None:
            report.error("codalab-reference", f"phase {number}: reference data lacks reference.json or phase.json")
            continue
        task.subtrack = manifest.get("subtrack")
        task.phase_record = record
        subtracks.add(task.subtrack)
        if record.get("name") != task.phase.get("label"):
            report.error("codalab-reference", f"phase {number} ({task.phase.get('label')!r}): its reference data is "
                         f"phase {record.get('name')!r}'s")
    if len(subtracks) > 1:
        report.error("codalab-reference", f"the phases score different sub-tracks: {', '.join(sorted(map(str, subtracks)))}")
        return None
    return subtracks.pop() if subtracks else None


def _check_leaderboard(leaderboard, subtrack: str | None, report: Report) -> None:
    if not isinstance(leaderboard, dict) or not isinstance(leaderboard.get("leaderboards"), dict) \
            or not isinstance(leaderboard.get("columns"), dict):
        report.error("codalab-leaderboard", "leaderboard: needs leaderboards: and columns: mappings")
        return
    labels = set()
    for key, board in leaderboard["leaderboards"].items():
        if not isinstance(board, dict) or not board.get("label") or "rank" not in board:
            report.error("codalab-leaderboard", f"leaderboard {key}: needs a label and a rank")
            continue
        labels.add(str(board["label"]).strip())
        if len(str(board["label"]).strip()) > MAX_LABEL:
            report.error("codalab-leaderboard", f"leaderboard {key}: label longer than {MAX_LABEL} characters")
    columns = leaderboard["columns"]
    for key, column in columns.items():
        where = f"column {key}"
        if not isinstance(column, dict):
            report.error("codalab-leaderboard", f"{where} is not a mapping")
            continue
        extra = sorted(str(k) for k in column if k not in COLUMN_KEYS)
        if extra:
            report.error("codalab-key", f"{where}: {', '.join(extra)} not read by the unpacker")
        board = column.get("leaderboard")
        label = str(board.get("label", "")).strip() if isinstance(board, dict) else None
        if label not in labels:
            report.error("codalab-leaderboard", f"{where}: its leaderboard {label!r} is not one of leaderboards: "
                         f"({', '.join(sorted(labels)) or 'none'}); the upload fails")
        if len(str(key)) > MAX_LABEL or len(str(column.get("label", ""))) > MAX_LABEL:
            report.error("codalab-leaderboard", f"{where}: key or label longer than {MAX_LABEL} characters")
        if ":" in str(key):
            report.error("codalab-leaderboard", f"{where}: a key with a colon cannot be read from scores.txt")
        if column.get("sort", "desc") not in ("asc", "desc"):
            report.error("codalab-leaderboard", f"{where}: sort must be asc or desc")
        computed = column.get("computed")
        if isinstance(computed, dict):
            missing = [f.strip() for f in str(computed.get("fields", "")).split(",") if f.strip() not in columns]
            if missing:
                report.error("codalab-leaderboard", f"{where}: computed from unknown columns {', '.join(missing)}")
    if subtrack in SUBTRACKS:
        keys = list(SUBTRACKS[subtrack].keys)
        lacking = [k for k in keys if k not in columns]
        unknown = [str(k) for k in columns if k not in keys and not isinstance(columns[k].get("computed"), dict)]
        if lacking:
            report.error("codalab-leaderboard", f"sub-track {subtrack}'s keys without a column (the server drops "
                         f"them): {', '.join(lacking)}")
        if unknown:
            report.error("codalab-leaderboard", f"columns no {subtrack} scoring writes (always empty): "
                         f"{', '.join(unknown)}")


def _check_program(local: Path, what: str, dest: Path, report: Report) -> Path | None:
    """Lay a scoring program out and check its metadata's commands; returns its folder."""
    codalab_worker.lay_out(local, dest)
    commands = codalab_worker.commands(dest)
    if isinstance(commands, str):
        report.error("codalab-program", f"{what}: {commands}")
        return dest
    for command in commands:
        problems = []
        for variable in ("$program", "$input", "$output"):
            if variable not in command:
                problems.append(f"does not use {variable}")
        words = command.split(" ")
        if "" in words:
            problems.append("has two spaces in a row (the worker splits at each space: an empty argument)")
        if words[0] not in ("python3", "python"):
            problems.append(f"runs {words[0]}, not python3 (zips lose their permission bits)")
        script = next((w for w in words[1:] if w.startswith("$program/")), None)
        if script is not None and not (dest / script[len("$program/"):]).is_file():
            problems.append(f"names {script}, which is not in the program")
        leftover = [w for w in codalab_worker.substitute(command, Path("/run"))[1:] if "$" in w]
        if leftover:
            problems.append(f"has variables the worker does not replace: {', '.join(leftover)}")
        for problem in problems:
            report.error("codalab-program", f"{what}: command {command!r} {problem}")
    return dest
