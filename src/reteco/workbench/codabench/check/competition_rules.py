"""check-bundle's static rules on a competition's phases and leaderboard, as Codabench applies them.

Read from Codabench's source (commit c7dbc75, 2026-03-13):

- ``[phase]``, ``[date]`` (``unpackers/v2.py`` ``_unpack_phases``, ``unpackers/utils.py``
  ``get_datetime``, ``base_unpacker.py`` ``_validate_phase_ordering``): names, tasks, dates as
  quoted ``'YYYY-MM-DD HH:MM:SS'`` UTC strings (an unquoted date loses its time; an offset is
  discarded), every phase but the last ends, each starts after the previous ends.
- ``[time-limit]``: the site sends the worker ``min(MAX_EXECUTION_TIME_LIMIT, phase limit)``
  (``src/apps/competitions/tasks.py``, ``_send_to_compute_worker``), and that setting defaults to
  600 s; only a competition on a custom queue gets its phase limit as is. A phase limit above
  the effective limit (``--time-limit``, 600 s by default) would have its runs killed early.
- ``[visibility]`` (``src/apps/api/serializers/submissions.py``, ``SubmissionFilesSerializer``):
  ``hide_output`` hides the logs (and everything else) from participants: a failed submission's
  messages would not reach them. A phase scoring hidden labels must set ``hide_score_output``,
  so that the scoring output folder (which holds whatever the scoring program writes beyond the
  detailed page) is the organizers' only. The detailed page is always shown.
- ``[leaderboard]``, ``[column]``: one leaderboard (only the first is used), ``Force_Last``, key
  and titles within 36 characters (64 for a leaderboard's title), unique column keys and
  indexes, a column at the ranking index, valid sorting and computations.
- ``[entries]``: a phase with several tasks under ``Force_Last`` or ``Force_Best`` loses entries
  (``submission_rule_problem``, ``lost_entries``).
- ``[keys]``: every leaderboard key of every task's sub-track has a column (else its score is
  dropped silently); a one-sub-track competition has exactly its keys, official first.
- ``[ranking]`` (``src/apps/api/serializers/leaderboards.py``, ``get_submissions``): no task's
  submission can reach the leaderboard with the ranking column (``primary_index``) empty, which
  PostgreSQL would list first (``_check_ranking``).
"""

from __future__ import annotations

import re
from datetime import datetime

from reteco.formats.phase_record import DEFAULT_TIME_LIMIT_S
from reteco.subtracks import JUDGE, KEYS, SUBTRACKS
from reteco.workbench.codabench.bundle.competition import HIDDEN_SPLITS
from reteco.workbench.codabench.bundle.leaderboards import MAX_KEY_LENGTH, ranking_key
from reteco.workbench.codabench.check.check_report import Report
from reteco.workbench.codabench.check.unpacker_rules import bundle_file, unknown

PHASE_KEYS = {
    "index", "name", "description", "start", "end", "tasks", "max_submissions_per_day", "max_submissions",
    "auto_migrate_to_this_phase", "execution_time_limit", "hide_output", "hide_prediction_output",
    "hide_score_output", "starting_kit", "public_data",
}
LEADERBOARD_KEYS = {"title", "key", "columns", "submission_rule", "hidden", "primary_index"}
COLUMN_KEYS = {"title", "key", "index", "sorting", "computation", "computation_indexes", "precision", "hidden"}
SUBMISSION_RULE = "Force_Last"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
# MAX_EXECUTION_TIME_LIMIT's default (src/apps/competitions/tasks.py; .env_sample) and the phase
# model's default execution_time_limit (src/apps/competitions/models.py, Phase: 60 * 10).
PLATFORM_TIME_LIMIT = DEFAULT_TIME_LIMIT_S  # 600
PHASE_DEFAULT_TIME_LIMIT = 600


def effective_time_limit(phase: dict, cap: int = PLATFORM_TIME_LIMIT) -> int:
    """Seconds a run of ``phase`` gets on the worker: ``min(cap, phase limit)``.

    ``_send_to_compute_worker`` sends ``min(MAX_EXECUTION_TIME_LIMIT, phase.execution_time_limit)``;
    a phase without a limit (or 0: ``_unpack_phases`` keeps only a truthy one) has the model's 600.
    For a custom queue, where the phase limit is sent as is, pass that queue's limit as ``cap``.
    """
    limit = phase.get("execution_time_limit") or PHASE_DEFAULT_TIME_LIMIT
    return min(cap, limit) if isinstance(limit, int) else cap


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


def check_phases(content: dict, root, tasks: dict, report: Report, *, time_limit: int = PLATFORM_TIME_LIMIT) -> None:
    """Phases in order with their tasks, dates, limits, visibility and files; links tasks to phases."""
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
    previous = None
    for i, phase in enumerate(ordered):
        name = phase.get("name")
        what = f"phase {name or i!r}"
        unknown(phase, PHASE_KEYS, what, report)
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
        _check_time_limit(phase, what, time_limit, report)
        _check_visibility(phase, what, [tasks[r] for r in refs if r in tasks], report)
        for key in ("max_submissions_per_day", "max_submissions"):
            if key in phase and (not isinstance(phase[key], int) or phase[key] < 1):
                report.error("phase", f"{what}: {key} must be a positive integer")
        for key in ("starting_kit", "public_data"):
            if key in phase:
                bundle_file(root, phase[key], f"{what} {key}", report)
    used = {ref for p in ordered for ref in (p.get("tasks") or []) if isinstance(p.get("tasks"), list)}
    for index, task in tasks.items():
        if index not in used:
            report.note(f"task {task.name!r} is in no phase")


