"""After a phase: the submissions of a Codabench phase, as its bulk download lays them out, judged.

Where a phase does not judge in the scoring program (no judge setup in its reference data, or a
worker without network), its 2b/2c judge columns stay empty on the platform, and the organizers
judge the submissions here (``reteco judge-submissions``); the same command re-scores a judged
phase from the cache once its archives are imported (``reteco judge --import-archive``).

The layout (Codabench, commit c7dbc75). An organizer selects submissions in the phase's
submission list and downloads them: ``SubmissionViewSet.download_many``
(``src/apps/api/views/submissions.py``) answers, for each, the name
``{submission id}_{owner}_PhaseId{phase id}_{uploaded, %Y-%m-%d:%M-%S}_{file}`` and the URL of
the uploaded file (``owner`` is the user's username, ``User.__str__``; ``file`` the stored file's
last path part, which ``PathWrapper``, ``src/utils/data.py``, cuts to its first 35 characters
plus the extension); the browser (``bulk_download``,
``src/static/riot/competitions/detail/submission_manager.tag``) fetches them and saves
``bulk_submissions.zip`` holding each file under that name with ``:``, ``/`` and ``\\`` replaced
by ``_``, and ``failed.txt`` listing those it could not fetch. So an entry reads
``123_alice_PhaseId7_2027-01-20_05-33_answers.zip``. The time part is minutes and seconds only
(``%M-%S``), so the order of a team's submissions is that of their ids, which grow with time.

What is scored. Each team's (owner's) last submission per phase, the one ``Force_Last`` keeps on
the leaderboard (the highest id); the earlier ones are listed as superseded. Every submission
goes through the leaderboard's scoring path (``reteco.organizers.leaderboard.score_entries``:
``score_submission`` with the judge and the cache), so a figure here is what ``reteco score``
gives. The table: per team its rank by the sub-track's ranking figure (``ranking_candidate``:
nDCG@10, 2b's judge_mean; ties share a rank, ``competition_ranks``), the submission, every
leaderboard key of the sub-track (judge columns included), and why a key is absent.
"""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from reteco.organizers.leaderboard import (
    Entry,
    ScoringOptions,
    _absent_reason,  # the leaderboard's reason for an absent key: one wording for both tables
    competition_ranks,
    ranking_candidate,
    score_entries,
)
from reteco.problems import InputError, quoted
from reteco.subtracks import KEYS, SUBTRACKS

BULK_ZIP = "bulk_submissions.zip"
FAILED_LIST = "failed.txt"
# The name download_many gives, after the browser's replacement of ":", "/" and "\" by "_".
BULK_NAME = re.compile(
    r"^(?P<id>\d+)_(?P<owner>.+?)_PhaseId(?P<phase>\d+)_(?P<date>\d{4}-\d{2}-\d{2})_(?P<time>\d{2}-\d{2})_(?P<file>.+)$"
)
CSV_NAME = "judged_submissions_{sub}.csv"
MARKDOWN_NAME = "judged_submissions_{sub}.md"


@dataclass(frozen=True)
class BulkSubmission:
    """One file of a bulk download, with what its name says."""

    path: Path
    name: str  # the entry's name in the download
    submission_id: int
    owner: str
    phase_id: int
    uploaded: str  # "YYYY-MM-DD MM-SS" as Codabench writes it (minutes and seconds, no hour)
    file: str


@dataclass
class BulkDownload:
    """A bulk download read: its submissions, and what was not one."""

    submissions: list[BulkSubmission]
    not_fetched: list[str]  # failed.txt's lines: submissions Codabench's page could not fetch
    skipped: list[str]  # entries whose name is not a bulk download's


def parse_bulk_name(name: str) -> dict | None:
    """The parts of a bulk download entry's name, or None when it is not one.

    >>> parse_bulk_name("123_alice_PhaseId7_2027-01-20_05-33_answers.zip")["owner"]
    'alice'
    """
    match = BULK_NAME.match(name)
    if match is None:
        return None
    parts = match.groupdict()
    parts["id"], parts["phase"] = int(parts["id"]), int(parts["phase"])
    return parts


