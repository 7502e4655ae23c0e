"""The run reader byte by byte: blanks, line ends, encodings, and the cost-bounded refusal.

Every reader path (the whole-buffer parse, the normalising parse, the vectorised diagnosis and
the long-line scan) must read a file exactly as the rules read it line by line
(``_read_strict``): the same rows, or the same messages for the same lines. The sizes that
choose between the paths are shrunk here so that small files cross every boundary.
"""

from __future__ import annotations

import gzip
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reteco.formats import trec_run
from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.qrels import FACTIR_CUTOFFS, benchmark_reference
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.text_file import wide_encoding
from reteco.formats.trec_run import _read_strict, nonblank_line_numbers, read_trec_run
from reteco.problems import MAX_LISTED_ERRORS, InputError
from reteco.scoring.retrieval import score_run

ENGINES = ("numpy", "pytrec_eval")
FIVE = (
    "expected 6 columns: topic Q0 docid rank score tag, found 5; the tag column is missing: write a run tag "
    "(e.g. my_system) after the score on every line"
)
NOT_UTF8 = "the line is not valid UTF-8; save the run as UTF-8 text"


@pytest.fixture(params=["default sizes", "tiny sizes"])
def sizes(request, monkeypatch):
    """Run a test with the reader's real sizes and with sizes small enough that a few lines
    span several chunks, regions and scan windows, and most lines count as long."""
    if request.param == "tiny sizes":
        monkeypatch.setattr(trec_run, "CHUNK_BYTES", 37)
        monkeypatch.setattr(trec_run, "REGION_BYTES", 23)
        monkeypatch.setattr(trec_run, "LONG_LINE", 19)
        monkeypatch.setattr(trec_run, "WINDOW_BYTES", 5)
    return request.param


def rows(run) -> list[tuple]:
    return list(zip(run.topic.to_pylist(), run.doc_id.to_pylist(), run.rank.tolist(), run.score.tolist()))


def strict_rows(data: bytes) -> list[tuple]:
    """The rows the line-by-line rules read (after the byte-order mark the caller strips)."""
    body = data[len(trec_run.BOM) :] if data.startswith(trec_run.BOM) else data
    table = _read_strict(body, "run")
    return list(zip(*(table.column(c).to_pylist() for c in ("topic", "doc_id", "rank", "score"))))


def listed_errors(exc: InputError) -> list[str]:
    return [str(p) for p in exc.problems.errors() if p.line is not None][:MAX_LISTED_ERRORS]


def fast_outcome(data: bytes):
    """("rows", rows) or ("errors", the line-numbered errors listed) of ``read_trec_run``."""
    try:
        return "rows", rows(read_trec_run(data))
    except InputError as exc:
        return "errors", listed_errors(exc)


def strict_outcome(data: bytes):
    """The same for the line-by-line rules; a file without any line is "empty" (no line error).
    A file in UTF-16 or UTF-32 is refused whole before any line is read, by every path (one
    file-level error, no line error: tests/hostile has its messages), so the line rules start
    after that refusal."""
    if wide_encoding(data) is not None:
        return "errors", []
    try:
        found = strict_rows(data)
    except InputError as exc:
        return "errors", listed_errors(exc)
    return ("rows", found) if found else ("errors", [])


def refusal(data: bytes, name: str = "run.txt") -> list[str]:
    """Every problem the reader found, one per line as found (``Problems.lines`` then prints
    those of one kind as one line: tests/test_problems.py)."""
    with pytest.raises(InputError) as caught:
        read_trec_run(data, name)
    return [str(p) for p in caught.value.problems]


# ----------------------------------------------------------------------------- silent misreads

FACTIR_QRELS = [Judgment("claim_001", "d1", 2), Judgment("claim_001", "d2", 1)]


