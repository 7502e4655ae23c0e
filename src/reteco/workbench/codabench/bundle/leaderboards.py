"""Codabench leaderboard columns, built from the sub-track table (``reteco.subtracks``).

``competition.yaml`` (both layouts), the scoring program's handling of absent keys and
``reteco check-bundle`` read the keys through ``reteco.subtracks``; this module adds only what
is Codabench's: a column's index, sorting and precision, and the 36-character limit.

A sub-track's keys are ordered official figure first: in a per-sub-track competition that key
(``SubTrack.ranked``) is column index 0, the column Codabench ranks by. 2b has no official
figure; it is ranked by its first key, the judge mean (the sub-track table's ``ranked``). The judge mean can be absent (``SubTrack.ranked_may_be_absent``), and Codabench orders
by the ranked column descending, then by the other columns in index order, then by submission
time (``LeaderboardSerializer.get_submissions``, ``src/apps/api/serializers/leaderboards.py``),
with a missing score first on PostgreSQL: so a judged phase's scoring program fails a 2b run it
could not judge (it never reaches the leaderboard), and in a phase that does not judge every 2b
row's judge mean is empty and the order of the rows is ROUGE-L's, not a ranking (the
participants' Evaluation page says so). 2c ranks by nDCG@10, which every scored run has.
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
    return SUBTRACKS[subtrack].ranked


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
