"""Reading TREC run files: ``topic Q0 docid rank score tag``, one line per ranked document.

Why one module: one format's reader. The rules below are applied by the strict
line-by-line reader (``_read_strict``) and by the faster paths that must agree with it to the
byte (Arrow's parser, the numpy normalisation, the careful path and its line scanners): side by
side, a change to a rule is made in every path at once.

The format rules (documented for participants in pages/submission_format.md, a
competition page), which ``_read_strict`` applies line by line and every faster path below must
apply identically:

- lines end at LF, CRLF or a lone CR; a UTF-8 byte-order mark opening the file is skipped;
- any run of spaces and tabs separates columns; blanks at the start and end of a line are
  ignored, and a line of blanks only is a blank line (skipped, but counted in line numbers);
- every other line holds exactly 6 columns and is UTF-8 text, all of it;
- ``rank`` is an integer of 0 or more (PyTerrier's ``write_results`` numbers ranks from 0; the
  order is the scores', the rank only breaks ties); ``score`` is a finite number (``nan``,
  ``inf`` are refused);
- the second column is conventionally ``Q0`` and the sixth a run tag: both are ignored.

How the bytes are read, cheapest first. The file is cut into chunks of whole lines
(``CHUNK_BYTES``). A chunk without tabs (or without spaces) is handed as is to Arrow's
multi-threaded CSV parser with that one separator; the parse is exact when no field comes out
empty (an empty field means a doubled or an edge blank), and Arrow validates the UTF-8 of all six
columns. A chunk that mixes tabs and spaces, or has blanks that the rules merge (doubled, or at
a line's edge), is first normalised with numpy (each run of blanks between two fields becomes
one space, edge blanks go) and parsed the same way. Only a chunk that still fails goes the
careful way: its lines' fields are located with numpy over the whole
region at once (``_lines``), bad lines are found by vectorised tests and by casting whole columns
with Arrow (a failing cast is narrowed by halving to the first failing values), and Python looks
only at the bad lines, to word their messages (``_judge``). A line longer than ``LONG_LINE``
that crosses a chunk boundary is scanned on its own in windows, so that a 100 MB line is never
split, decoded or copied whole. Listing stops at ``MAX_LISTED_ERRORS`` errors, and the message
says that the rest of the file was not checked: refusing a run costs no more than reading one.
Every Arrow parse returns only once Arrow's threads have let go of the bytes it was given
(``_read_csv_released``), so that no native thread holds Python memory when the command exits.
"""

from __future__ import annotations

import mmap
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from reteco.formats.arrow_arrays import from_numpy, to_numpy
from reteco.formats.text_file import wide_encoding, wide_text_error
from reteco.problems import ERROR, MAX_LISTED_ERRORS, InputError, Problem, Problems, quoted

BOM = b"\xef\xbb\xbf"
COLUMNS = ("topic", "q0", "doc_id", "rank", "score", "tag")
KEPT = ["topic", "doc_id", "rank", "score"]
FORMAT_HINT = "expected 6 columns: topic Q0 docid rank score tag"
NOT_UTF8 = "the line is not valid UTF-8; save the run as UTF-8 text"

# Sizes in bytes; module attributes so that the tests can shrink them and cross every boundary
# with a few short lines.
CHUNK_BYTES = 64 << 20  # lines handed to one Arrow CSV parse
REGION_BYTES = 4 << 20  # lines normalised or analysed together (numpy masks of this size)
LONG_LINE = 1 << 20  # a line running this far past a cut is scanned alone, in windows
WINDOW_BYTES = 16 << 20  # the window of such scans
# Arrow's CSV block, which must hold any line Arrow is given: the careful path gives it lines of
# at most REGION_BYTES + LONG_LINE; a longer line in a chunk makes the chunk go the careful way.
BLOCK_BYTES = 16 << 20
# How long a parse waits for Arrow's threads to let go of its input (``_wait_until_released``).
RELEASE_WAIT = 10.0

