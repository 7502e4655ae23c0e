"""The judge's persistent cache and audit trail: one SQLite file, outside any output folder.

Why one module of 510 lines: one SQLite file's schema and every query on it. The verdict cache,
the audit trail and the archives that carry them between machines share the tables below, and
importing an archive keeps the cache's own rules (a verdict never served for another endpoint,
never replaced silently).

Tables (``judge-cache.sqlite`` in the cache folder):

- ``requests``: every distinct request body sent (model, messages, schema, decoding), keyed
  by ``request_hash`` = sha256 of the canonical JSON of {endpoint, prompt_version, request
  body}, the endpoint being the public URL of the server asked (``LLMConfig.endpoint``): the
  same request sent to two servers has two keys, so an answer of one server is never served
  for another.
- ``calls``: every well-formed Chat Completions response received, raw JSON as the server sent
  it, with system_fingerprint, the model the server reported, how it came (live call or
  which batch) and when. A request answered twice (``retry_invalid``) has two rows.
- ``failures``: every failed attempt (HTTP status, timeout, connection error, malformed body)
  with the wait that followed it: the retry procedure, as it happened.
- ``judgments``: the verdict per judgment, keyed by ``cache_key`` (the hash of the judgment's
  first request), with the ids of the calls that made it. ok and invalid verdicts are kept;
  transport errors are not (the next run tries again). The model the server reported, its
  system fingerprint and the endpoint of a verdict are read from its calls (``judgment``).
- ``batches``: Batch API jobs, so a rerun collects a running batch instead of paying twice.

Rows written before the endpoint was part of the key (reteco 0.x caches, same schema 1) stay
in the file untouched and readable by every query here and by SQL. Their verdicts are keyed
without the endpoint: ``legacy_judgment`` returns one only when every call that made it was
recorded (``calls.endpoint``, kept since schema 1) from the endpoint now asked, so a verdict of
one server is still never served for another; the other old rows are not served (their
judgments are asked again, under the new key). Stored responses of old keys are not replayed.

Rows are committed as each call completes, so a crash loses at most the calls in flight.
Nothing here ever holds the API key: request bodies carry none, and every text received is
passed through the key redactor before it is stored.

Archives. A cache is carried from one machine to another as one self-contained SQLite file of
the same schema (``export_archive``: ``VACUUM INTO``, a consistent snapshot in rollback-journal
mode, so no ``-wal`` or ``-shm`` file has to travel with it). The Codabench scoring program
writes its run's cache as ``judge_archive.sqlite`` (``ARCHIVE_FILE``) into its scoring output;
``import_archive`` merges such a file into the organizers' cache (``reteco judge
--import-archive``): requests by hash, calls and failures unless the same row is there already,
verdicts unless the cache has one for the same key (a verdict already in the cache is kept and a
different one in the archive is counted as a conflict, never silently replaced). The imported
verdicts then answer the same requests to the same endpoint without a call.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

CACHE_FILE = "judge-cache.sqlite"
ARCHIVE_FILE = "judge_archive.sqlite"  # a cache exported into a scoring output (module docstring)
SCHEMA_VERSION = "1"
_CALL_COLUMNS = ("request_hash", "response_json", "http_status", "system_fingerprint", "model", "via", "endpoint",
                 "started_at", "finished_at")
_FAILURE_COLUMNS = ("request_hash", "attempt", "kind", "http_status", "message", "wait_s", "endpoint", "at")
_JUDGMENT_COLUMNS = ("cache_key", "topic_key", "dimension", "prompt_version", "signature", "model", "status", "score",
                     "rationale", "attempts", "system_fingerprint", "call_ids", "judged_at")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests(
    request_hash TEXT PRIMARY KEY,
    prompt_version INTEGER NOT NULL,
    request_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_hash TEXT NOT NULL REFERENCES requests(request_hash),
    response_json TEXT NOT NULL,
    http_status INTEGER,
    system_fingerprint TEXT,
    model TEXT,
    via TEXT NOT NULL,
    endpoint TEXT,
    started_at TEXT,
    finished_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_by_request ON calls(request_hash);
CREATE TABLE IF NOT EXISTS failures(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_hash TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    kind TEXT NOT NULL,
    http_status INTEGER,
    message TEXT NOT NULL,
    wait_s REAL,
    endpoint TEXT,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_by_request ON failures(request_hash);
CREATE TABLE IF NOT EXISTS judgments(
    cache_key TEXT PRIMARY KEY,
    topic_key TEXT NOT NULL,
    dimension TEXT NOT NULL,
    prompt_version INTEGER NOT NULL,
    signature TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    score INTEGER,
    rationale TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    system_fingerprint TEXT,
    call_ids TEXT NOT NULL,
    judged_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batches(
    batch_id TEXT PRIMARY KEY,
    input_file_id TEXT NOT NULL,
    endpoint TEXT,
    status TEXT NOT NULL,
    request_hashes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    collected_at TEXT,
    output_file_id TEXT,
    error_file_id TEXT
);
"""


