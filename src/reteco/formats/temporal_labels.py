"""Frozen temporal labels of Track 1: per-document verdicts, keyed by the reference's query key
``<domain>/<query id>``. The required periods they refer to are ``reteco.formats.temporal_periods``.

Why one module: one format, whose reader, append-only writer (locked, the manifest
updated with each change) and manifest checks share the rules below, so that no edit can bypass
them.

A frozen label folder ``temporal_labels/`` (format ``reteco-temporal-labels/1``), in a
   reference folder (copied there by ``reteco prepare`` from the release's
   ``track1_tempo/temporal_labels_<split>/``, or written by ``reteco label-temporal``)::

       manifest.json   format, split, file hashes, content hash, counts, history of changes, and
                       manifest_sha256 (a sha256 of its own content, checked like the files)
       periods.jsonl   the required periods the labels refer to (as above, without oracle fields)
       labels.jsonl    append-only verdicts, one per line:
           {"query": "bitcoin/122291_22", "doc_id": "bitcoin/x.txt",
            "temporally_relevant": true, "covers": ["p1"],
            "source": "llm" | "human", "labeller": "<model name> | <person>",
            "labelled_at": "2027-01-20T10:00:00Z",
            "prompt_version": "temporal-labels/v1" (llm rows; null for human),
            "rationale": "...", "overrides_line": 12 (human rows replacing a verdict),
            "judge": {...} (llm rows: model, settings, raw outputs' cache keys)}

   The label of a (query, document) pair is its last row. Only a human row may follow an
   existing row of the same pair (an override, which says which line it overrides); an LLM
   never relabels a pair. A document without a row is not temporally relevant and covers no
   period (as unjudged documents are non-relevant in TREC); scoring counts such documents.

   ``manifest.json`` records the sha256 of periods.jsonl and labels.jsonl and a content hash
   over both, and a sha256 of its own content (``manifest_sha256``, as ``reference.json``
   does); reading refuses files, or a manifest, whose bytes no longer match (labels are never
   changed silently: edits go through ``reteco label-import``, which appends override rows and
   updates the manifest). Scoring reports the content hash in details.json. In a reference
   folder the label folder is verified by this manifest alone (``reference.json`` lists only
   the folder's own files), since labelling adds to it after ``reteco prepare``.

Concurrency, locking and the append-only rules are the label store's
(``reteco.formats.label_store``), shared with the relevance round's labels: writers hold an
exclusive lock on ``.lock``, readers a shared one, waiting at most ``LOCK_WAIT_S``, past which
``LabelsBusyError`` names the folder (the organizers', never a team's, problem).

Messages about these files name the file, the line and the field, never a document id or a
label: a scoring log can be shown to participants.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reteco.formats.jsonl_records import string_list
from reteco.formats.label_store import (
    LABEL_ROWS,
    LABELS_MANIFEST,
    LOCK_FILE,
    SOURCES,
    LabelsBusyError,
    LabelStore,
    check_common_fields,
    common_row_fields,
    content_hash,
    content_hash_or_none,
    row_json,
    utc_now,
)
from reteco.formats.temporal_periods import QueryPeriods, read_periods
from reteco.problems import InputError

# The store's names, re-exported: callers of the temporal labels import them from here.
__all__ = [
    "LABEL_PERIODS", "LABEL_ROWS", "LABELS_DIR", "LABELS_FORMAT", "LABELS_MANIFEST", "LOCK_FILE", "LOCK_WAIT_S", "SOURCES",
    "LabelRow", "LabelsBusyError", "TemporalLabels", "content_hash", "content_hash_or_none", "utc_now",
]

LABELS_FORMAT = "reteco-temporal-labels/1"
LABELS_DIR = "temporal_labels"  # in a reference folder
LABEL_PERIODS = "periods.jsonl"
#: How long reading or changing a label folder waits for another process's change to finish.
LOCK_WAIT_S = 120.0


@dataclass(frozen=True)
class LabelRow:
    """One verdict of labels.jsonl (see the module docstring for the fields)."""

    query: str
    doc_id: str
    temporally_relevant: bool
    covers: tuple[str, ...]
    source: str  # "llm" or "human"
    labeller: str
    labelled_at: str
    prompt_version: str | None = None
    rationale: str = ""
    overrides_line: int | None = None
    judge: dict | None = None
    line: int = 0  # 1-based line in labels.jsonl (0 before it is written)

    def to_json(self) -> dict:
        return row_json(self, {"temporally_relevant": self.temporally_relevant, "covers": list(self.covers)})


class TemporalLabels(LabelStore):
    """A frozen temporal label folder (the label store's temporal kind), verified against its
    manifest on reading. ``effective`` maps (query, doc_id) to the pair's current verdict (its
    last row); ``periods`` the query key to its required periods."""

    FORMAT = LABELS_FORMAT
    QUERIES_FILE = LABEL_PERIODS
    WHAT = "temporal label folder"
    LABELLED = "the temporal labels"
    RESTORE = (
        "restore the folder, record changes with `reteco label-import`, or prepare the reference again with "
        "`reteco prepare` (which copies the release's frozen labels)"
    )

    @property
    def periods(self) -> dict[str, QueryPeriods]:
        return self.queries

    @classmethod
    def lock_wait_s(cls) -> float:
        return LOCK_WAIT_S  # read at each use: tests shorten it

    @classmethod
    def create(cls, root: Path, periods: Iterable[QueryPeriods], split: str | None, note: str) -> TemporalLabels:
        """A new, empty label folder over the given required periods (an error if one exists)."""
        return super().create(root, periods, note, split=split)

    @classmethod
    def read_queries(cls, path: Path) -> dict[str, QueryPeriods]:
        return read_periods(path)

    @classmethod
    def query_json(cls, record: QueryPeriods) -> dict:
        return record.to_json(oracle=False)

    @classmethod
    def row_from_json(cls, record: dict, path: Path, line: int) -> LabelRow:
        relevant = record.get("temporally_relevant")
        if not isinstance(relevant, bool):
            raise InputError('"temporally_relevant" must be true or false', str(path), line)
        return LabelRow(
            temporally_relevant=relevant,
            covers=tuple(string_list(record.get("covers"), '"covers"', path, line, required=True)),
            **common_row_fields(record, path, line),
        )

    def validate_row(self, row: LabelRow, where: str, line: int) -> None:
        check_common_fields(row, where, line)
        query = self.periods.get(row.query)
        if query is None:
            raise InputError("the row's query is not in periods.jsonl", where, line)
        known = set(query.period_ids())
        if any(c not in known for c in row.covers) or len(set(row.covers)) != len(row.covers):
            raise InputError('"covers" must list distinct period ids of the row\'s query', where, line)

    def kind_counts(self) -> dict:
        return {
            "queries": len(self.periods),
            "periods": sum(len(p.periods) for p in self.periods.values()),
            "temporally_relevant": sum(1 for r in self.effective.values() if r.temporally_relevant),
        }
