"""Ratings of judged answers on the judge's 1-5 scale, by the LLM judge or by human raters.

The input of the judge-human agreement check (``reteco.metrics.agreement``): two long CSV files,
one for the judge and one for the humans (or a second judge standing in for them), each with
the header ::

    item_id,conversation_id,dimension,rater,score[,system]

- ``item_id``: one judged answer (e.g. a participant system's answer to one target turn);
- ``conversation_id``: the conversation the item belongs to (the agreement's bootstrap resamples
  conversations); one item has one conversation_id on every row;
- ``dimension``: one of ``DIMENSIONS`` (the judge's five prompts), written exactly so;
- ``rater``: who gave the score (the judge's name in the judge's file; several human raters
  per item in the humans' file);
- ``score``: an integer 1..5, written as the digit alone (``3``, not ``3.0``);
- ``system`` (optional): the participant system that produced the item; one item has one
  system on every row; when present it must be filled on every row.

Columns may come in any order; every value is stripped of surrounding whitespace; blank lines,
a UTF-8 byte-order mark and CRLF line endings are fine; quoted fields follow the usual CSV rules.

Errors (every bad line is named, up to ``MAX_LISTED_ERRORS``, as ``FILE:LINE: error: ...``; the
file's own values appear through ``quoted()``): invalid UTF-8, a file that is empty or holds only
its header, a missing, unknown or repeated column, a row with the wrong number of fields, an
empty value, an unknown dimension, a score that is not an integer 1..5, a repeated (item,
dimension, rater), an item whose conversation_id (or system) differs between rows, and, for a
file read with ``single_rater=True`` (the judge's), a second rater name.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from reteco.problems import InputError, Problems, quoted
from reteco.subtracks import DIMENSIONS

SCORES = (1, 2, 3, 4, 5)

REQUIRED_COLUMNS = ("item_id", "conversation_id", "dimension", "rater", "score")
OPTIONAL_COLUMNS = ("system",)
HEADER_HINT = "the header must be item_id,conversation_id,dimension,rater,score (optionally followed by system)"
_SCORE_TEXT = {str(s): s for s in SCORES}


@dataclass(frozen=True)
class Rating:
    """One row: ``rater`` gave ``score`` (1..5) to ``item_id`` on ``dimension``."""

    item_id: str
    conversation_id: str
    dimension: str
    rater: str
    score: int
    system: str | None  # None when the file has no system column
    line: int  # the row's first line in its file


@dataclass(frozen=True)
class Ratings:
    """All rows of one ratings file, in file order."""

    file: str  # the file as named in messages
    rows: tuple[Rating, ...]
    has_system: bool

    def raters(self) -> list[str]:
        """The rater names, sorted."""
        return sorted({r.rater for r in self.rows})


def read_ratings(path: Path | str, *, single_rater: bool = False) -> Ratings:
    """Read a ratings CSV (module docstring); InputError listing every bad line.

    ``single_rater=True`` is for the judge's file, which must name one rater (the judge) on
    every row.
    """
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError("not UTF-8 text; save the CSV as UTF-8", name, line) from None
    if not text.strip():
        raise InputError(f"the file is empty; {HEADER_HINT}", name, 1)
    ratings = _parse(text, name)
    if single_rater:
        require_single_rater(ratings)
    return ratings


def require_single_rater(ratings: Ratings) -> None:
    """InputError at the first row whose rater differs from the first row's (a judge's file)."""
    first = ratings.rows[0]
    for row in ratings.rows:
        if row.rater != first.rater:
            raise InputError(
                f"rater {quoted(row.rater)} here but {quoted(first.rater)} on line {first.line}; "
                "the judge's file has one rater, the judge",
                ratings.file,
                row.line,
            )


def _parse(text: str, name: str) -> Ratings:
    problems = Problems()
    reader = csv.reader(io.StringIO(text, newline=""))
    columns: dict[str, int] | None = None
    header_line = 0
    rows: list[Rating] = []
    first_line_of: dict[tuple[str, str, str], int] = {}  # (item, dimension, rater) -> line
    conversation_of: dict[str, tuple[str, int]] = {}  # item -> (conversation, line)
    system_of: dict[str, tuple[str, int]] = {}  # item -> (system, line)
    end_of_previous = 0
    while True:
        start = end_of_previous + 1  # a quoted field may span lines: name the record's first
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.error(name, reader.line_num, f"not readable as CSV: {exc}")
            break
        end_of_previous = reader.line_num
        if not fields or all(not f.strip() for f in fields):
            continue
        values = [f.strip() for f in fields]
        if columns is None:
            header_line = start
            columns = _header(values, name, start)  # raises: nothing else can be read without it
            continue
        if len(values) != len(columns):
            problems.error(name, start, f"expected {len(columns)} fields ({','.join(columns)}), found {len(values)}")
            continue
        record = {column: values[index] for column, index in columns.items()}
        empty = [c for c in columns if not record[c]]
        if empty:
            problems.error(name, start, f"empty {', '.join(empty)}")
            continue
        dimension, score_text = record["dimension"], record["score"]
        if dimension not in DIMENSIONS:
            problems.error(name, start, f"unknown dimension {quoted(dimension)}; expected one of {', '.join(DIMENSIONS)}")
            continue
        score = _SCORE_TEXT.get(score_text)
        if score is None:
            problems.error(name, start, f"score {quoted(score_text)} is not an integer 1..5")
            continue
        item, conversation, rater = record["item_id"], record["conversation_id"], record["rater"]
        system = record.get("system")
        key = (item, dimension, rater)
        if key in first_line_of:
            problems.error(
                name, start,
                f"item {quoted(item)} already has a {dimension} score by rater {quoted(rater)} (line {first_line_of[key]})",
            )
            continue
        clash = _clash(conversation_of, item, "conversation_id", conversation, "an item belongs to one conversation")
        if clash is None and system is not None:
            clash = _clash(system_of, item, "system", system, "an item comes from one system")
        if clash is not None:
            problems.error(name, start, clash)
            continue
        first_line_of[key] = start
        conversation_of.setdefault(item, (conversation, start))
        if system is not None:
            system_of.setdefault(item, (system, start))
        rows.append(Rating(item, conversation, dimension, rater, score, system, start))
    if problems.has_errors:
        raise InputError(problems)
    if columns is None:  # only blank lines or a CSV error before any header
        raise InputError(f"the file is empty; {HEADER_HINT}", name, 1)
    if not rows:
        raise InputError("no ratings: the file holds only its header", name, header_line)
    return Ratings(name, tuple(rows), "system" in columns)


def _clash(seen: dict[str, tuple[str, int]], item: str, field: str, value: str, rule: str) -> str | None:
    """The message when ``item`` had another ``field`` value on an earlier line, else None."""
    known = seen.get(item)
    if known is None or known[0] == value:
        return None
    return f"item {quoted(item)} has {field} {quoted(value)} here but {quoted(known[0])} on line {known[1]}; {rule}"


def _header(values: list[str], name: str, line: int) -> dict[str, int]:
    known = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
    problems = Problems()
    columns: dict[str, int] = {}
    for index, value in enumerate(values):
        if value not in known:
            problems.error(name, line, f"unknown column {quoted(value)}; {HEADER_HINT}")
        elif value in columns:
            problems.error(name, line, f"column {quoted(value)} appears twice")
        else:
            columns[value] = index
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        problems.error(name, line, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; {HEADER_HINT}")
    if problems.has_errors:
        raise InputError(problems)
    return columns