class JudgeCacheError(RuntimeError):
    """The cache cannot be opened (unwritable folder, not a cache file, another schema)."""


def default_cache_dir() -> Path:
    """Where the judge cache lives unless told otherwise.

    ``$RETECO_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/reteco/judge``, else
    ``~/.cache/reteco/judge``. It is never inside an output folder, so scoring into a new
    folder reuses every paid judgment.
    """
    explicit = os.environ.get("RETECO_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "reteco" / "judge"


def canonical_json(value: Any) -> str:
    """The one JSON spelling hashed for cache keys (sorted keys, no spaces, UTF-8 kept)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_hash(body: Mapping[str, Any], prompt_version: int, endpoint: str | None = None) -> str:
    """sha256 of the full request: endpoint, model, prompt version, messages, schema, decoding.

    ``endpoint`` None gives the key of caches written before the endpoint was part of it (only
    ``legacy_judgment`` looks such keys up).
    """
    payload: dict[str, Any] = {"prompt_version": prompt_version, "request": body}
    if endpoint is not None:
        payload["endpoint"] = endpoint
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class CachedJudgment:
    """A verdict read back from the cache."""

    cache_key: str
    status: str
    score: int | None
    rationale: str
    attempts: int
    system_fingerprint: str | None
    signature: str
    reported_model: str | None = None  # the model named by the response that gave the verdict
    endpoint: str | None = None  # where that response came from


@dataclass(frozen=True)
class ArchiveImport:
    """What ``JudgeCache.import_archive`` merged (counts of rows) and the verdicts it did not."""

    judgments_imported: int
    judgments_present: int  # the same verdict was in the cache already
    judgments_conflicting: tuple[str, ...]  # cache keys whose cached verdict differs (the cache's is kept)
    calls_imported: int
    calls_present: int
    requests_imported: int
    failures_imported: int

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        return {
            "judgments_imported": self.judgments_imported, "judgments_present": self.judgments_present,
            "judgments_conflicting": len(self.judgments_conflicting), "calls_imported": self.calls_imported,
            "calls_present": self.calls_present, "requests_imported": self.requests_imported,
            "failures_imported": self.failures_imported,
        }


@dataclass(frozen=True)
class BatchRecord:
    """A Batch API job recorded in the cache."""

    batch_id: str
    input_file_id: str
    status: str
    request_hashes: tuple[str, ...]
    collected: bool


class JudgeCache:
    """The SQLite cache in ``directory`` (created if needed). Use from one thread."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / CACHE_FILE
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Several scoring processes may share one cache: WAL lets readers run beside a
            # writer, and the busy timeout makes a second writer wait instead of failing.
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self._conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        except (OSError, sqlite3.Error) as exc:
            raise JudgeCacheError(f"cannot open the judge cache {self.path}: {exc}") from None
        if row is not None and row[0] != SCHEMA_VERSION:
            raise JudgeCacheError(f"{self.path}: judge cache schema {row[0]}, this reteco reads schema {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection (every row is already committed)."""
        self._conn.close()

    # --- archives --------------------------------------------------------------------------

    def export_archive(self, dest: Path) -> None:
        """Write the whole cache to ``dest`` as one self-contained SQLite file (module docstring);
        an existing ``dest`` is replaced."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.unlink(missing_ok=True)
        try:
            self._conn.execute("VACUUM INTO ?", (str(dest),))
        except sqlite3.Error as exc:
            raise JudgeCacheError(f"cannot write the judge archive {dest}: {exc}") from None

    def import_archive(self, source: Path) -> ArchiveImport:
        """Merge the archive ``source`` (a file ``export_archive`` wrote) into this cache, in one
        transaction (module docstring). Raises JudgeCacheError when ``source`` is not a judge
        cache of this schema."""
        archive = _open_archive(Path(source))
        try:
            return self._merge(archive)
        finally:
            archive.close()

    def _merge(self, archive: sqlite3.Connection) -> ArchiveImport:
        conn = self._conn
        counts = {"requests": 0, "calls": 0, "calls_present": 0, "failures": 0, "imported": 0, "present": 0}
        conflicting: list[str] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in archive.execute("SELECT request_hash, prompt_version, request_json, created_at FROM requests"):
                cur = conn.execute("INSERT OR IGNORE INTO requests(request_hash, prompt_version, request_json, created_at) "
                                   "VALUES (?, ?, ?, ?)", row)
                counts["requests"] += cur.rowcount
            call_ids: dict[int, int] = {}  # archive call id -> this cache's
            for row in archive.execute(f"SELECT id, {', '.join(_CALL_COLUMNS)} FROM calls ORDER BY id"):  # noqa: S608
                old, values = row[0], row[1:]
                found = conn.execute("SELECT id FROM calls WHERE request_hash = ? AND response_json = ? AND finished_at = ?",
                                     (values[0], values[1], values[-1])).fetchone()
                if found is not None:
                    call_ids[old] = int(found[0])
                    counts["calls_present"] += 1
                    continue
                cur = conn.execute(f"INSERT INTO calls({', '.join(_CALL_COLUMNS)}) "  # noqa: S608 (constant names)
                                   f"VALUES ({', '.join('?' * len(_CALL_COLUMNS))})", values)
                call_ids[old] = int(cur.lastrowid)
                counts["calls"] += 1
            for values in archive.execute(f"SELECT {', '.join(_FAILURE_COLUMNS)} FROM failures ORDER BY id"):  # noqa: S608
                found = conn.execute("SELECT 1 FROM failures WHERE request_hash = ? AND attempt = ? AND kind = ? AND at = ?",
                                     (values[0], values[1], values[2], values[-1])).fetchone()
                if found is None:
                    conn.execute(f"INSERT INTO failures({', '.join(_FAILURE_COLUMNS)}) "  # noqa: S608
                                 f"VALUES ({', '.join('?' * len(_FAILURE_COLUMNS))})", values)
                    counts["failures"] += 1
            for row in archive.execute(f"SELECT {', '.join(_JUDGMENT_COLUMNS)} FROM judgments"):  # noqa: S608
                record = dict(zip(_JUDGMENT_COLUMNS, row))
                # Ids of calls the archive does not hold are dropped: they would name another call here.
                ids = [int(i) for i in json.loads(record["call_ids"] or "[]")]
                record["call_ids"] = json.dumps([call_ids[i] for i in ids if i in call_ids])
                held = conn.execute("SELECT status, score, rationale FROM judgments WHERE cache_key = ?",
                                    (record["cache_key"],)).fetchone()
                if held is None:
                    conn.execute(f"INSERT INTO judgments({', '.join(_JUDGMENT_COLUMNS)}) "  # noqa: S608
                                 f"VALUES ({', '.join('?' * len(_JUDGMENT_COLUMNS))})", tuple(record.values()))
                    counts["imported"] += 1
                elif tuple(held) == (record["status"], record["score"], record["rationale"]):
                    counts["present"] += 1
                else:
                    conflicting.append(record["cache_key"])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return ArchiveImport(counts["imported"], counts["present"], tuple(conflicting), counts["calls"],
                             counts["calls_present"], counts["requests"], counts["failures"])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- judgments -------------------------------------------------------------------------

    def judgment(self, cache_key: str) -> CachedJudgment | None:
        """The stored verdict of a judgment, if any, with the reported model and endpoint of the
        response that gave it (its last call)."""
        found = self._judgment_and_calls(cache_key)
        return found[0] if found is not None else None

    def legacy_judgment(self, legacy_key: str, endpoint: str) -> CachedJudgment | None:
        """A verdict stored under a key without the endpoint (module docstring), only when every
        call that made it came from ``endpoint``."""
        found = self._judgment_and_calls(legacy_key)
        if found is None:
            return None
        verdict, calls = found
        if not calls or any((e or "").rstrip("/") != endpoint for _, e in calls):
            return None
        return verdict

    def _judgment_and_calls(self, cache_key: str) -> tuple[CachedJudgment, list[tuple[str | None, str | None]]] | None:
        """The stored verdict of ``cache_key`` (as ``judgment`` returns it) and the (reported
        model, endpoint) of each of its calls, read once."""
        row = self._conn.execute(
            "SELECT cache_key, status, score, rationale, attempts, system_fingerprint, signature, call_ids "
            "FROM judgments WHERE cache_key = ?",
            (cache_key,),
        ).fetchone()
        if row is None:
            return None
        calls = self._calls_of(row[7])
        last = calls[-1] if calls else (None, None)
        return CachedJudgment(*row[:7], reported_model=last[0], endpoint=last[1]), calls

    def _calls_of(self, call_ids_json: str) -> list[tuple[str | None, str | None]]:
        """(reported model, endpoint) of the calls named by a judgment's call_ids, in its order."""
        ids = [int(i) for i in json.loads(call_ids_json or "[]")]
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        found = {r[0]: (r[1], r[2]) for r in self._conn.execute(
            f"SELECT id, model, endpoint FROM calls WHERE id IN ({marks})", ids  # noqa: S608 (placeholders only)
        )}
        return [found[i] for i in ids if i in found]

    def put_judgment(
        self,
        *,
        cache_key: str,
        topic_key: str,
        dimension: str,
        prompt_version: int,
        signature: str,
        model: str,
        status: str,
        score: int | None,
        rationale: str,
        attempts: int,
        system_fingerprint: str | None,
        call_ids: Iterable[int],
    ) -> None:
        """Store (or replace, after ``retry_invalid``) a verdict."""
        self._conn.execute(
            "INSERT OR REPLACE INTO judgments(cache_key, topic_key, dimension, prompt_version, signature, model, "
            "status, score, rationale, attempts, system_fingerprint, call_ids, judged_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                cache_key, topic_key, dimension, prompt_version, signature, model, status, score, rationale,
                attempts, system_fingerprint, json.dumps(list(call_ids)), now_iso(),
            ),
        )

    # --- calls -----------------------------------------------------------------------------

    def put_request(self, request_hash_: str, prompt_version: int, body: Mapping[str, Any]) -> None:
        """Store a request body once (it holds no credentials)."""
        self._conn.execute(
            "INSERT OR IGNORE INTO requests(request_hash, prompt_version, request_json, created_at) VALUES (?, ?, ?, ?)",
            (request_hash_, prompt_version, canonical_json(body), now_iso()),
        )

    def add_call(
        self,
        *,
        request_hash_: str,
        response_json: str,
        http_status: int | None,
        system_fingerprint: str | None,
        model: str | None,
        via: str,
        endpoint: str | None,
        started_at: str | None,
    ) -> int:
        """Store one received response (already redacted); returns its row id."""
        cur = self._conn.execute(
            "INSERT INTO calls(request_hash, response_json, http_status, system_fingerprint, model, via, endpoint, "
            "started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (request_hash_, response_json, http_status, system_fingerprint, model, via, endpoint, started_at, now_iso()),
        )
        return int(cur.lastrowid)

    def latest_call(self, request_hash_: str) -> tuple[int, str] | None:
        """(call id, raw response JSON) of the newest response to a request, if any."""
        row = self._conn.execute(
            "SELECT id, response_json FROM calls WHERE request_hash = ? ORDER BY id DESC LIMIT 1", (request_hash_,)
        ).fetchone()
        return (int(row[0]), row[1]) if row else None

    def add_failure(
        self,
        *,
        request_hash_: str,
        attempt: int,
        kind: str,
        http_status: int | None,
        message: str,
        wait_s: float | None,
        endpoint: str | None,
    ) -> None:
        """Record one failed attempt (already redacted) and the wait chosen after it."""
        self._conn.execute(
            "INSERT INTO failures(request_hash, attempt, kind, http_status, message, wait_s, endpoint, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (request_hash_, attempt, kind, http_status, message, wait_s, endpoint, now_iso()),
        )

    def failures(self, request_hash_: str) -> list[dict[str, Any]]:
        """The failed attempts recorded for a request, oldest first."""
        cur = self._conn.execute(
            "SELECT attempt, kind, http_status, message, wait_s, at FROM failures WHERE request_hash = ? ORDER BY id",
            (request_hash_,),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    # --- batches ---------------------------------------------------------------------------

    def add_batch(self, batch_id: str, input_file_id: str, endpoint: str | None, status: str, hashes: Iterable[str]) -> None:
        """Record a submitted batch and the requests it carries."""
        self._conn.execute(
            "INSERT OR REPLACE INTO batches(batch_id, input_file_id, endpoint, status, request_hashes, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (batch_id, input_file_id, endpoint, status, json.dumps(sorted(hashes)), now_iso()),
        )

    def update_batch(self, batch_id: str, status: str, *, collected: bool = False,
                     output_file_id: str | None = None, error_file_id: str | None = None) -> None:
        """Record a batch's status; ``collected`` once its results are in ``calls``."""
        self._conn.execute(
            "UPDATE batches SET status = ?, collected_at = CASE WHEN ? THEN ? ELSE collected_at END, "
            "output_file_id = COALESCE(?, output_file_id), error_file_id = COALESCE(?, error_file_id) WHERE batch_id = ?",
            (status, collected, now_iso(), output_file_id, error_file_id, batch_id),
        )

    def open_batches(self) -> list[BatchRecord]:
        """Batches submitted but not yet collected (a crash or a timeout left them running)."""
        rows = self._conn.execute(
            "SELECT batch_id, input_file_id, status, request_hashes, collected_at FROM batches "
            "WHERE collected_at IS NULL ORDER BY created_at"
        ).fetchall()
        return [BatchRecord(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4] is not None) for r in rows]


def _open_archive(path: Path) -> sqlite3.Connection:
    """A read-only connection to a judge archive, checked to be a cache of this schema."""
    if not path.is_file():
        raise JudgeCacheError(f"no judge archive {path}")
    conn = None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = {"meta", "requests", "calls", "failures", "judgments"} - tables
        version = None if missing else conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise JudgeCacheError(f"{path} is not a judge archive (an SQLite file of the judge cache): {exc}") from None
    if missing or version is None:
        conn.close()
        raise JudgeCacheError(f"{path} is not a judge archive: " + (f"no table {', '.join(sorted(missing))}" if missing
                                                                     else "no schema version"))
    if version[0] != SCHEMA_VERSION:
        conn.close()
        raise JudgeCacheError(f"{path}: judge archive schema {version[0]}, this reteco reads schema {SCHEMA_VERSION}")
    return conn