@pytest.mark.parametrize(
    "first_line",
    [
        b"claim_001 Q0 d1\t 1 2 tag",  # the tab stayed in the doc id: nDCG@10 0.24 instead of 1
        b"claim_001 Q0 d1 \t1 2 tag",
        b"claim_001\tQ0 d1  1 2 tag",  # a tab and a double blank: topic 'claim_001\tQ0', doc ''
        b"\t claim_001 Q0 d1 1 2\t\ttag \t",
        b"claim_001 Q0 d1 1\t 2 tag",
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_tab_beside_a_space_separates_columns_factir(first_line, engine, sizes):
    data = first_line + b"\nclaim_001 Q0 d2 2 1 tag\n"
    assert rows(read_trec_run(data)) == [("claim_001", "d1", 1, 2.0), ("claim_001", "d2", 2, 1.0)]
    ref = benchmark_reference(FACTIR_QRELS, benchmark="factir", cutoffs=FACTIR_CUTOFFS, official="ndcg_10")
    result = score_run(ref, data, "run.txt", engine=engine)
    assert result.scores["ndcg_10"] == 1.0  # d1 (gain 2) then d2 (gain 1): the ideal order
    assert result.details["counts"]["topics_ignored"] == 0
    assert not result.problems.warnings()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tab_beside_a_space_keeps_the_document_reteco(engine):
    topics = [Topic("bio/2_turn_1", "bio", "2_turn_1", "bio/2_turn_1", "bio/2", 1)]
    corpus = DocIdIndex.from_pairs([("bio", "doc-a"), ("bio", "doc-b"), ("bio", "doc-c")], ["bio"])
    manifest = {"subtrack": "2a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "domains": ["bio"]}
    ref = Reference(manifest, topics, [Judgment("bio/2_turn_1", "doc-b", 1)], corpus)
    data = b"bio/2_turn_1 Q0 doc-a 1 3 t\nbio/2_turn_1 Q0 doc-b\t 2 2 t\n"
    result = score_run(ref, data, "run.txt", engine=engine)
    assert result.details["counts"]["unknown_doc_ids"] == 0
    assert result.scores["ndcg_10"] == pytest.approx(1 / math.log2(3))  # relevant at rank 2, R = 1


@pytest.mark.parametrize(
    "line",
    [b"q Q0 d 1 1 ", b"q Q0 d  1 1", b"q Q0 d 1 1\t", b" q Q0 d 1 1", b"q  Q0 d 1 1", b"q Q0 d 1 1 \r\n", b"q\tQ0\td\t1\t1\t"],
)
def test_five_columns_are_refused_whatever_the_blanks(line, sizes):
    assert refusal(b"q Q0 d 1 1 t\n" + line + b"\nq Q0 e 2 0 t\n") == [f"run.txt:2: error: {FIVE}"]


@pytest.mark.parametrize(
    "line",
    [b"q Q\xff d 1 1 t", b"q Q0 d 1 1 t\xe9", b"q Q0 d 1 1 t\xed\xa0\x80", b"q\t\xc0\xaf d 1 1 t", b"q Q0 d 1 1 t \xff"],
)
def test_bytes_that_are_not_utf8_are_refused_in_every_column(line, sizes):
    assert refusal(b"q Q0 d 1 1 t\n" + line + b"\n") == [f"run.txt:2: error: {NOT_UTF8}"]


# ----------------------------------------------------------------------------- every quirk, both readers

QUIRKS = {
    "CR only": (b"q Q0 a 1 1 t\rq Q0 b 2 0 t\r\rq Q0 c 3 0 t\r", [1, 2, 4]),
    "CRLF": (b"q Q0 a 1 1 t\r\nq Q0 b 2 0 t\r\n\r\nq Q0 c 3 0 t", [1, 2, 4]),
    "mixed endings": (b"q Q0 a 1 1 t\n\rq Q0 b 2 0 t\r\n\nq Q0 c 3 0 t\n", [1, 3, 5]),
    "BOM": (b"\xef\xbb\xbfq Q0 a 1 1 t\nq Q0 b 2 0 t\n\nq Q0 c 3 0 t\n", [1, 2, 4]),
    "BOM then blanks": (b"\xef\xbb\xbf \t\nq Q0 a 1 1 t\nq Q0 b 2 0 t\nq Q0 c 3 0 t", [2, 3, 4]),
    "blank-only lines": (b" \n\t\n \t \nq Q0 a 1 1 t\n\t\nq Q0 b 2 0 t\n     \nq Q0 c 3 0 t\n", [4, 6, 8]),
    "a line of one tab": (b"\t\nq Q0 a 1 1 t\n\t\nq Q0 b 2 0 t\nq Q0 c 3 0 t\n\t", [2, 4, 5]),
    "tab-separated": (b"q\tQ0\ta\t1\t1\tt\nq\tQ0\tb\t2\t0\tt\n\nq\tQ0\tc\t3\t0\tt\n", [1, 2, 4]),
    "edge blanks": (b"  q Q0 a 1 1 t  \n\tq Q0 b 2 0 t\t\n\nq  Q0 c\t3 0 t \t", [1, 2, 4]),
}


@pytest.mark.parametrize("quirk", list(QUIRKS))
def test_tolerated_quirks_read_the_same_on_every_path(quirk, sizes):
    data, lines = QUIRKS[quirk]
    run = read_trec_run(data)
    assert rows(run) == strict_rows(data) == [("q", "a", 1, 1.0), ("q", "b", 2, 0.0), ("q", "c", 3, 0.0)]
    assert [run.line_of_row(i) for i in range(3)] == lines
    body = data[3:] if data.startswith(trec_run.BOM) else data
    assert nonblank_line_numbers(body).tolist() == lines


def test_a_nul_byte_is_an_ordinary_character(sizes):
    data = b"q Q0 d\x00 1 1 t\nq\x00 Q0 e 2 0 t\x00\n"
    assert rows(read_trec_run(data)) == strict_rows(data) == [("q", "d\x00", 1, 1.0), ("q\x00", "e", 2, 0.0)]
    assert refusal(b"q Q0 d 1 1 t\n\x00\n") == ["run.txt:2: error: expected 6 columns: topic Q0 docid rank score tag, found 1"]


def test_a_byte_order_mark_counts_only_at_the_start(sizes):
    data = b"\xef\xbb\xbfq Q0 a 1 1 t\n\xef\xbb\xbfq Q0 b 2 0 t\n"
    assert rows(read_trec_run(data)) == strict_rows(data) == [("q", "a", 1, 1.0), ("\ufeffq", "b", 2, 0.0)]
    # Arrow's CSV reader skips a mark that opens its buffer: a second one is still text.
    data = b"\xef\xbb\xbf\xef\xbb\xbfq Q0 a 1 1 t\n"
    assert rows(read_trec_run(data)) == strict_rows(data) == [("\ufeffq", "a", 1, 1.0)]
    assert refusal(b"\xef\xbb\xbf\xef\xbb\xbf\n") == ["run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 1"]


def test_only_blank_lines_is_an_empty_run(sizes):
    for data in (b"", b"\xef\xbb\xbf", b"\n\r\n \t\n", b"\t"):
        assert refusal(data) == ["run.txt: error: the run is empty: expected 6 columns: topic Q0 docid rank score tag"]


def test_numbers_mean_the_same_whatever_the_blanks_around_them(sizes):
    # Arrow's CSV number parser trims blanks ('1\t' is 1) where its cast does not; either way
    # the tab separates columns and the value is the text between the blanks.
    assert rows(read_trec_run(b"q Q0 d 0x10\t 2.5 t\n")) == [("q", "d", 16, 2.5)]
    assert refusal(b"q Q0 d 1 \x0b1 t\n") == ["run.txt:1: error: score '\\x0b1' is not a number"]


# ----------------------------------------------------------------------------- the property

PIECES = [b"q", b"Q0", b"d", b"1", b"7", b"-2", b"0", b"2.5", b"1e3", b"nan", b"x", b"\xc3\xa9", b"\xe2\x82\xac", b"\xff", b"\xed\xa0\x80", b"\x00", b"\x0b", b"\xef\xbb\xbf", b"tag"]
BLANKS = [b" ", b"\t", b"  ", b" \t", b"\t ", b"\t\t"]
BREAKS = [b"\n", b"\r\n", b"\r"]
BYTES = [b" ", b"\t", b"\r", b"\n", b"a", b"1", b"\x00", b"\xc3", b"\xa9", b"\xff", b"\x80", b"\xef\xbb\xbf"]

field = st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map(b"".join)
blank = st.sampled_from(BLANKS)
edge = st.sampled_from([b"", b"", b" ", b"\t", b" \t "])


@st.composite
def run_line(draw) -> bytes:
    if draw(st.integers(0, 9)) == 0:  # raw bytes from an alphabet of blanks, breaks and non-ASCII
        return b"".join(draw(st.lists(st.sampled_from(BYTES), max_size=12)))
    count = draw(st.sampled_from([6, 6, 6, 6, 5, 7, 1, 0]))
    values = [draw(field) for _ in range(count)]
    if count == 6 and draw(st.booleans()):  # mostly well-formed numbers
        values[3] = str(draw(st.integers(-2, 10**6))).encode()
        values[4] = repr(draw(st.floats(allow_nan=False, width=64))).encode()
    body = values[0] if values else b""
    for value in values[1:]:
        body += draw(blank) + value
    return draw(edge) + body + draw(edge)


@st.composite
def run_file(draw) -> bytes:
    lines = draw(st.lists(run_line(), min_size=0, max_size=25))
    ends = [draw(st.sampled_from(BREAKS)) for _ in lines]
    data = b"".join(line + end for line, end in zip(lines, ends))
    if draw(st.booleans()) and data:
        data = data[: -len(ends[-1])]  # no final line end
    return (trec_run.BOM if draw(st.integers(0, 4)) == 0 else b"") + data


@settings(max_examples=400, deadline=None)
@given(run_file(), st.sampled_from(["default sizes", "tiny sizes", "small sizes"]))
@example(b"\x00 \x00\n", "default sizes")  # " \n" in UTF-16BE: refused whole (found by this test)
@pytest.mark.slow
def test_every_path_reads_every_file_as_the_line_by_line_rules_do(data, size_name):
    sizes = {"default sizes": {}, "tiny sizes": dict(CHUNK_BYTES=37, REGION_BYTES=23, LONG_LINE=19, WINDOW_BYTES=5),
             "small sizes": dict(CHUNK_BYTES=300, REGION_BYTES=80, LONG_LINE=40, WINDOW_BYTES=16)}[size_name]
    saved = {k: getattr(trec_run, k) for k in sizes}
    try:
        for k, v in sizes.items():
            setattr(trec_run, k, v)
        fast = fast_outcome(data)
    finally:
        for k, v in saved.items():
            setattr(trec_run, k, v)
    assert fast == strict_outcome(data)


# ----------------------------------------------------------------------------- bounded refusals


def test_after_the_cap_the_rest_is_not_checked(sizes):
    bad = b"q Q0 d 1 x t\n" * 3 + b"q Q0 d 1 1 t\n"
    data = b"q Q0 d 1 1 t\n" + bad * 10
    lines = refusal(data)
    assert len(lines) == MAX_LISTED_ERRORS + 1
    assert lines[0] == "run.txt:2: error: score 'x' is not a number"
    assert lines[MAX_LISTED_ERRORS - 1] == "run.txt:27: error: score 'x' is not a number"
    assert lines[-1] == f"run.txt: error: checking stopped after {MAX_LISTED_ERRORS} errors: the lines after line 27 were not checked"


def test_exactly_the_cap_at_the_end_needs_no_note(sizes):
    data = b"q Q0 d 1 1 t\n" + b"q Q0 d x 1 t\n" * MAX_LISTED_ERRORS
    lines = refusal(data)
    assert lines == [f"run.txt:{n}: error: rank 'x' is not an integer" for n in range(2, 2 + MAX_LISTED_ERRORS)]


def test_errors_of_every_kind_come_in_line_order(sizes):
    data = (
        b"q Q0 a 1 1 t\n"
        b"q Q0 b -2 1 t\n"  # 2 rank negative
        b"q Q0 c 1 inf t\n"  # 3 not finite
        b"q Q\xff c 1 1 t\n"  # 4 not UTF-8
        b"q Q0 d 1 1\n"  # 5 five columns
        b"q Q0 e one 1 t\n"  # 6 rank
        b"q Q0 e 1 one t\n"  # 7 score
        b"q Q0 e one one t u\n"  # 8 seven columns
        b"q Q0 e -1 nan t\n"  # 9 rank first
    )
    assert refusal(data) == [
        "run.txt:2: error: rank -2 is negative; ranks start at 1 (or at 0, as PyTerrier writes them)",
        "run.txt:3: error: score 'inf' is not a finite number",
        f"run.txt:4: error: {NOT_UTF8}",
        f"run.txt:5: error: {FIVE}",
        "run.txt:6: error: rank 'one' is not an integer",
        "run.txt:7: error: score 'one' is not a number",
        "run.txt:8: error: expected 6 columns: topic Q0 docid rank score tag, found 7",
        "run.txt:9: error: rank -1 is negative; ranks start at 1 (or at 0, as PyTerrier writes them)",
    ]


def test_values_in_messages_are_quoted_and_cut(sizes):
    long_rank = b"9" * 5000 + b"x"
    lines = refusal(b"q Q0 d " + long_rank + b" 1 t\nq Q0 d 1 \x1b[31m t\nq Q0 d 1 it's t\n")
    assert lines == [
        "run.txt:1: error: rank '" + "9" * 80 + "...' (5001 bytes in all) is not an integer",
        "run.txt:2: error: score '\\x1b[31m' is not a number",
        "run.txt:3: error: score 'it\\'s' is not a number",
    ]


@pytest.mark.parametrize("small", [False, True])
def test_a_long_line_is_counted_not_split(small, monkeypatch):
    if small:  # every cut falls inside the long lines (the tiny sizes would take minutes here)
        for name, size in dict(CHUNK_BYTES=1 << 20, REGION_BYTES=1 << 16, LONG_LINE=1 << 12, WINDOW_BYTES=1 << 14).items():
            monkeypatch.setattr(trec_run, name, size)
    huge = b"q Q0 " + b"d " * 3_000_000 + b"1 1 t"
    assert refusal(b"q Q0 d 1 1 t\n" + huge + b"\nq Q0 d 1 1 t\n") == [
        "run.txt:2: error: expected 6 columns: topic Q0 docid rank score tag, found 3000005"
    ]
    valid = b"q Q0 " + b"d" * (20 << 20) + b"\t1 1 t"  # longer than Arrow's 16 MB block
    run = read_trec_run(b"q Q0 a 1 1 t\r\n" + valid + b"\r\nq Q0 b 2 0 t")
    assert [len(d) for d in run.doc_id.to_pylist()] == [1, 20 << 20, 1]
    assert [run.line_of_row(i) for i in range(3)] == [1, 2, 3]


def test_the_cli_says_20_errors_of_a_gzip_bomb_in_one_line_then_stops(tmp_path):
    run = tmp_path / "run.txt.gz"
    run.write_bytes(gzip.compress(b"q Q0 d 1 1\n" * 2_000_000, 9))
    ref = benchmark_reference(FACTIR_QRELS, benchmark="factir", cutoffs=FACTIR_CUTOFFS, official="ndcg_10")
    ref.write(tmp_path / "ref")
    done = subprocess.run([sys.executable, "-m", "reteco", "validate", "--ref", tmp_path / "ref", run], capture_output=True, text=True)
    assert done.returncode == 1
    # The 20 errors listed are one kind: one line says them, with their count and first lines.
    assert done.stderr.splitlines() == [
        f"run.txt.gz:1: error: {FIVE} (the same error on {MAX_LISTED_ERRORS} lines: 1, 2, 3, 4, 5, ...)",
        f"run.txt.gz: error: checking stopped after {MAX_LISTED_ERRORS} errors: the lines after line 20 were not checked",
    ]


def test_line_numbers_of_a_large_run_cost_little_memory():
    data = b"q Q0 d 1 1 t\n\n" * 200_000
    numbers = nonblank_line_numbers(data)
    assert numbers.dtype == np.int64 and len(numbers) == 200_000
    assert numbers[:3].tolist() == [1, 3, 5] and int(numbers[-1]) == 399_999


def test_participant_ids_in_warnings_and_errors_are_quoted():
    topics = [Topic("bio/2_turn_1", "bio", "2_turn_1", "bio/2_turn_1", "bio/2", 1)]
    corpus = DocIdIndex.from_pairs([("bio", "doc-a"), ("bio", "doc-b")], ["bio"])
    manifest = {"subtrack": "2a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "domains": ["bio"]}
    ref = Reference(manifest, topics, [Judgment("bio/2_turn_1", "doc-b", 1)], corpus)
    long_id = "x" * 200
    data = b"bio/2_turn_1 Q0 doc-b 1 3 t\nbio/2_turn_1 Q0 " + long_id.encode() + b" 2 2 t\nzz\x1b[2J Q0 doc-a 1 1 t\n"
    warnings = [str(p) for p in score_run(ref, data, "run.txt").problems.warnings()]
    assert any(w.endswith("ignored (1 lines), e.g. 'zz\\x1b[2J'") for w in warnings), warnings
    assert any(w.endswith("were discarded, e.g. '" + "x" * 80 + "...' (200 characters in all)") for w in warnings), warnings
    assert "\x1b" not in "".join(warnings)
    with pytest.raises(InputError) as caught:
        score_run(ref, b"q\x07it's Q0 doc-a 1 1 t\n", "run.txt")
    assert "(for example 'q\\x07it\\'s')" in str(caught.value)
