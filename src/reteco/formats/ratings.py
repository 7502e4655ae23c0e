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

Ratings keyed by item code (``reteco human-sample``'s blind sheets and the judge's file of the
sample): the annotators never see a conversation or a system, so their sheets hold
``item_id,dimension,rater,score`` only. Read with ``key=`` (``read_item_key``: the organizers'
key file, ``item_id,conversation_id,system[,...]``), ``conversation_id`` and ``system`` may be
left out and are joined from the key; an item the key does not hold, or a conversation_id or
system that differs from the key's, is an error on its line. Several files (one per annotator)
are one set of ratings through ``merge_ratings``.

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
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reteco.problems import InputError, Problems, quoted
from reteco.subtracks import DIMENSIONS

SCORES = (1, 2, 3, 4, 5)

REQUIRED_COLUMNS = ("item_id", "conversation_id", "dimension", "rater", "score")
OPTIONAL_COLUMNS = ("system",)
KEYED_COLUMNS = ("conversation_id", "system")  # joined from the key file when one is given
HEADER_HINT = "the header must be item_id,conversation_id,dimension,rater,score (optionally followed by system)"
KEYED_HINT = ("the header must be item_id,dimension,rater,score (conversation_id and system come from the key; "
              "if present they must match it)")
KEY_COLUMNS = ("item_id", "conversation_id", "system")
SAMPLE_KEY_COLUMNS = ("submission", "turn")  # kept when present (``KeyedItem``)
INCLUSION_COLUMN = "inclusion_probability"  # kept when present: the design's weights (``KeyedItem``)
#: A judge's rater name: ``<model>@<signature>`` (the judge's 16-hex signature, ``JudgeConfig.signature``),
#: so that its ratings can only be attributed to the judge that gave them.
JUDGE_RATER = re.compile(r"(?P<model>.+)@(?P<signature>[0-9a-f]{16})")
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


@dataclass(frozen=True)
class KeyedItem:
    """One item of the key: where it comes from, which annotators never see."""

    conversation_id: str
    system: str
    # What ``reteco human-sample``'s key adds, for ``leaderboard --human-ratings``: the submission
    # (file or folder name) and the turn (its key) the item is; "" when the key has no such column.
    submission: str = ""
    turn: str = ""
    line: int = 0  # the item's line in the key file
    # The item's inclusion probability in the sample's design (``human-sample``'s key column
    # ``inclusion_probability``, in (0, 1]); None when the key has no such column (weight 1).
    inclusion_probability: float | None = None


@dataclass(frozen=True)
class ItemKey:
    """The organizers' key of a blind sample: item code -> conversation and system."""

    file: str
    items: Mapping[str, KeyedItem]


def read_item_key(path: Path | str) -> ItemKey:
    """Read a key file (``reteco human-sample`` writes it): a CSV with at least the columns
    ``item_id,conversation_id,system`` (``submission`` and ``turn`` are kept when present, for
    ``leaderboard --human-ratings``; other columns are ignored), one row per item; InputError
    naming every bad line."""
    name = str(path)
    text = _read_text(path, "the key file")
    reader = csv.reader(io.StringIO(text, newline=""))
    problems = Problems()
    columns: dict[str, int] | None = None
    items: dict[str, KeyedItem] = {}
    first_line: dict[str, int] = {}
    for fields in reader:
        line = reader.line_num
        values = [f.strip() for f in fields]
        if not values or not any(values):
            continue
        if columns is None:
            columns = {v: k for k, v in enumerate(values)}
            missing = [c for c in KEY_COLUMNS if c not in columns]
            if missing:
                raise InputError(f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; a key file's "
                                 f"header holds {','.join(KEY_COLUMNS)}", name, line)
            continue
        if len(values) != len(columns):
            problems.error(name, line, f"expected {len(columns)} fields, found {len(values)}")
            continue
        item, conversation, system = (values[columns[c]] for c in KEY_COLUMNS)
        empty = [c for c, v in zip(KEY_COLUMNS, (item, conversation, system)) if not v]
        if empty:
            problems.error(name, line, f"empty {', '.join(empty)}")
        elif item in items:
            problems.error(name, line, f"item {quoted(item)} is already in the key (line {first_line[item]})")
        else:
            extra = [values[columns[c]] if c in columns else "" for c in SAMPLE_KEY_COLUMNS]
            probability = None
            if INCLUSION_COLUMN in columns:
                text = values[columns[INCLUSION_COLUMN]]
                try:
                    probability = float(text)
                except ValueError:
                    probability = math.nan
                if not 0.0 < probability <= 1.0:
                    problems.error(name, line, f"{INCLUSION_COLUMN} {quoted(text)} is not a probability in (0, 1]")
                    continue
            items[item] = KeyedItem(conversation, system, *extra, line=line, inclusion_probability=probability)
            first_line[item] = line
    if problems.has_errors:
        raise InputError(problems)
    if not items:
        raise InputError(f"no items: a key file holds a header ({','.join(KEY_COLUMNS)}) and one row per item", name, 1)
    return ItemKey(name, items)