def read_bulk_download(source: Path, work: Path) -> BulkDownload:
    """The submissions of ``bulk_submissions.zip`` (extracted into ``work``) or of a folder of
    its files. InputError when there is none."""
    source = Path(source)
    if source.is_file():
        if not zipfile.is_zipfile(source):
            raise InputError(f"not a zip: give {BULK_ZIP} as downloaded, or a folder of its files", str(source))
        folder = Path(work) / "bulk"
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                name = info.filename
                # The browser writes flat names; anything else is not its entry (and no path escapes).
                if info.is_dir() or "/" in name or "\\" in name or name in ("", ".", ".."):
                    continue
                (folder / name).write_bytes(archive.read(info))
    elif source.is_dir():
        folder = source
    else:
        raise InputError("no such file or folder", str(source))
    submissions, skipped, not_fetched = [], [], []
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if path.name == FAILED_LIST:
            text = path.read_text(encoding="utf-8", errors="replace")
            not_fetched += [line.strip() for line in text.splitlines()[1:] if line.strip()]
            continue
        if path.name.startswith("."):
            continue
        parts = parse_bulk_name(path.name)
        if parts is None:
            skipped.append(path.name)
            continue
        submissions.append(BulkSubmission(path, path.name, parts["id"], parts["owner"], parts["phase"],
                                          f"{parts['date']} {parts['time']}", parts["file"]))
    if not submissions:
        raise InputError(
            "no submission named as Codabench's bulk download names them "
            "(<id>_<owner>_PhaseId<phase>_<date>_<time>_<file>)", str(source))
    return BulkDownload(submissions, not_fetched, skipped)


def last_per_team(submissions: list[BulkSubmission]) -> tuple[list[BulkSubmission], list[tuple[BulkSubmission, int]]]:
    """(each owner's last submission per phase, in owner order; the earlier ones, each with the
    id of the submission that supersedes it)."""
    last: dict[tuple[str, int], BulkSubmission] = {}
    for s in submissions:
        key = (s.owner, s.phase_id)
        if key not in last or s.submission_id > last[key].submission_id:
            last[key] = s
    kept = sorted(last.values(), key=lambda s: (s.owner.casefold(), s.owner, s.phase_id))
    superseded = sorted(((s, last[(s.owner, s.phase_id)].submission_id) for s in submissions
                         if last[(s.owner, s.phase_id)] is not s), key=lambda pair: pair[0].submission_id)
    return kept, superseded


def judge_bulk(subtrack: str, reference_dir: Path, kept: list[BulkSubmission], options: ScoringOptions, *,
               jobs: int, progress: bool) -> list[dict]:
    """Score (and judge) every kept submission through the leaderboard's scoring path; one row
    per submission, ranked (``table_rows``)."""
    entries = [Entry(s.path, s.name, s.owner, str(s.submission_id)) for s in kept]
    outcomes = score_entries(Path(reference_dir), entries, options, jobs=jobs, progress=progress, label=subtrack)
    return table_rows(subtrack, kept, outcomes)


def table_rows(subtrack: str, kept: list[BulkSubmission], outcomes: list[dict]) -> list[dict]:
    """Rows of the table, ranked first (best first, ties sharing a rank), then the unranked and
    those that could not be scored (by team). Each row: rank (None: unranked), team,
    submission, phase, uploaded, file, scores (key -> figure), absent (key -> why), errors."""
    keys = SUBTRACKS[subtrack].keys
    candidate = ranking_candidate(subtrack)
    rows = []
    for s, outcome in zip(kept, outcomes):
        row = {"rank": None, "team": s.owner, "submission": s.submission_id, "phase": s.phase_id,
               "uploaded": s.uploaded, "file": s.name, "scores": {}, "absent": {}, "errors": []}
        if outcome["ok"]:
            row["scores"] = {k: outcome["scores"][k] for k in keys if k in outcome["scores"]}
            row["absent"] = {k: _absent_reason(k, outcome) for k in keys if k not in row["scores"]}
        else:
            row["errors"] = list(outcome["errors"])
        rows.append(row)
    ranked = sorted((r for r in rows if candidate in r["scores"]),
                    key=lambda r: (-r["scores"][candidate], r["team"].casefold(), r["submission"]))
    for row, rank in zip(ranked, competition_ranks([r["scores"][candidate] for r in ranked])):
        row["rank"] = rank
    rest = sorted((r for r in rows if candidate not in r["scores"]), key=lambda r: (bool(r["errors"]), r["team"].casefold()))
    return ranked + rest


