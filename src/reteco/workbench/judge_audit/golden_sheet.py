"""Blind grading sheets of a golden set for human annotators (``reteco golden-sheet``), and the
filled sheets read back (``reteco judge-meta --human-grades``).

The golden cases' intended grades are their authors' opinion; humans grading the same answers
blind say whether a reasonable reader agrees (issue 33). Files written (``--out DIR``):

- ``DIR/annotators/<name>/``, handed to one annotator:

  - ``sheet.csv`` (``SHEET_COLUMNS``; opens in a spreadsheet): one row per golden case (an
    answer x a dimension), in an order drawn for that annotator (``random.Random`` seeded by the
    seed and the annotator's name: reproducible, another order per annotator). The row holds the
    opaque item id, the dimension, the sub-track, the turn (history, query), the passages the
    system had and the gold passages, the reference answer and the key points **where the
    dimension's prompt shows them** (``PromptSet.dimensions[d].inputs`` of the prompt version:
    what the judge is shown, the annotator is shown), else ``NOT_SHOWN``; the response; the
    annotator's name; an empty ``grade`` column;
  - ``sheet.jsonl``: the same rows as JSON objects (for reading, or a script); only the CSV is
    read back;
  - ``guide.md``: the rubric of the prompt version, word for word
    (``annotator_guide.annotator_guide``), with this sheet's own instructions.

- ``DIR/key.json``, for the organizers only (outside ``annotators/``): the golden and prompt
  versions, the seed, the annotators, ``pairs_per_tag`` (null: every case), the secret and, per
  item id, its case id.

**A sample of pairs** (``--pairs-per-tag K``, ``pairs_sample``): every graded case of K minimal
pairs per contrast tag, drawn seeded, instead of the whole set; the cases not drawn are not in the
sheets, and the gate against the human consensus keeps their intended grades.

**Blindness.** The sheet holds nothing the golden file writes for the organizers: no intended
grade or allowed range, no case, series or variant id (the passages' document ids are dropped
too: they are named after the series), no tag, kind, purpose or ``answerable`` flag, and the rows
are not in the file's order (the variants of one series would sit together). The item id is
``g`` + the first 12 hex digits of HMAC-SHA256(secret, "golden-v<version>:<case id>"), the
secret drawn from ``secrets`` per sheet set and written to the key only: recomputable by the
organizers, not by an annotator who knows the case ids. What blindness cannot hide: the golden
sets are in the public repository, and the variants of one series are visibly alike.

**Reading back** (``read_grade_sheets``): a filled ``sheet.csv`` per annotator (any order, other
columns ignored or edited freely); ``item_id``, ``annotator`` and ``grade`` are needed, and
``dimension`` when present must be the item's. Each problem is an error naming the file and the
row's first line (a cell may span lines): a missing column, a missing item id or annotator, an
item id the key does not know, a grade that is not a whole number 1..5, an item graded twice by
one annotator (in one file or two). A blank grade is an item not graded (counted, no error).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reteco.judge.prompts import PromptSet
from reteco.problems import InputError, Problems, quoted
from reteco.workbench.judge_audit.annotator_guide import annotator_guide
from reteco.workbench.judge_audit.golden import GoldenCase

ANNOTATORS_FOLDER = "annotators"
SHEET, SHEET_JSONL, GUIDE, KEY = "sheet.csv", "sheet.jsonl", "guide.md", "key.json"
SHEET_COLUMNS = ("item_id", "dimension", "subtrack", "history", "query", "passages", "gold_passages",
                 "reference_answer", "key_points", "response", "annotator", "grade")
# sheet column -> the judge's input it shows (what a dimension's prompt lists in ``inputs``)
_INPUT_OF = {"history": "history", "query": "query", "passages": "evidence", "gold_passages": "gold_evidence",
             "reference_answer": "reference_answer", "key_points": "key_points", "response": "answer"}
NOT_SHOWN = "(not shown for this dimension)"
NO_HISTORY = "(none: this turn opens the conversation)"
ID_RULE = "g + the first 12 hex digits of HMAC-SHA256(secret, 'golden-v<version>:<case id>')"
_ID_HEX = 12
GRADES = (1, 2, 3, 4, 5)
MIN_PER_GRADE = 3  # pairs_sample: cases per (dimension, intended grade), at least

_HOW_TO = """\
You grade responses given to one turn of a conversation, one quality dimension at a time, on a
scale of 1 to 5. Each row of your sheet is one **item**: a response and the dimension to grade
it on, known only by its code (such as `g3f9a0c41d2e7`). Some responses are close variants of
one another; grade each row on its own, by the rules below. Please do not look for these
responses elsewhere, and do not discuss items with other graders before you have finished.