LF, CR, SPACE, TAB = 0x0A, 0x0D, 0x20, 0x09
_BLANKS = re.compile(rb"[ \t]+")
_WORDS = pa.dictionary(pa.int32(), pa.string())
_CONVERT = pa_csv.ConvertOptions(
    # Q0 and tag are converted too, so that Arrow checks their UTF-8 and an empty one shows; as
    # strings (+0.3 s of CPU for 10M lines; dictionaries +0.8 s) dropped right after each chunk.
    column_types={"topic": _WORDS, "q0": pa.string(), "doc_id": pa.string(), "rank": pa.int64(), "score": pa.float64(), "tag": pa.string()},
    null_values=[],
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
)
_SEPARATED = {
    sep: pa_csv.ParseOptions(delimiter=sep, quote_char=False, escape_char=False, ignore_empty_lines=True)
    for sep in (" ", "\t")
}
_SCHEMA = pa.schema([("topic", _WORDS), ("doc_id", pa.string()), ("rank", pa.int64()), ("score", pa.float64())])
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


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
    _line_numbers: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.rank)

    def line_of_row(self, row: int) -> int | None:
        """1-based line number in the file of row ``row`` (rows skip blank lines)."""
        if self._line_numbers is None:
            source = self.source if self.source is not None else (self.reread() if self.reread else None)
            if source is None:
                return None
            if bytes(source[:3]) == BOM:
                source = memoryview(source)[len(BOM) :]
            self._line_numbers = nonblank_line_numbers(source)  # once: callers ask for several rows
        return int(self._line_numbers[row])

    def release_source(self) -> None:
        self.source = None
        self.reread = None
        self._line_numbers = None


def read_trec_run(data: bytes | memoryview, name: str = "run", reread: Callable[[], bytes | memoryview] | None = None) -> RunTable:
    """Parse a TREC run from its bytes; raise InputError naming every bad line (up to a limit).

    With ``reread`` (a way to get the same bytes again), the RunTable does not keep ``data``:
    a 600 MB run's bytes (or memory-mapped pages, which count as resident once read) are then
    freed as soon as parsing ends, and read again only if a later error must name a line.
    """
    view = memoryview(data)
    if view.format != "B":
        view = view.cast("B")
    encoding = wide_encoding(view)
    if encoding is not None:
        raise wide_text_error(encoding, "run", name)
    start = len(BOM) if bytes(view[: len(BOM)]) == BOM else 0
    table = _Reader(view, start, name).read()
    if table.num_rows == 0:
        raise InputError("the run is empty: " + FORMAT_HINT, name)
    rank = to_numpy(table.column("rank"))
    score = to_numpy(table.column("score"))
    source = None if reread else view[start:]  # a view: no copy of a 600 MB run
    return RunTable(table.column("topic"), table.column("doc_id"), rank, score, source, name, reread)


def nonblank_line_numbers(data: bytes | memoryview) -> np.ndarray:
    """1-based numbers of the lines that hold anything but blanks, in order.

    Lines end at LF, CRLF or a lone CR, as ``bytes.splitlines`` and Arrow's CSV reader see them.
    Works region by region, so the memory it takes beyond the answer stays bounded.
    """
    buffer = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    numbers = [np.zeros(0, dtype=np.int64)]
    before = 0
    for start, stop, long in _pieces(buffer, 0, len(buffer), REGION_BYTES):
        if long:
            if _first_content(buffer, start, stop) is not None:
                numbers.append(np.array([before + 1], dtype=np.int64))
            before += 1
        else:
            region = buffer[start:stop]
            line_start, ends = _line_starts(region)
            content = ~((region == SPACE) | (region == TAB) | (region == LF) | (region == CR))
            # Every line holds at least its line end, so no segment of reduceat is empty.
            numbers.append(np.flatnonzero(np.logical_or.reduceat(content, line_start)) + (before + 1))
            before += len(ends)
    return np.concatenate(numbers)


# ----------------------------------------------------------------------------- the reader


