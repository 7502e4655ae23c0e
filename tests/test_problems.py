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
