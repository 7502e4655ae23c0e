"""A relevance round's frozen label folder: graded labels (0-3) of the (topic, document) pairs
of the participants' pooled runs that the official qrels do not judge (issue 21). The label
store's relevance kind (``reteco.formats.label_store``: manifest, append-only rows, human
overrides, locking, all as for the temporal labels).

Layout (format ``reteco-relevance-round/1``), written by ``reteco label-relevance``::

    manifest.json   format, sub-tracks, file hashes, content hash, counts, history, manifest_sha256
    queries.jsonl   the topics the labels refer to: {"query": "<domain>/<topic id>", "text": "...",
                    "context": {"conversation": "..."} | {"time_frame": "..."} (the topic's context
                    the labeller was shown, from prompt version 2; absent before)}
    labels.jsonl    append-only rows, one per line:
        {"query": "bitcoin/122291_22", "doc_id": "bitcoin/x.txt", "relevance": 2,
         "source": "llm" | "human", "labeller": "<model name> | <person>",
         "labelled_at": "2027-01-20T10:00:00Z",
         "prompt_version": "relevance-labels/v1" (llm rows; null for human),
         "rationale": "...", "overrides_line": 12 (human rows replacing a label),
         "judge": {...} (llm rows: signature, model, settings, the raw replies' cache keys, and
                   "shown": the blocks the labeller was shown, e.g. ["conversation", "question",
                   "passage"], their texts in queries.jsonl and the pool)}
    round.qrels     the current labels as TREC qrels (``topic 0 docid label``, sorted), derived
                    from labels.jsonl with every change and hashed in the manifest: the file
                    ``reteco score --round`` and ``reteco leaderboard --round`` read
                    (``reteco.formats.relevance_round``; its sha256 is the round's fingerprint)

The scale is ``relevance_round.MAX_LABEL``'s: 0 not relevant, 1 related, 2 highly relevant,
3 perfectly relevant. Topics are added as later pools bring new ones (``add_queries``; a topic
already recorded keeps its text). Messages name the file, line and field, never a label.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reteco.formats.file_digest import sha256_file
from reteco.formats.jsonl_records import atomic_write, dumps, iter_jsonl, optional_text, string_field
from reteco.formats.label_store import LabelStore, check_common_fields, common_row_fields, row_json
from reteco.formats.relevance_round import MAX_LABEL
from reteco.problems import InputError

ROUND_FORMAT = "reteco-relevance-round/1"
ROUND_QUERIES = "queries.jsonl"
ROUND_QRELS = "round.qrels"
#: How long reading or changing a round's folder waits for another process's change to finish.
LOCK_WAIT_S = 120.0


@dataclass(frozen=True)
class RoundQuery:
    """A topic of the round: its reference key, the text the labeller reads and the context it
    is shown with (``conversation`` or ``time_frame``; None for a round of prompt version 1)."""

    query: str
    text: str
    context: dict[str, str] | None = None

    def to_json(self) -> dict:
        out: dict = {"query": self.query, "text": self.text}
        if self.context is not None:
            out["context"] = dict(self.context)
        return out


@dataclass(frozen=True)
class RelevanceRow:
    """One label of labels.jsonl (module docstring)."""

    query: str
    doc_id: str
    relevance: int
    source: str  # "llm" or "human"
    labeller: str
    labelled_at: str
    prompt_version: str | None = None
    rationale: str = ""
    overrides_line: int | None = None
    judge: dict | None = None
    line: int = 0  # 1-based line in labels.jsonl (0 before it is written)

    def to_json(self) -> dict:
        return row_json(self, {"relevance": self.relevance})


class RelevanceLabels(LabelStore):
    """A relevance round's folder, verified against its manifest on reading."""

    FORMAT = ROUND_FORMAT
    QUERIES_FILE = ROUND_QUERIES
    WHAT = "relevance round folder"
    LABELLED = "the relevance round's labels"
    RESTORE = "restore the folder, or record changes with `reteco label-import --kind relevance`"

    @classmethod
    def lock_wait_s(cls) -> float:
        return LOCK_WAIT_S

    @classmethod
    def read_queries(cls, path: Path) -> dict[str, RoundQuery]:
        out: dict[str, RoundQuery] = {}
        for line, record in iter_jsonl(path):
            key = string_field(record.get("query"), '"query"', path, line)
            if key in out:
                raise InputError('"query" repeats an earlier line', str(path), line)
            context = record.get("context")
            if context is not None and not (isinstance(context, dict)
                                            and all(isinstance(v, str) for v in context.values())):
                raise InputError('"context" must be an object of texts or absent', str(path), line)
            out[key] = RoundQuery(key, optional_text(record.get("text")), context)
        return out

    @classmethod
    def query_json(cls, record: RoundQuery) -> dict:
        return record.to_json()

    @classmethod
    def row_from_json(cls, record: dict, path: Path, line: int) -> RelevanceRow:
        relevance = record.get("relevance")
        if isinstance(relevance, bool) or not isinstance(relevance, int) or not 0 <= relevance <= MAX_LABEL:
            raise InputError(f'"relevance" must be an integer from 0 to {MAX_LABEL}', str(path), line)
        return RelevanceRow(relevance=relevance, **common_row_fields(record, path, line))

    def validate_row(self, row: RelevanceRow, where: str, line: int) -> None:
        check_common_fields(row, where, line)
        if isinstance(row.relevance, bool) or not isinstance(row.relevance, int) or not 0 <= row.relevance <= MAX_LABEL:
            raise InputError(f'"relevance" must be an integer from 0 to {MAX_LABEL}', where, line)
        if row.query not in self.queries:
            raise InputError(f"the row's query is not in {ROUND_QUERIES}", where, line)

    def kind_counts(self) -> dict:
        per_label = {str(level): 0 for level in range(MAX_LABEL + 1)}
        for row in self.effective.values():
            per_label[str(row.relevance)] += 1
        return {"queries": len(self.queries), "per_label": per_label}

    def derived_files(self) -> dict[str, bytes]:
        """round.qrels: the current label of every pair, sorted by topic and document."""
        lines = [f"{q} 0 {d} {row.relevance}\n" for (q, d), row in sorted(self.effective.items())]
        return {ROUND_QRELS: "".join(lines).encode("utf-8")}

    @property
    def qrels_path(self) -> Path:
        return self.root / ROUND_QRELS

    def add_queries(self, records: Iterable[RoundQuery], note: str) -> int:
        """Record topics not yet in queries.jsonl (appended; a recorded topic keeps its text);
        returns how many were added."""
        new = {r.query: r for r in records if r.query not in self.queries}
        if not new:
            return 0
        with self.locked(self.root):
            path = self.root / ROUND_QUERIES
            if self.manifest["files"].get(ROUND_QUERIES) != sha256_file(path):
                raise InputError(f"{ROUND_QUERIES} changed since it was read (another reteco process?); run again",
                                 str(path))
            self.queries.update(new)
            atomic_write(path, "".join(dumps(r.to_json()) + "\n" for r in self.queries.values()))
            self._seal(note, 0)
        return len(new)