class _Reader:
    """One pass over a run's bytes (``view[start:]``): Arrow tables of its rows in file order,
    or the problems of its first bad lines."""

    def __init__(self, view: memoryview, start: int, name: str):
        self.view = view
        self.bytes = np.frombuffer(view, dtype=np.uint8)
        self.start = start
        self.name = name
        self.problems = Problems()
        self.tables: list[pa.Table] = []
        self.counted = (start, 0)  # lines before a position, counted up to there
        self.last_listed: int | None = None  # line of the last error, once listing has stopped
        self.more_after: bool = False  # whether lines were left unchecked then

    def read(self) -> pa.Table:
        for start, stop, long in _pieces(self.bytes, self.start, len(self.bytes), CHUNK_BYTES):
            table = None
            if not long:
                tabs, spaces = self._holds(TAB, start, stop), self._holds(SPACE, start, stop)
                if not (tabs and spaces):
                    table = _parse(self.view[start:stop], "\t" if tabs else " ")
                if table is None and ((tabs and spaces) or _merges_blanks(self.bytes, start, stop)):
                    table = self._parse_normalized(start, stop)
            if table is not None and _values_ok(table):
                if not self.problems.has_errors:
                    self.tables.append(table)
                continue
            for region_start, region_stop, region_long in _pieces(self.bytes, start, stop, REGION_BYTES):
                if region_long:
                    self._check_long_line(region_start, region_stop)
                else:
                    self._check_region(region_start, region_stop)
                if self.last_listed is not None:
                    break
            if self.last_listed is not None:
                break
        if self.problems.has_errors:
            if self.more_after:
                # Problems stops listing at the cap: this note goes past it on purpose.
                self.problems.items.append(
                    Problem(
                        ERROR,
                        self.name,
                        None,
                        f"checking stopped after {MAX_LISTED_ERRORS} errors: "
                        f"the lines after line {self.last_listed} were not checked",
                    )
                )
            raise InputError(self.problems)
        if not self.tables:
            return _SCHEMA.empty_table()
        return pa.concat_tables(self.tables)

    # ---- the fast ways: whole chunks to Arrow

    def _parse_normalized(self, start: int, stop: int) -> pa.Table | None:
        """The chunk with its blanks normalised, parsed; None if Arrow refuses it (or a line is
        too long to give Arrow)."""
        parts = []
        for region_start, region_stop, long in _pieces(self.bytes, start, stop, REGION_BYTES):
            if long:
                return None
            parts.append(_normalized(self.bytes[region_start:region_stop]))
        return _parse(np.concatenate(parts) if len(parts) > 1 else parts[0], " ")

    def _holds(self, byte: int, start: int, stop: int) -> bool:
        """Whether ``byte`` occurs in the chunk: ``memchr`` through the buffer's owner when it has
        a ``find`` (bytes, a memory map: 10 GB/s), numpy otherwise."""
        owner = self.view.obj
        if isinstance(owner, (bytes, bytearray, mmap.mmap)) and len(owner) == self.view.nbytes:
            return owner.find(bytes([byte]), start, stop) != -1
        return any(bool((self.bytes[at : min(at + WINDOW_BYTES, stop)] == byte).any()) for at in range(start, stop, WINDOW_BYTES))

    # ---- the careful way

    def _lines_before(self, position: int) -> int:
        at, lines = self.counted
        lines += _count_line_ends(self.bytes, at, position, self._holds(CR, at, position))
        self.counted = (position, lines)
        return lines

    def _error(self, line: int, message: str, more_after: Callable[[], bool]) -> None:
        self.problems.error(self.name, line, message)
        if self.problems.error_count >= MAX_LISTED_ERRORS:
            self.last_listed = line
            self.more_after = more_after()

    def _check_region(self, start: int, stop: int) -> None:
        """Rows of a region of whole lines, or the problems of its first bad lines."""
        region = self.bytes[start:stop]
        lines = _lines(region)
        before = self._lines_before(start)
        room = MAX_LISTED_ERRORS - self.problems.error_count
        bad, not_utf8 = _bad_lines(lines, room)
        for k in bad.tolist():
            first, count = int(lines.first[k]), int(lines.fields[k])
            bounds = zip(lines.start[first : first + min(count, 6)].tolist(), lines.stop[first : first + min(count, 6)].tolist())
            fields = [self.view[start + a : start + b] for a, b in bounds]
            message, _row = _judge(k not in not_utf8, count, fields)
            if message is None:  # pragma: no cover - the vectorised tests and _judge disagree
                raise AssertionError(f"line {before + k + 1} was found bad but _judge accepts it")
            self._error(
                before + k + 1,
                message,
                lambda k=k: bool(lines.fields[k + 1 :].any()) or _first_content(self.bytes, stop, len(self.bytes)) is not None,
            )
            if self.last_listed is not None:
                return
        self.counted = (stop, before + len(lines.ends))
        if len(bad) == 0 and not self.problems.has_errors and lines.fields.any():
            table = _parse(_normalized(region), " ")
            if table is None or not _values_ok(table):  # pragma: no cover - the same disagreement
                raise AssertionError("a region without bad lines did not parse")
            self.tables.append(table)

    def _check_long_line(self, start: int, stop: int) -> None:
        """One line longer than LONG_LINE: its fields located in windows, its UTF-8 checked in
        place; the row, or the problem."""
        end = stop
        if end > start and self.bytes[end - 1] == LF:
            end -= 1
        if end > start and self.bytes[end - 1] == CR:
            end -= 1
        line = self._lines_before(start) + 1
        self.counted = (stop, line)
        count, bounds = _scan_fields(self.bytes, start, end)
        if count == 0:
            return
        fields = [self.view[a:b] for a, b in bounds[:6]]
        message, row = _judge(_is_utf8(self.view[start:end]), count, fields)
        if message is not None:
            self._error(line, message, lambda: _first_content(self.bytes, stop, len(self.bytes)) is not None)
        elif not self.problems.has_errors:
            self.tables.append(_row_table(*row))


