"""After a phase: the submissions of a Codabench phase, as its bulk download lays them out, judged.

Where a phase does not judge in the scoring program (no judge setup in its reference data, or a
worker without network), its 2b/2c judge columns stay empty on the platform, and the organizers
judge the submissions here (``reteco judge-submissions``); the same command re-scores a judged
phase from the cache once its archives are imported (``reteco judge --import-archive``).

How the download is read and which submissions are kept (the platform's rule, Codabench's
source cited): ``reteco.workbench.leaderboard.bulk_download``, which every command reading a
phase's submissions shares.

What is scored. The selection's kept submissions (``bulk_download.select``: per owner the last
that passes the input checks); the superseded and failed ones are listed with why. Every submission
goes through the leaderboard's scoring path (``reteco.workbench.leaderboard.standings.score_entries``:
``score_submission`` with the judge and the cache), so a figure here is what ``reteco score``
gives. The table: per team its rank by the sub-track's ranking figure (``ranking_candidate``:
nDCG@10, 2b's judge_mean; ties share a rank, ``competition_ranks``), the submission, every
leaderboard key of the sub-track (judge columns included), and why a key is absent.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from reteco.problems import quoted
from reteco.subtracks import KEYS, SUBTRACKS
from reteco.workbench.leaderboard.bulk_download import BulkSubmission, Selection
from reteco.workbench.leaderboard.standings import (
    Entry,
    ScoringOptions,
    _absent_reason,  # the leaderboard's reason for an absent key: one wording for both tables
    competition_ranks,
    ranking_candidate,
    score_entries,
)

# What each submission's verdicts cost (empty: not judged, or no prices): the leaderboard's figures.
from reteco.workbench.leaderboard.usage import USAGE_COLUMNS, run_text, run_usage

CSV_NAME = "judged_submissions_{sub}.csv"
MARKDOWN_NAME = "judged_submissions_{sub}.md"
SELECTION_NAME = "selection_{sub}.json"


def scoring_check(subtrack: str, reference_dir: Path, options: ScoringOptions, *, jobs: int, progress: bool,
                  scored: dict[Path, dict]):
    """The selection's check (``bulk_download.select``) for a command that scores the kept
    submissions anyway: each is scored through the leaderboard's path (``score_entries``), its
    outcome kept in ``scored``, and it fails the check exactly when scoring refuses its input
    (what makes the scoring program exit 1 on the platform). Each file is read once, and the kept
    ones are not scored again (``score_selection``)."""
    def check(paths: list[Path]) -> list[str | None]:
        entries = [Entry(path, path.name, path.name, "") for path in paths]
        outcomes = score_entries(Path(reference_dir), entries, options, jobs=jobs, progress=progress, label=subtrack)
        verdicts: list[str | None] = []
        for path, outcome in zip(paths, outcomes):
            scored[path] = outcome
            refused = not outcome["ok"] and outcome["kind"] == "input"
            verdicts.append((outcome["errors"][0] if outcome["errors"] else "invalid") if refused else None)
        return verdicts

    return check


def score_selection(subtrack: str, reference_dir: Path, kept: list[BulkSubmission], options: ScoringOptions, *,
                    jobs: int, progress: bool, name=None, scored: dict[Path, dict] | None = None
                    ) -> tuple[list[Entry], list[dict]]:
    """The kept submissions as the leaderboard's entries (named by ``name(owner)``, the owner by
    default; the file is the download's entry name) and their outcomes through the leaderboard's
    scoring path (those ``scoring_check`` already has in ``scored`` are not scored again); one
    that cannot be read here is "not scored" with its reason."""
    name = name or (lambda owner: owner)
    scored = scored if scored is not None else {}
    entries = [Entry(s.path, s.name, name(s.owner), "") for s in kept]
    todo = [e for e, s in zip(entries, kept) if s.problem is None and s.path not in scored]
    fresh = dict(zip((e.path for e in todo), score_entries(Path(reference_dir), todo, options, jobs=jobs,
                                                           progress=progress, label=subtrack) if todo else []))
    outcomes = [{"ok": False, "kind": "input", "errors": [s.problem]} if s.problem is not None
                else scored.get(s.path) or fresh[s.path] for s in kept]
    return entries, outcomes


def judge_bulk(subtrack: str, reference_dir: Path, kept: list[BulkSubmission], options: ScoringOptions, *,
               jobs: int, progress: bool, selection: Selection | None = None,
               scored: dict[Path, dict] | None = None) -> list[dict]:
    """Score (and judge) every kept submission through the leaderboard's scoring path
    (``score_selection``; ``scored``: outcomes the selection's check already has); one row per
    submission, ranked (``table_rows``), each named by its owner (and team, where the selection
    has its name)."""
    name = selection.team if selection is not None else None
    _, outcomes = score_selection(subtrack, reference_dir, kept, options, jobs=jobs, progress=progress, scored=scored)
    return table_rows(subtrack, kept, outcomes, name=name)


def table_rows(subtrack: str, kept: list[BulkSubmission], outcomes: list[dict], *, name=None) -> list[dict]:
    """Rows of the table, ranked first (best first, ties sharing a rank), then the unranked and
    those that could not be scored (by team). Each row: rank (None: unranked), team,
    submission, phase, uploaded, file, scores (key -> figure), absent (key -> why), errors,
    flagged (answers the judge flagged as attempts to influence it; None when it was not asked)."""
    keys = SUBTRACKS[subtrack].keys
    candidate = ranking_candidate(subtrack)
    rows = []
    for s, outcome in zip(kept, outcomes):
        row = {"rank": None, "team": name(s.owner) if name else s.owner, "owner": s.owner, "submission": s.submission_id, "phase": s.phase_id,
                "uploaded": s.uploaded, "file": s.name, "scores": {}, "absent": {}, "errors": [],
                "flagged": outcome.get("flagged_answers")}
        row["judge_usage"] = outcome.get("judge_usage") if outcome["ok"] else None
        row["judge_run"] = outcome.get("judge_run") if outcome["ok"] else None
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
    writer.writerow(["rank", "team", "owner", "submission", "phase", "uploaded", "file", *keys, "flagged_answers", "notes",
                     *USAGE_COLUMNS])
    for row in rows:
        usage = row.get("judge_usage") or {}
        writer.writerow([
            "" if row["rank"] is None else row["rank"], row["team"], row.get("owner", row["team"]), row["submission"], row["phase"], row["uploaded"],
            row["file"], *(repr(row["scores"][k]) if k in row["scores"] else "" for k in keys),
            "" if row["flagged"] is None else row["flagged"], _notes(row),
            *("" if usage.get(c) is None else usage[c] for c in USAGE_COLUMNS),
        ])
    return out.getvalue()


def usage_lines(rows: list[dict]) -> list[str]:
    """What the table's verdicts cost, attributed per submission and summed (the CSV has each
    one's): a verdict two submissions share counts in both, so this is no spend (``run_lines``)."""
    usages = [r["judge_usage"] for r in rows if r.get("judge_usage")]
    if not usages:
        return []
    total = {c: sum(u.get(c) or 0 for u in usages) for c in USAGE_COLUMNS}
    priced = all(u.get("money_usd") is not None for u in usages)
    money = f"${total['money_usd']:,.2f} at the judge config's prices" if priced else "no prices in the judge config"
    missing = f"; {total['calls_usage_not_recorded']:,} calls' usage not recorded" if total["calls_usage_not_recorded"] else ""
    return ["", f"Per-team attribution (each submission's verdicts, whichever run paid; a verdict several submissions "
                f"share counts in each; not what was paid): {len(usages)} submissions, {total['calls']:,} calls, "
                f"{total['prompt_tokens']:,} prompt tokens ({total['cached_tokens']:,} cached), "
                f"{total['completion_tokens']:,} completion tokens{missing}; {money}."]


def run_lines(rows: list[dict]) -> list[str]:
    """What this command's run sent and paid, from the server's usage (``usage.run_usage``)."""
    return [f"Judge, {run_text(run_usage(rows))} (the requests sent now, as the server reported them)."]


def render_markdown(subtrack: str, rows: list[dict], *, selection: Selection | None, judge: str) -> str:
    """The table as Markdown (figures to 4 decimals), with who judged, what this run paid and the
    per-team attribution, and the selection: what was kept, superseded, failed, not fetched or
    skipped."""
    sub = SUBTRACKS[subtrack]
    keys = sub.keys
    ranked_by = ranking_candidate(subtrack)
    lines = [f"# {sub.name}: submissions judged after the phase", "",
             f"Each owner's submission that the platform shows (below: the selection), ranked by {ranked_by} "
             f"(ties share a rank). Judge: {judge}. "
             "Flagged: answers the judge flagged as attempts to influence it, for the organizers' review.", ""]
    # A figure no submission has (BERTScore without its model) is no column: one line says why,
    # instead of an empty column and the same note on every row; the CSV keeps its column.
    scored = [r for r in rows if not r["errors"]]
    dropped = [k for k in keys if scored and not any(k in r["scores"] for r in scored)]
    keys = tuple(k for k in keys if k not in dropped)
    head = ["rank", "team", "submission", "uploaded", *(KEYS[k].title for k in keys), "flagged", "notes"]
    lines.append("| " + " | ".join(head) + " |")
    numeric = {"rank", "flagged", *(KEYS[k].title for k in keys)}
    lines.append("|" + "|".join("---:" if h in numeric else "---" for h in head) + "|")
    for row in rows:
        cells = ["" if row["rank"] is None else str(row["rank"]), _md(row["team"]), str(row["submission"]),
                 _md(row["uploaded"]), *(_figure(row["scores"].get(k)) for k in keys),
                 "" if row["flagged"] is None else str(row["flagged"]), _md(_notes(row, skip=dropped))]
        lines.append("| " + " | ".join(cells) + " |")
    if dropped:
        reasons = "; ".join(f"{KEYS[k].title}: {scored[0]['absent'].get(k, 'absent')}" for k in dropped)
        lines += ["", f"Not reported (no submission has it): {_md(reasons)}."]
    if subtrack_judged(subtrack):
        lines += ["", *run_lines(rows)]
    lines += usage_lines(rows)
    if selection is not None:
        lines += ["", *selection.lines(_md)]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_tables(out: Path, subtrack: str, rows: list[dict], **markdown) -> list[Path]:
    """Write the CSV and Markdown tables of a sub-track into ``out``, and the selection as JSON
    (``selection_<sub>.json``) when there is one; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    texts = [(CSV_NAME, render_csv(subtrack, rows)), (MARKDOWN_NAME, render_markdown(subtrack, rows, **markdown))]
    if markdown.get("selection") is not None:
        texts.append((SELECTION_NAME, json.dumps(markdown["selection"].record(), indent=2, ensure_ascii=False) + "\n"))
    for name, text in texts:
        path = out / name.format(sub=subtrack)
        path.write_text(text, encoding="utf-8", newline="")
        written.append(path)
    return written


def subtrack_judged(subtrack: str) -> bool:
    return SUBTRACKS[subtrack].judged


def _notes(row: dict, skip: list[str] = ()) -> str:
    if row["errors"]:
        return "not scored: " + " / ".join(row["errors"][:3])
    grouped: dict[str, list[str]] = {}
    for key, why in row["absent"].items():
        if key in skip:
            continue
        grouped.setdefault(why, []).append(key)
    return "; ".join(f"{', '.join(keys)} absent: {why}" for why, keys in grouped.items())


def _figure(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.4f}"


def _md(text: str) -> str:
    """A table cell: pipes escaped, line breaks flattened, participants' names quoted when odd."""
    flat = " ".join(str(text).split())
    return flat.replace("|", "\\|") if flat.isprintable() else quoted(flat)