def _check_time_limit(phase: dict, what: str, time_limit: int, report: Report) -> None:
    limit = phase.get("execution_time_limit", PHASE_DEFAULT_TIME_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        report.error("time-limit", f"{what}: execution_time_limit must be a positive number of seconds")
    elif limit > time_limit:
        report.error(
            "time-limit",
            f"{what}: execution_time_limit {limit} s exceeds the effective limit of {time_limit} s: the site sends "
            f"the worker min(MAX_EXECUTION_TIME_LIMIT, phase limit), {time_limit} s on the default queue, so runs "
            "are killed earlier than the phase says; lower it, or give --time-limit for a custom queue",
        )


def _check_visibility(phase: dict, what: str, tasks: list, report: Report) -> None:
    if phase.get("hide_output"):
        report.error(
            "visibility",
            f"{what}: hide_output hides the logs from participants, so a failed submission's messages (which line "
            "of their file is wrong) would not reach them; hide the scoring output only (hide_score_output)",
        )
    hidden = sorted({str(t.phase_record.get("split")) for t in tasks
                     if t.phase_record and t.phase_record.get("split") in HIDDEN_SPLITS})
    if hidden and not phase.get("hide_score_output"):
        report.error(
            "visibility",
            f"{what} scores hidden labels (split {', '.join(hidden)}) but does not set hide_score_output: its "
            "scoring output folder would be downloadable by participants, whatever the scoring program writes there",
        )


def submission_rule_problem(rule) -> str | None:
    """Why a leaderboard's ``submission_rule`` does not give each team its last submission, or None.

    From ``src/apps/leaderboards/strategies.py`` (``StrategyFactory``): ``Force_Last`` is
    ``LastestModeStrategy``; ``Force_Latest_Multiple`` is ``AllModeStrategy`` (nothing cleared:
    every submission stays, each its own row); ``Force_Best`` is ``BestModeStrategy``; anything
    else (``Add``, the default, ``Add_And_Delete``...) is ``ManualModeStrategy``, which puts
    nothing on the leaderboard until the participant does.
    """
    if rule == SUBMISSION_RULE:
        return None
    if rule == "Force_Latest_Multiple":
        return "every submission stays on the leaderboard as its own row (AllModeStrategy), not each team's last"
    if rule == "Force_Best":
        return "the team's best-scoring submission stays (BestModeStrategy), not its last"
    shown = "absent (Add)" if rule is None else repr(rule)
    return f"it is {shown}: a submission reaches the leaderboard only when the participant adds it (ManualModeStrategy)"


def lost_entries(rule, tasks: int) -> str | None:
    """Why a phase of ``tasks`` tasks under ``rule`` loses teams' entries, or None when it does not.

    ``LastestModeStrategy.do_execute`` (Force_Last) runs when a submission's scores arrive
    (``upload_submission_scores``, ``src/apps/api/views/submissions.py``) and clears the leaderboard
    of every submission of the team *in the phase*, whatever its task, before putting the new one
    on (Codabench issues #2211, #1570). ``BestModeStrategy.put_on_leaderboard`` (Force_Best) clears
    them the same way and puts back one submission of the phase. A submission to several tasks
    becomes one child submission per task (``_run_submission``, ``src/apps/competitions/tasks.py``),
    each scored and put on the leaderboard on its own. So with several tasks in a phase, a team
    that submits to 1a and then to 2a keeps only 2a, and a submission sent to all tasks keeps only
    the child whose scores arrive last. With one task per phase (one competition per sub-track)
    each team keeps exactly its last submission.
    """
    if tasks <= 1 or rule not in (SUBMISSION_RULE, "Force_Best"):
        return None
    strategy = "LastestModeStrategy.do_execute" if rule == SUBMISSION_RULE else "BestModeStrategy.put_on_leaderboard"
    return (
        f"{tasks} tasks under {rule}: Codabench keeps one submission per team per phase, whatever its task "
        f"({strategy} in leaderboards/strategies.py clears the team's other submissions in the phase), so a team "
        "that submits to one sub-track and then another loses its first entry, and a submission sent to several "
        "tasks keeps only the child scored last; build one competition per sub-track (--layout per-subtrack)"
    )


def check_leaderboards(content: dict, tasks: dict, report: Report) -> None:
    """The one leaderboard: submission rule, entries kept, columns, and our keys."""
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
    unknown(board, LEADERBOARD_KEYS, "leaderboard", report)
    title, key = board.get("title"), board.get("key")
    if not isinstance(title, str) or not title or len(title) > 64:
        report.error("leaderboard", "the leaderboard's title must be 1 to 64 characters")
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        report.error("leaderboard", f"the leaderboard's key must be 1 to {MAX_KEY_LENGTH} characters")
    rule = board.get("submission_rule")
    problem = submission_rule_problem(rule)
    if problem:
        report.error("leaderboard", f"submission_rule is not {SUBMISSION_RULE}: {problem}")
    for i, phase in enumerate(p for p in content.get("phases") or [] if isinstance(p, dict)):
        refs = phase.get("tasks")
        lost = lost_entries(rule, len(refs) if isinstance(refs, list) else 0)
        if lost:
            report.error("entries", f"phase {phase.get('name') or i!r} loses teams' entries: {lost}")
    indexes = _check_columns(board, report)
    if indexes is not None:
        _check_keys(board, indexes, tasks, report)


def _check_columns(board: dict, report: Report) -> dict[int, dict] | None:
    cols = board.get("columns")
    if not isinstance(cols, list) or not cols:
        report.error("column", "the leaderboard has no columns")
        return None
    keys: set[str] = set()
    indexes: dict[int, dict] = {}
    for j, col in enumerate(cols):
        if not isinstance(col, dict):
            report.error("column", f"column {j} is not a mapping")
            continue
        unknown(col, COLUMN_KEYS, f"column {col.get('key', j)!r}", report)
        ckey, ctitle, cindex = col.get("key"), col.get("title"), col.get("index")
        if not isinstance(ckey, str) or not ckey or len(ckey) > MAX_KEY_LENGTH:
            report.error("column", f"column {j}: key must be 1 to {MAX_KEY_LENGTH} characters")
        elif ckey in keys:
            report.error("column", f"column key {ckey!r} repeats")
        else:
            keys.add(ckey)
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
    return indexes


def _check_keys(board: dict, indexes: dict[int, dict], tasks: dict, report: Report) -> None:
    """Our rules: every key a task writes has a column; a one-sub-track competition has exactly its keys."""
    keys = {c.get("key") for c in board["columns"] if isinstance(c, dict)}
    primary = board.get("primary_index", 0)
    ranked = indexes.get(primary, {}).get("key")
    subtracks = {t.subtrack for t in tasks.values() if t.subtrack}
    for sub in sorted(s for s in subtracks if s in SUBTRACKS):
        lacking = [k for k in SUBTRACKS[sub].keys if k not in keys]
        if lacking:
            report.error("keys", f"sub-track {sub}: no column for {', '.join(lacking)}; its scores would be dropped silently")
    if len(subtracks) == 1:
        (sub,) = subtracks
        if sub in SUBTRACKS:
            if keys != set(SUBTRACKS[sub].keys):
                report.error("keys", f"a {sub} competition's columns must be exactly {', '.join(SUBTRACKS[sub].keys)}")
            if ranked != ranking_key(sub):
                report.error("keys", f"the ranking column (index {primary}) is {ranked!r}, not {ranking_key(sub)!r}")
    _check_ranking(ranked, primary, tasks, report)


def _check_ranking(ranked, primary: int, tasks: dict, report: Report) -> None:
    """``[ranking]``: no submission can reach the leaderboard with the ranked column empty.

    Codabench orders by the ranked column descending (``LeaderboardSerializer.get_submissions``,
    ``src/apps/api/serializers/leaderboards.py``) and PostgreSQL puts a missing score first, so
    such a row ranks above every scored one (issues #1284, #2321, #2470, #2512). Whether a
    sub-track's key can be absent is the table's (``reteco.subtracks``, ``absent_when``). The
    one absence allowed is the sub-track's own ranked figure (``SubTrack.ranked``) where the
    scoring program guards it: in a judged task it fails a run without it
    (``scoring_program.refuse_unranked``); in a task that does not judge, a judge key is absent
    for every run alike, so the phase's leaderboard is no ranking (noted).
    """
    if not isinstance(ranked, str):
        return
    for task in tasks.values():
        row = SUBTRACKS.get(task.subtrack or "")
        if row is None:
            continue
        what = f"task {task.name!r} (sub-track {row.id})"
        if ranked not in row.keys:
            report.error("ranking", f"{what} never writes the ranking column {ranked!r} (index {primary}): its rows "
                         "would have it empty, and Codabench lists an empty ranked score first (PostgreSQL sorts "
                         "NULL first in a descending order), above every scored row")
        elif KEYS[ranked].absent_when is None or (ranked == row.ranked and task.judged):
            continue
        elif ranked == row.ranked and ranked in JUDGE:
            phase = (task.phase or {}).get("name")
            report.note(f"{what}: the judge does not run in phase {phase!r}, so every row's ranking column "
                        f"{ranked!r} is empty there: that leaderboard is no ranking (Codabench then orders by the "
                        "next columns, ROUGE-L first)")
        else:
            report.error("ranking", f"{what}: a scored submission can leave the ranking column {ranked!r} empty "
                         f"({KEYS[ranked].absent_when}), and Codabench would list it first, above every scored row; "
                         f"rank by a figure every run writes")
