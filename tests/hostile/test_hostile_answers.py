"""Hostile answers files (2b, and 2c's answers beside a run): JSONL that is not JSON, not
objects, wrong types, numbers Python refuses to convert, nesting, huge strings, bad bytes.
Every one is refused with its line named (exit 1), cheaply, without reference data."""

from __future__ import annotations

import json

import pytest
from support.hostile_harness import Case, Expect, MiB, Where, Workspace, run_case

ANSWERS = "answers.jsonl"


def valid_lines(ws: Workspace, sub: str = "2b") -> list[bytes]:
    return [l.encode("utf-8") for l in ws.sub(sub).valid_answers().splitlines()]


def turn(ws: Workspace, n: int = 0, sub: str = "2b") -> str:
    return ws.sub(sub).reference.topics[n].key


def record(**fields) -> bytes:
    return json.dumps(fields).encode("utf-8")


def with_line(at: int, bad, sub: str = "2b"):
    """Three valid answers with ``bad`` (bytes, or a function of the workspace) as line ``at``."""

    def content(ws: Workspace) -> bytes:
        lines = valid_lines(ws, sub)
        lines.insert(at - 1, bad(ws) if callable(bad) else bad)
        return b"\n".join(lines) + b"\n"

    return content


def only(bad):
    return lambda ws: (bad(ws) if callable(bad) else bad) + b"\n"


def answered(content, in_process: bool = True):
    return lambda ws: ws.score(ws.file(ANSWERS, content(ws)), "2b", in_process=in_process)


def both_broken(ws: Workspace):
    """2c: a run with a bad line 2 and answers with a bad line 3, in one folder."""
    run = ws.sub("2c").valid_run().splitlines()
    run.insert(1, "only three columns")
    answers = valid_lines(ws, "2c")
    answers.insert(2, b"{not json")
    folder = ws.folder("sub", {"run.txt": "\n".join(run) + "\n", ANSWERS: b"\n".join(answers) + b"\n"})
    return ws.score(folder, "2c")


def deep(opening: str, closing: str, depth: int = 100_000) -> bytes:
    return (opening * depth + closing * depth).encode()


TEN_MB = 10 * MiB

