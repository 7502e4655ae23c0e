"""The run reader and the CLI on bad runs: each rule broken on purpose."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.trec_run import _read_strict, read_trec_run
from reteco.problems import InputError

GOLD = ["gold-doc-alpha", "gold-doc-beta", "gold-doc-gamma"]


@pytest.fixture
def ref_dir(tmp_path) -> Path:
    topics = [
        Topic("bio/2_turn_1", "bio", "2_turn_1", "bio/2_turn_1", "bio/2", 1),
        Topic("geo/2_turn_1", "geo", "2_turn_1", "geo/2_turn_1", "geo/2", 1),
        Topic("geo/ex_7_turn_1", "geo", "ex_7_turn_1", "geo/ex_7_turn_1", "geo/ex_7", 1),
    ]
    judgments = [
        Judgment("bio/2_turn_1", GOLD[0], 1),
        Judgment("geo/2_turn_1", GOLD[1], 1),
        Judgment("geo/ex_7_turn_1", GOLD[2], 1),
    ]
    corpus = [("bio", GOLD[0]), ("bio", "neg1"), ("geo", GOLD[1]), ("geo", GOLD[2]), ("geo", "neg2")]
    manifest = {"subtrack": "2a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10], "domains": ["bio", "geo"]}
    ref = Reference(manifest, topics, judgments, DocIdIndex.from_pairs(corpus, ["bio", "geo"]))
    ref.write(tmp_path / "ref")
    return tmp_path / "ref"


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reteco", *map(str, args)], capture_output=True, text=True)


@pytest.mark.slow
def test_valid_run_with_every_tolerated_quirk(tmp_path, ref_dir):
    run = tmp_path / "run.txt"
    run.write_bytes(
        b"\xef\xbb\xbf bio/2_turn_1\tQ0  gold-doc-alpha 1 2.0 t\r\n\r\n"
        b"geo/2#turn1 Q0 neg2 1 3 t \r\ngeo/2_turn_1 Q0 gold-doc-beta 2 1e0 t"
    )
    done = cli("score", "--ref", ref_dir, "--res", run, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert scores["ndcg_10"] == pytest.approx((1 + 1 / 1.584962500721156 + 0) / 3)
    details = json.loads((tmp_path / "out" / "details.json").read_text())
    assert details["counts"]["lines_read"] == 3 and details["counts"]["topics_missing"] == 1


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"geo/2_turn_1 Q0 neg2 1 1.0\n", "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5"),
        (b"geo/2_turn_1 Q0 neg2 1 1.0 t\ngeo/2_turn_1 Q0 neg2 1 1.0 t extra\n", "run.txt:2: error: expected 6 columns"),
        (b"geo/2_turn_1 Q0 neg2 first 1.0 t\n", "run.txt:1: error: rank 'first' is not an integer"),
        (b"geo/2_turn_1 Q0 neg2 2.5 1.0 t\n", "run.txt:1: error: rank '2.5' is not an integer"),
        (b"\ngeo/2_turn_1 Q0 neg2 -1 1.0 t\n",
         "run.txt:2: error: rank -1 is negative; ranks start at 1 (or at 0, as PyTerrier writes them)"),
        (b"geo/2_turn_1 Q0 neg2 -3 1.0 t\n", "run.txt:1: error: rank -3 is negative"),
        (b"geo/2_turn_1 Q0 neg2 1 NaN t\n", "run.txt:1: error: score 'NaN' is not a finite number"),
        (b"geo/2_turn_1 Q0 neg2 1 inf t\n", "run.txt:1: error: score 'inf' is not a finite number"),
        (b"geo/2_turn_1 Q0 neg2 1 high t\n", "run.txt:1: error: score 'high' is not a number"),
        (b"geo/2_turn_1 Q0 n\xe9g 1 1 t\n", "run.txt:1: error: the line is not valid UTF-8"),
        (b"geo/2_turn_1 Q\xe9 neg2 1 1 t\n", "run.txt:1: error: the line is not valid UTF-8; save the run as UTF-8 text"),
        (b"geo/2_turn_1 Q0 neg2 1 1 \n", "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5"),
        (b"geo/2_turn_1 Q0 neg2\t 1 1 t\ngeo/2_turn_1 Q0 x 1 y t\n", "run.txt:2: error: score 'y' is not a number"),
        (b"", "run.txt: error: the run is empty"),
        (b"2_turn_1 Q0 neg2 1 1 t\n", "run.txt:1: error: topic '2_turn_1' exists in several domains; write it as 'bio/2_turn_1' or 'geo/2_turn_1'"),
        (b"q1 Q0 neg2 1 1 t\n", "run.txt: error: none of the run's 1 topics is a topic of sub-track 2a"),
    ],
)
@pytest.mark.slow
def test_bad_runs_fail_with_line_numbers_and_exit_1(tmp_path, ref_dir, content, expected):
    run = tmp_path / "run.txt"
    run.write_bytes(content)
    for command in (("score", "--ref", ref_dir, "--res", run, "--out", tmp_path / "out"), ("validate", "--ref", ref_dir, run)):
        done = cli(*command)
        assert done.returncode == 1
        assert done.stderr.startswith(expected), done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        for gold in GOLD:
            assert gold not in done.stderr + done.stdout
    assert not (tmp_path / "out" / "scores.json").exists()


def test_every_bad_line_is_listed(tmp_path, ref_dir):
    run = tmp_path / "run.txt"
    run.write_bytes(b"geo/2_turn_1 Q0 a 1 1 t\ngeo/2_turn_1 Q0 b x 1 t\ngeo/2_turn_1 Q0 c 2 y t\ngeo/2_turn_1 Q0 d 3\n")
    done = cli("validate", "--ref", ref_dir, run)
    assert done.returncode == 1
    assert [line.split(": error")[0] for line in done.stderr.splitlines()] == ["run.txt:2", "run.txt:3", "run.txt:4"]


def test_validate_warns_on_questionable_input(tmp_path, ref_dir):
    run = tmp_path / "run.txt.gz"
    run.write_bytes(
        gzip.compress(
            b"geo/2_turn_1 Q0 neg2 1 1.0 t\ngeo/2_turn_1 Q0 gold-doc-beta 2 5.0 t\n"
            b"geo/2_turn_1 Q0 made-up-id 3 0.5 t\ngeo/2_turn_1 Q0 neg2 4 0.1 t\nzzz Q0 neg2 1 1 t\n"
        )
    )
    done = cli("validate", "--ref", ref_dir, run)
    assert done.returncode == 0, done.stderr
    assert "1 topics are not in the reference and were ignored (1 lines), e.g. 'zzz'" in done.stderr
    assert "rank column disagrees with the scores" in done.stderr
    assert "'made-up-id'" in done.stderr
    assert "repeat a document already ranked" in done.stderr
    assert "2 reference topics have no ranked document" in done.stderr
    assert "valid for sub-track 2a" in done.stdout


blank = st.sampled_from([" ", "\t", "  ", " \t "])
token = st.text(alphabet="abcXYZ019_/#.-", min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(token, token, st.integers(1, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=64), blank, blank),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_fast_and_strict_readers_agree(rows, newline, leading_blank):
    text = newline.join(
        f"{a if leading_blank else ''}{t}{a}Q0{b}{d}{a}{r}{b}{s!r}{a}tag{b if leading_blank else ''}"
        for t, d, r, s, a, b in rows
    )
    data = text.encode()
    fast = read_trec_run(data)
    strict = _read_strict(data, "run")
    assert fast.topic.to_pylist() == strict.column("topic").to_pylist() == [r[0] for r in rows]
    assert fast.doc_id.to_pylist() == strict.column("doc_id").to_pylist() == [r[1] for r in rows]
    assert fast.rank.tolist() == strict.column("rank").to_pylist() == [r[2] for r in rows]
    assert fast.score.tolist() == strict.column("score").to_pylist() == [r[3] for r in rows]


def test_line_of_row_skips_blank_lines():
    run = read_trec_run(b"\n\nq Q0 a 1 1 t\n  \nq Q0 b 2 0 t\n")
    assert [run.line_of_row(0), run.line_of_row(1)] == [3, 5]


def test_lone_carriage_returns_end_lines_in_both_readers():
    data = b"q Q0 a 1 1 t\rq Q0 b 2 0 t\r\rq Q0 c 3 0 t"
    fast = read_trec_run(data, "run.txt")
    strict = _read_strict(data, "run.txt")
    assert fast.doc_id.to_pylist() == strict.column("doc_id").to_pylist() == ["a", "b", "c"]
    assert [fast.line_of_row(i) for i in range(3)] == [1, 2, 4]


def test_line_numbers_survive_releasing_the_bytes(tmp_path, ref_dir):
    # The scorer frees the run's bytes after parsing and reads them again for a late error.
    run = tmp_path / "run.txt"
    run.write_bytes(b"\xef\xbb\xbf\n\ngeo/2_turn_1 Q0 neg2 1 1 t\n\n2_turn_1 Q0 neg2 1 1 t\n")
    done = cli("score", "--ref", ref_dir, "--res", run, "--out", tmp_path / "out")
    assert done.returncode == 1
    assert done.stderr.startswith("run.txt:5: error: topic '2_turn_1' exists in several domains")


# ----------------------------------------------------------------------------- mistakes made on every line

SIX = [f"bio/2_turn_1 Q0 doc{i} {i} {10 - i}.5 my_system" for i in range(1, 31)]


def _refusal(data: bytes) -> list[str]:
    with pytest.raises(InputError) as caught:
        read_trec_run(data, "run.txt")
    return caught.value.problems.lines()


@pytest.mark.parametrize(
    "encoding, said",
    [("utf-16", "UTF-16 (little-endian)"), ("utf-16-le", "UTF-16 (little-endian)"), ("utf-16-be", "UTF-16 (big-endian)"),
     ("utf-32", "UTF-32 (little-endian)"), ("utf-32-be", "UTF-32 (big-endian)")],
)
def test_a_utf16_or_utf32_run_is_said_so_once(encoding, said):
    """The input that triggered it (issue 22): PowerShell's `>` writes UTF-16; before, one right
    line then 19 misleading ones (rank '\\x002\\x00' is not an integer)."""
    data = "\n".join(SIX).encode(encoding)
    assert _refusal(data) == [
        f"run.txt: error: the run file is {said} text, not UTF-8 (Windows PowerShell's `>` and Out-File write "
        "UTF-16); save it as UTF-8: in PowerShell `... | Out-File -Encoding utf8 FILE`, in Python "
        "open(path, 'w', encoding='utf-8')"
    ]


def test_a_missing_tag_column_is_named_once():
    data = "\n".join(line.rsplit(" ", 1)[0] for line in SIX).encode()
    assert _refusal(data) == [
        "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5; the tag column is missing: "
        "write a run tag (e.g. my_system) after the score on every line (the same error on 20 lines: 1, 2, 3, 4, 5, ...)",
        "run.txt: error: checking stopped after 20 errors: the lines after line 20 were not checked",
    ]


def test_a_missing_q0_column_is_named():
    data = b"bio/2_turn_1 doc1 1 2.5 my_system\n"
    assert _refusal(data) == [
        "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5; the Q0 column is missing: "
        "write Q0 between the topic and the document id on every line"
    ]


def test_five_columns_whose_missing_one_cannot_be_told_say_only_their_count():
    assert _refusal(b"bio/2_turn_1 Q0 doc1 first my_system\n") == [
        "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5"
    ]