def render_csv(subtrack: str, rows: list[dict]) -> str:
    """The table as CSV: figures at full precision (``repr``), an absent one empty, the reasons
    and errors in ``notes``."""
    keys = SUBTRACKS[subtrack].keys
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "team", "submission", "phase", "uploaded", "file", *keys, "notes"])
    for row in rows:
        writer.writerow([
            "" if row["rank"] is None else row["rank"], row["team"], row["submission"], row["phase"], row["uploaded"],
            row["file"], *(repr(row["scores"][k]) if k in row["scores"] else "" for k in keys), _notes(row),
        ])
    return out.getvalue()


def render_markdown(subtrack: str, rows: list[dict], *, superseded: list[tuple[BulkSubmission, int]],
                    bulk: BulkDownload, judge: str) -> str:
    """The table as Markdown (figures to 4 decimals), with what was superseded, not fetched or
    skipped, and who judged."""
    sub = SUBTRACKS[subtrack]
    keys = sub.keys
    ranked_by = ranking_candidate(subtrack)
    lines = [f"# {sub.id} {sub.name}: submissions judged after the phase", "",
             f"Each team's last submission, ranked by {ranked_by} (ties share a rank). Judge: {judge}.", ""]
    head = ["rank", "team", "submission", "uploaded", *(KEYS[k].title for k in keys), "notes"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---:" if h == "rank" or h in [KEYS[k].title for k in keys] else "---" for h in head) + "|")
    for row in rows:
        cells = ["" if row["rank"] is None else str(row["rank"]), _md(row["team"]), str(row["submission"]),
                 _md(row["uploaded"]), *(_figure(row["scores"].get(k)) for k in keys), _md(_notes(row))]
        lines.append("| " + " | ".join(cells) + " |")
    if superseded:
        lines += ["", "Superseded (a later submission of the same team counts):", ""]
        lines += [f"- {_md(s.name)}: superseded by submission {by}" for s, by in superseded]
    if bulk.not_fetched:
        lines += ["", f"Not in the download ({FAILED_LIST}: Codabench's page could not fetch them):", ""]
        lines += [f"- {_md(line)}" for line in bulk.not_fetched]
    if bulk.skipped:
        lines += ["", "Skipped (not named as a bulk download names submissions):", ""]
        lines += [f"- {_md(name)}" for name in bulk.skipped]
    return "\n".join(lines) + "\n"


def write_tables(out: Path, subtrack: str, rows: list[dict], **markdown) -> list[Path]:
    """Write the CSV and Markdown tables of a sub-track into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((CSV_NAME, render_csv(subtrack, rows)), (MARKDOWN_NAME, render_markdown(subtrack, rows, **markdown))):
        path = out / name.format(sub=subtrack)
        path.write_text(text, encoding="utf-8", newline="")
        written.append(path)
    return written


def _notes(row: dict) -> str:
    if row["errors"]:
        return "not scored: " + " / ".join(row["errors"][:3])
    grouped: dict[str, list[str]] = {}
    for key, why in row["absent"].items():
        grouped.setdefault(why, []).append(key)
    return "; ".join(f"{', '.join(keys)} absent: {why}" for why, keys in grouped.items())


def _figure(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4f}"


def _md(text: str) -> str:
    """A table cell: pipes escaped, line breaks flattened, participants' names quoted when odd."""
    flat = " ".join(str(text).split())
    return flat.replace("|", "\\|") if flat.isprintable() else quoted(flat)
