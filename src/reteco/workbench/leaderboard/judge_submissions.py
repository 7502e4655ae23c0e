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

Reading the download. ``bulk_submissions.zip`` is opened with the submissions' own safe opener
(``reteco.formats.submission.open_archive``) and each file is copied to disk chunk by chunk,
never whole in memory. Caps: each file at most ``MAX_MEMBER_BYTES`` (2 GiB, a submission's own
limit) and all of them together ``MAX_BULK_BYTES`` (64 GiB); declared sizes over the total refuse
the download before anything is read (exit 1, naming it). A file that cannot be read (its CRC
wrong, encrypted, over its cap, a compression method unknown) is reported for its submission,
which is then "not scored" with that message, and the others are still judged; an entry with
an unsafe path (``../x``, absolute) or a name that appears twice (which copy is meant cannot be
told) is listed as refused, never read. A zip that cannot be listed at all (not a zip, cut
short, a name flagged UTF-8 that is not: Python's zipfile decodes every name when it opens the
zip) is exit 1 naming it and, where it can, the entry. A name too long for the file system is
read under a short local name (its id and extension); messages keep the entry's name.

What is scored. Each team's (owner's) last submission per phase, the one ``Force_Last`` keeps on
the leaderboard (the highest id); the earlier ones are listed as superseded. Every submission
goes through the leaderboard's scoring path (``reteco.workbench.leaderboard.standings.score_entries``:
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
import dataclasses
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reteco.workbench.leaderboard.standings import (
    Entry,
    ScoringOptions,
    _absent_reason,  # the leaderboard's reason for an absent key: one wording for both tables
    competition_ranks,
    ranking_candidate,
    score_entries,
)
from reteco.formats.submission import DEFAULT_MAX_BYTES, open_archive
# What each submission's verdicts cost (empty: not judged, or no prices): the leaderboard's figures.
from reteco.workbench.leaderboard.usage import USAGE_COLUMNS
from reteco.problems import InputError, quoted
from reteco.subtracks import KEYS, SUBTRACKS

BULK_ZIP = "bulk_submissions.zip"
FAILED_LIST = "failed.txt"
# The name download_many gives, after the browser's replacement of ":", "/" and "\" by "_".
BULK_NAME = re.compile(
    r"^(?P<id>\d+)_(?P<owner>.+?)_PhaseId(?P<phase>\d+)_(?P<date>\d{4}-\d{2}-\d{2})_(?P<time>\d{2}-\d{2})_(?P<file>.+)$"
)
# The caps on reading a bulk download: each file at most a submission's own limit (2 GiB, it is one
# submission's upload), all of them together at most MAX_BULK_BYTES. Declared sizes over the total are
# refused before anything is read; each file is copied to disk chunk by chunk and stopped at its cap.
MAX_MEMBER_BYTES = DEFAULT_MAX_BYTES
MAX_BULK_BYTES = 64 * 1024**3
# failed.txt lists a few names; more than this is not Codabench's.
MAX_FAILED_LIST_BYTES = 1024**2
# A file is written under its entry's name when the file system can hold it (255 bytes at most).
MAX_LOCAL_NAME_BYTES = 200
_SIZE_ADVICE = "download fewer submissions at a time, or judge the files from a folder"
_MEMBER_ADVICE = "no submission Codabench accepts is that large: download it again"
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
    problem: str | None = None  # why its file could not be read from the download (then it is not scored)


@dataclass
class BulkDownload:
    """A bulk download read: its submissions, and what was not one."""

    submissions: list[BulkSubmission]
    not_fetched: list[str]  # failed.txt's lines: submissions Codabench's page could not fetch
    skipped: list[str]  # entries whose name is not a bulk download's
    refused: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (entry, why) never read


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


def read_bulk_download(source: Path, work: Path, *, max_member_bytes: int = MAX_MEMBER_BYTES,
                       max_bulk_bytes: int = MAX_BULK_BYTES) -> BulkDownload:
    """The submissions of ``bulk_submissions.zip`` (copied into ``work``) or of a folder of
    its files. InputError when there is none, or when the zip itself cannot be read.

    The zip is read with the submissions' own safe opener (``formats.submission.open_archive``):
    an entry with an unsafe path or a repeated name is listed in ``refused``; a file that cannot
    be read (damaged, encrypted, over ``max_member_bytes``) keeps its submission with the
    ``problem`` said, so that submission is reported and the others are still judged."""
    source = Path(source)
    if source.is_file():
        if not zipfile.is_zipfile(source):
            raise InputError(f"not a zip: give {BULK_ZIP} as downloaded, or a folder of its files", str(source))
        return _read_bulk_zip(source, Path(work) / "bulk", max_member_bytes, max_bulk_bytes)
    if not source.is_dir():
        raise InputError("no such file or folder", str(source))
    submissions, skipped, not_fetched = [], [], []
    for path in sorted(source.iterdir(), key=lambda p: p.name):
        if path.name == FAILED_LIST:
            with open(path, "rb") as listing:
                not_fetched += _failed_lines(listing.read(MAX_FAILED_LIST_BYTES))
        elif not path.name.startswith("."):
            _add_entry(path.name, path, None, submissions, skipped)
    return _bulk_download(submissions, not_fetched, skipped, [], source)


