"""Reading TREC run files: ``topic Q0 docid rank score tag``, one line per ranked document.

The format rules (documented in docs/participants/submission_format.md, a competition page):

- six columns separated by spaces or tabs (any number of them); leading and trailing blanks,
  CRLF line endings, a UTF-8 byte-order mark, blank lines and a missing final newline are fine;
- the text is UTF-8;
- ``rank`` is a positive integer; ``score`` is a finite number (``nan``, ``inf`` are refused);
- the second column is conventionally ``Q0`` and the sixth a run tag: both are ignored.

Two readers with identical results: a fast one (pyarrow's multi-threaded CSV parser over the
whole buffer, under a second for 10M lines) and a strict line-by-line one that runs only when
the fast one finds anything wrong, to name every bad line. Both convert rank and score with
Arrow's number parsers, so a value one accepts the other accepts too (tests check both agree).
Lines end at LF, CRLF or a lone CR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from reteco.formats.arrow_arrays import to_numpy
from reteco.problems import InputError, Problems

BOM = b"\xef\xbb\xbf"
COLUMNS = ("topic", "q0", "doc_id", "rank", "score", "tag")
FORMAT_HINT = "expected 6 columns: topic Q0 docid rank score tag"

_BLANKS = re.compile(rb"[ \t]+")
_EDGE_BLANKS = re.compile(rb"(?m)^ | $")
_CONVERT = pa_csv.ConvertOptions(
    column_types={
        "topic": pa.dictionary(pa.int32(), pa.string()),
        "doc_id": pa.string(),
        "rank": pa.int64(),
        "score": pa.float64(),
    },
    include_columns=["topic", "doc_id", "rank", "score"],
    null_values=[],
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
)
_PARSE = pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=True)


@dataclass
class RunTable:
    """A run as columns, rows in file order (blank lines skipped).

    ``topic`` is dictionary-encoded per chunk (a run repeats each topic ~1,000 times) and
    ``doc_id`` stays chunked as parsed: neither is ever copied into one block. ``source`` keeps
    the file's bytes only so that an error found later can name its line (``line_of_row``);
    ``release_source`` drops them once no such error can come.
    """

    topic: pa.ChunkedArray
    doc_id: pa.ChunkedArray
    rank: np.ndarray
    score: np.ndarray
    source: bytes | memoryview | None
    name: str
    reread: Callable[[], bytes | memoryview] | None = None

    def __len__(self) -> int:
        return len(self.rank)

    def line_of_row(self, row: int) -> int | None:
        """1-based line number in the file of row ``row`` (rows skip blank lines)."""
        source = self.source if self.source is not None else (self.reread() if self.reread else None)
        if source is None:
            return None
        if bytes(source[:3]) == BOM:
            source = memoryview(source)[len(BOM) :]
        return int(nonblank_line_numbers(source)[row])

    def release_source(self) -> None:
        self.source = None
        self.reread = None


def nonblank_line_numbers(data: bytes | memoryview) -> np.ndarray:
    """1-based numbers of the lines that hold anything but blanks, in order.

    Lines end at LF, CRLF or a lone CR, as ``bytes.splitlines`` and Arrow's CSV reader see them.
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    newlines = buffer == 0x0A
    lone_cr = buffer == 0x0D
    lone_cr[:-1] &= ~newlines[1:]
    breaks = np.flatnonzero(newlines | lone_cr)
    content = np.flatnonzero((buffer != 0x20) & (buffer != 0x09) & (buffer != 0x0D) & (buffer != 0x0A))
    return np.unique(np.searchsorted(breaks, content)) + 1


def read_trec_run(data: bytes | memoryview, name: str = "run", reread: Callable[[], bytes | memoryview] | None = None) -> RunTable:
    """Parse a TREC run from its bytes; raise InputError naming every bad line (up to a limit).

    With ``reread`` (a way to get the same bytes again), the RunTable does not keep ``data``:
    a 600 MB run's bytes (or memory-mapped pages, which count as resident once read) are then
    freed as soon as parsing ends, and read again only if a later error must name a line.
    """
    view = memoryview(data)
    if data[:3] == BOM:
        view = view[len(BOM) :]  # a view: no copy of a 600 MB run
    table = _read_fast(view)
    if table is None:
        table = _read_strict(bytes(view), name)  # raises with line-numbered problems
    if table.num_rows == 0:
        raise InputError("the run is empty: " + FORMAT_HINT, name)
    rank = to_numpy(table.column("rank"))
    score = to_numpy(table.column("score"))
    if not (bool(np.all(rank > 0)) and bool(np.all(np.isfinite(score)))):
        _read_strict(bytes(view), name)
        raise AssertionError("the strict reader accepted a run the fast reader refused")  # pragma: no cover
    return RunTable(table.column("topic"), table.column("doc_id"), rank, score, None if reread else view, name, reread)


def _parse(buffer) -> pa.Table:
    return pa_csv.read_csv(
        pa.py_buffer(buffer),
        read_options=pa_csv.ReadOptions(column_names=list(COLUMNS), use_threads=True, block_size=1 << 24),
        parse_options=_PARSE,
        convert_options=_CONVERT,
    )


def _read_fast(data: memoryview) -> pa.Table | None:
    """Typed columns, or None when anything is off (the strict reader then explains).

    A clean run (single spaces, any line endings) is parsed as is. Only when that fails are tabs,
    repeated and edge blanks normalised and the parse tried again, so the common case never
    pays for scanning or copying the buffer. Arrow converts rank and score with the same
    parsers as ``pyarrow.compute.cast``, which the strict reader uses, so both accept the
    same numbers.
    """
    try:
        return _parse(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    normalized = _EDGE_BLANKS.sub(b"", _BLANKS.sub(b" ", bytes(data).replace(b"\r\n", b"\n").replace(b"\r", b"\n")))
    try:
        return _parse(normalized)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _cast_one(text: str, arrow_type: pa.DataType):
    try:
        return pc.cast(pa.array([text], pa.string()), arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _read_strict(data: bytes, name: str) -> pa.Table:
    """Line by line: collect every problem with its line number; raise InputError if any."""
    problems = Problems()
    topics: list[str] = []
    docs: list[str] = []
    ranks: list[int] = []
    scores: list[float] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        stripped = raw.strip(b" \t")
        if not stripped:
            continue
        try:
            stripped.decode("utf-8")
        except UnicodeDecodeError:
            problems.error(name, number, "the line is not valid UTF-8; save the run as UTF-8 text")
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
        ranks.append(rank)
        scores.append(score)
    if problems.has_errors:
        raise InputError(problems)
    return pa.table(
        {
            "topic": pa.chunked_array([pa.array(topics, pa.string()).dictionary_encode()], pa.dictionary(pa.int32(), pa.string())),
            "doc_id": pa.chunked_array([pa.array(docs, pa.string())]),
            "rank": pa.array(ranks, pa.int64()),
            "score": pa.array(scores, pa.float64()),
        }
    )
