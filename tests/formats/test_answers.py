"""The answers reader (2b/2c): accepted spellings, every error with its line, warnings, and the
CLI's exit code 1 with no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.tiny_track2 import write_tiny_reference

from reteco.formats.answers import MAX_ANSWER_CHARS, MAX_ANSWER_WORDS, read_answers
from reteco.problems import InputError, Problems


@pytest.fixture
def ref(tmp_path):
    return write_tiny_reference(tmp_path / "ref" / "2b", "2b")


def line(turn_id, answer="an answer", **extra) -> str:
    return json.dumps({"turn_id": turn_id, "answer": answer, **extra}) + "\n"


def errors_of(data: bytes, ref) -> list[str]:
    with pytest.raises(InputError) as caught:
        read_answers(data, "answers.jsonl", ref)
    return caught.value.problems.lines()


def test_every_spelling_resolves_and_bom_crlf_blank_lines_are_fine(ref):
    data = (
        b"\xef\xbb\xbf"
        + line("biology/2_turn_1", "a").encode()[:-1]
        + b"\r\n\r\n   \n"
        + line("Biology/2#turn2", "b").encode()  # sample spelling, domain case ignored
        + line("earth_science/2_turn_1", "c").encode()[:-1]  # no final newline
    )
    problems = Problems()
    answers = read_answers(data, "answers.jsonl", ref, problems)
    assert {ref.topics[i].key: a.text for i, a in answers.by_topic.items()} == {
        "biology/2_turn_1": "a",
        "biology/2_turn_2": "b",
        "earth_science/2_turn_1": "c",
    }
    assert [a.line for a in answers.by_topic.values()] == [1, 4, 5]
    assert answers.counts == {
        "lines_read": 3,
        "answers": 3,
        "turns_ignored": 0,
        "lines_extra_fields": 0,
        "turns_missing": 0,
    }
    assert problems.lines() == []


def test_unique_bare_id_is_accepted(tmp_path):
    turns = [
        {"key": "drones/ex_5_turn_1", "domain": "drones", "conversation": "drones/ex_5", "turn": 1,
         "query": "q", "history": "", "answer": "a", "gold_doc_ids": []},
    ]  # fmt: skip
    ref = write_tiny_reference(tmp_path / "r", "2b", turns)
    answers = read_answers(line("ex_5_turn_1").encode(), "answers.jsonl", ref)
    assert list(answers.by_topic) == [0]


def test_ambiguous_bare_id_names_the_line_and_both_spellings(ref):
    data = (line("biology/2_turn_2") + line("2_turn_1")).encode()
    assert errors_of(data, ref) == [
        ("answers.jsonl:2: error: turn '2_turn_1' exists in several domains; "
        "write it as 'biology/2_turn_1' or 'earth_science/2_turn_1'")
    ]


def test_line_errors_are_all_listed_with_their_line_numbers(ref):
    data = b"".join(
        [
            line("biology/2_turn_1").encode(),  # 1 fine
            b'{"turn_id": "biology/2_turn_2", "answer": "x"\n',  # 2 invalid JSON
            b'["biology/2_turn_2", "x"]\n',  # 3 not an object
            b'{"answer": "x"}\n',  # 4 no turn_id
            b'{"turn_id": 7, "answer": "x"}\n',  # 5 turn_id not a string
            b'{"turn_id": "earth_science/2_turn_1", "answer": null}\n',  # 6 answer null
            b'{"turn_id": "earth_science/2_turn_1", "answer": "   "}\n',  # 7 empty answer
            b'{"turn_id": "earth_science/2_turn_1", "answer": "caf\xe9"}\n',  # 8 Latin-1 byte
            line("biology/2_turn_1", "again").encode(),  # 9 duplicate of line 1
            b'{"turn_id": "earth_science/2_turn_1", "answer": "a", "answer": "b"}\n',  # 10 field twice
            b'{"turn_id": "earth_science/2_turn_1", "answer": "\\ud800"}\n',  # 11 lone surrogate
            b'{"turn_id": "earth_science/2_turn_1",\r "answer": "x"}\n',  # 12 bare CR
        ]
    )
    hint = 'each line must be one JSON object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}'
    assert errors_of(data, ref) == [
        f"answers.jsonl:2: error: not valid JSON (Expecting ',' delimiter at column 46); {hint}",
        f"answers.jsonl:3: error: expected a JSON object, found an array; {hint}",
        f'answers.jsonl:4: error: missing the field "turn_id"; {hint}',
        'answers.jsonl:5: error: "turn_id" must be a string, found a number',
        'answers.jsonl:6: error: "answer" must be a string, found null',
        "answers.jsonl:7: error: \"answer\" is empty for turn 'earth_science/2_turn_1'; every answer must hold text",
        "answers.jsonl:8: error: the line is not valid UTF-8; save the answers as UTF-8 text",
        ("answers.jsonl:9: error: turn 'biology/2_turn_1' is answered twice, on lines 1 and 9; "
        "give exactly one answer per turn"),
        "answers.jsonl:10: error: the field 'answer' appears twice in the object; give it once",
        ('answers.jsonl:11: error: "answer" holds an unpaired surrogate escape (such as \\ud800), which is not '
        "valid Unicode text; write the characters themselves or valid escape pairs"),
        "answers.jsonl:12: error: a carriage return inside the line; use LF or CRLF line endings",
    ]


def test_duplicate_through_two_spellings_names_both_lines(ref):
    data = (line("biology/2_turn_2") + line("BIOLOGY/2#turn2")).encode()
    assert errors_of(data, ref) == [
        ("answers.jsonl:2: error: turn 'BIOLOGY/2#turn2' is answered twice, on lines 1 and 2; "
        "give exactly one answer per turn")
    ]


def test_length_limits(ref):
    at_limit = " ".join(["w"] * MAX_ANSWER_WORDS)
    assert len(read_answers(line("biology/2_turn_1", at_limit).encode(), "a.jsonl", ref)) == 1
    too_many_words = " ".join(["w"] * (MAX_ANSWER_WORDS + 1))
    too_many_chars = "x" * (MAX_ANSWER_CHARS + 1)
    data = (line("biology/2_turn_1", too_many_words) + line("biology/2_turn_2", too_many_chars)).encode()
    assert errors_of(data, ref) == [
        'answers.jsonl:1: error: "answer" has 4,001 words, over the limit of 4,000; shorten it',
        'answers.jsonl:2: error: "answer" has 32,001 characters, over the limit of 32,000; shorten it',
    ]


def test_unknown_turns_and_extra_fields_are_warnings_and_missing_turns_are_counted(ref):
    data = (
        line("biology/2_turn_1", sources=["b1"], model="x")
        + line("biology/99_turn_1")
        + line("chemistry/2_turn_1")
        + line("biology/2_turn_2", note="n")
    ).encode()
    problems = Problems()
    answers = read_answers(data, "answers.jsonl", ref, problems)
    assert sorted(answers.by_topic) == [0, 1]
    assert problems.lines() == [
        ("answers.jsonl: warning: 2 answers have a turn id that is not a turn of the reference and were ignored, "
        "e.g. 'biology/99_turn_1' (line 2), 'chemistry/2_turn_1' (line 3)"),
        ('answers.jsonl: warning: 2 lines have fields other than "turn_id" and "answer" (e.g. \'model\' on line 1); '
        "they were ignored"),
        ("answers.jsonl: warning: 1 reference turns have no answer and score 0 on every measure, "
        "e.g. 'earth_science/2_turn_1'"),
    ]
    assert answers.counts["turns_ignored"] == 2 and answers.counts["turns_missing"] == 1


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", ("answers.jsonl: error: the answers file is empty; each line must be one JSON object: "
              '{"turn_id": "<conversation id>_turn_<n>", "answer": "..."}')),
        (b"\xef\xbb\xbf\r\n \n", ("answers.jsonl: error: the answers file is empty; each line must be one JSON "
                                 'object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}')),
        (b'[{"turn_id": "biology/2_turn_1", "answer": "a"}]\n',
         ("answers.jsonl: error: the file starts with '[': it looks like one JSON array; write JSONL instead, "
         'each line must be one JSON object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."} '
         "(one object per line, no enclosing brackets or commas between lines)")),
        (b'{"turn_id": "122291_22", "answer": "a"}\n',
         ("answers.jsonl: error: none of the 1 answers' turn ids is a turn of sub-track 2b (for example "
         "'122291_22'); sub-track 2b expects turn ids (<conversation id>_turn_<n>, or "
         "<domain>/<conversation id>_turn_<n>), e.g. '2_turn_1'")),
    ],
)  # fmt: skip
def test_file_level_errors(ref, data, message):
    assert errors_of(data, ref) == [message]


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reteco", *map(str, args)], capture_output=True, text=True, check=False)


def test_cli_score_refuses_bad_answers_with_line_numbers_and_exit_1(ref, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_bytes((line("biology/2_turn_1") + '{"turn_id": "biology/2_turn_2"}\n' + line("2_turn_1")).encode())
    done = cli("score", "--ref", ref.root, "--res", answers, "--out", tmp_path / "out")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        ('answers.jsonl:2: error: missing the field "answer"; each line must be one JSON object: '
        '{"turn_id": "<conversation id>_turn_<n>", "answer": "..."}'),
        ("answers.jsonl:3: error: turn '2_turn_1' exists in several domains; "
        "write it as 'biology/2_turn_1' or 'earth_science/2_turn_1'"),
    ]
    assert not (tmp_path / "out" / "scores.json").exists()


def test_cli_validate_accepts_good_answers(ref, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(line("biology/2_turn_1") + line("earth_science/2_turn_1"))
    done = cli("validate", "--ref", ref.root, answers)
    assert done.returncode == 0, done.stderr
    assert "answers.jsonl: valid for sub-track 2b: 2 answers read, 2 of 3 reference turns answered, 0 turn ids ignored" in done.stdout


# ----------------------------------------------------------------------------- mistakes made on every line


def test_a_wrong_answer_key_is_named_once_with_the_key_expected(ref):
    """The input that triggered it (issue 22): every line says "response" where "answer" is
    expected; before, 20 identical "missing the field" lines that never named "response"."""
    turns = ["biology/2_turn_1", "biology/2_turn_2", "earth_science/2_turn_1"]
    data = "".join(json.dumps({"turn_id": t, "response": "text"}) + "\n" for t in turns * 10).encode()
    assert errors_of(data, ref) == [
        'answers.jsonl:1: error: missing the field "answer"; found \'response\' in its place: rename it "answer"'
        " (the same error on 30 lines: 1, 2, 3, 4, 5, ...)"
    ]


FORMAT = 'each line must be one JSON object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}'


def test_a_missing_key_among_several_others_names_them(ref):
    data = (json.dumps({"id": "biology/2_turn_1", "text": "a"}) + "\n").encode()
    assert errors_of(data, ref) == [
        'answers.jsonl:1: error: missing the field "turn_id" (the fields found: \'id\', \'text\'); ' + FORMAT,
        'answers.jsonl:1: error: missing the field "answer" (the fields found: \'id\', \'text\'); ' + FORMAT,
    ]


@pytest.mark.parametrize(
    "encoding, said",
    [
        ("utf-16", "UTF-16 (little-endian)"),  # Windows PowerShell's `>`: a byte-order mark, then UTF-16LE
        ("utf-16-le", "UTF-16 (little-endian)"),  # no byte-order mark: NULs between the ASCII
        ("utf-16-be", "UTF-16 (big-endian)"),
        ("utf-32", "UTF-32 (little-endian)"),
        ("utf-32-be", "UTF-32 (big-endian)"),
    ],
)
def test_a_utf16_or_utf32_file_is_said_so_once(ref, encoding, said):
    text = line("biology/2_turn_1") + line("biology/2_turn_2", "répondu")
    assert errors_of(text.encode(encoding), ref) == [
        f"answers.jsonl: error: the answers file is {said} text, not UTF-8 (Windows PowerShell's `>` and Out-File "
        "write UTF-16); save it as UTF-8: in PowerShell `... | Out-File -Encoding utf8 FILE`, in Python "
        "open(path, 'w', encoding='utf-8')"
    ]
