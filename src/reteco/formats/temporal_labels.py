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

Concurrency. Changing the folder replaces labels.jsonl and then manifest.json (each atomically),
so a reader between the two would see a labels.jsonl its manifest does not describe. Writers
(``create``, ``append``) hold an exclusive ``fcntl.flock`` on ``.lock`` in the folder, readers
(``read``) a shared one, so a read sees the folder before or after a change, never halfway. The
wait is bounded (``LOCK_WAIT_S``): past it, ``LabelsBusyError`` names the folder and says that
another process is writing (a ``ReferenceDataError``: the organizers', never a team's, problem).
A folder where ``.lock`` cannot be created (read only, as on a scoring worker) is read without
it: no reteco process can be writing there either.

Messages about these files name the file, the line and the field, never a document id or a
label: a scoring log can be shown to participants.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reteco import __version__
from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest, sha256_file
from reteco.formats.jsonl_records import (
    atomic_write,
    atomic_write_bytes,
    dumps,
    iter_jsonl,
    optional_text,
    string_field,
    string_list,
)
from reteco.formats.temporal_periods import QueryPeriods, read_periods
from reteco.problems import InputError, ReferenceDataError

try:  # advisory locking of a label folder while it changes; absent on Windows
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


LABELS_FORMAT = "reteco-temporal-labels/1"
LABELS_DIR = "temporal_labels"  # in a reference folder
LABELS_MANIFEST = "manifest.json"
LABEL_PERIODS = "periods.jsonl"
LABEL_ROWS = "labels.jsonl"
SOURCES = ("llm", "human")
LOCK_FILE = ".lock"
#: How long reading or changing a label folder waits for another process's change to finish.
LOCK_WAIT_S = 120.0
_LOCK_POLL_S = 0.02


class LabelsBusyError(ReferenceDataError):
    """Another process held the label folder's lock for longer than ``LOCK_WAIT_S``: the
    organizers' labelling is under way, no fault of a submission (exit 1, naming the folder)."""


# What a damaged label folder's message says to do about it.
_RESTORE = (
    "restore the folder, record changes with `reteco label-import`, or prepare the reference again with "
    "`reteco prepare` (which copies the release's frozen labels)"
)


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
        out: dict[str, Any] = {
            "query": self.query,
            "doc_id": self.doc_id,
            "temporally_relevant": self.temporally_relevant,
            "covers": list(self.covers),
            "source": self.source,
            "labeller": self.labeller,
            "labelled_at": self.labelled_at,
            "prompt_version": self.prompt_version,
            "rationale": self.rationale,
        }
        if self.overrides_line is not None:
            out["overrides_line"] = self.overrides_line
        if self.judge is not None:
            out["judge"] = self.judge
        return out


