"""``turns.jsonl`` of a 2b/2c reference folder: one record per target turn, what the judge reads
beside the answer (the query, the conversation history, the reference answer, its key points when
written, the gold ids).

Key points (optional, ``key_points``): the points a complete answer makes, TREC RAG nugget style,
``[{"text": str, "importance": "vital" | "okay"}, ...]``, carried from the release's turn
(``answer``'s neighbour) by ``reteco prepare``; absent means none written (the judge then compares
with the reference answer alone). ``parse_key_points`` is the one reader of the field.

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
    key_points: tuple[tuple[str, str], ...] = ()  # (text, "vital" | "okay"); empty: none written


#: The importance of a key point: vital (a complete answer needs it), okay (a useful detail).
KEY_POINT_IMPORTANCE = ("vital", "okay")


def parse_key_points(raw: object) -> tuple[tuple[str, str], ...]:
    """``[{"text": str, "importance": "vital" | "okay"}, ...]`` (None: none written) as
    (text, importance) pairs; raises ValueError naming the entry that is wrong."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError('"key_points" must be a list of {"text", "importance"} objects')
    points = []
    for n, entry in enumerate(raw, 1):
        if not (isinstance(entry, dict) and set(entry) == {"text", "importance"}):
            raise ValueError(f'"key_points" entry {n} must be an object with exactly "text" and "importance"')
        if not isinstance(entry["text"], str) or not entry["text"].strip():
            raise ValueError(f'"key_points" entry {n}: "text" must be a non-empty string')
        if entry["importance"] not in KEY_POINT_IMPORTANCE:
            raise ValueError(f'"key_points" entry {n}: "importance" must be one of {", ".join(KEY_POINT_IMPORTANCE)}')
        points.append((entry["text"], entry["importance"]))
    return tuple(points)


def read_turns(reference: Reference) -> list[TurnRecord]:
    """turns.jsonl of a 2b/2c reference, in the reference's topic order."""
    if reference.root is None:
        raise ValueError("the reference has no folder: generation scoring needs turns.jsonl and passages.sqlite")
    path = reference.root / TURNS
    if not path.is_file():
        raise InputError(f"no {TURNS}: the reference of sub-track {reference.subtrack} is incomplete", str(reference.root))
    records: dict[str, dict] = {}
    key_points: dict[str, tuple[tuple[str, str], ...]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                record = json.loads(line)
                records[record["key"]] = record
                try:
                    key_points[record["key"]] = parse_key_points(record.get("key_points"))
                except ValueError as exc:
                    raise InputError(str(exc), str(path), number) from None
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
                key_points=key_points[topic.key],
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