## Your files

- `sheet.csv` (opens in a spreadsheet): one row per item. Write your grade, a whole number
  from 1 to 5, in the `grade` column of every row, and change nothing else (`annotator` already
  holds your name). Work in the sheet's order. Save it as CSV (UTF-8) under the same name.
- `sheet.jsonl`: the same rows, one JSON object per line, if a spreadsheet is awkward to read;
  only `sheet.csv` is collected.
- this guide: the rules. They are the judge's own instructions, word for word
  (prompt version {version}); where they speak of data blocks and of a JSON reply, you read the
  row and write a grade instead, and any flag they mention is not yours to set (but a response
  that tries to influence its grade still gets 1).

The columns of a row. A column the row's dimension is not judged on says
"{not_shown}": grade the dimension on the columns it shows only.

| column | what it holds | the judge's name for it |
|---|---|---|
{fields}
"""

_COLUMN_TEXT = {
    "item_id": "the item's code",
    "dimension": "the quality dimension to grade (its rubric is below)",
    "subtrack": "2b: the system was given the gold passages; 2c: it retrieved its own passages",
    "history": "the conversation before the current turn",
    "query": "the user's current turn: the question the response responds to",
    "passages": "the passages the system was given (2b) or retrieved (2c): what the response may rely on",
    "gold_passages": "the passages the organizers identified as holding what the question asks",
    "reference_answer": "a reply to this turn written by the organizers",
    "key_points": "what a complete reply says, written by the organizers (vital: needed; okay: a useful detail)",
    "response": "the response you grade",
    "annotator": "your name",
    "grade": "your grade, 1 to 5",
}


@dataclass(frozen=True)
class SheetKey:
    """The organizers' key of one sheet set (``key.json``)."""

    golden_version: int
    prompt_version: int
    seed: int
    annotators: tuple[str, ...]
    secret: str
    items: Mapping[str, str]  # item id -> case id


@dataclass(frozen=True)
class HumanGrades:
    """The filled sheets read back: per case id, per annotator, the grade; and the counts."""

    grades: Mapping[str, Mapping[str, int]]  # case id -> {annotator: grade}
    annotators: tuple[str, ...]
    rows: int
    blank: int  # rows read whose grade was left blank


def item_id(secret: str, golden_version: int, case_id: str) -> str:
    """A case's opaque item id (``ID_RULE``)."""
    digest = hmac.new(bytes.fromhex(secret), f"golden-v{golden_version}:{case_id}".encode(), hashlib.sha256)
    return "g" + digest.hexdigest()[:_ID_HEX]


def pairs_sample(cases: Sequence[GoldenCase], per_tag: int, seed: int) -> list[GoldenCase]:
    """The cases of ``per_tag`` minimal pairs per contrast tag, drawn seeded (``random.Random``
    seeded with the seed and the tag), every graded dimension of both answers of each pair, then
    whole answers added until every (dimension, intended grade) of the set has ``MIN_PER_GRADE``
    cases (or all it has); in the golden file's order. A tag with fewer pairs gives them all.

    Why whole pairs: the human figures per tag (the humans' order and hold on the tag's pairs, as
    the gate's) need both answers of a pair graded; why a sample at all: golden v5's 2,640 cases
    are some 20 hours of one person's grading, and three annotators grade each item.
    """
    if per_tag < 1:
        raise ValueError("pairs per tag must be at least 1")
    by_tag: dict[str, set[tuple[str, str, str]]] = {}
    for c in cases:
        for tag, other in c.pairs:
            by_tag.setdefault(tag, set()).add((c.series, c.variant, other))
    chosen: set[tuple[str, str]] = set()
    for tag in sorted(by_tag):
        pairs = sorted(by_tag[tag])
        for series, a, b in random.Random(f"{seed}:golden-pairs:{tag}").sample(pairs, min(per_tag, len(pairs))):
            chosen |= {(series, a), (series, b)}
    # Then every (dimension, intended grade) the set has gets at least MIN_PER_GRADE cases (or all
    # it has), adding whole answers drawn seeded: the humans' exact share per grade needs them.
    for dimension, grade in sorted({(c.item.dimension, c.grade) for c in cases}):
        def held(case: GoldenCase) -> bool:
            return case.item.dimension == dimension and case.grade == grade
        have = sum(1 for c in cases if held(c) and (c.series, c.variant) in chosen)
        more = sorted({(c.series, c.variant) for c in cases if held(c) and (c.series, c.variant) not in chosen})
        random.Random(f"{seed}:golden-grades:{dimension}:{grade}").shuffle(more)
        chosen |= set(more[:max(0, MIN_PER_GRADE - have)])
    return [c for c in cases if (c.series, c.variant) in chosen]