def _parse(buffer, separator: str) -> pa.Table | None:
    """Arrow's parse of whole lines with one separator; None when it fails or is not exact
    (an empty field: a doubled or edge separator, which the rules would have merged)."""
    if bytes(memoryview(buffer)[: len(BOM)]) == BOM:
        # Arrow skips a byte-order mark that opens its buffer; here it is a line's text (the
        # file's own was skipped already), so an empty line goes first. Rare: a copy is fine.
        buffer = b"\n" + bytes(memoryview(buffer))
    try:
        table = _read_csv_released(memoryview(buffer), separator)
    except _ARROW_ERRORS:
        return None
    if any(_holds_empty(chunk.dictionary) for chunk in table.column("topic").chunks):
        return None
    if any(_holds_empty(chunk) for name in ("q0", "doc_id", "tag") for chunk in table.column(name).chunks):
        return None
    return table.select(KEPT)


def _read_csv_released(lent: memoryview, separator: str) -> pa.Table:
    """Arrow's multi-threaded CSV parse of ``lent``, returned (or raised) only once Arrow's
    threads have let go of those bytes.

    Why: Arrow's threaded reader can finish, with its table or its error, while one of its
    worker threads still holds the input buffer; the thread drops it a moment later, and
    dropping a Python-owned buffer takes the GIL. Were the interpreter finalizing by then (the
    command refusing the run and exiting right after a parse), CPython would end that thread
    inside a C++ destructor and the process would abort ("terminate called without an active
    exception", exit -6, instead of the refusal's exit 1). So the parse is drained here: no
    Arrow thread holds Python memory once a parse has returned, whatever the caller does next.
    ``lent`` is a view of its own, lent to Arrow alone: it can be released only after Arrow's
    last reference to it is gone. The wait is a fraction of a millisecond when there is one.
    """
    arrow_buffer = pa.py_buffer(lent)
    try:
        return pa_csv.read_csv(
            arrow_buffer,
            read_options=pa_csv.ReadOptions(column_names=list(COLUMNS), use_threads=True, block_size=BLOCK_BYTES),
            parse_options=_SEPARATED[separator],
            convert_options=_CONVERT,
        )
    finally:
        del arrow_buffer
        _wait_until_released(lent)


def _wait_until_released(lent: memoryview) -> None:
    """Release ``lent`` as soon as nothing else holds it, sleeping meanwhile (which lets the
    Arrow thread that holds it take the GIL and let go). Gives up after RELEASE_WAIT seconds:
    a thread that never lets go is a bug to find (a test asserts the release), not a hang."""
    deadline = time.monotonic() + RELEASE_WAIT
    pause = 50e-6
    while True:
        try:
            lent.release()
            return
        except BufferError:
            if time.monotonic() > deadline:
                return
            time.sleep(pause)
            pause = min(2 * pause, 5e-3)


def _holds_empty(strings: pa.Array) -> bool:
    """Whether a string array holds an empty string (two equal offsets)."""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32, count=len(strings) + 1, offset=strings.offset * 4)
    return bool((offsets[1:] == offsets[:-1]).any())