@dataclass
class TemporalLabels:
    """A frozen label folder, verified against its manifest on reading.

    ``effective`` maps (query, doc_id) to the pair's current verdict (its last row).
    """

    root: Path
    manifest: dict
    periods: dict[str, QueryPeriods]
    rows: list[LabelRow] = field(default_factory=list)
    effective: dict[tuple[str, str], LabelRow] = field(default_factory=dict)

    # ----------------------------------------------------------------- reading and creating

    @classmethod
    def read(cls, root: Path) -> TemporalLabels:
        """The folder at ``root``, verified against its manifest, read under a shared lock
        (module docstring: Concurrency). InputError naming the file when it cannot be used;
        ``LabelsBusyError`` when a change by another process does not end in time."""
        root = Path(root)
        if not (root / LABELS_MANIFEST).is_file():
            raise InputError(f"no {LABELS_MANIFEST}: not a temporal label folder", str(root))
        with _locked(root, shared=True):
            return cls._read_unlocked(root)

    @classmethod
    def _read_unlocked(cls, root: Path) -> TemporalLabels:
        manifest_path = root / LABELS_MANIFEST
        try:
            manifest = json.loads(manifest_path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise InputError(f"not valid JSON; {_RESTORE}", str(manifest_path)) from None
        if not isinstance(manifest, dict) or manifest.get("format") != LABELS_FORMAT:
            found = manifest.get("format") if isinstance(manifest, dict) else None
            shown = repr(found) if isinstance(found, str) and len(found) <= 80 else "missing"
            raise InputError(f"label format {shown} is not {LABELS_FORMAT!r}; {_RESTORE}", str(manifest_path))
        # The manifest records a sha256 of itself (as reference.json does), so an edit of the
        # split, the counts or the history is found like an edit of the label files.
        if manifest.get(MANIFEST_DIGEST) != manifest_digest(manifest):
            raise InputError(
                f"does not match the sha256 it records of itself ({MANIFEST_DIGEST}): it was changed outside "
                f"reteco's tools (or a write was interrupted); frozen labels are never changed silently. {_RESTORE}",
                str(manifest_path),
            )
        recorded = manifest.get("files")
        if not isinstance(recorded, dict) or manifest.get("content_hash") != content_hash_or_none(recorded):
            raise InputError(f'"files" and "content_hash" do not agree; {_RESTORE}', str(manifest_path))
        for name in (LABEL_PERIODS, LABEL_ROWS):
            path = root / name
            if not path.is_file():
                raise InputError(f"{name} is missing from the temporal label folder; {_RESTORE}", str(root))
            if recorded.get(name) != sha256_file(path):
                raise InputError(
                    f"{name} does not match the sha256 recorded in {LABELS_MANIFEST}: it was changed outside "
                    "reteco's tools (or a write was interrupted); frozen labels are never changed silently. "
                    f"{_RESTORE}",
                    str(path),
                )
        periods = read_periods(root / LABEL_PERIODS)
        labels = cls(root, manifest, periods)
        for row in _read_rows(root / LABEL_ROWS, periods):
            labels._accept(row, str(root / LABEL_ROWS))
        return labels

    @classmethod
    def create(cls, root: Path, periods: Iterable[QueryPeriods], split: str | None, note: str) -> TemporalLabels:
        """A new, empty label folder over the given required periods (an error if one exists)."""
        root = Path(root)
        if (root / LABELS_MANIFEST).exists():
            raise InputError("a temporal label folder already exists here", str(root))
        root.mkdir(parents=True, exist_ok=True)
        records = list(periods)
        with _locked(root):
            atomic_write(root / LABEL_PERIODS, "".join(dumps(r.to_json(oracle=False)) + "\n" for r in records))
            atomic_write(root / LABEL_ROWS, "")
            manifest = {
                "format": LABELS_FORMAT,
                "split": split,
                "created_by": f"reteco {__version__}",
                "created_at": utc_now(),
                "history": [],
            }
            labels = cls(root, manifest, {r.query: r for r in records})
            labels._seal(note, 0)
        return labels

    # ----------------------------------------------------------------- querying

    @property
    def content_hash(self) -> str:
        return self.manifest["content_hash"]

    def label_of(self, query: str, doc_id: str) -> LabelRow | None:
        return self.effective.get((query, doc_id))

    def counts(self) -> dict:
        return self.manifest.get("counts", {})

    # ----------------------------------------------------------------- changing (append only)

    def append(self, rows: list[LabelRow], note: str) -> int:
        """Append verdicts (validated as on reading) and re-seal the manifest; returns rows added.

        Rows are numbered as they land; an LLM row for an already labelled pair is refused, so
        callers skip labelled pairs first.
        """
        if not rows:
            return 0
        with _locked(self.root):
            return self._append_locked(rows, note)

    def _append_locked(self, rows: list[LabelRow], note: str) -> int:
        path = self.root / LABEL_ROWS
        # Read once: the bytes checked are the bytes counted and extended.
        current = path.read_bytes()
        # Another process (a second label-temporal, an import) may have appended since this
        # object read the folder: writing now would drop its rows. Refuse instead.
        if hashlib.sha256(current).hexdigest() != self.manifest.get("files", {}).get(LABEL_ROWS):
            raise InputError(
                "labels.jsonl changed since it was read (another reteco process?); nothing was written, run the "
                "command again",
                str(path),
            )
        next_line = _line_count(current) + 1
        numbered: list[LabelRow] = []
        for offset, row in enumerate(rows):
            numbered.append(_replace_line(row, next_line + offset))
        # Validate against a copy first: a bad row must leave the folder untouched.
        trial = dict(self.effective)
        for row in numbered:
            _validate_row(row, self.periods, f"{path} (new row)", row.line)
            _check_succession(row, trial.get((row.query, row.doc_id)), f"{path} (new row)")
            trial[(row.query, row.doc_id)] = row
        if current and not current.endswith(b"\n"):
            current += b"\n"
        added = "".join(dumps(r.to_json()) + "\n" for r in numbered).encode("utf-8")
        atomic_write_bytes(path, current + added)
        for row in numbered:
            self._accept(row, str(path))
        self._seal(note, len(numbered))
        return len(numbered)

    # ----------------------------------------------------------------- internals

    def _accept(self, row: LabelRow, where: str) -> None:
        key = (row.query, row.doc_id)
        _check_succession(row, self.effective.get(key), where)
        self.rows.append(row)
        self.effective[key] = row

    def _seal(self, note: str, added: int) -> None:
        files = {name: sha256_file(self.root / name) for name in (LABEL_PERIODS, LABEL_ROWS)}
        self.manifest["files"] = files
        self.manifest["content_hash"] = content_hash(files)
        self.manifest["counts"] = {
            "queries": len(self.periods),
            "periods": sum(len(p.periods) for p in self.periods.values()),
            "rows": len(self.rows),
            "pairs": len(self.effective),
            "temporally_relevant": sum(1 for r in self.effective.values() if r.temporally_relevant),
            "by_source": {s: sum(1 for r in self.effective.values() if r.source == s) for s in SOURCES},
            "human_overrides": sum(1 for r in self.rows if r.overrides_line is not None),
        }
        self.manifest.setdefault("history", []).append(
            {"at": utc_now(), "by": f"reteco {__version__}", "what": note, "rows_added": added,
             "content_hash": self.manifest["content_hash"]}
        )
        self.manifest[MANIFEST_DIGEST] = manifest_digest(self.manifest)
        atomic_write(self.root / LABELS_MANIFEST, json.dumps(self.manifest, indent=2, sort_keys=True) + "\n")


def content_hash(files: dict[str, str]) -> str:
    """sha256 over the label files' own sha256s (periods.jsonl, labels.jsonl)."""
    text = "".join(f"{name}:{files[name]}\n" for name in sorted(files))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash_or_none(files: dict) -> str | None:
    """``content_hash`` of a manifest's "files", or None when they are not name -> hex strings."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None
    return content_hash(files)


def utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_rows(path: Path, periods: dict[str, QueryPeriods]) -> Iterator[LabelRow]:
    for line, record in iter_jsonl(path):
        row = _row_from_json(record, path, line)
        _validate_row(row, periods, str(path), line)
        yield row


def _row_from_json(record: dict, path: Path, line: int) -> LabelRow:
    relevant = record.get("temporally_relevant")
    if not isinstance(relevant, bool):
        raise InputError('"temporally_relevant" must be true or false', str(path), line)
    overrides = record.get("overrides_line")
    if overrides is not None and (isinstance(overrides, bool) or not isinstance(overrides, int) or overrides < 1):
        raise InputError('"overrides_line" must be a positive line number or absent', str(path), line)
    judge = record.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise InputError('"judge" must be a JSON object or absent', str(path), line)
    prompt = record.get("prompt_version")
    if prompt is not None and not isinstance(prompt, str):
        raise InputError('"prompt_version" must be a string or null', str(path), line)
    return LabelRow(
        query=string_field(record.get("query"), '"query"', path, line),
        doc_id=string_field(record.get("doc_id"), '"doc_id"', path, line),
        temporally_relevant=relevant,
        covers=tuple(string_list(record.get("covers"), '"covers"', path, line, required=True)),
        source=string_field(record.get("source"), '"source"', path, line),
        labeller=string_field(record.get("labeller"), '"labeller"', path, line),
        labelled_at=string_field(record.get("labelled_at"), '"labelled_at"', path, line),
        prompt_version=prompt,
        rationale=optional_text(record.get("rationale")),
        overrides_line=overrides,
        judge=judge,
        line=line,
    )


def _validate_row(row: LabelRow, periods: dict[str, QueryPeriods], where: str, line: int) -> None:
    if row.source not in SOURCES:
        raise InputError(f'"source" must be one of {", ".join(SOURCES)}', where, line)
    if not row.query or not row.doc_id or not row.labeller.strip():
        raise InputError('"query", "doc_id" and "labeller" must be non-empty', where, line)
    if row.source == "llm" and not (row.prompt_version or "").strip():
        raise InputError('an LLM verdict needs its "prompt_version"', where, line)
    try:
        datetime.fromisoformat(row.labelled_at.replace("Z", "+00:00"))
    except ValueError:
        raise InputError('"labelled_at" must be an ISO 8601 date-time', where, line) from None
    query = periods.get(row.query)
    if query is None:
        raise InputError("the row's query is not in periods.jsonl", where, line)
    known = set(query.period_ids())
    if any(c not in known for c in row.covers) or len(set(row.covers)) != len(row.covers):
        raise InputError('"covers" must list distinct period ids of the row\'s query', where, line)


def _check_succession(row: LabelRow, previous: LabelRow | None, where: str) -> None:
    """Only a human row may replace a verdict, and it must say which line it overrides."""
    if previous is None:
        if row.overrides_line is not None:
            raise InputError('"overrides_line" names no earlier verdict of this pair', where, row.line)
        return
    if row.source != "human":
        raise InputError(
            "a second verdict for a labelled pair must be a human override (an LLM never relabels a pair)",
            where,
            row.line,
        )
    if row.overrides_line != previous.line:
        raise InputError(
            f'a human override must give "overrides_line": {previous.line} (the verdict it replaces)', where, row.line
        )


@contextlib.contextmanager
def _locked(root: Path, *, shared: bool = False):
    """A lock on a label folder: exclusive while it is changed, ``shared`` while it is read
    (advisory; POSIX only). Waits at most ``LOCK_WAIT_S`` (``LabelsBusyError`` after). A reader
    in a folder where the lock file cannot be created reads without it (module docstring)."""
    path = root / LOCK_FILE
    try:
        handle = open(path, "a+b")
    except OSError:
        if not shared:
            raise
        try:
            handle = open(path, "rb")  # made by a writer, in a folder this process cannot write
        except OSError:
            handle = None
    if handle is None:
        yield
        return
    with handle:
        if fcntl is None:  # pragma: no cover (Windows: no advisory lock)
            yield
            return
        _wait_for_lock(handle.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX, root)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _wait_for_lock(fd: int, mode: int, root: Path) -> None:
    """Take the flock ``mode`` on ``fd``, polling until ``LOCK_WAIT_S`` has passed."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LabelsBusyError(
                    f"another process is writing the temporal labels (it has held {LOCK_FILE} for more than "
                    f"{LOCK_WAIT_S:g} s): wait for it (reteco label-temporal or label-import) to finish, then run "
                    "this again; no submission is at fault",
                    str(root),
                ) from None
            time.sleep(_LOCK_POLL_S)


def _replace_line(row: LabelRow, line: int) -> LabelRow:
    return LabelRow(**{**row.__dict__, "line": line})


def _line_count(data: bytes) -> int:
    """Lines of labels.jsonl's bytes, counted as iter_jsonl numbers them (blank lines count)."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
