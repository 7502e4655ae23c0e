"""Test helper: a small hand-built Track 2 reference (2b and 2c) whose every figure can be
computed by hand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.reference import PASSAGES, TURNS, Judgment, Reference, Topic

# Three target turns in two domains; conversation "2" exists in both domains, so its bare turn
# id "2_turn_1" is ambiguous, as with RECOR's BRIGHT-derived ids.
TINY_TURNS = [
    {
        "key": "biology/2_turn_1",
        "domain": "biology",
        "conversation": "biology/2",
        "turn": 1,
        "query": "What do cells need?",
        "history": "No previous conversation.",
        "answer": "cells need energy and water",
        "gold_doc_ids": ["b1"],
    },
    {
        "key": "biology/2_turn_2",
        "domain": "biology",
        "conversation": "biology/2",
        "turn": 2,
        "query": "And plants?",
        "history": "Q: What do cells need?\nA: cells need energy and water",
        "answer": "plants need light",
        "gold_doc_ids": ["b2"],
    },
    {
        "key": "earth_science/2_turn_1",
        "domain": "earth_science",
        "conversation": "earth_science/2",
        "turn": 1,
        "query": "Why do rivers flood?",
        "history": "No previous conversation.",
        "answer": "heavy rain raises rivers",
        "gold_doc_ids": ["e1", "e2"],
    },
]
TINY_PASSAGES = {
    ("biology", "b1"): "Cells need energy. They also need water.",
    ("biology", "b2"): "Plants need light to grow.",
    ("biology", "b3"): "Bones are hard.",
    ("earth_science", "e1"): "Heavy rain raises rivers.",
    ("earth_science", "e2"): "Snow melt adds water.",
    ("earth_science", "e3"): "Rocks erode slowly.",
}


def write_tiny_reference(root: Path, subtrack: str, turns: list[dict] = TINY_TURNS) -> Reference:
    """A 2b or 2c reference folder: topics, qrels (the gold ids), doc ids, turns, passages."""
    root.mkdir(parents=True, exist_ok=True)
    domains = sorted({t["domain"] for t in turns})
    topics = [
        Topic(t["key"], t["domain"], t["key"].split("/", 1)[1], t["key"], t["conversation"], t["turn"]) for t in turns
    ]
    judgments = [Judgment(t["key"], d, 1) for t in turns for d in t["gold_doc_ids"]]
    index = DocIdIndex.from_pairs([p for p in TINY_PASSAGES if p[0] in domains], domains)
    with open(root / TURNS, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(t) + "\n" for t in turns)
    conn = sqlite3.connect(str(root / PASSAGES))
    conn.execute("CREATE TABLE passages(domain TEXT, doc_id TEXT, text TEXT, PRIMARY KEY(domain, doc_id))")
    conn.executemany("INSERT INTO passages VALUES (?, ?, ?)", [(d, i, x) for (d, i), x in TINY_PASSAGES.items()])
    conn.commit()
    conn.close()
    manifest = {
        "subtrack": subtrack,
        "split": "dev",
        "benchmark": "reteco",
        "relevance": "binary",
        "cutoffs": [10],
        "official": "ndcg_10",
        "domains": domains,
        "unit": "turn",
    }
    reference = Reference(manifest, topics, judgments, index, None)
    reference.write(root)
    return Reference.read(root)
