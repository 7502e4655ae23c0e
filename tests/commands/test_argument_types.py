"""The commands' shared argument types: one wording for a bad count, exit code 2 (usage)."""

from __future__ import annotations

import pytest

from reteco.commands import main
from reteco.commands.argument_types import count_argument


def test_a_count_is_a_whole_number_of_at_least_its_minimum():
    assert count_argument(0)("0") == 0 and count_argument(1)("12") == 12
    for text, minimum, why in (("x", 0, "'x' is not a whole number"), ("1.5", 1, "'1.5' is not a whole number"),
                               ("0", 1, "0 is less than 1"), ("-3", 0, "-3 is less than 0")):
        with pytest.raises(Exception, match=why):
            count_argument(minimum)(text)


@pytest.mark.parametrize("argv, option", [
    (["leaderboard", "--ref", "r", "--submissions", "s", "--out", "o", "--jobs", "0"], "--jobs: 0 is less than 1"),
    (["judge", "--items", "i", "--out", "o", "--max-calls", "many"], "--max-calls: 'many' is not a whole number"),
    (["human-sample", "--ref", "r", "--n", "0", "--seed", "1", "--out", "o.csv"], "--n: 0 is less than 1"),
])
def test_every_command_words_a_bad_count_alike(argv, option, capsys):
    assert main(argv) == 2
    assert f"argument {option}" in capsys.readouterr().err
