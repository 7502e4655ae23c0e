"""Types for the commands' arguments, shared so that every command words a bad value alike."""

from __future__ import annotations

import argparse


def count_argument(minimum: int):
    """An argparse ``type``: a whole number of at least ``minimum`` (argparse reports anything
    else with exit code 2, naming the option)."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value

    return count
