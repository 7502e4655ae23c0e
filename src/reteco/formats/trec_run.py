"""Reading TREC run files: ``topic Q0 docid rank score tag``, one line per ranked document.

The format rules (documented in the README and the competition pages):

- six columns separated by spaces or tabs (any number of them); leading and trailing blanks,
  CRLF line endings, a UTF-8 byte-order mark, blank lines and a missing final newline are fine;
- the text is UTF-8;
- ``rank`` is a positive integer; ``score`` is a finite number (``nan``, ``inf`` are refused);
- the second column is conventionally ``Q0`` and the sixth a run tag: both are ignored.

Two readers with identical results: a fast one (pyarrow's multi-threaded CSV parser over the
whole buffer, about 1 s for 10M lines) and a strict line-by-line one that runs only when the
fast one finds anything wrong, to name every bad line. Both convert rank and score with the
same Arrow casts, so a value one accepts the other accepts too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from reteco.problems import InputError, Problems

BOM = b"\xef\xbb\xbf"
COLUMNS = ("topic", "q0", "doc_id", "rank", "score", "tag")
FORMAT_HINT = "expected 6 columns: topic Q0 docid rank score tag"

_BLANKS = re.compile(rb"[ \t]+")
_EDGE_BLANKS = re.compile(rb"(?m)^ | $")


@dataclass
class RunTable:
    """A run as columns, rows in file order (blank lines skipped).

    ``row_lines`` gives each row's 1-based line number in the file; it is computed only when
    needed (``line_of_row``) because the fast reader does not track lines.
    """

    topic: pa.Array
    doc_id: pa.Array
    rank: np.ndarray
    score: np.ndarray
    source: bytes
    name: str

    def __len__(self) -> int:
        return len(self.rank)

    def line_of_row(self, row: int) -> int:
        """1-based line number in the file of row ``row`` (rows skip blank lines)."""
        return int(nonblank_line_numbers(self.source)[row])


def nonblank_line_numbers(data: bytes) -> np.ndarray:
    """1-based numbers of the lines that hold anything but blanks, in order."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buffer == 0x0A)
    content = np.flatnonzero((buffer != 0x20) & (buffer != 0x09) & (buffer != 0x0D) & (buffer != 0x0A))
    line_index = np.searchsorted(newlines, content)  # 0-based line of each content byte
    return np.unique(line_index) + 1


def read_trec_run(data: bytes, name: str = "run") -> RunTable:
    """Parse a TREC run from its bytes; raise InputError naming every bad line (up to a limit)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    table = _read_fast(data)
    if table is None:
        table = _read_strict(data, name)  # raises with line-numbered problems
    topic, doc_id, rank_text, score_text = table
    rank, score = _convert_numbers(rank_text, score_text)
    if rank is None or score is None or not _numbers_valid(rank, score):
        _read_strict(data, name)
        raise AssertionError("the strict reader accepted a run the fast reader refused")  # pragma: no cover
    if len(rank) == 0:
        raise InputError("the run is empty: " + FORMAT_HINT, name)
    return RunTable(topic, doc_id, rank, score, data, name)


def _read_fast(data: bytes) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None:
    """Columns as strings, or None when anything is off (the strict reader then explains)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            return None
    if b"\t" in data:
        data = data.replace(b"\t", b" ")
    if b"  " in data or data.startswith(b" ") or b"\n " in data or b" \n" in data or data.endswith(b" "):
        data = _EDGE_BLANKS.sub(b"", _BLANKS.sub(b" ", data))
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(column_names=list(COLUMNS), use_threads=True, block_size=1 << 24),
            parse_options=pa_csv.ParseOptions(
                delimiter=" ", quote_char=False, escape_char=False, newlines_in_values=False, ignore_empty_lines=True
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types={c: pa.string() for c in COLUMNS},
                include_columns=["topic", "doc_id", "rank", "score"],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    columns = [table.column(c).combine_chunks() for c in ("topic", "doc_id", "rank", "score")]
    return columns[0], columns[1], columns[2], columns[3]


def _convert_numbers(rank_text: pa.Array, score_text: pa.Array) -> tuple[np.ndarray | None, np.ndarray | None]:
    try:
        rank = pc.cast(rank_text, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        rank = None
    try:
        score = pc.cast(score_text, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        score = None
    return rank, score


def _numbers_valid(rank: np.ndarray, score: np.ndarray) -> bool:
    return bool(np.all(rank > 0)) and bool(np.all(np.isfinite(score)))


def _cast_one(text: str, arrow_type: pa.DataType):
    try:
        return pc.cast(pa.array([text], pa.string()), arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _read_strict(data: bytes, name: str) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """Line by line: collect every problem with its line number; raise InputError if any."""
    problems = Problems()
    topics: list[str] = []
    docs: list[str] = []
    ranks: list[str] = []
    scores: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        stripped = raw.strip(b" \t")
        if not stripped:
            continue
        try:
            text = stripped.decode("utf-8")
        except UnicodeDecodeError:
            problems.error(name, number, "the line is not valid UTF-8; save the run as UTF-8 text")
            continue
        if "\r" in text:
            problems.error(name, number, "a carriage return inside the line; use LF or CRLF line endings")
            continue
        parts = _BLANKS.split(stripped)
        if len(parts) != 6:
            problems.error(name, number, f"{FORMAT_HINT}, found {len(parts)}")
            continue
        topic, _q0, doc, rank_text, score_text, _tag = (p.decode("utf-8") for p in parts)
        rank = _cast_one(rank_text, pa.int64())
        if rank is None:
            problems.error(name, number, f"rank {rank_text!r} is not an integer")
            continue
        if rank <= 0:
            problems.error(name, number, f"rank {rank} is not positive; ranks start at 1")
            continue
        score = _cast_one(score_text, pa.float64())
        if score is None:
            problems.error(name, number, f"score {score_text!r} is not a number")
            continue
        if not np.isfinite(score):
            problems.error(name, number, f"score {score_text!r} is not a finite number")
            continue
        topics.append(topic)
        docs.append(doc)
        ranks.append(rank_text)
        scores.append(score_text)
    if problems.has_errors:
        raise InputError(problems)
    return (
        pa.array(topics, pa.string()),
        pa.array(docs, pa.string()),
        pa.array(ranks, pa.string()),
        pa.array(scores, pa.string()),
    )
