"""The judge's persistent cache and audit trail: one SQLite file, outside any output folder.

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
SCHEMA_VERSION = "1"

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- judgments -------------------------------------------------------------------------

    def judgment(self, cache_key: str) -> CachedJudgment | None:
        """The stored verdict of a judgment, if any, with the reported model and endpoint of the
        response that gave it (its last call)."""
        row = self._conn.execute(
            "SELECT cache_key, status, score, rationale, attempts, system_fingerprint, signature, call_ids "
            "FROM judgments WHERE cache_key = ?",
            (cache_key,),
        ).fetchone()
        if row is None:
            return None
        calls = self._calls_of(row[7])
        last = calls[-1] if calls else (None, None)
        return CachedJudgment(*row[:7], reported_model=last[0], endpoint=last[1])

    def legacy_judgment(self, legacy_key: str, endpoint: str) -> CachedJudgment | None:
        """A verdict stored under a key without the endpoint (module docstring), only when every
        call that made it came from ``endpoint``."""
        row = self._conn.execute("SELECT call_ids FROM judgments WHERE cache_key = ?", (legacy_key,)).fetchone()
        if row is None:
            return None
        calls = self._calls_of(row[0])
        if not calls or any((e or "").rstrip("/") != endpoint for _, e in calls):
            return None
        return self.judgment(legacy_key)

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
