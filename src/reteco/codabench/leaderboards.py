"""Codabench leaderboard columns, built from the sub-track table (``reteco.subtracks``).

``competition.yaml`` (both layouts), the scoring program's handling of absent keys and
``reteco check-bundle`` read the keys through ``reteco.subtracks``; this module adds only what
is Codabench's: a column's index, sorting and precision, and the 36-character limit.

A sub-track's keys are ordered official figure first: in a per-sub-track competition that key
is column index 0, the column Codabench ranks by. 2b has no official figure; its first key, the
judge mean, ranks its leaderboard (reported, not an official ranking).
"""

from __future__ import annotations

from dataclasses import dataclass

from reteco.subtracks import KEYS, SUBTRACKS

PRECISION = 4
MAX_KEY_LENGTH = 36  # Codabench's Column.key and Column.title are CharField(max_length=36)


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    index: int
    sorting: str = "desc"
    precision: int = PRECISION

    def as_yaml(self) -> dict:
        return {
            "title": self.title,
            "key": self.key,
            "index": self.index,
            "sorting": self.sorting,
            "precision": self.precision,
        }


def ranking_key(subtrack: str) -> str:
    """The key Codabench ranks a per-sub-track competition by (index 0)."""
    return SUBTRACKS[subtrack].keys[0]


def columns(subtracks: tuple[str, ...] | list[str]) -> list[Column]:
    """Leaderboard columns for the given sub-tracks, in order, each key once.

    For one sub-track this is exactly its keys, official first. For several (the single
    competition, whose one leaderboard Codabench repeats for each task of a phase) it is the
    union in first-seen order: with 1a first, nDCG@10 is index 0 and ranks the leaderboard.
    """
    keys: list[str] = []
    for sub in subtracks:
        for key in SUBTRACKS[sub].keys:
            if key not in keys:
                keys.append(key)
    return [Column(key, KEYS[key].title, i) for i, key in enumerate(keys)]