def merge_ratings(parts: Sequence[Ratings]) -> Ratings:
    """Several ratings files (one per annotator) as one; InputError when two give the same item,
    dimension and rater, or one item two conversations or systems (each named by file and line)."""
    if len(parts) == 1:
        return parts[0]
    problems = Problems()
    rows: list[Rating] = []
    seen: dict[tuple[str, str, str], Rating] = {}
    where: dict[int, str] = {}
    of_item: dict[str, Rating] = {}
    for part in parts:
        for row in part.rows:
            where[id(row)] = part.file
            first = seen.get((row.item_id, row.dimension, row.rater))
            known = of_item.setdefault(row.item_id, row)
            if first is not None:
                problems.error(part.file, row.line, f"item {quoted(row.item_id)} already has a {row.dimension} score by "
                               f"rater {quoted(row.rater)} in {where[id(first)]} line {first.line}")
            elif (known.conversation_id, known.system) != (row.conversation_id, row.system):
                problems.error(part.file, row.line, f"item {quoted(row.item_id)} has another conversation_id or system "
                               f"here than in {where[id(known)]} line {known.line}")
            else:
                seen[(row.item_id, row.dimension, row.rater)] = row
                rows.append(row)
    if problems.has_errors:
        raise InputError(problems)
    return Ratings(" + ".join(p.file for p in parts), tuple(rows), all(p.has_system for p in parts))


def _read_text(path: Path | str, what: str) -> str:
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError("not UTF-8 text; save the CSV as UTF-8", name, line) from None
    if not text.strip():
        raise InputError(f"the file is empty; {HEADER_HINT}", name, 1)
    return text


def read_ratings(path: Path | str, *, single_rater: bool = False, key: ItemKey | None = None) -> Ratings:
    """Read a ratings CSV (module docstring); InputError listing every bad line.

    ``single_rater=True`` is for the judge's file, which must name one rater (the judge) on
    every row. With ``key``, rows are keyed by item code: conversation_id and system come from
    the key (module docstring).
    """
    name = str(path)
    text = _read_text(path, "the file")
    ratings = _parse(text, name, key)
    if single_rater:
        require_single_rater(ratings)
    return ratings


def judge_signature(rater: str) -> str | None:
    """The judge signature a rater name carries (``JUDGE_RATER``), or None for a human's name."""
    match = JUDGE_RATER.fullmatch(rater)
    return match["signature"] if match else None


def require_judge_rater(ratings: Ratings, option: str) -> str:
    """The signature of the judge of a one-rater file; InputError when its rater does not name one."""
    rater = ratings.rows[0].rater
    signature = judge_signature(rater)
    if signature is None:
        raise InputError(f"rater {quoted(rater)} does not name a judge by its signature: a judge's ratings name their "
                         f"rater <model>@<signature> (as `reteco human-sample --judge-out` writes them), so that "
                         f"figures are never attributed to another judge ({option})", ratings.file, ratings.rows[0].line)
    return signature


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


def _parse(text: str, name: str, item_key: ItemKey | None = None) -> Ratings:
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
            columns = _header(values, name, start, keyed=item_key is not None)  # raises: nothing can be read without it
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
        item, rater = record["item_id"], record["rater"]
        conversation, system = record.get("conversation_id"), record.get("system")
        if item_key is not None:
            keyed = item_key.items.get(item)
            if keyed is None:
                problems.error(name, start, f"item {quoted(item)} is not in the key {item_key.file}")
                continue
            differs = [f"{field} {quoted(mine)} here but {quoted(theirs)} in the key" for field, mine, theirs in (
                ("conversation_id", conversation, keyed.conversation_id), ("system", system, keyed.system))
                if mine is not None and mine != theirs]
            if differs:
                problems.error(name, start, f"item {quoted(item)} has {'; '.join(differs)} {item_key.file}")
                continue
            conversation, system = keyed.conversation_id, keyed.system
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
    return Ratings(name, tuple(rows), "system" in columns or item_key is not None)


def _clash(seen: dict[str, tuple[str, int]], item: str, field: str, value: str, rule: str) -> str | None:
    """The message when ``item`` had another ``field`` value on an earlier line, else None."""
    known = seen.get(item)
    if known is None or known[0] == value:
        return None
    return f"item {quoted(item)} has {field} {quoted(value)} here but {quoted(known[0])} on line {known[1]}; {rule}"


def _header(values: list[str], name: str, line: int, *, keyed: bool = False) -> dict[str, int]:
    known = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
    required = [c for c in REQUIRED_COLUMNS if not (keyed and c in KEYED_COLUMNS)]
    hint = KEYED_HINT if keyed else HEADER_HINT
    problems = Problems()
    columns: dict[str, int] = {}
    for index, value in enumerate(values):
        if value not in known:
            problems.error(name, line, f"unknown column {quoted(value)}; {hint}")
        elif value in columns:
            problems.error(name, line, f"column {quoted(value)} appears twice")
        else:
            columns[value] = index
    missing = [c for c in required if c not in columns]
    if missing:
        problems.error(name, line, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; {hint}")
    if problems.has_errors:
        raise InputError(problems)
    return columns
