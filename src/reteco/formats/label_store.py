"""The organizers' frozen label folders, one store for every KIND of label: temporal verdicts of
Track 1 (``reteco.formats.temporal_labels``) and graded relevance labels of a relevance round
(``reteco.formats.relevance_labels``).

Why one module: every kind keeps its labels under the same rules, which only one implementation
can keep identical: a folder holds ``manifest.json``, a file of the queries the labels refer to
(its name is the kind's), and ``labels.jsonl``, the append-only rows; the manifest records the
sha256 of every file, a content hash over them and a sha256 of its own content
(``manifest_sha256``), and reading refuses a folder whose bytes no longer match. A kind may add
derived files (the relevance round's qrels-format file) that are rewritten and re-hashed with
each change. The label of a (query, document) pair is its last row; only a human row may follow
an existing row of the same pair (an override naming the line it overrides): an LLM never
relabels a pair. Every row says who gave it (``source``: "llm" or "human"; ``labeller``: the
model or the person; ``prompt_version`` and ``judge`` for an LLM's) and when (``labelled_at``).

Concurrency. Changing a folder replaces labels.jsonl, the derived files and then manifest.json
(each atomically), so a reader between them would see files the manifest does not describe.
Writers hold an exclusive ``fcntl.flock`` on ``.lock`` in the folder, readers a shared one, so a
read sees the folder before or after a change, never halfway. The wait is bounded (the kind's
``LOCK_WAIT_S``): past it, ``LabelsBusyError`` names the folder and says another process is
writing (a ``ReferenceDataError``: the organizers', never a team's, problem). A folder where
``.lock`` cannot be created (read only, as on a scoring worker) is read without it.

Messages about these files name the file, the line and the field, never a document id or a
label: a scoring log can be shown to participants.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from reteco import __version__
from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest, sha256_file
from reteco.formats.jsonl_records import atomic_write, atomic_write_bytes, dumps, iter_jsonl, optional_text, string_field
from reteco.problems import InputError, ReferenceDataError

try:  # advisory locking of a label folder while it changes; absent on Windows
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

LABELS_MANIFEST = "manifest.json"
LABEL_ROWS = "labels.jsonl"
SOURCES = ("llm", "human")
LOCK_FILE = ".lock"
_COPY_CHUNK = 1 << 20
_LOCK_POLL_S = 0.02


class LabelsBusyError(ReferenceDataError):
    """Another process held a label folder's lock for longer than the kind's wait: the organizers'
    labelling is under way, no fault of a submission (exit 1, naming the folder)."""


@dataclass
class LabelStore:
    """A frozen label folder of one kind, verified against its manifest on reading.

    ``queries`` maps a query key to the kind's query record; ``effective`` maps (query, doc_id)
    to the pair's current label (its last row). A kind subclasses this and sets the class
    attributes and hooks below.
    """

    root: Path
    manifest: dict
    queries: dict[str, Any]
    rows: list = field(default_factory=list)
    effective: dict[tuple[str, str], Any] = field(default_factory=dict)

    FORMAT: ClassVar[str] = ""
    QUERIES_FILE: ClassVar[str] = ""
    WHAT: ClassVar[str] = "label folder"  # how messages name the folder
    LABELLED: ClassVar[str] = "labels"  # how the lock message names what is being written
    RESTORE: ClassVar[str] = ""  # what a damaged folder's message says to do

    # ----------------------------------------------------------------- the kind's hooks

    @classmethod
    def lock_wait_s(cls) -> float:
        """How long reading or changing the folder waits for another process's change."""
        raise NotImplementedError

    @classmethod
    def read_queries(cls, path: Path) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def query_json(cls, record: Any) -> dict:
        raise NotImplementedError

    @classmethod
    def row_from_json(cls, record: dict, path: Path, line: int):
        raise NotImplementedError

    def validate_row(self, row, where: str, line: int) -> None:
        """The kind's checks of a row (the common ones are ``check_common_fields``)."""
        raise NotImplementedError

    def kind_counts(self) -> dict:
        raise NotImplementedError

    def derived_files(self) -> dict[str, bytes]:
        """Files written from the labels with every change, hashed in the manifest (none by default)."""
        return {}

    # ----------------------------------------------------------------- reading and creating

    @classmethod
    def read(cls, root: Path):
        """The folder at ``root``, verified against its manifest, read under a shared lock.
        InputError naming the file when it cannot be used; ``LabelsBusyError`` when a change by
        another process does not end in time."""
        root = Path(root)
        if not (root / LABELS_MANIFEST).is_file():
            raise InputError(f"no {LABELS_MANIFEST}: not a {cls.WHAT}", str(root))
        with cls.locked(root, shared=True):
            return cls._read_unlocked(root)

    @classmethod
    def _read_unlocked(cls, root: Path):
        manifest_path = root / LABELS_MANIFEST
        try:
            manifest = json.loads(manifest_path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise InputError(f"not valid JSON; {cls.RESTORE}", str(manifest_path)) from None
        if not isinstance(manifest, dict) or manifest.get("format") != cls.FORMAT:
            found = manifest.get("format") if isinstance(manifest, dict) else None
            shown = repr(found) if isinstance(found, str) and len(found) <= 80 else "missing"
            raise InputError(f"label format {shown} is not {cls.FORMAT!r}; {cls.RESTORE}", str(manifest_path))
        # The manifest records a sha256 of itself (as reference.json does), so an edit of the
        # counts or the history is found like an edit of the label files.
        if manifest.get(MANIFEST_DIGEST) != manifest_digest(manifest):
            raise InputError(
                f"does not match the sha256 it records of itself ({MANIFEST_DIGEST}): it was changed outside "
                f"reteco's tools (or a write was interrupted); frozen labels are never changed silently. "
                f"{cls.RESTORE}",
                str(manifest_path),
            )
        recorded = manifest.get("files")
        if not isinstance(recorded, dict) or manifest.get("content_hash") != content_hash_or_none(recorded):
            raise InputError(f'"files" and "content_hash" do not agree; {cls.RESTORE}', str(manifest_path))
        for name in (cls.QUERIES_FILE, LABEL_ROWS, *sorted(set(recorded) - {cls.QUERIES_FILE, LABEL_ROWS})):
            path = root / name
            if not path.is_file():
                raise InputError(f"{name} is missing from the {cls.WHAT}; {cls.RESTORE}", str(root))
            if recorded.get(name) != sha256_file(path):
                raise InputError(
                    f"{name} does not match the sha256 recorded in {LABELS_MANIFEST}: it was changed outside "
                    "reteco's tools (or a write was interrupted); frozen labels are never changed silently. "
                    f"{cls.RESTORE}",
                    str(path),
                )
        store = cls(root, manifest, cls.read_queries(root / cls.QUERIES_FILE))
        rows_path = root / LABEL_ROWS
        for line, record in iter_jsonl(rows_path):
            row = cls.row_from_json(record, rows_path, line)
            store.validate_row(row, str(rows_path), line)
            store._accept(row, str(rows_path))
        return store

    @classmethod
    def create(cls, root: Path, queries: Iterable[Any], note: str, **manifest_fields):
        """A new, empty folder over the given query records (an error if one exists)."""
        root = Path(root)
        if (root / LABELS_MANIFEST).exists():
            raise InputError(f"a {cls.WHAT} already exists here", str(root))
        root.mkdir(parents=True, exist_ok=True)
        records = list(queries)
        with cls.locked(root):
            atomic_write(root / cls.QUERIES_FILE, "".join(dumps(cls.query_json(r)) + "\n" for r in records))
            atomic_write(root / LABEL_ROWS, "")
            manifest = {
                "format": cls.FORMAT,
                **manifest_fields,
                "created_by": f"reteco {__version__}",
                "created_at": utc_now(),
                "history": [],
            }
            store = cls(root, manifest, {r.query: r for r in records})
            store._seal(note, 0)
        return store

    # ----------------------------------------------------------------- querying

    @property
    def content_hash(self) -> str:
        return self.manifest["content_hash"]

    def label_of(self, query: str, doc_id: str):
        return self.effective.get((query, doc_id))

    def counts(self) -> dict:
        return self.manifest.get("counts", {})

    # ----------------------------------------------------------------- changing (append only)

    def append(self, rows: list, note: str) -> int:
        """Append rows (validated as on reading) and re-seal the manifest; returns rows added.

        Rows are numbered as they land; an LLM row for an already labelled pair is refused, so
        callers skip labelled pairs first.
        """
        if not rows:
            return 0
        with self.locked(self.root):
            return self._append_locked(rows, note)

    def _append_locked(self, rows: list, note: str) -> int:
        path = self.root / LABEL_ROWS
        tmp = path.with_name(f".{path.name}.writing")
        try:
            with open(path, "rb") as source, open(tmp, "wb") as target:
                # One pass over the current bytes, never held whole (a round's labels.jsonl grows to
                # tens of MB and is extended every thousand labels): hashed, counted and copied, so
                # the bytes checked are the bytes counted and extended.
                digest, newlines, size, last = hashlib.sha256(), 0, 0, b""
                while chunk := source.read(_COPY_CHUNK):
                    digest.update(chunk)
                    newlines += chunk.count(b"\n")
                    size += len(chunk)
                    last = chunk[-1:]
                    target.write(chunk)
                # Another process (a second labelling run, an import) may have appended since this
                # object read the folder: writing now would drop its rows. Refuse instead.
                if digest.hexdigest() != self.manifest.get("files", {}).get(LABEL_ROWS):
                    raise InputError(
                        f"{LABEL_ROWS} changed since it was read (another reteco process?); nothing was written, "
                        "run the command again",
                        str(path),
                    )
                next_line = (newlines + (0 if not size or last == b"\n" else 1)) + 1  # blank lines count, as iter_jsonl numbers them
                numbered = [_with_line(row, next_line + offset) for offset, row in enumerate(rows)]
                # Validate against the pairs' current rows first: a bad row must leave the folder untouched.
                trial: dict = {}
                for row in numbered:
                    key = (row.query, row.doc_id)
                    self.validate_row(row, f"{path} (new row)", row.line)
                    check_succession(row, trial.get(key, self.effective.get(key)), f"{path} (new row)")
                    trial[key] = row
                if size and last != b"\n":
                    target.write(b"\n")
                target.write("".join(dumps(r.to_json()) + "\n" for r in numbered).encode("utf-8"))
                target.flush()
                os.fsync(target.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        for row in numbered:
            self._accept(row, str(path))
        self._seal(note, len(numbered))
        return len(numbered)

    # ----------------------------------------------------------------- internals

    @classmethod
    def locked(cls, root: Path, *, shared: bool = False):
        return locked_folder(root, shared=shared, wait_s=cls.lock_wait_s(), what=cls.LABELLED)

    def _accept(self, row, where: str) -> None:
        key = (row.query, row.doc_id)
        check_succession(row, self.effective.get(key), where)
        self.rows.append(row)
        self.effective[key] = row

    def _seal(self, note: str, added: int) -> None:
        for name, data in self.derived_files().items():
            atomic_write_bytes(self.root / name, data)
        names = (self.QUERIES_FILE, LABEL_ROWS, *sorted(self.derived_files()))
        files = {name: sha256_file(self.root / name) for name in names}
        self.manifest["files"] = files
        self.manifest["content_hash"] = content_hash(files)
        self.manifest["counts"] = {
            **self.kind_counts(),
            "rows": len(self.rows),
            "pairs": len(self.effective),
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
    """sha256 over the label files' own sha256s, by file name."""
    text = "".join(f"{name}:{files[name]}\n" for name in sorted(files))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash_or_none(files: dict) -> str | None:
    """``content_hash`` of a manifest's "files", or None when they are not name -> hex strings."""
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None
    return content_hash(files)


def utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_common_fields(row, where: str, line: int) -> None:
    """What every kind's row must carry: a known source, a query, a document, a labeller, an
    LLM row's prompt version, an ISO 8601 time."""
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


def check_succession(row, previous, where: str) -> None:
    """Only a human row may replace a label, and it must say which line it overrides."""
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


def common_row_fields(record: dict, path: Path, line: int) -> dict[str, Any]:
    """The fields every kind's row carries, read from a labels.jsonl record (the kind adds its
    verdict): the pair, who labelled it and when, the prompt version, rationale, override, judge."""
    overrides = record.get("overrides_line")
    if overrides is not None and (isinstance(overrides, bool) or not isinstance(overrides, int) or overrides < 1):
        raise InputError('"overrides_line" must be a positive line number or absent', str(path), line)
    judge = record.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise InputError('"judge" must be a JSON object or absent', str(path), line)
    prompt = record.get("prompt_version")
    if prompt is not None and not isinstance(prompt, str):
        raise InputError('"prompt_version" must be a string or null', str(path), line)
    return {
        "query": string_field(record.get("query"), '"query"', path, line),
        "doc_id": string_field(record.get("doc_id"), '"doc_id"', path, line),
        "source": string_field(record.get("source"), '"source"', path, line),
        "labeller": string_field(record.get("labeller"), '"labeller"', path, line),
        "labelled_at": string_field(record.get("labelled_at"), '"labelled_at"', path, line),
        "prompt_version": prompt,
        "rationale": optional_text(record.get("rationale")),
        "overrides_line": overrides,
        "judge": judge,
        "line": line,
    }


def row_json(row, verdict: dict[str, Any]) -> dict[str, Any]:
    """A row as its labels.jsonl line: the pair, the kind's ``verdict`` fields, who and when."""
    out: dict[str, Any] = {
        "query": row.query,
        "doc_id": row.doc_id,
        **verdict,
        "source": row.source,
        "labeller": row.labeller,
        "labelled_at": row.labelled_at,
        "prompt_version": row.prompt_version,
        "rationale": row.rationale,
    }
    if row.overrides_line is not None:
        out["overrides_line"] = row.overrides_line
    if row.judge is not None:
        out["judge"] = row.judge
    return out


@contextlib.contextmanager
def locked_folder(root: Path, *, shared: bool, wait_s: float, what: str) -> Iterator[None]:
    """A lock on a label folder: exclusive while it is changed, ``shared`` while it is read
    (advisory; POSIX only). Waits at most ``wait_s`` (``LabelsBusyError`` after). A reader in a
    folder where the lock file cannot be created reads without it (module docstring)."""
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
        _wait_for_lock(handle.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX, root, wait_s, what)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _wait_for_lock(fd: int, mode: int, root: Path, wait_s: float, what: str) -> None:
    """Take the flock ``mode`` on ``fd``, polling until ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LabelsBusyError(
                    f"another process is writing {what} (it has held {LOCK_FILE} for more than "
                    f"{wait_s:g} s): wait for it to finish, then run this again; no submission is at fault",
                    str(root),
                ) from None
            time.sleep(_LOCK_POLL_S)


def _with_line(row, line: int):
    return type(row)(**{**row.__dict__, "line": line})