CASES = [
    # --- not JSON, not an object -----------------------------------------------------------------
    Case("not_json", answered(with_line(2, b"hello, judge")), Expect.refused(ANSWERS, 2, "not valid JSON")),
    Case(
        "truncated_object",
        answered(with_line(3, lambda ws: record(turn_id=turn(ws), answer="x")[:-3])),
        Expect.refused(ANSWERS, 3, "not valid JSON"),
    ),
    Case("array_on_a_line", answered(with_line(2, b'["a", "b"]')), Expect.refused(ANSWERS, 2, "object")),
    Case("string_on_a_line", answered(with_line(2, b'"just text"')), Expect.refused(ANSWERS, 2, "object")),
    Case("number_on_a_line", answered(with_line(2, b"42")), Expect.refused(ANSWERS, 2, "object")),
    Case("null_on_a_line", answered(with_line(2, b"null")), Expect.refused(ANSWERS, 2, "object")),
    Case(
        "whole_file_one_json_array",
        answered(lambda ws: json.dumps([json.loads(l) for l in valid_lines(ws)]).encode()),
        Expect.refused(ANSWERS, None, "array"),
    ),
    Case(
        "two_objects_on_one_line",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer="a") + record(turn_id=turn(ws, 6), answer="b"))),
        Expect.refused(ANSWERS, 2, "JSON"),
    ),
    # --- fields -------------------------------------------------------------------------------------
    Case("missing_turn_id", answered(with_line(2, record(answer="an answer"))), Expect.refused(ANSWERS, 2, "turn_id")),
    Case("missing_answer", answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5)))), Expect.refused(ANSWERS, 2, "answer")),
    Case("turn_id_a_number", answered(with_line(2, record(turn_id=5, answer="a"))), Expect.refused(ANSWERS, 2, "turn_id")),
    Case("answer_null", answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer=None))), Expect.refused(ANSWERS, 2, "answer")),
    Case(
        "answer_an_array",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer=["a", "b"]))),
        Expect.refused(ANSWERS, 2, "answer"),
    ),
    Case(
        "answer_nan_literal",
        answered(with_line(2, lambda ws: f'{{"turn_id": "{turn(ws, 5)}", "answer": NaN}}'.encode())),
        Expect.refused(ANSWERS, 2, "answer"),
    ),
    Case(
        "answer_empty",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer=" \t "))),
        Expect.refused(ANSWERS, 2, "empty"),
    ),
    Case("turn_id_empty", answered(with_line(2, record(turn_id="  ", answer="a"))), Expect.refused(ANSWERS, 2, "turn_id")),
    Case(
        "field_given_twice",
        answered(with_line(2, lambda ws: f'{{"turn_id": "{turn(ws, 5)}", "answer": "a", "answer": "b"}}'.encode())),
        Expect.refused(ANSWERS, 2, "twice"),
    ),
    Case(
        "unpaired_surrogate_escape",
        answered(with_line(2, lambda ws: f'{{"turn_id": "{turn(ws, 5)}", "answer": "a\\ud800b"}}'.encode())),
        Expect.refused(ANSWERS, 2, "surrogate"),
    ),
    # --- numbers and nesting Python's json refuses or overflows on ------------------------------
    Case(
        "integer_of_5000_digits_in_an_extra_field",
        answered(with_line(2, lambda ws: f'{{"turn_id": "{turn(ws, 5)}", "answer": "a", "n": {"9" * 5000}}}'.encode())),
        Expect.refused(ANSWERS, 2),
    ),
    Case(
        "turn_id_integer_of_5000_digits",
        answered(with_line(2, f'{{"turn_id": {"1" * 5000}, "answer": "a"}}'.encode())),
        Expect.refused(ANSWERS, 2),
    ),
    Case(
        "arrays_nested_100k_deep",
        answered(with_line(2, lambda ws: b'{"turn_id": "x", "answer": "a", "deep": ' + deep("[", "]") + b"}")),
        Expect.refused(ANSWERS, 2),
    ),
    Case(
        "objects_nested_100k_deep",
        answered(with_line(2, lambda ws: b'{"turn_id": "x", "answer": "a", "deep": ' + deep('{"a":', "}") + b"}")),
        Expect.refused(ANSWERS, 2),
    ),
    # --- turns ----------------------------------------------------------------------------------------
    Case(
        "duplicate_turn_ids",
        answered(with_line(3, lambda ws: record(turn_id=turn(ws, 0), answer="again"))),
        Expect.refused(ANSWERS, 3, "twice"),
    ),
    Case(
        "duplicate_turn_in_another_spelling",
        answered(with_line(3, lambda ws: record(turn_id="#turn".join(turn(ws, 0).rsplit("_turn_", 1)), answer="again"))),
        Expect.refused(ANSWERS, 3, "twice"),
    ),
    Case(
        "ambiguous_bare_turn_id",
        answered(with_line(2, lambda ws: record(turn_id=ws.sub("2b").ambiguous, answer="a"))),
        Expect.refused(ANSWERS, 2, "several domains"),
    ),
    Case("all_turns_foreign", answered(only(record(turn_id="nosuch_turn_1", answer="a"))), Expect.refused(ANSWERS, None, "none of the")),
    Case(
        "terminal_escapes_in_foreign_turn_id",
        answered(only(record(turn_id="\x1b]0;pwned\x07\x1b[2Jx_turn_1", answer="a"))),
        Expect.refused(ANSWERS),
    ),
    # --- bytes ------------------------------------------------------------------------------------------
    Case(
        "not_utf8",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer="caf").replace(b'caf"', b'caf\xe9"'))),
        Expect.refused(ANSWERS, 2, "UTF-8"),
    ),
    Case(
        "carriage_return_inside_a_line",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer="a") + b"\r" + record(turn_id=turn(ws, 6), answer="b"))),
        Expect.refused(ANSWERS, 2, "carriage return"),
    ),
    Case(
        "byte_order_mark_on_line_2",
        answered(with_line(2, lambda ws: b"\xef\xbb\xbf" + record(turn_id=turn(ws, 5), answer="a"))),
        Expect.refused(ANSWERS, 2),
    ),
    Case(
        "nul_byte_between_fields",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer="a").replace(b", ", b",\x00 "))),
        Expect.refused(ANSWERS, 2),
    ),
    Case("empty_file", answered(lambda ws: b""), Expect.refused(ANSWERS, None, "empty")),
    Case("only_blank_lines", answered(lambda ws: b"\n\r\n \t \n"), Expect.refused(ANSWERS, None, "empty")),
    # --- sizes: refused at a bounded cost, the log small ------------------------------------------
    Case(
        "ten_mb_answer",
        answered(with_line(2, lambda ws: record(turn_id=turn(ws, 5), answer="word " * (TEN_MB // 5))), in_process=False),
        Expect.refused(ANSWERS, 2, "over the limit"),
    ),
    Case(
        "ten_mb_foreign_turn_id",
        answered(only(lambda ws: record(turn_id="t" * TEN_MB, answer="a")), in_process=False),
        Expect.refused(ANSWERS),
    ),
    Case(
        "ten_mb_bad_json_line",
        answered(with_line(2, b'{"turn_id": "' + b"x" * TEN_MB), in_process=False),
        Expect.refused(ANSWERS, 2, "not valid JSON"),
    ),
    Case(
        "error_flood_100k_bad_lines",
        answered(lambda ws: b"nope\n" * 100_000, in_process=False),
        Expect.refused(ANSWERS, 1, r"not valid JSON .* \(the same error on 100000 lines: 1, 2, 3, 4, 5, \.\.\.\)", error_lines=1),
    ),
    # The key "response" where "answer" is expected, on every line: named once, with the key found.
    Case(
        "response_key_instead_of_answer",
        answered(lambda ws: b"".join(l.replace(b'"answer"', b'"response"') + b"\n" for l in valid_lines(ws) * 30)),
        Expect.refused(
            ANSWERS, 1, r"""missing the field "answer"; found 'response' in its place: rename it "answer" \(the same error on \d+ lines""",
            error_lines=1,
        ),
    ),
    Case(
        "utf16_powershell_redirect",
        answered(lambda ws: b"\n".join(valid_lines(ws)).decode("utf-8").encode("utf-16")),
        Expect.refused(ANSWERS, None, r"the answers file is UTF-16 \(little-endian\) text, not UTF-8", error_lines=1),
    ),
    # --- 2c: both files broken, both named ---------------------------------------------------------
    Case("2c_run_and_answers_both_broken", both_broken, Expect.refused("run.txt", 2, also=(Where(ANSWERS, 3),))),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_answers(case: Case, workspace: Workspace):
    run_case(case, workspace)
