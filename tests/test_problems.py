"""How participants' values and file names appear in messages: bounded, escaped, unambiguous."""

from reteco.problems import InputError, Problems, printable, quoted


def test_short_values_are_quoted_as_is():
    assert quoted("d1") == "'d1'"
    assert quoted("ééé") == "'ééé'"


def test_long_values_are_cut_with_their_length():
    assert quoted("a" * 100) == "'" + "a" * 80 + "...' (100 characters in all)"
    assert quoted("a" * 80) == "'" + "a" * 80 + "'"
    assert quoted(b"x" * 1000) == "'" + "x" * 80 + "...' (1000 bytes in all)"


def test_control_characters_and_terminal_escapes_are_escaped():
    assert quoted("x\x1b[31mred\x00") == "'x\\x1b[31mred\\x00'"
    assert quoted("a\tb\nc\u2028") == "'a\\x09b\\x0ac\\u2028'"


def test_backslashes_and_quotes_cannot_forge_an_escape():
    # A literal backslash-x in the input must not read like an escaped byte.
    assert printable("a\\x00") == "a\\\\x00"
    assert quoted("it's") == "'it\\'s'"


def test_invalid_utf8_bytes_show_as_escapes():
    assert quoted(b"ab\xffc\xc3\xa9") == "'ab\\xffcé'"


def test_a_huge_value_costs_no_more_than_its_prefix():
    huge = "z" * 10_000_000
    text = quoted(huge)
    assert len(text) < 120 and text.endswith("(10000000 characters in all)")


def test_problem_lines_escape_the_file_name():
    problems = Problems()
    problems.error("sub.zip:run\x1b[2J.txt", 3, "bad")
    assert str(InputError(problems)) == "sub.zip:run\\x1b[2J.txt:3: error: bad"


# ----------------------------------------------------------------------------- one line per kind


def test_errors_of_one_kind_read_as_one_line_with_their_count_and_first_lines():
    problems = Problems()
    for line in range(1, 8):
        problems.error("run.txt", line, "expected 6 columns: topic Q0 docid rank score tag, found 5")
    problems.warning("run.txt", None, "a warning stays as it is")
    assert problems.lines() == [
        "run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, found 5"
        " (the same error on 7 lines: 1, 2, 3, 4, 5, ...)",
        "run.txt: warning: a warning stays as it is",
    ]


def test_errors_that_differ_only_in_the_values_they_quote_are_one_kind():
    problems = Problems()
    problems.error("run.txt", 2, "rank 'x' is not an integer")
    problems.error("run.txt", 3, "score 'y' is not a number")
    problems.error("run.txt", 4, "rank 'it\\'s' is not an integer")
    problems.error("other.txt", 4, "rank 'x' is not an integer")  # another file: another line
    assert problems.lines() == [
        "run.txt:2: error: rank 'x' is not an integer (an error of this kind on 2 lines: 2, 4)",
        "run.txt:3: error: score 'y' is not a number",
        "other.txt:4: error: rank 'x' is not an integer",
    ]


def test_errors_past_the_cap_are_counted_with_their_kind_or_as_more():
    problems = Problems()
    for line in range(1, 1001):
        problems.error("answers.jsonl", line, 'missing the field "answer"')
    problems.error("answers.jsonl", 1001, "not valid JSON")
    assert problems.has_errors
    assert problems.lines() == [
        'answers.jsonl:1: error: missing the field "answer" (the same error on 1000 lines: 1, 2, 3, 4, 5, ...)',
        "... and 1 more error not listed",
    ]


def test_a_kind_whose_counted_errors_differ_is_not_called_the_same_error():
    problems = Problems()
    for line in range(1, 22):
        problems.error("run.txt", line, "rank 'x' is not an integer")
    problems.error("run.txt", 22, "rank 'y' is not an integer")
    assert problems.lines() == [
        "run.txt:1: error: rank 'x' is not an integer (an error of this kind on 22 lines: 1, 2, 3, 4, 5, ...)"
    ]
