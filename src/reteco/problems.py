"""Problems found in participants' input, reported the same way everywhere.

Every message names the file and, when it applies, the line, so a participant can act on
it. Messages never quote reference data (gold ids, labels, answers): the scoring log is
shown to participants. Only the participant's own input and public facts (topic ids,
domain names, the rules) may appear in a message.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Iterator

from reteco import __version__

ERROR = "error"
WARNING = "warning"

# Exit codes of every reteco command and of the Codabench scoring program (pages/messages.md).
EXIT_OK = 0
EXIT_INPUT = 1  # input that cannot be used: the messages say what to fix, with file and line
EXIT_USAGE = 2  # the command line itself is wrong (argparse's own convention)
EXIT_INTERNAL = 3  # a bug in reteco: never a participant's fault
EXIT_INCOMPLETE = 4  # work that could not be finished (e.g. judge calls failed); what was done is kept

# A participant's value quoted in a message is cut at this many characters: one refusal's log
# stays small whatever the input (a 10 MB document id is not echoed whole).
MAX_QUOTED = 80
# A file name in a message (the participant's own, e.g. a zip member) is cut at this many.
MAX_FILE_NAME = 200

# One error per line would bury the first cause under a flood; after this many errors
# of a file we stop listing them and say how many more there were.
MAX_LISTED_ERRORS = 20
# Errors of one kind in one file are printed as one line, which names this many of their lines.
SHOWN_LINES = 5

# What makes two errors of a file the same kind: their messages, with the participant's quoted
# values (``quoted``: '...' with its escapes, and "(N characters in all)") and the numbers in
# them replaced: "rank 'x' is not an integer" and "rank 'y' is not an integer" are one kind.
_QUOTED_VALUE = re.compile(r"'(?:[^'\\]|\\.)*'(?: \(\d+ (?:characters|bytes) in all\))?")
_NUMBER = re.compile(r"-?\d[\d,.]*")


@functools.lru_cache(maxsize=1024)  # a flood repeats one message: its kind is worked out once
def kind_of(message: str) -> str:
    """The kind of an error message: the message without the values it quotes or counts."""
    return _NUMBER.sub("N", _QUOTED_VALUE.sub("'V'", message))


@dataclass(frozen=True)
class Problem:
    level: str
    file: str
    line: int | None
    message: str
    # Where in an object given in place of a file (``reteco.api``): "row 3", "record 0", "turn 'x'".
    where: str | None = None

    def __str__(self) -> str:
        file = printable(self.file, MAX_FILE_NAME)
        where = file if self.line is None else f"{file}:{self.line}"
        if self.where is not None:
            where = f"{file} {self.where}"
        return f"{where}: {self.level}: {self.message}"


@dataclass
class Problems:
    """A collector of errors and warnings; errors make the input unusable.

    Errors are kept up to ``MAX_LISTED_ERRORS``; later ones are only counted, by kind when an
    error of their kind (``kind_of``) in their file is kept. ``lines`` prints the errors of one
    kind in one file as one line with their count and first line numbers, so a mistake made on
    every line (a wrong key, a missing column) reads once.
    """

    items: list[Problem] = field(default_factory=list)
    suppressed_errors: int = 0  # errors past the cap of no kept kind
    # Errors past the cap whose kind is kept: (file, kind) -> how many.
    suppressed_by_kind: dict[tuple[str, str], int] = field(default_factory=dict)
    # Kinds among the counted errors whose messages differ from their kind's first one.
    suppressed_varied: set[tuple[str, str]] = field(default_factory=set)
    # The first message of each (file, kind) kept, and how many items they were taken from:
    # worked out once the cap is reached, not once per counted error (a flood has 100,000).
    _kept_kinds: tuple[int, dict] = field(default=(-1, None), repr=False, compare=False)

    def error(self, file: str, line: int | None, message: str, where: str | None = None) -> None:
        if self.error_count >= MAX_LISTED_ERRORS:
            key = (file, kind_of(message))
            if self._kept_kinds[0] != len(self.items):
                first: dict[tuple[str, str], str] = {}
                for p in self.items:
                    if p.level == ERROR:
                        first.setdefault((p.file, kind_of(p.message)), p.message)
                self._kept_kinds = (len(self.items), first)
            kept = self._kept_kinds[1].get(key)
            if kept is not None:
                self.suppressed_by_kind[key] = self.suppressed_by_kind.get(key, 0) + 1
                if message != kept:
                    self.suppressed_varied.add(key)
            else:
                self.suppressed_errors += 1
            return
        self.items.append(Problem(ERROR, file, line, message, where))

    def warning(self, file: str, line: int | None, message: str) -> None:
        self.items.append(Problem(WARNING, file, line, message))

    def extend(self, other: "Problems") -> None:
        self.items.extend(other.items)
        self.suppressed_errors += other.suppressed_errors
        for key, count in other.suppressed_by_kind.items():
            self.suppressed_by_kind[key] = self.suppressed_by_kind.get(key, 0) + count
        self.suppressed_varied |= other.suppressed_varied

    @property
    def error_count(self) -> int:
        return sum(1 for p in self.items if p.level == ERROR)

    @property
    def has_errors(self) -> bool:
        return self.error_count > 0 or self.suppressed_errors > 0 or bool(self.suppressed_by_kind)

    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.level == ERROR]

    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.level == WARNING]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def print(self, stream) -> None:
        """Every line (``lines``) onto ``stream``, e.g. ``sys.stderr``."""
        for line in self.lines():
            print(line, file=stream)

    def lines(self) -> list[str]:
        """One line per warning and per kind of error in a file, in the order they were found:
        ``FILE:LINE: error: MESSAGE`` for an error found once, and for a kind found on several
        lines its first message with ``(the same error on 25 lines: 1, 2, 3, 4, 5, ...)``, or
        ``(an error of this kind on 25 lines: ...)`` when their messages differ."""
        groups: dict[tuple[str, str], list[Problem]] = {}
        for p in self.items:
            if p.level == ERROR:
                groups.setdefault((p.file, kind_of(p.message)), []).append(p)
        out = []
        for p in self.items:
            if p.level != ERROR:
                out.append(str(p))
                continue
            key = (p.file, kind_of(p.message))
            group = groups.get(key)
            if group is None or group[0] is not p:
                continue  # said with the first of its kind
            count = len(group) + self.suppressed_by_kind.get(key, 0)
            if count == 1:
                out.append(str(p))
                continue
            lines = [q.line for q in group if q.line is not None][:SHOWN_LINES]
            places = [q.where for q in group if q.where is not None][:SHOWN_LINES]
            same = all(q.message == p.message for q in group) and key not in self.suppressed_varied
            said = "the same error" if same else "an error of this kind"
            if places and not lines:  # rows of a DataFrame, records of a list (reteco.api)
                more = ", ..." if count > len(places) else ""
                out.append(f"{p} ({said} in {count} places: {', '.join(places)}{more})")
            elif lines:
                more = ", ..." if count > len(lines) else ""
                out.append(f"{p} ({said} on {count} lines: {', '.join(map(str, lines))}{more})")
            else:
                out.append(f"{p} ({said} {count} times)")
        if self.suppressed_errors:
            out.append(f"... and {self.suppressed_errors} more {'error' if self.suppressed_errors == 1 else 'errors'} not listed")
        return out


def printable(text: str | bytes, limit: int = MAX_QUOTED) -> str:
    """``text`` safe to print into a log, e.g. ``abc`` or ``aaaa... (10000000 characters in all)``.

    Characters that are not printable (control characters, NUL, the ESC that starts terminal
    sequences, line and paragraph separators) become ``\\xNN``/``\\uNNNN`` escapes and a backslash
    is doubled, so what is printed is unambiguous; bytes that are not UTF-8 show as ``\\xNN``.
    The value is cut after ``limit`` characters, with its full length said. Only the first
    ``limit`` characters are looked at, so a 10 MB value costs no more than a short one.
    """
    body, tail = _printable_parts(text, limit)
    return body + tail


def quoted(text: str | bytes, limit: int = MAX_QUOTED) -> str:
    """A participant's value for a message: ``printable`` in single quotes (a quote inside
    escaped), e.g. ``'d1'`` or ``'aaaa...' (10000000 characters in all)``."""
    body, tail = _printable_parts(text, limit)
    return "'" + body.replace("'", "\\'") + "'" + tail


def _printable_parts(text: str | bytes, limit: int) -> tuple[str, str]:
    if isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text[: 4 * limit + 4])  # enough bytes for `limit` UTF-8 characters
        total, unit = len(text), "bytes"
        pieces, position = [], 0
        while position < len(data) and len(pieces) < limit:
            # One character at a time: valid UTF-8 sequences as characters, other bytes escaped.
            for size in (1, 2, 3, 4):
                try:
                    pieces.append(_escaped(data[position : position + size].decode("utf-8")))
                    position += size
                    break
                except UnicodeDecodeError:
                    continue
            else:
                pieces.append(f"\\x{data[position]:02x}")
                position += 1
        body = "".join(pieces)
        shown_all = position >= total
    else:
        total, unit = len(text), "characters"
        body = "".join(_escaped(ch) for ch in text[:limit])
        shown_all = total <= limit
    if shown_all:
        return body, ""
    return body + "...", f" ({total} {unit} in all)"


def _escaped(ch: str) -> str:
    if ch == "\\":
        return "\\\\"
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class UsageError(Exception):
    """The command line itself is wrong (an option missing or contradicting another): the
    entry point prints ``<prog>: error: <message>`` and exits EXIT_USAGE, as argparse does."""


class InputError(Exception):
    """Input that cannot be scored. Carries the problems found; the CLI prints them and exits 1."""

    def __init__(self, problems: Problems | str, file: str = "", line: int | None = None):
        if isinstance(problems, str):
            collected = Problems()
            collected.error(file or "input", line, problems)
            problems = collected
        self.problems = problems
        super().__init__("\n".join(problems.lines()))


class ReferenceDataError(InputError):
    """Reference data that cannot be used (missing, damaged, not what its manifest recorded): an
    ``InputError`` (exit 1) whose remedy is the organizers', not the participant's: prepare the
    reference again. A caller that shows messages to participants can tell it apart."""


# What a message about damaged reference data tells the organizers to do.
PREPARE_AGAIN = "prepare it again with `reteco prepare`"
DAMAGED = f"(the reference data was changed or damaged); {PREPARE_AGAIN}"


def internal_error(exc: BaseException) -> int:
    """Report a bug of reteco the one way every entry point does (the CLI, the Codabench scoring
    program): ``internal error in reteco X (Kind); please report it to the organizers`` on
    stderr, and EXIT_INTERNAL. The traceback only with ``RETECO_DEBUG=1``: an exception's text
    can quote reference data, and the scoring log is shown to participants."""
    if os.environ.get("RETECO_DEBUG"):
        traceback.print_exception(exc)
    print(internal_error_text(exc), file=sys.stderr)
    return EXIT_INTERNAL


def internal_error_text(exc: BaseException) -> str:
    """The line that says reteco failed, naming only the exception's kind."""
    return f"internal error in reteco {__version__} ({type(exc).__name__}); please report it to the organizers"