def _read_bulk_zip(source: Path, folder: Path, max_member_bytes: int, max_bulk_bytes: int) -> BulkDownload:
    refused: list[tuple[str, str]] = []
    archive = open_archive(source, max_bytes=max_bulk_bytes, refused=refused, advice=_SIZE_ADVICE)
    folder.mkdir(parents=True, exist_ok=True)
    submissions: list[BulkSubmission] = []
    skipped: list[str] = []
    not_fetched: list[str] = []
    for name in archive.files:
        if "/" in name:  # the browser writes flat names; anything else is not its entry
            skipped.append(name)
            continue
        if name == FAILED_LIST:
            listing = io.BytesIO()
            try:
                archive.copy_stored(name, listing, limit=MAX_FAILED_LIST_BYTES, advice="it is not Codabench's")
            except InputError as exc:
                refused.append((name, "; ".join(exc.problems.lines())))
            not_fetched += _failed_lines(listing.getvalue())
            continue
        parts = parse_bulk_name(name)
        local = folder / (name if len(name.encode("utf-8")) <= MAX_LOCAL_NAME_BYTES else _short_name(parts, len(submissions)))
        problem = None
        if parts is not None:
            try:
                with open(local, "wb") as sink:
                    archive.copy_stored(name, sink, limit=max_member_bytes, advice=_MEMBER_ADVICE)
            except InputError as exc:
                local.unlink(missing_ok=True)
                problem = "; ".join(exc.problems.lines())
        _add_entry(name, local, problem, submissions, skipped)
    skipped += archive.ignored
    return _bulk_download(submissions, not_fetched, skipped, refused, source)


def _add_entry(name: str, path: Path, problem: str | None, submissions: list[BulkSubmission], skipped: list[str]) -> None:
    parts = parse_bulk_name(name)
    if parts is None:
        skipped.append(name)
        return
    submissions.append(BulkSubmission(path, name, parts["id"], parts["owner"], parts["phase"],
                                      f"{parts['date']} {parts['time']}", parts["file"], problem))


def _bulk_download(submissions, not_fetched, skipped, refused, source: Path) -> BulkDownload:
    if not submissions:
        said = "".join(f"; refused {quoted(name)}: {why}" for name, why in refused[:5])
        raise InputError(
            "no submission named as Codabench's bulk download names them "
            f"(<id>_<owner>_PhaseId<phase>_<date>_<time>_<file>){said}", str(source))
    return BulkDownload(sorted(submissions, key=lambda s: s.name), not_fetched, skipped, refused)


def _failed_lines(data: bytes) -> list[str]:
    """failed.txt's lines after its heading: the submissions Codabench's page could not fetch."""
    text = data.decode("utf-8", errors="replace")
    return [line.strip() for line in text.splitlines()[1:] if line.strip()]


def _short_name(parts: dict | None, index: int) -> str:
    """A local file name for an entry whose name is too long for the file system: its id and
    the extension of its file, which tells how the submission is opened."""
    suffixes = "".join(PurePosixPath(parts["file"]).suffixes[-2:]) if parts else ""
    suffixes = suffixes if len(suffixes.encode("utf-8")) <= 20 else ""
    return f"{parts['id'] if parts else 'entry'}_{index}{suffixes}"


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
    readable = [s for s in kept if s.problem is None]
    entries = [Entry(s.path, s.name, s.owner, str(s.submission_id)) for s in readable]
    scored = iter(score_entries(Path(reference_dir), entries, options, jobs=jobs, progress=progress, label=subtrack))
    outcomes = [next(scored) if s.problem is None else {"ok": False, "kind": "input", "errors": [s.problem]}
                for s in kept]
    return table_rows(subtrack, kept, outcomes)


