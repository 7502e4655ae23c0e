"""Human review of frozen temporal labels through a CSV file (format ``reteco-temporal-review/1``).
The reading of a reviewed file and its stale-row check (``read_review_rows``, ``stale_row``) serve
the relevance round's review too (``relevance_review.import_review``).

``reteco label-export`` writes one row per labelled (query, document) pair with its current
verdict; a reviewer edits ``temporally_relevant`` (1 or 0) and ``covers`` (period ids
separated by ``;``), may write a ``review_note``, and ``reteco label-import --reviewer NAME``
appends a human override row for every pair whose verdict changed (a row that changes nothing
adds nothing). Columns::

    query, doc_id, temporally_relevant, covers, required_periods, source, labeller,
    labelled_at, prompt_version, rationale, label_line, query_text, passage, review_note

``label_line`` is the line of the verdict the row shows (labels.jsonl): an import refuses a
row whose pair has been relabelled since the export (a stale file must not undo a newer
verdict). Rows for pairs without a verdict may be added by hand (leave ``label_line`` empty).
The import is all or nothing: any bad row stops it before anything is written. The file is
UTF-8 (a byte-order mark, as spreadsheet programs write, is accepted).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from reteco.formats.temporal_labels import LabelRow, TemporalLabels, utc_now
from reteco.problems import InputError, Problems

REVIEW_FORMAT = "reteco-temporal-review/1"
COLUMNS = (
    "query",
    "doc_id",
    "temporally_relevant",
    "covers",
    "required_periods",
    "source",
    "labeller",
    "labelled_at",
    "prompt_version",
    "rationale",
    "label_line",
    "query_text",
    "passage",
    "review_note",
)
_TRUE = {"1", "true", "yes", "y"}
_FALSE = {"0", "false", "no", "n"}


def export_csv(labels: TemporalLabels, path: Path, passages: dict[tuple[str, str], str] | None = None) -> int:
    """Write the current verdicts, sorted by query and doc id; returns the number of rows."""
    passages = passages or {}
    rows = 0
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for (query, doc), row in sorted(labels.effective.items()):
        record = labels.periods[query]
        writer.writerow(
            [
                query,
                doc,
                "1" if row.temporally_relevant else "0",
                ";".join(row.covers),
                " | ".join(
                    f"{p.period}: {p.description}" + (f" [{p.scope_text()}]" if p.scope_text() else "")
                    for p in record.periods
                ),
                row.source,
                row.labeller,
                row.labelled_at,
                row.prompt_version or "",
                row.rationale,
                str(row.line),
                record.text,
                passages.get((query, doc), ""),
                "",
            ]
        )
        rows += 1
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return rows


def read_review_rows(path: Path, reviewer: str, required: tuple[str, ...], problems: Problems):
    """The rows of a reviewed CSV of either kind of label: (line, record, query, doc id) of each
    row whose pair is filled in and not repeated (else an error in ``problems``). InputError when
    the reviewer is unnamed, the file unreadable or a ``required`` column missing."""
    if not reviewer or not reviewer.strip():
        raise InputError("--reviewer must name the person who reviewed the labels", str(path))
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text; save the CSV as UTF-8", str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", str(path)) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in ("query", "doc_id", *required, "label_line") if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; export the labels with `reteco label-export`", str(path))
    seen: set[tuple[str, str]] = set()
    for line, record in enumerate(reader, 2):
        query = (record.get("query") or "").strip()
        doc = (record.get("doc_id") or "").strip()
        if not query or not doc:
            problems.error(str(path), line, "query and doc_id must be filled")
            yield line, record, None, None
            continue
        if (query, doc) in seen:
            problems.error(str(path), line, "the pair appears twice in the file")
            yield line, record, None, None
            continue
        seen.add((query, doc))
        yield line, record, query, doc


def stale_row(current, record: dict, where: tuple[str, int], problems: Problems) -> bool:
    """Whether a reviewed row shows another verdict than the pair's current one (an error added):
    a file exported before a later change must not undo it."""
    line_text = (record.get("label_line") or "").strip()
    if current is not None and line_text != str(current.line):
        problems.error(
            *where,
            f"the pair's verdict is now line {current.line} of labels.jsonl, the file shows line "
            f"{line_text or '(none)'}: it was exported before a later change; export again",
        )
        return True
    if current is None and line_text:
        problems.error(*where, "label_line names a verdict, but the pair has none")
        return True
    return False


def import_csv(labels: TemporalLabels, path: Path, reviewer: str) -> dict:
    """Append a human override for every changed verdict of a reviewed CSV; returns counts."""
    problems = Problems()
    new_rows: list[LabelRow] = []
    counts = {"rows": 0, "unchanged": 0, "overridden": 0, "added": 0}
    now = utc_now()
    for line, record, query, doc in read_review_rows(path, reviewer, ("temporally_relevant", "covers"), problems):
        counts["rows"] += 1
        if query is None:
            continue
        where = (str(path), line)
        periods = labels.periods.get(query)
        if periods is None:
            problems.error(*where, f"query {query!r} is not in the labels' periods.jsonl")
            continue
        relevant_text = (record.get("temporally_relevant") or "").strip().lower()
        if relevant_text not in _TRUE | _FALSE:
            problems.error(*where, "temporally_relevant must be 1 or 0")
            continue
        relevant = relevant_text in _TRUE
        covers = [c.strip() for c in (record.get("covers") or "").replace(",", ";").split(";") if c.strip()]
        known = periods.period_ids()
        bad = [c for c in covers if c not in known]
        if bad or len(set(covers)) != len(covers):
            problems.error(*where, f"covers must list distinct period ids of the query ({', '.join(known) or 'none'})")
            continue
        covers = [c for c in known if c in covers]  # the periods' own order
        current = labels.label_of(query, doc)
        if stale_row(current, record, where, problems):
            continue
        if current is not None and current.temporally_relevant == relevant and list(current.covers) == covers:
            counts["unchanged"] += 1
            continue
        note = (record.get("review_note") or "").strip()
        new_rows.append(
            LabelRow(
                query=query,
                doc_id=doc,
                temporally_relevant=relevant,
                covers=tuple(covers),
                source="human",
                labeller=reviewer.strip(),
                labelled_at=now,
                prompt_version=None,
                rationale=note,
                overrides_line=current.line if current is not None else None,
            )
        )
        counts["overridden" if current is not None else "added"] += 1
    if problems.has_errors:
        raise InputError(problems)
    labels.append(new_rows, f"label-import of {Path(path).name} by {reviewer.strip()}")
    return counts
