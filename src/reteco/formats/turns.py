"""``turns.jsonl`` of a 2b/2c reference folder: one record per target turn, what the judge reads
beside the answer (the query, the conversation history, the reference answer, the gold ids).

Written by ``reteco prepare`` (``write_turns``), read by generation scoring (``read_turns``) in
the reference's topic order; verified with the rest of the folder against reference.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reteco.formats.reference import TURNS, Reference
from reteco.problems import InputError


@dataclass(frozen=True)
class TurnRecord:
    """One target turn of turns.jsonl."""

    key: str
    domain: str
    depth: int | None
    query: str
    history: str
    answer: str
    gold_doc_ids: tuple[str, ...]


def read_turns(reference: Reference) -> list[TurnRecord]:
    """turns.jsonl of a 2b/2c reference, in the reference's topic order."""
    if reference.root is None:
        raise ValueError("the reference has no folder: generation scoring needs turns.jsonl and passages.sqlite")
    path = reference.root / TURNS
    if not path.is_file():
        raise InputError(f"no {TURNS}: the reference of sub-track {reference.subtrack} is incomplete", str(reference.root))
    records: dict[str, dict] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                records[record["key"]] = record
    turns = []
    for topic in reference.topics:
        record = records.get(topic.key)
        if record is None:
            raise InputError(f"{TURNS} has no record for a reference turn; prepare the reference again", str(path))
        turns.append(
            TurnRecord(
                key=topic.key,
                domain=topic.domain,
                depth=topic.depth,
                query=record.get("query") or "",
                history=_history(record.get("history") or ""),
                answer=record.get("answer") or "",
                gold_doc_ids=tuple(record.get("gold_doc_ids") or ()),
            )
        )
    return turns


#: RECOR writes this sentence as the history of a conversation's first turn; the judge is given
#: an empty history instead, which its prompt renders as "the current turn opens the conversation".
NO_HISTORY = "No previous conversation."


def _history(text: str) -> str:
    return "" if text.strip() == NO_HISTORY else text


def write_turns(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
