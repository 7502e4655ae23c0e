"""Hostile run files (TREC format): every byte accepted is scored exactly, the rest refused
with the line named, cheaply, without reference data in the log.

Each row is one kind of input. Rows that must be accepted assert the scores computed by hand
(``hostile_harness.good_scores``) for a run that ranks one public document, then the topic's
relevant documents.
"""

from __future__ import annotations

import pytest
from support.hostile_harness import GOLD_MARK, Case, Expect, MiB, Workspace, good_lines, good_scores, line, run_case

RUN = "run.txt"


def valid_lines(ws: Workspace, sub: str = "1a") -> list[bytes]:
    """One line per reference topic, each ranking a public document (no gold id in the input)."""
    return [l.encode("utf-8") for l in ws.sub(sub).valid_run().splitlines()]


def with_line(at: int, bad: bytes | callable, sub: str = "1a"):
    """The valid run with ``bad`` (bytes, or a function of the workspace) as line ``at``."""

    def content(ws: Workspace) -> bytes:
        lines = valid_lines(ws, sub)
        lines.insert(at - 1, bad(ws) if callable(bad) else bad)
        return b"\n".join(lines) + b"\n"

    return content


def only(bad) -> callable:
    """A run whose every line is ``bad`` (bytes or a function of the workspace)."""
    return lambda ws: (bad(ws) if callable(bad) else bad) + b"\n"


def topic(ws: Workspace, sub: str = "1a") -> str:
    return ws.sub(sub).topic.topic_id


def public(ws: Workspace, n: int = 0, sub: str = "1a") -> str:
    return ws.sub(sub).public[n]


def tab_after_doc_id(good: bytes) -> bytes:
    """``topic Q0 doc<TAB><SPACE>rank score tag``: the tab must separate, not end the doc id."""
    columns = good.split(b" ")
    return b" ".join(columns[:3]) + b"\t " + b" ".join(columns[3:])


def scored(content, sub: str = "1a", name: str = RUN, in_process: bool = True):
    return lambda ws: ws.score(ws.file(name, content(ws)), sub, in_process=in_process)


def validated(content, sub: str = "1a"):
    return lambda ws: ws.validate(ws.file(RUN, content(ws)), sub)


def big_run_with_bad_last_line(ws: Workspace) -> bytes:
    """~200,000 valid lines (~10 MB) and one bad line at the very end."""
    t = topic(ws)
    body = b"".join(b"%s Q0 doc%d %d %d.5 team\n" % (t.encode(), i, i + 1, 300000 - i) for i in range(200_000))
    return body + line(t, "late", "1", "1.0", tag="").rstrip() + b"\n"


def turn_spelled(ws: Workspace, spelling: str, number, qualified: bool = False) -> str:
    """The 2a topic's conversation with turn ``number`` (a string, or a function mapping the
    topic's own turn number to its digits), e.g. ``ex_12#turn<5,000 digits>``."""
    s = ws.sub("2a")
    conversation, own = (s.topic.key if qualified else s.topic.topic_id).rsplit("_turn_", 1)
    return conversation + spelling + (number(int(own)) if callable(number) else number)


def fullwidth(n: int) -> str:
    return "".join(chr(0xFF10 + int(d)) for d in str(n))


def arabic_indic(n: int) -> str:
    return "".join(chr(0x0660 + int(d)) for d in str(n))


def error_flood(ws: Workspace) -> bytes:
    """100,000 bad lines: the log must list 20 and count the rest."""
    return b"x y z\n" * 100_000


TEN_MB = 10 * MiB