def table_rows(subtrack: str, kept: list[BulkSubmission], outcomes: list[dict]) -> list[dict]:
    """Rows of the table, ranked first (best first, ties sharing a rank), then the unranked and
    those that could not be scored (by team). Each row: rank (None: unranked), team,
    submission, phase, uploaded, file, scores (key -> figure), absent (key -> why), errors,
    flagged (answers the judge flagged as attempts to influence it; None when it was not asked)."""
    keys = SUBTRACKS[subtrack].keys
    candidate = ranking_candidate(subtrack)
    rows = []
    for s, outcome in zip(kept, outcomes):
        row = {"rank": None, "team": s.owner, "submission": s.submission_id, "phase": s.phase_id,
                "uploaded": s.uploaded, "file": s.name, "scores": {}, "absent": {}, "errors": [],
                "flagged": outcome.get("flagged_answers")}
        row["judge_usage"] = outcome.get("judge_usage") if outcome["ok"] else None
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
    writer.writerow(["rank", "team", "submission", "phase", "uploaded", "file", *keys, "flagged_answers", "notes",
                     *USAGE_COLUMNS])
    for row in rows:
        usage = row.get("judge_usage") or {}
        writer.writerow([
            "" if row["rank"] is None else row["rank"], row["team"], row["submission"], row["phase"], row["uploaded"],
            row["file"], *(repr(row["scores"][k]) if k in row["scores"] else "" for k in keys),
            "" if row["flagged"] is None else row["flagged"], _notes(row),
            *("" if usage.get(c) is None else usage[c] for c in USAGE_COLUMNS),
        ])
    return out.getvalue()


def usage_lines(rows: list[dict]) -> list[str]:
    """What the table's verdicts cost, summed over the submissions (the CSV has each one's)."""
    usages = [r["judge_usage"] for r in rows if r.get("judge_usage")]
    if not usages:
        return []
    total = {c: sum(u.get(c) or 0 for u in usages) for c in USAGE_COLUMNS}
    priced = all(u.get("money_usd") is not None for u in usages)
    money = f"${total['money_usd']:,.2f} at the judge config's prices" if priced else "no prices in the judge config"
    missing = f"; {total['calls_usage_not_recorded']:,} calls' usage not recorded" if total["calls_usage_not_recorded"] else ""
    return ["", f"Judge usage of these {len(usages)} submissions' verdicts: {total['calls']:,} calls, "
                f"{total['prompt_tokens']:,} prompt tokens ({total['cached_tokens']:,} cached), "
                f"{total['completion_tokens']:,} completion tokens{missing}; {money}."]




def render_markdown(subtrack: str, rows: list[dict], *, superseded: list[tuple[BulkSubmission, int]],
                    bulk: BulkDownload, judge: str) -> str:
    """The table as Markdown (figures to 4 decimals), with what was superseded, not fetched or
    skipped, and who judged."""
    sub = SUBTRACKS[subtrack]
    keys = sub.keys
    ranked_by = ranking_candidate(subtrack)
    lines = [f"# {sub.name}: submissions judged after the phase", "",
             f"Each team's last submission, ranked by {ranked_by} (ties share a rank). Judge: {judge}. "
             "Flagged: answers the judge flagged as attempts to influence it, for the organizers' review.", ""]
    head = ["rank", "team", "submission", "uploaded", *(KEYS[k].title for k in keys), "flagged", "notes"]
    lines.append("| " + " | ".join(head) + " |")
    numeric = {"rank", "flagged", *(KEYS[k].title for k in keys)}
    lines.append("|" + "|".join("---:" if h in numeric else "---" for h in head) + "|")
    for row in rows:
        cells = ["" if row["rank"] is None else str(row["rank"]), _md(row["team"]), str(row["submission"]),
                 _md(row["uploaded"]), *(_figure(row["scores"].get(k)) for k in keys),
                 "" if row["flagged"] is None else str(row["flagged"]), _md(_notes(row))]
        lines.append("| " + " | ".join(cells) + " |")
    lines += usage_lines(rows)
    if superseded:
        lines += ["", "Superseded (a later submission of the same team counts):", ""]
        lines += [f"- {_md(s.name)}: superseded by submission {by}" for s, by in superseded]
    if bulk.not_fetched:
        lines += ["", f"Not in the download ({FAILED_LIST}: Codabench's page could not fetch them):", ""]
        lines += [f"- {_md(line)}" for line in bulk.not_fetched]
    if bulk.refused:
        lines += ["", "Refused (never read from the download):", ""]
        lines += [f"- {quoted(name)}: {_md(why)}" for name, why in bulk.refused]
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
