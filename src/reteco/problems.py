"""Problems found in participants' input, reported the same way everywhere.

Every message names the file and, when it applies, the line, so a participant can act on
it. Messages never quote reference data (gold ids, labels, answers): the scoring log is
shown to participants. Only the participant's own input and public facts (topic ids,
domain names, the rules) may appear in a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

ERROR = "error"
WARNING = "warning"

# One error per line would bury the first cause under a flood; after this many errors
# of a file we stop listing them and say how many more there were.
MAX_LISTED_ERRORS = 20


@dataclass(frozen=True)
class Problem:
    level: str
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.level}: {self.message}"


@dataclass
class Problems:
    """A collector of errors and warnings; errors make the input unusable."""

    items: list[Problem] = field(default_factory=list)
    suppressed_errors: int = 0

    def error(self, file: str, line: int | None, message: str) -> None:
        if self.error_count >= MAX_LISTED_ERRORS:
            self.suppressed_errors += 1
            return
        self.items.append(Problem(ERROR, file, line, message))

    def warning(self, file: str, line: int | None, message: str) -> None:
        self.items.append(Problem(WARNING, file, line, message))

    def extend(self, other: "Problems") -> None:
        self.items.extend(other.items)
        self.suppressed_errors += other.suppressed_errors

    @property
    def error_count(self) -> int:
        return sum(1 for p in self.items if p.level == ERROR)

    @property
    def has_errors(self) -> bool:
        return self.error_count > 0 or self.suppressed_errors > 0

    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.level == ERROR]

    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.level == WARNING]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def lines(self) -> list[str]:
        out = [str(p) for p in self.items]
        if self.suppressed_errors:
            out.append(f"... and {self.suppressed_errors} more errors not listed")
        return out


class InputError(Exception):
    """Input that cannot be scored. Carries the problems found; the CLI prints them and exits 1."""

    def __init__(self, problems: Problems | str, file: str = "", line: int | None = None):
        if isinstance(problems, str):
            collected = Problems()
            collected.error(file or "input", line, problems)
            problems = collected
        self.problems = problems
        super().__init__("\n".join(problems.lines()))
