"""A Codabench phase's bulk download as an input, and the platform's selection rule: which
submission of each participant the platform's leaderboard shows. Every organizers' command that
reads a phase's submissions (``leaderboard``, ``judge-submissions``, ``human-sample``,
``relevance-pool``; ``label-relevance`` reads the pool) selects them here, and writes the
selection (``Selection.record``, ``Selection.lines``) into what it writes.

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
(``%M-%S``), so the order of a participant's submissions is that of their ids, which grow with
time. The zip says nothing of a submission's status (finished, failed, cancelled).

Reading the download. ``bulk_submissions.zip`` is opened with the submissions' own safe opener
(``reteco.formats.submission.open_archive``) and each file is copied to disk chunk by chunk,
never whole in memory. Caps: each file at most ``MAX_MEMBER_BYTES`` (2 GiB, a submission's own
limit) and all of them together ``MAX_BULK_BYTES`` (64 GiB); declared sizes over the total refuse
the download before anything is read (exit 1, naming it). A file that cannot be read (its CRC
wrong, encrypted, over its cap, a compression method unknown) is reported for its submission,
which is then "not scored" with that message; an entry with an unsafe path (``../x``, absolute)
or a name that appears twice (which copy is meant cannot be told) is listed as refused, never
read. A zip that cannot be listed at all (not a zip, cut short, a name flagged UTF-8 that is
not: Python's zipfile decodes every name when it opens the zip) is exit 1 naming it and, where
it can, the entry. A name too long for the file system is read under a short local name (its id
and extension); messages keep the entry's name. A name in ``failed.txt`` is a submission that
exists but is not in the download: it takes part in the selection as one that cannot be read.

The selection (``select``), the platform's rule. The bundle's leaderboards use ``Force_Last``
(``reteco.workbench.codabench.bundle.competition``). On Codabench a submission reaches the
leaderboard only when its scores arrive: the compute worker marks a scoring program's non-zero
exit Failed and raises before ``push_scores`` (``compute_worker/compute_worker.py``), and only
``upload_submission_scores`` (``src/apps/api/views/submissions.py``) calls
``put_on_leaderboard_by_submission_rule``, whose ``Force_Last`` strategy
(``LastestModeStrategy``, ``src/apps/leaderboards/strategies.py``) takes every submission of the
same owner in the phase off the leaderboard and puts the new one on. So the platform shows, per
owner and phase, the last submission whose scoring finished; a failed one never replaces an
earlier finished one. The download carries no status, so a submission's fate is read from its
content: the scoring program exits 1 exactly when the submission fails the scorer's input
checks, which ``reteco validate`` runs (``reteco.scoring.submission.validate_submission``, the
check given to ``select``). Per owner, from the highest id down: one that fails the checks is
listed as failed with the first message, and the next earlier one is tried; the first that passes
is kept, and every earlier one is superseded by it. A 2b/2c submission is kept whatever the judge
did on the platform (its judge columns are filled here after the phase). A submission that
cannot be read here (damaged in the zip, or in ``failed.txt``) is kept as the owner's
submission, not scored, with the reason: the platform may well show it, and which one it shows
cannot be told without it. An owner whose every submission fails is listed, with no system.
Systems are named by owner (Codabench's user name; Force_Last keeps one submission per user
account, not per team); ``--teams`` files add a team name (``read_team_names``).

One download holds one phase: submissions of several phases (a development phase selected with
the evaluation's) are refused, naming the phases, since each phase has its own leaderboard.

Why one module: the download's layout, the platform's rule and the record of what it kept are
one fact about Codabench, read from its source once; every command that takes a download reads,
selects and reports through here, so the rule cannot drift between them.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reteco.formats.submission import DEFAULT_MAX_BYTES, open_archive
from reteco.outputs.charts import escape
from reteco.problems import InputError, Problems, quoted
from reteco.scoring.submission import validate_submission

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


def is_bulk_download(path: Path) -> bool:
    """Whether ``path`` is laid out as a bulk download: a zip whose flat entries are named as
    ``download_many`` names them (``failed.txt`` aside), or a folder whose every visible entry
    is. A folder of submissions named otherwise is not (the leaderboard names those from their
    file names)."""
    path = Path(path)
    if path.is_file():
        if not zipfile.is_zipfile(path):
            return False
        try:
            with zipfile.ZipFile(path) as z:
                names = [n for n in z.namelist() if not n.endswith("/")]
        except (zipfile.BadZipFile, OSError, UnicodeDecodeError, ValueError):
            return False
    elif path.is_dir():
        names = [p.name for p in path.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    else:
        return False
    names = [n for n in names if n != FAILED_LIST]
    return bool(names) and all(parse_bulk_name(n) is not None for n in names)


# ---------------------------------------------------------------------------------- the selection

RULE = ("per owner, the last submission (highest id) that passes the scoring program's input checks (reteco "
        "validate): the one Codabench's Force_Last leaderboard shows; one that fails them never replaces an "
        "earlier one")
# Where the rule comes from, in Codabench's source (commit c7dbc75).
SOURCES = (
    "src/apps/api/views/submissions.py (download_many: the names; upload_submission_scores: the leaderboard)",
    "src/static/riot/competitions/detail/submission_manager.tag (bulk_submissions.zip, failed.txt)",
    "src/apps/leaderboards/strategies.py (Force_Last: LastestModeStrategy)",
    "compute_worker/compute_worker.py (a non-zero exit: Failed, no scores pushed)",
)


@dataclass
class Selection:
    """What ``select`` kept of a bulk download, and why the rest was not."""

    source: str  # the download's file or folder name (never a full path)
    phase: int
    kept: list  # BulkSubmission, one per owner with a kept submission, by owner
    superseded: list  # (BulkSubmission, id of the owner's kept submission)
    failed: list  # (BulkSubmission, the first message of the checks)
    bulk: BulkDownload
    teams: dict = dataclasses.field(default_factory=dict)  # owner -> team name, where given

    @property
    def owners_without_submission(self) -> list[str]:
        """Owners every one of whose submissions failed: the platform shows none of theirs."""
        kept = {s.owner for s in self.kept}
        return sorted({s.owner for s, _ in self.failed} - kept, key=lambda o: (o.casefold(), o))

    def team(self, owner: str) -> str:
        """The system's name: the owner, with the team's name where one was given."""
        team = self.teams.get(owner)
        return f"{team} ({owner})" if team and team != owner else owner

    def summary(self) -> str:
        """One line: how many entries, owners, kept, superseded, failed."""
        entries = len(self.bulk.submissions)
        owners = len({s.owner for s in self.bulk.submissions})
        unread = sum(1 for s in self.kept if s.problem is not None)
        line = (f"bulk download {self.source} (phase {self.phase}): {entries} submissions of {owners} owners: "
                f"{len(self.kept)} kept (per owner the last that passes the input checks), "
                f"{len(self.superseded)} superseded, {len(self.failed)} failed the input checks")
        if self.owners_without_submission:
            line += f" ({len(self.owners_without_submission)} owners left without a submission)"
        if unread:
            line += f"; {unread} kept cannot be read here"
        return line

    def record(self) -> dict:
        """The selection as JSON, for every output that scores or samples the download."""
        def entry(s, **more):
            return {"owner": s.owner, "submission": s.submission_id, "file": s.name, **more}

        return {
            "source": self.source, "phase": self.phase, "rule": RULE, "codabench_source": list(SOURCES),
            "kept": [entry(s, system=self.team(s.owner), **({"problem": s.problem} if s.problem else {}))
                     for s in self.kept],
            "superseded": [entry(s, superseded_by=by) for s, by in self.superseded],
            "failed": [entry(s, why=why) for s, why in self.failed],
            "owners_without_submission": self.owners_without_submission,
            "not_fetched": list(self.bulk.not_fetched),
            "refused": [{"file": name, "why": why} for name, why in self.bulk.refused],
            "skipped": list(self.bulk.skipped),
        }

    def lines(self, md: Callable[[str], str] = str) -> list[str]:
        """The selection as Markdown lines (``md`` escapes a participant's text for a table)."""
        out = ["## The submissions selected", "", f"From {md(self.source)}: {self.summary()}.", "",
               f"Rule: {RULE} (Codabench's source: {'; '.join(SOURCES)}).", ""]
        if self.failed:
            out += ["Failed the input checks (the platform never showed them):", ""]
            out += [f"- {md(s.name)}: {md(why)}" for s, why in self.failed] + [""]
        if self.owners_without_submission:
            out += [f"Owners without a valid submission: {', '.join(md(o) for o in self.owners_without_submission)}", ""]
        if self.superseded:
            out += ["Superseded (a later submission of the same owner counts):", ""]
            out += [f"- {md(s.name)}: superseded by submission {by}" for s, by in self.superseded] + [""]
        if self.bulk.not_fetched:
            out += [f"Not in the download ({FAILED_LIST}: Codabench's page could not fetch them):", ""]
            out += [f"- {md(line)}" for line in self.bulk.not_fetched] + [""]
        if self.bulk.refused:
            out += ["Refused (never read from the download):", ""]
            out += [f"- {quoted(name)}: {md(why)}" for name, why in self.bulk.refused] + [""]
        if self.bulk.skipped:
            out += ["Skipped (not named as a bulk download names submissions):", ""]
            out += [f"- {md(name)}" for name in self.bulk.skipped] + [""]
        return out


def input_check(reference) -> Callable[[list[Path]], list[str | None]]:
    """A check ``select`` applies: the scorer's input checks (``reteco validate``, no scoring, no
    judge), per submission None when it passes, else its first message. The commands that score
    the kept submissions anyway give ``select`` their scoring instead
    (``judge_submissions.scoring_check``): the same verdict, each file read once."""
    def check(paths: list[Path]) -> list[str | None]:
        out: list[str | None] = []
        for path in paths:
            try:
                validate_submission(reference, path)
            except InputError as exc:
                lines = exc.problems.lines()
                out.append(lines[0] if lines else "invalid")
                continue
            out.append(None)
        return out

    return check


def select(bulk: BulkDownload, check: Callable[[list[Path]], list[str | None]], *, source: str,
           teams: dict[str, str] | None = None) -> Selection:
    """The platform's selection of a bulk download (module docstring). ``check`` takes a list of
    submissions and returns, for each, None when it passes the input checks, else the first
    message (``input_check(reference)``, or a command's scoring). It is asked in rounds, every
    owner's latest untried submission together, so a scoring check runs them in parallel and
    scores only what it must. InputError when the download holds several phases."""
    phases = sorted({s.phase_id for s in bulk.submissions})
    if len(phases) > 1:
        counts = ", ".join(f"phase {p}: {sum(1 for s in bulk.submissions if s.phase_id == p)} submissions"
                           for p in phases)
        raise InputError(f"the download holds submissions of {len(phases)} phases ({counts}); each phase has its own "
                         "leaderboard: download one phase's submissions", source)
    candidates = list(bulk.submissions) + _not_fetched_entries(bulk)
    untried: dict[str, list] = {}
    for s in sorted(candidates, key=lambda s: -s.submission_id):
        untried.setdefault(s.owner, []).append(s)  # each owner's, latest first
    kept, superseded, failed = [], [], []
    while untried:
        batch = [mine[0] for mine in untried.values()]
        readable = [s for s in batch if s.problem is None]
        verdicts = dict(zip((s.name for s in readable), check([s.path for s in readable]) if readable else []))
        for s in batch:
            why = verdicts.get(s.name)  # one that cannot be read here is kept (module docstring)
            why = why.replace(str(s.path), s.name) if why else why  # the entry's name, not where it was copied
            mine = untried[s.owner]
            mine.pop(0)
            if why is None:
                kept.append(s)
                superseded += [(earlier, s.submission_id) for earlier in mine]
                mine.clear()
            else:
                failed.append((s, why))
            if not mine:
                del untried[s.owner]
    kept.sort(key=lambda s: (s.owner.casefold(), s.owner))
    superseded.sort(key=lambda pair: pair[0].submission_id)
    failed.sort(key=lambda pair: pair[0].submission_id)
    return Selection(source, phases[0], kept, superseded, failed, bulk, dict(teams or {}))


def _not_fetched_entries(bulk: BulkDownload) -> list:
    """failed.txt's submissions, which exist on the platform but are not in the download: each
    takes part in the selection as one that cannot be read (``name (reason)`` per line)."""
    known = {s.name for s in bulk.submissions}
    entries = []
    for line in bulk.not_fetched:
        name, _, reason = line.partition(" (")
        name = name.strip().replace(":", "_").replace("/", "_").replace("\\", "_")
        parts = parse_bulk_name(name)
        if parts is None or name in known:
            continue
        why = f"not in the download ({FAILED_LIST}: {reason.rstrip(')') or 'fetch error'}): download it again"
        entries.append(BulkSubmission(Path(name), name, parts["id"], parts["owner"], parts["phase"],
                                      f"{parts['date']} {parts['time']}", parts["file"], why))
    return entries


def read_team_names(path: Path) -> dict[str, str]:
    """``owner,team`` CSV (a header, then a line per owner): the team name each owner's system
    carries beside the owner. InputError naming the file and line of a bad line."""
    problems = Problems()
    names: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the team names ({getattr(exc, 'strerror', None) or exc})", str(path)) from None
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or [h.strip() for h in header] != ["owner", "team"]:
        raise InputError("the first line must be the header owner,team", str(path), 1)
    for line, row in enumerate(rows, 2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != 2 or not row[0].strip() or not row[1].strip():
            problems.error(str(path), line, "expected two non-empty fields: owner,team")
        elif row[0].strip() in names:
            problems.error(str(path), line, f"owner {quoted(row[0].strip())} is named twice")
        else:
            names[row[0].strip()] = row[1].strip()
    if problems.has_errors:
        raise InputError(problems)
    return names


def select_download(source: Path, reference, work: Path, *, teams: dict[str, str] | None = None,
                    check: Callable[[list[Path]], list[str | None]] | None = None) -> Selection:
    """Read ``source`` (a bulk download, zip or folder) into ``work`` and select from it with
    ``check`` (default: the scorer's input checks against ``reference``): what every command calls."""
    bulk = read_bulk_download(source, work)
    return select(bulk, check or input_check(reference), source=Path(source).name, teams=teams)


def selection_html(selection: dict) -> str:
    """The leaderboard page's section: which submissions of the download were ranked, and why the
    others were not (``Selection.record``)."""
    e = escape
    out = [f"<h2>The submissions selected</h2><p>From {e(selection['source'])} (phase {selection['phase']}): "
           f"{len(selection['kept'])} kept, {len(selection['superseded'])} superseded, {len(selection['failed'])} "
           f"failed the input checks. Rule: {e(selection['rule'])}.</p>"]
    listed = [(s["file"], f"failed the input checks: {s['why']}") for s in selection["failed"]]
    listed += [(s["file"], f"superseded by submission {s['superseded_by']}") for s in selection["superseded"]]
    listed += [(line, "not in the download (failed.txt)") for line in selection["not_fetched"]]
    listed += [(r["file"], f"refused: {r['why']}") for r in selection["refused"]]
    if listed:
        out.append("<div class='scroll'><table><tr><th>File</th><th>Not ranked because</th></tr>"
                   + "".join(f"<tr><td>{e(f)}</td><td>{e(why)}</td></tr>" for f, why in listed) + "</table></div>")
    return "".join(out)