def _values_ok(table: pa.Table) -> bool:
    """Whether no rank is negative and every score is finite (chunk by chunk: no copies)."""
    return all(bool(np.all(to_numpy(c) >= 0)) for c in table.column("rank").chunks) and all(
        bool(np.all(np.isfinite(to_numpy(c)))) for c in table.column("score").chunks
    )


def _row_table(topic: str, doc_id: str, rank: int, score: float) -> pa.Table:
    return pa.table(
        {
            "topic": _utf8_array(topic.encode()).dictionary_encode(),
            "doc_id": _utf8_array(doc_id.encode()),
            "rank": from_numpy(np.array([rank], dtype=np.int64)),
            "score": from_numpy(np.array([score], dtype=np.float64)),
        }
    )


def _utf8_array(value, large: bool = False) -> pa.Array:
    """A one-element string array over ``value``'s bytes, in place (no copy, no check)."""
    offsets = np.array([0, len(value)], dtype=np.int64 if large else np.int32)
    return pa.Array.from_buffers(pa.large_string() if large else pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(value)])


def _is_utf8(value) -> bool:
    """Whether the bytes are UTF-8, checked by Arrow in place (no decoded copy of a long line)."""
    try:
        _utf8_array(value, large=True).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _cast_one(text, arrow_type: pa.DataType):
    """``text`` (UTF-8 bytes) as a number by Arrow's parser, the one its CSV reader uses; None
    if it is not one."""
    try:
        return pc.cast(_utf8_array(text, large=True), arrow_type)[0].as_py()
    except _ARROW_ERRORS:
        return None


def _judge(utf8: bool, count: int, fields: list[bytes | memoryview]) -> tuple[str | None, tuple | None]:
    """The rules for one line, given whether it is UTF-8, its number of columns and (when 6) its
    columns' bytes: (the error message, None) or (None, (topic, doc id, rank, score)).

    The one place where a line's message is worded, for every reader path. A value is quoted
    from its first bytes only (``quoted``), so a 100 MB field is not copied to be refused."""
    if not utf8:
        return NOT_UTF8, None
    if count != 6:
        return f"{FORMAT_HINT}, found {count}{_missing_column(count, fields)}", None
    topic, _q0, doc, rank_text, score_text, _tag = fields
    rank = _cast_one(rank_text, pa.int64())
    if rank is None:
        return f"rank {quoted(rank_text)} is not an integer", None
    if rank < 0:
        return f"rank {rank} is negative; ranks start at 1 (or at 0, as PyTerrier writes them)", None
    score = _cast_one(score_text, pa.float64())
    if score is None:
        return f"score {quoted(score_text)} is not a number", None
    if not np.isfinite(score):
        return f"score {quoted(score_text)} is not a finite number", None
    return None, (bytes(topic).decode("utf-8"), bytes(doc).decode("utf-8"), rank, score)


def _missing_column(count: int, fields: list[bytes | memoryview]) -> str:
    """Which column a line of 5 seems to lack, told by where its rank and score stand:
    ``: the tag column is missing; ...`` when the last two are a rank and a score (the tag is
    gone), ``: the Q0 column is missing; ...`` when the third and fourth are (Q0 is gone);
    else nothing (which one is missing cannot be told)."""
    if count != 5:
        return ""

    def rank_and_score(at: int) -> bool:
        rank = _cast_one(fields[at], pa.int64())
        return rank is not None and rank >= 0 and _cast_one(fields[at + 1], pa.float64()) is not None

    if rank_and_score(3):
        return "; the tag column is missing: write a run tag (e.g. my_system) after the score on every line"
    if rank_and_score(2):
        return "; the Q0 column is missing: write Q0 between the topic and the document id on every line"
    return ""