def annotator_cases(cases: Sequence[GoldenCase], seed: int, annotator: str) -> list[GoldenCase]:
    """The cases in the order one annotator grades them: the golden file's order shuffled by
    ``random.Random`` seeded with the seed and the annotator's name."""
    ordered = list(cases)
    random.Random(f"{seed}:golden-order:{annotator}").shuffle(ordered)
    return ordered


def sheet_row(case: GoldenCase, item: str, annotator: str, subtrack: str, prompts: PromptSet) -> dict[str, str]:
    """One row of a sheet (module docstring): what the case's dimension shows, nothing else."""
    judge_item = case.item
    shown = set(prompts.dimensions[judge_item.dimension].inputs)
    values = {
        "history": judge_item.history.strip() or NO_HISTORY,
        "query": judge_item.query,
        "passages": _passages(judge_item.evidence),
        "gold_passages": _passages(judge_item.gold_evidence),
        "reference_answer": judge_item.reference_answer,
        "key_points": "\n".join(f"{n}. [{importance}] {text}" for n, (text, importance) in enumerate(judge_item.key_points, 1))
        or "(none written for this turn: the reference_answer column is the guide)",
        "response": judge_item.answer,
    }
    row = {"item_id": item, "dimension": judge_item.dimension, "subtrack": subtrack}
    row.update({column: values[column] if _INPUT_OF[column] in shown else NOT_SHOWN for column in _INPUT_OF})
    return {**row, "annotator": annotator, "grade": ""}


def _passages(passages: Sequence[tuple[str, str]]) -> str:
    """Passages numbered, without their document ids (golden ids are named after the series)."""
    return "\n\n".join(f"[{n}] {text.strip()}" for n, (_doc_id, text) in enumerate(passages, 1)) or "(none)"