CASES = [
    # --- columns ------------------------------------------------------------------------------
    Case(
        "five_columns",
        scored(with_line(3, lambda ws: line(topic(ws), public(ws), tag="").rstrip())),
        Expect.refused(RUN, 3, "expected 6 columns"),
    ),
    Case(
        "seven_columns",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws)) + b" extra")),
        Expect.refused(RUN, 2, "expected 6 columns"),
    ),
    Case("one_column", scored(with_line(1, b"justoneword")), Expect.refused(RUN, 1, "expected 6 columns")),
    Case(
        "five_columns_and_trailing_blanks",
        scored(with_line(4, lambda ws: line(topic(ws), public(ws), tag="").rstrip() + b" \t ")),
        Expect.refused(RUN, 4, "expected 6 columns"),
    ),
    Case("no_break_space_as_separator", scored(with_line(2, lambda ws: line(topic(ws), public(ws), sep="\u00a0"))), Expect.refused(RUN, 2)),
    Case(
        "validate_five_columns",
        validated(with_line(3, lambda ws: line(topic(ws), public(ws), tag="").rstrip())),
        Expect.refused(RUN, 3, "expected 6 columns"),
    ),
    # --- separators and line ends that are fine: scored exactly ------------------------------
    Case(
        "tab_next_to_space_after_doc_id",
        scored(lambda ws: b"\n".join(tab_after_doc_id(l) for l in good_lines(ws)) + b"\n"),
        Expect.accepted(good_scores),
    ),
    Case("tabs_and_spaces_mixed", scored(lambda ws: b"\n".join(good_lines(ws, sep=" \t  ")) + b"\n"), Expect.accepted(good_scores)),
    Case("cr_only_line_endings", scored(lambda ws: b"\r".join(good_lines(ws)) + b"\r"), Expect.accepted(good_scores)),
    Case(
        "crlf_bom_blank_lines_no_final_newline",
        scored(lambda ws: b"\xef\xbb\xbf\r\n" + b"\r\n\r\n".join(good_lines(ws))),
        Expect.accepted(good_scores),
    ),
    Case(
        "leading_and_trailing_blanks",
        scored(lambda ws: b"".join(b"  \t" + l + b" \t\n" for l in good_lines(ws))),
        Expect.accepted(good_scores),
    ),
    # --- encoding -----------------------------------------------------------------------------
    Case(
        "not_utf8_in_topic",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws)).replace(topic(ws).encode(), topic(ws).encode() + b"\xff"))),
        Expect.refused(RUN, 2, "UTF-8"),
    ),
    Case(
        "not_utf8_in_q0",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws)).replace(b" Q0 ", b" Q\xff0 "))),
        Expect.refused(RUN, 2, "UTF-8"),
    ),
    Case(
        "not_utf8_in_doc_id",
        scored(with_line(3, lambda ws: line(topic(ws), "doc").replace(b"doc", b"d\xe9c"))),
        Expect.refused(RUN, 3, "UTF-8"),
    ),
    Case(
        "not_utf8_in_score",
        scored(with_line(3, lambda ws: line(topic(ws), public(ws), score="1.0").replace(b"1.0", b"1.0\x80"))),
        Expect.refused(RUN, 3),
    ),
    Case(
        "not_utf8_in_tag_column",
        scored(with_line(5, lambda ws: line(topic(ws), public(ws), tag="t").replace(b" t", b" t\xc3\x28"))),
        Expect.refused(RUN, 5, "UTF-8"),
    ),
    Case(
        "utf8_encoded_surrogate_in_doc_id",
        scored(with_line(2, lambda ws: line(topic(ws), "doc").replace(b"doc", b"d\xed\xa0\x80c"))),
        Expect.refused(RUN, 2, "UTF-8"),
    ),
    Case(
        "latin1_whole_file",
        scored(lambda ws: "".join(f"{t.topic_id} Q0 caf\u00e9 1 1.0 x\n" for t in ws.sub("1a").reference.topics).encode("latin-1")),
        Expect.refused(RUN, 1, "UTF-8"),
    ),
    # Windows PowerShell's `>` writes UTF-16LE with a byte-order mark: said once, not per line.
    Case(
        "utf16_powershell_redirect",
        scored(lambda ws: b"\n".join(valid_lines(ws)).decode("utf-8").encode("utf-16") + "\n".encode("utf-16-le")),
        Expect.refused(RUN, None, r"the run file is UTF-16 \(little-endian\) text, not UTF-8", error_lines=1),
    ),
    Case(
        "utf16_without_byte_order_mark",
        scored(lambda ws: b"\n".join(valid_lines(ws)).decode("utf-8").encode("utf-16-be")),
        Expect.refused(RUN, None, r"UTF-16 \(big-endian\) text", error_lines=1),
    ),
    Case(
        "utf32_whole_file",
        scored(lambda ws: b"\n".join(valid_lines(ws)).decode("utf-8").encode("utf-32")),
        Expect.refused(RUN, None, r"UTF-32 \(little-endian\) text", error_lines=1),
    ),
    Case(
        "byte_order_mark_in_the_middle",
        scored(with_line(2, lambda ws: b"\xef\xbb\xbf" + line(topic(ws), public(ws)))),
        Expect.refused(RUN, 2),
    ),
    # --- control characters: never raw in the log ---------------------------------------------
    Case("nul_bytes_in_topic", scored(only(lambda ws: line("\x00" + topic(ws) + "\x00", public(ws)))), Expect.refused(RUN)),
    Case(
        "terminal_escapes_in_topic",
        scored(only(lambda ws: line("\x1b]0;pwned\x07\x1b[2J\x1b[31m" + topic(ws), public(ws)))),
        Expect.refused(RUN),
    ),
    Case(
        "terminal_escapes_in_unknown_doc_id",
        scored(lambda ws: b"\n".join([*good_lines(ws), line(topic(ws), "\x1b[2J\x1b[31mred", 9, 0.5)]) + b"\n"),
        Expect.accepted(good_scores),
    ),
    Case(
        "terminal_escapes_in_foreign_topic_beside_valid_ones",
        scored(lambda ws: b"\n".join([*good_lines(ws), line("\x1b[2Jnosuch", "d")]) + b"\n"),
        Expect.accepted(good_scores),
    ),
    # --- sizes: the log stays small, the cost bounded -----------------------------------------
    Case(
        "ten_mb_doc_id_in_a_broken_line",
        scored(with_line(2, lambda ws: line(topic(ws), "d" * TEN_MB, tag="").rstrip()), in_process=False),
        Expect.refused(RUN, 2, "expected 6 columns"),
    ),
    Case(
        "ten_mb_unknown_doc_id_in_a_valid_line",
        scored(lambda ws: b"\n".join([*good_lines(ws), line(topic(ws), "d" * TEN_MB, 9, 0.5)]) + b"\n", in_process=False),
        Expect.accepted(good_scores),
    ),
    Case("ten_mb_topic_id", scored(only(lambda ws: line("t" * TEN_MB, public(ws))), in_process=False), Expect.refused(RUN)),
    Case(
        "ten_mb_rank",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank="9" * TEN_MB)), in_process=False),
        Expect.refused(RUN, 2, "rank"),
    ),
    Case(
        "ten_mb_score",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="x" * TEN_MB)), in_process=False),
        Expect.refused(RUN, 2, "score"),
    ),
    # Scoring 200,000 lines takes well under a second: refusing them may not take ten times longer.
    Case(
        "one_bad_line_after_200k_good_ones",
        scored(big_run_with_bad_last_line, in_process=False),
        Expect.refused(RUN, 200_001, "expected 6 columns"),
        seconds=10,
    ),
    Case("error_flood_100k_bad_lines", scored(error_flood, in_process=False), Expect.refused(RUN, 1, r"checking stopped after 20 errors")),
    Case(
        "tag_column_missing_on_every_line",
        scored(lambda ws: b"".join(l.rsplit(b" ", 1)[0] + b"\n" for l in valid_lines(ws) * 30)),
        Expect.refused(
            RUN, 1, r"found 5; the tag column is missing: .* \(the same error on 20 lines: 1, 2, 3, 4, 5, \.\.\.\)", error_lines=2
        ),
    ),
    # --- ranks ----------------------------------------------------------------------------------
    # PyTerrier's write_results numbers ranks from 0: read, with a warning (issue 35).
    Case("rank_zero", scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank=0))),
         Expect.accepted(says="the ranks start at 0")),
    Case("rank_negative", scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank=-1))), Expect.refused(RUN, 2, "rank")),
    Case("rank_fraction", scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank="2.5"))), Expect.refused(RUN, 2, "rank")),
    Case(
        "rank_beyond_int64",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank="99999999999999999999999"))),
        Expect.refused(RUN, 2, "rank"),
    ),
    Case("rank_exponent", scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank="1e3"))), Expect.refused(RUN, 2, "rank")),
    Case(
        "rank_fullwidth_digit",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), rank="\uff13"))),
        Expect.refused(RUN, 2, "rank"),
    ),
    # --- scores ---------------------------------------------------------------------------------
    Case("score_nan", scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="nan"))), Expect.refused(RUN, 2, "finite")),
    Case("score_inf", scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="-inf"))), Expect.refused(RUN, 2, "finite")),
    Case(
        "score_1e999_overflows",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="1e999"))),
        Expect.refused(RUN, 2, "score"),
    ),
    Case("score_hex", scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="0x1p3"))), Expect.refused(RUN, 2, "score")),
    Case("score_decimal_comma", scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="1,5"))), Expect.refused(RUN, 2, "score")),
    Case(
        "score_fullwidth_digits",
        scored(with_line(2, lambda ws: line(topic(ws), public(ws), score="\uff11.\uff15"))),
        Expect.refused(RUN, 2, "score"),
    ),
    # --- empty runs -----------------------------------------------------------------------------
    Case("empty_run", scored(lambda ws: b""), Expect.refused(RUN, None, "empty")),
    Case("only_blank_lines", scored(lambda ws: b"\n \n\t\r\n\r\n   \n"), Expect.refused(RUN, None, "empty")),
    Case("only_a_byte_order_mark", scored(lambda ws: b"\xef\xbb\xbf"), Expect.refused(RUN, None, "empty")),
    # --- topics ---------------------------------------------------------------------------------
    # --- documents: none in the corpus is refused, with the cause, quoting only the run's ids ------
    Case("no_document_in_the_corpus", scored(only(lambda ws: line(topic(ws), "nosuch_doc"))),
         Expect.refused(RUN, None, "none of the run's document ids is in the corpus")),
    Case("every_document_id_prefixed", scored(only(lambda ws: line(topic(ws), "corpus/" + public(ws)))),
         Expect.refused(RUN, None, "every id starts with 'corpus/'")),
    Case("all_topics_foreign", scored(only(lambda ws: line("nosuch_topic", public(ws)))), Expect.refused(RUN, None, "none of the run")),
    Case(
        "run_of_another_subtrack",
        scored(lambda ws: ws.sub("2a").valid_run().encode(), sub="1b"),
        Expect.refused(RUN, None, "none of the run"),
    ),
    Case(
        "ambiguous_bare_turn_id",
        scored(with_line(2, lambda ws: line(ws.sub("2a").ambiguous, public(ws, sub="2a")), sub="2a"), sub="2a"),
        Expect.refused(RUN, 2, "several domains"),
    ),
    Case(
        "turn_number_of_5000_digits",
        scored(only(lambda ws: line(turn_spelled(ws, "#turn", "7" * 5000), public(ws, sub="2a"))), sub="2a"),
        Expect.refused(RUN),
    ),
    Case(
        "turn_number_of_5000_digits_qualified",
        scored(only(lambda ws: line(turn_spelled(ws, "#turn", "1" * 5000, qualified=True), public(ws, sub="2a"))), sub="2a"),
        Expect.refused(RUN),
    ),
    Case(
        "fullwidth_digits_in_turn_id",
        scored(only(lambda ws: line(turn_spelled(ws, "#turn", fullwidth), public(ws, sub="2a"))), sub="2a"),
        Expect.refused(RUN, None, "none of the run"),
    ),
    Case(
        "arabic_indic_digits_in_turn_id",
        scored(only(lambda ws: line(turn_spelled(ws, "_turn_", arabic_indic), public(ws, sub="2a"))), sub="2a"),
        Expect.refused(RUN, None, "none of the run"),
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_run(case: Case, workspace: Workspace):
    run_case(case, workspace)


def test_the_accepted_runs_hold_gold_ids_and_score_above_zero(workspace):
    # The accepted rows' expected figures must come from a run that really hits the gold: a
    # marker missing from the ids, or a topic without relevant documents, would make every
    # "scored exactly" row vacuous.
    s = workspace.sub("1a")
    assert s.golds and all(GOLD_MARK in g for g in s.golds)
    assert all(GOLD_MARK not in p for p in s.public) and len(s.public) >= 10
    assert good_scores(workspace)["ndcg_10"] > 0