def _read_strict(data: bytes, name: str) -> pa.Table:
    """The rules read literally, line by line; raise InputError with every problem (to the cap).

    Kept as the definition the fast paths are tested against (they must give the same rows, or
    the same messages for the same lines), not used to read participants' runs."""
    problems = Problems()
    rows = []
    for number, raw in enumerate(data.splitlines(), start=1):
        stripped = raw.strip(b" \t")
        if not stripped:
            continue
        try:
            raw.decode("utf-8")
            utf8 = True
        except UnicodeDecodeError:
            utf8 = False
        parts = _BLANKS.split(stripped)
        message, row = _judge(utf8, len(parts), parts)
        if message is not None:
            problems.error(name, number, message)
        else:
            rows.append(row)
    if problems.has_errors:
        raise InputError(problems)
    topics, docs, ranks, scores = (list(column) for column in zip(*rows)) if rows else ([], [], [], [])
    return pa.table(
        {
            "topic": pa.chunked_array([pa.array(topics, pa.string()).dictionary_encode()], _WORDS),
            "doc_id": pa.chunked_array([pa.array(docs, pa.string())]),
            "rank": pa.array(ranks, pa.int64()),
            "score": pa.array(scores, pa.float64()),
        }
    )


# ----------------------------------------------------------------------------- vectorised line work


@dataclass
class _Lines:
    """The lines of a region of whole lines and the fields in them, as positions in the region.

    A line ends at its terminator's last byte (``ends``: the LF, or a lone CR); the region's last
    line may have none. ``start``/``stop`` bound every field (maximal run of bytes that are not
    blanks or line breaks) in order; line k holds ``fields[k]`` of them from ``first[k]``."""

    line_start: np.ndarray
    ends: np.ndarray
    fields: np.ndarray
    first: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    region: np.ndarray

    @property
    def count(self) -> int:
        return len(self.line_start)