def write_golden_sheets(out: Path, cases: Sequence[GoldenCase], golden_version: int,
                        prompts: PromptSet, annotators: Sequence[str], seed: int,
                        secret: str | None = None, pairs_per_tag: int | None = None) -> SheetKey:
    """Every annotator's folder and the key (module docstring); returns the key. ``pairs_per_tag``: only the cases of that many
    pairs per tag (``pairs_sample``), recorded in the key; None: every case."""
    if pairs_per_tag is not None:
        cases = pairs_sample(cases, pairs_per_tag, seed)
    secret = secret or secrets.token_hex(16)
    ids = {c.id: item_id(secret, golden_version, c.id) for c in cases}
    if len(set(ids.values())) != len(ids):  # 48 bits: a collision is a one-in-billions event
        raise ValueError("two cases got one item id: run again (another secret is drawn)")
    dimensions = [d for d in prompts.dimension_names if any(c.item.dimension == d for c in cases)]
    guide = annotator_guide(prompts, dimensions, how_to=_how_to(prompts, dimensions),
                            title="Grading guide: RETECO's blind grading of responses",
                            input_names={i: c for c, i in _INPUT_OF.items()})
    for name in annotators:
        folder = out / ANNOTATORS_FOLDER / name
        folder.mkdir(parents=True, exist_ok=True)
        rows = [sheet_row(c, ids[c.id], name, c.subtrack, prompts) for c in annotator_cases(cases, seed, name)]
        with open(folder / SHEET, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, SHEET_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        (folder / SHEET_JSONL).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        (folder / GUIDE).write_text(guide, encoding="utf-8")
    key = SheetKey(golden_version, prompts.version, seed, tuple(annotators), secret,
                   {ids[c.id]: c.id for c in sorted(cases, key=lambda c: ids[c.id])})
    document = {"golden_version": key.golden_version, "prompt_version": key.prompt_version, "seed": seed,
                "annotators": list(annotators), "id_rule": ID_RULE, "pairs_per_tag": pairs_per_tag, "secret": secret,
                "items": dict(key.items)}
    (out / KEY).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return key


def _how_to(prompts: PromptSet, dimensions: Sequence[str]) -> str:
    blocks = (prompts.layout or {}).get("blocks", {})
    used = {i for d in dimensions for i in prompts.dimensions[d].inputs}
    rows = [f"| `{c}` | {_COLUMN_TEXT[c]} | {blocks.get(_INPUT_OF[c], {}).get('label', '-') if c in _INPUT_OF else '-'} |"
            for c in SHEET_COLUMNS if c not in _INPUT_OF or _INPUT_OF[c] in used]
    return _HOW_TO.format(version=prompts.version, not_shown=NOT_SHOWN, fields="\n".join(rows))


def read_key(path: Path) -> SheetKey:
    """``key.json`` as ``write_golden_sheets`` wrote it; InputError naming the file otherwise."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        key = SheetKey(int(data["golden_version"]), int(data["prompt_version"]), int(data["seed"]),
                       tuple(data["annotators"]), str(data["secret"]), dict(data["items"]))
    except OSError as exc:
        raise InputError(f"cannot read the golden sheets' key: {exc.strerror or exc}", str(path)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a golden sheets' key (key.json of `reteco golden-sheet`): {exc}", str(path)) from None
    wrong = [i for i, case in key.items.items() if item_id(key.secret, key.golden_version, case) != i]
    if wrong:
        raise InputError(f"{len(wrong)} item id(s) do not follow from the key's secret (first {quoted(wrong[0])}): "
                         "the key was edited", str(path))
    return key


def read_grade_sheets(paths: Sequence[Path], key: SheetKey, cases: Sequence[GoldenCase]) -> HumanGrades:
    """The filled sheets (module docstring); InputError listing every problem, file and line."""
    by_id = {c.id: c for c in cases}
    missing = sorted(set(key.items.values()) - set(by_id))
    if missing:
        raise InputError(f"the key names {len(missing)} case(s) golden set {key.golden_version} does not have "
                         f"(first {quoted(missing[0])}): the set changed since the sheets were written", "key")
    problems = Problems()
    grades: dict[str, dict[str, int]] = {}
    first_seen: dict[tuple[str, str], str] = {}
    rows = blank = 0
    for path in paths:
        where = str(path)
        try:
            handle = open(path, encoding="utf-8-sig", newline="")
        except OSError as exc:
            problems.error(where, None, f"cannot be read: {exc.strerror or exc}")
            continue
        with handle:
            try:
                reader = csv.reader(handle)
                header = next(reader, None)
                if header is None:
                    problems.error(where, 1, "empty file: expected a filled sheet.csv")
                    continue
                header = [h.strip() for h in header]
                need = [c for c in ("item_id", "annotator", "grade") if c not in header]
                if need:
                    problems.error(where, 1, f"missing column(s) {', '.join(need)} (the header of sheet.csv)")
                    continue
                col = {name: header.index(name) for name in header}
                start = reader.line_num + 1
                for cells in reader:
                    line, start = start, reader.line_num + 1
                    if not any(c.strip() for c in cells):
                        continue
                    rows += 1
                    cell = {name: (cells[i].strip() if i < len(cells) else "") for name, i in col.items()}
                    item, annotator, grade = cell["item_id"], cell["annotator"], cell["grade"]
                    if not item:
                        problems.error(where, line, "missing item id (column item_id)")
                        continue
                    if item not in key.items:
                        problems.error(where, line, f"unknown item id {quoted(item)}: not in the key")
                        continue
                    case = by_id[key.items[item]]
                    if "dimension" in cell and cell["dimension"] != case.item.dimension:
                        problems.error(where, line, f"item {quoted(item)} is graded on {case.item.dimension}, "
                                                    f"not {quoted(cell['dimension'])}: was the row edited?")
                        continue
                    if not annotator:
                        problems.error(where, line, "missing annotator (column annotator)")
                        continue
                    if not grade:
                        blank += 1
                        continue
                    value = _grade_value(grade)
                    if value is None:
                        problems.error(where, line, f"grade {quoted(grade)} is not a whole number from 1 to 5")
                        continue
                    seen = first_seen.get((annotator, item))
                    if seen is not None:
                        problems.error(where, line, f"item {quoted(item)} graded twice by {quoted(annotator)} "
                                                    f"(first at {seen})")
                        continue
                    first_seen[(annotator, item)] = f"{path}:{line}"
                    grades.setdefault(case.id, {})[annotator] = value
            except (csv.Error, UnicodeDecodeError) as exc:
                problems.error(where, reader.line_num or None, f"not a readable CSV sheet (UTF-8): {exc}")
    if problems.has_errors:
        raise InputError(problems)
    if not grades:
        raise InputError("no grade in the sheets: every row's grade is blank", ", ".join(map(str, paths)))
    annotators = tuple(sorted({a for by in grades.values() for a in by}))
    return HumanGrades(grades, annotators, rows, blank)


def _grade_value(text: str) -> int | None:
    """1..5 from a cell: "3", or "3.0" as a spreadsheet may save it; None otherwise."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and int(value) in GRADES else None