def _line_starts(region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each line of a region of whole lines starts, and where each line end ends (the LF,
    or a lone CR); the last line may have no end."""
    ends_here = region == LF
    carriage_return = np.flatnonzero(region == CR)
    if len(carriage_return):
        lone = carriage_return[(carriage_return + 1 == len(region)) | (region[np.minimum(carriage_return + 1, len(region) - 1)] != LF)]
        ends_here[lone] = True
    ends = np.flatnonzero(ends_here)
    count = len(ends) + (1 if len(region) and not ends_here[-1] else 0)
    line_start = np.zeros(count, dtype=np.int64)
    line_start[1:] = ends[: count - 1] + 1
    return line_start, ends


def _lines(region: np.ndarray) -> _Lines:
    line_start, ends = _line_starts(region)
    count = len(line_start)
    content = ~((region == LF) | (region == CR) | (region == SPACE) | (region == TAB))
    begins = content.copy()
    begins[1:] &= ~content[:-1]
    start = np.flatnonzero(begins)
    begins[:] = content
    begins[:-1] &= ~content[1:]
    stop = np.flatnonzero(begins) + 1
    fields = np.bincount(np.searchsorted(ends, start), minlength=count)
    first = np.zeros(count, dtype=np.int64)
    np.cumsum(fields[:-1], out=first[1:])
    return _Lines(line_start, ends, fields, first, start, stop, region)


def _bad_lines(lines: _Lines, limit: int) -> tuple[np.ndarray, set[int]]:
    """The first ``limit`` bad lines of a region (ascending indices) and which of them are not
    UTF-8, found without looking at good lines one by one.

    A line is bad when it is not UTF-8, does not hold 6 columns, or its rank or score fails the
    rules. Failing UTF-8 checks and casts are located by halving, and only the first ``limit``
    of each kind are located: past the last of those (the horizon) a line's state is unknown,
    but the first ``limit`` bad lines all lie before it."""
    region, count = lines.region, lines.count
    horizon = count
    # UTF-8: only lines with a byte >= 0x80 can fail; Arrow checks them all in one cast.
    wide = np.unique(np.searchsorted(lines.ends, np.flatnonzero(region >= 0x80)))
    as_lines = pa.Array.from_buffers(
        pa.large_binary(), count, [None, pa.py_buffer(np.append(lines.line_start, len(region))), pa.py_buffer(region)]
    )
    wide_lines = as_lines.take(from_numpy(wide))
    failed = _first_failures(len(wide), lambda lo, hi: wide_lines.slice(lo, hi - lo).cast(pa.large_string()), limit)
    not_utf8 = wide[failed]
    if len(failed) == limit:
        horizon = int(not_utf8[-1]) + 1
    bad = np.zeros(count, dtype=bool)
    bad[not_utf8] = True
    bad |= (lines.fields > 0) & (lines.fields != 6)
    six = np.flatnonzero(~bad[:horizon] & (lines.fields[:horizon] == 6))
    for column, arrow_type, acceptable in ((3, pa.int64(), lambda v: v >= 0), (4, pa.float64(), np.isfinite)):
        texts = _texts(region, lines.start, lines.stop, lines.first[six] + column)
        failed = _first_failures(len(six), lambda lo, hi: texts.slice(lo, hi - lo).cast(arrow_type), limit)
        if len(failed) == limit:
            horizon = min(horizon, int(six[failed[-1]]) + 1)
        wrong = np.zeros(len(six), dtype=bool)
        wrong[failed] = True
        checked = np.flatnonzero(~wrong & (six < horizon))
        values = to_numpy(pc.cast(texts.take(from_numpy(checked)), arrow_type))
        wrong[checked[~acceptable(values)]] = True
        bad[six[wrong]] = True
        six = six[six < horizon]
    return np.flatnonzero(bad[:horizon])[:limit], set(not_utf8.tolist())


def _first_failures(size: int, attempt: Callable[[int, int], object], limit: int) -> list[int]:
    """Ascending indices of the first ``limit`` elements on which ``attempt(i, i + 1)`` raises
    an Arrow error, given that ``attempt(lo, hi)`` raises iff some element of [lo, hi) would:
    a range is halved only while it fails, left half first, so k failures cost O(k log size)
    attempts (one, when nothing fails)."""
    found: list[int] = []
    todo = [(0, size)]
    while todo and len(found) < limit:
        lo, hi = todo.pop()
        if lo >= hi:
            continue
        try:
            attempt(lo, hi)
            continue
        except _ARROW_ERRORS:
            pass
        if hi - lo == 1:
            found.append(lo)
        else:
            middle = (lo + hi) // 2
            todo += [(middle, hi), (lo, middle)]
    return found


def _texts(region: np.ndarray, start: np.ndarray, stop: np.ndarray, which: np.ndarray) -> pa.Array:
    """The fields ``which`` gathered into one string array (their bytes are known to be UTF-8)."""
    begin, length = start[which], stop[which] - start[which]
    offsets = np.zeros(len(which) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    gathered = region[np.repeat(begin - offsets[:-1], length) + np.arange(offsets[-1])]
    return pa.Array.from_buffers(pa.large_string(), len(which), [None, pa.py_buffer(offsets), pa.py_buffer(gathered)])


def _normalized(region: np.ndarray) -> np.ndarray:
    """The region's lines with each run of blanks between two fields made one space and the
    blanks at line edges removed: what Arrow parses with a single-space separator."""
    blank = (region == SPACE) | (region == TAB)
    keep = ~blank
    content = keep & (region != LF) & (region != CR)
    keep[1:] |= blank[1:] & content[:-1]  # the first blank after a field
    del blank, content
    kept = region[keep]
    del keep
    # A kept blank followed by a line end (or the end) was trailing: drop it.
    blank = (kept == SPACE) | (kept == TAB)
    blank[:-1] &= (kept[1:] == LF) | (kept[1:] == CR)
    out = kept[~blank]
    out[out == TAB] = SPACE
    return out


def _scan_fields(buffer: np.ndarray, start: int, end: int) -> tuple[int, list[tuple[int, int]]]:
    """The number of fields in ``buffer[start:end]`` (one line, no line break inside) and the
    bounds of the first 7, scanned in windows of WINDOW_BYTES."""
    count, starts, stops = 0, [], []
    previous = False  # whether the byte before the window is a field's
    for at in range(start, end, WINDOW_BYTES):
        window = buffer[at : min(at + WINDOW_BYTES, end)]
        content = (window != SPACE) & (window != TAB)
        begins = content.copy()
        begins[0] &= not previous
        begins[1:] &= ~content[:-1]
        count += int(np.count_nonzero(begins))
        if len(starts) < 7:
            starts += (np.flatnonzero(begins)[: 7 - len(starts)] + at).tolist()
        if len(stops) < 7:
            if previous and not content[0]:
                stops.append(at)
            stops += (np.flatnonzero(content[:-1] & ~content[1:])[: 7 - len(stops)] + at + 1).tolist()
        previous = bool(content[-1])
    if previous and len(stops) < 7:
        stops.append(end)
    return count, list(zip(starts, stops[:7]))


# ----------------------------------------------------------------------------- cutting into pieces


def _pieces(buffer: np.ndarray, start: int, stop: int, size: int) -> Iterator[tuple[int, int, bool]]:
    """Cut ``buffer[start:stop]`` (``start`` at a line start) into pieces of whole lines of
    about ``size`` bytes: ``(piece start, piece stop, long)``. A piece ends after a line end
    (CRLF kept whole); a line that runs more than LONG_LINE past a cut is a piece of its own,
    marked long."""
    while start < stop:
        target = start + size
        if target >= stop:
            yield start, stop, False
            return
        found = _next_line_break(buffer, target, min(stop, target + LONG_LINE))
        if found is not None:
            cut = _after_line_end(buffer, found, stop)
            yield start, cut, False
            start = cut
            continue
        line_start = _after_last_line_break(buffer, start, target)
        if line_start > start:
            yield start, line_start, False
        found = _next_line_break(buffer, target, stop)
        line_stop = stop if found is None else _after_line_end(buffer, found, stop)
        yield line_start, line_stop, True
        start = line_stop


def _after_line_end(buffer: np.ndarray, at: int, stop: int) -> int:
    """Position after the line end whose first byte is at ``at``."""
    if buffer[at] == CR and at + 1 < stop and buffer[at + 1] == LF:
        return at + 2
    return at + 1


def _next_line_break(buffer: np.ndarray, start: int, stop: int) -> int | None:
    """First position of a LF or CR in [start, stop), searched in growing windows."""
    width = 1 << 16
    while start < stop:
        window = buffer[start : min(start + width, stop)]
        found = (window == LF) | (window == CR)
        at = int(found.argmax())
        if found[at]:
            return start + at
        start += len(window)
        width = min(width * 4, WINDOW_BYTES)
    return None


def _after_last_line_break(buffer: np.ndarray, start: int, stop: int) -> int:
    """Position after the last LF or CR in [start, stop), or ``start`` if there is none."""
    width = 1 << 16
    while stop > start:
        window = buffer[max(start, stop - width) : stop]
        found = (window == LF) | (window == CR)
        if found.any():
            return stop - len(window) + int(np.flatnonzero(found)[-1]) + 1
        stop -= len(window)
        width = min(width * 4, WINDOW_BYTES)
    return start


def _first_content(buffer: np.ndarray, start: int, stop: int) -> int | None:
    """First position in [start, stop) of a byte that is not a blank or a line break."""
    for at in range(start, stop, WINDOW_BYTES):
        window = buffer[at : min(at + WINDOW_BYTES, stop)]
        content = (window != SPACE) & (window != TAB) & (window != LF) & (window != CR)
        found = int(content.argmax())
        if content[found]:
            return at + found
    return None


def _count_line_ends(buffer: np.ndarray, start: int, stop: int, carriage_returns: bool = True) -> int:
    """Number of line ends (LF, CRLF, lone CR) whose last byte is in [start, stop); LFs only
    when the range is known to hold no CR."""
    total = 0
    for at in range(start, stop, WINDOW_BYTES):
        end = min(at + WINDOW_BYTES, stop)
        window = buffer[at:end]
        total += int(np.count_nonzero(window == LF))
        if carriage_returns:
            after = buffer[at + 1 : end + 1]  # each byte's successor (one fewer at the very end)
            cr = window == CR
            total += int(np.count_nonzero(cr)) - int(np.count_nonzero(cr[: len(after)] & (after == LF)))
    return total


def _merges_blanks(buffer: np.ndarray, start: int, stop: int) -> bool:
    """Whether normalising whole lines ``buffer[start:stop]`` would merge or drop a blank: some
    blank has a blank, a line break or an end of the range beside it."""
    for at in range(start, stop, WINDOW_BYTES):
        window = buffer[at : min(at + WINDOW_BYTES + 1, stop)]  # one byte shared with the next
        blank = (window == SPACE) | (window == TAB)
        beside = blank | (window == LF) | (window == CR)
        if bool((blank[1:] & beside[:-1]).any()) or bool((blank[:-1] & beside[1:]).any()):
            return True
    return stop > start and (buffer[start] in (SPACE, TAB) or buffer[stop - 1] in (SPACE, TAB))
