"""The judge's persistent cache and audit trail: one SQLite file, outside any output folder.

Why one module: one SQLite file's schema and every query on it. The verdict cache,
the audit trail, the claims that let several processes share it and the archives that carry it
between machines share the tables below, and importing an archive keeps the cache's own rules (a
verdict never served for another endpoint, never replaced).

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
- ``claims``: the judgments being asked right now, each with its ``owner`` (host/pid/random
  token of the connection) and ``expires_at`` (a lease, renewed while the owner works).
- ``conflicts``: verdicts an imported archive brought that differ from the one held: the key,
  the archive, both verdicts (status, score, rationale), when.

Several processes share one cache (``leaderboard --jobs N``, two ``reteco judge``, an import
during a run). A judgment is paid for once among them: before its request is sent it is claimed
(``claim``); a process wanting a judgment another live process has claimed waits for that
verdict, polling the cache (the runner, ``reteco.judge.runner``), and takes the claim over when
the owner gave it up or died (its lease ran out). The first verdict stored wins (``put_judgment``:
insert-or-ignore, then the held verdict is read back and returned), so every output reports what
the cache holds and nothing is ever replaced, except an invalid verdict re-judged on purpose
(``retry_invalid``), and then only through a compare-and-swap on the row read: two retries pay
once. Every wait is bounded: a statement waits ``RETECO_JUDGE_CACHE_WAIT_S`` (default 60 s) for
another process's write lock, a claimed judgment is waited for ``RETECO_JUDGE_CLAIM_WAIT_S``
(default 900 s); past them ``JudgeCacheBusy`` names the file and the holder (the claim's owner,
or another process's write transaction), and the commands turn it into exit 1 naming
``--judge-cache`` (``reteco.commands.main``).

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
judges straight into ``judge_archive.sqlite`` (``ARCHIVE_FILE``) in its scoring output: a
``JudgeCache`` opened on a ``.sqlite`` file is that one file in rollback-journal mode with
``synchronous=FULL``, each row committed as it arrives, so the file is a valid archive whenever
the program is killed (a hot ``-journal`` may be left beside it). ``import_archive`` merges such a
file into the organizers' cache (``reteco judge --import-archive``), rolling a hot journal back
on a private copy first: requests by hash, calls and failures unless the same row is there
already, verdicts unless the cache has one for the same key (a verdict already in the cache is
kept; a different one in the archive is recorded in ``conflicts``). It writes in transactions of
``IMPORT_CHUNK_ROWS`` rows, so a run sharing the cache waits for one chunk, never the whole
import. The imported verdicts then answer the same requests to the same endpoint without a call.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import shutil
import socket
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from reteco.llm.usage import TokenUsage, total

CACHE_FILE = "judge-cache.sqlite"
ARCHIVE_FILE = "judge_archive.sqlite"  # a cache exported into a scoring output (module docstring)
SCHEMA_VERSION = "1"
_CALL_COLUMNS = ("request_hash", "response_json", "http_status", "system_fingerprint", "model", "via", "endpoint",
                 "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens", "started_at",
                 "finished_at")
# The usage columns of ``calls`` (reteco.llm.usage), added to caches of an older reteco on open:
# their rows keep NULL there, "not recorded".
_USAGE_COLUMNS = ("prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens")
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
    finished_at TEXT NOT NULL,
    prompt_tokens INTEGER,
    cached_tokens INTEGER,
    completion_tokens INTEGER,
    reasoning_tokens INTEGER
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
CREATE TABLE IF NOT EXISTS batch_queue(
    request_hash TEXT PRIMARY KEY REFERENCES requests(request_hash),
    queued_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims(
    cache_key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS conflicts(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cache_key TEXT NOT NULL,
    archive TEXT NOT NULL,
    held_json TEXT NOT NULL,
    archived_json TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS conflicts_once ON conflicts(cache_key, archived_json);
"""
_TABLES = frozenset({"meta", "requests", "calls", "failures", "judgments", "batches", "batch_queue", "claims", "conflicts"})


class JudgeCacheError(RuntimeError):
    """The cache cannot be used (unwritable folder, not a cache file, another schema, locked)."""


class JudgeCacheBusy(JudgeCacheError):
    """The cache stayed locked longer than the wait limit: by another process's write
    transaction, or a judgment by another process's claim. The message names the file and the
    holder."""


# How long one statement waits for another process's write lock (SQLite's busy timeout), how
# long a judgment claimed by another live process is waited for, and a claim's lease (renewed
# while its owner works; a dead owner's claims expire). Environment variables, so that every
# process of a command (the leaderboard's workers too) keeps the same limits.
WAIT_ENV = "RETECO_JUDGE_CACHE_WAIT_S"
CLAIM_WAIT_ENV = "RETECO_JUDGE_CLAIM_WAIT_S"
LEASE_ENV = "RETECO_JUDGE_CLAIM_LEASE_S"
DEFAULT_WAIT_S = 60.0
DEFAULT_CLAIM_WAIT_S = 900.0
DEFAULT_LEASE_S = 60.0
IMPORT_CHUNK_ROWS = 500  # rows per import transaction: a run sharing the cache waits for one chunk, not the import

# What ``JudgeCache.claim`` found.
CLAIMED = "claimed"  # the key is this cache's to judge: ask, store, release
JUDGED = "judged"  # a verdict is there (read it)
HELD = "held"  # another live process judges it: wait for its verdict


def seconds_from_env(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name``, else ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


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
    version: str = ""  # the stored row's judged_at, call ids and rationale: what a compare-and-swap replaces
    usage: TokenUsage = TokenUsage()  # the tokens of the calls that made the verdict (reteco.llm.usage)


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
    """The SQLite cache in ``directory`` (created if needed). Use from one thread.

    ``directory`` naming a ``.sqlite`` file opens that file itself as the cache, in
    rollback-journal mode with ``synchronous=FULL``: every committed row is on disk and the file
    is a valid judge archive whatever moment its process is killed at (a leftover hot
    ``-journal`` beside it is rolled back by whoever opens it next, ``import_archive`` too).
    The Codabench scoring program judges straight into its output's archive this way.
    """

    def __init__(self, directory: Path):
        location = Path(directory)
        self.single_file = location.suffix == ".sqlite"
        self.directory = location.parent if self.single_file else location
        self.path = location if self.single_file else location / CACHE_FILE
        self.wait_s = seconds_from_env(WAIT_ENV, DEFAULT_WAIT_S)
        self.claim_wait_s = seconds_from_env(CLAIM_WAIT_ENV, DEFAULT_CLAIM_WAIT_S)
        self.lease_s = seconds_from_env(LEASE_ENV, DEFAULT_LEASE_S)
        # Who holds this connection's claims: readable in a lock message, unique per open.
        self.owner = f"{socket.gethostname()}/pid {os.getpid()}/{secrets.token_hex(4)}"
        row = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # Several processes may share one cache: WAL lets readers run beside a writer, and
            # the busy timeout makes a second writer wait (up to wait_s) instead of failing.
            self._conn = sqlite3.connect(self.path, timeout=self.wait_s, isolation_level=None)
            row = self._set_up()
        except JudgeCacheError:
            raise
        except (OSError, sqlite3.Error) as exc:
            raise JudgeCacheError(f"cannot open the judge cache {self.path}: {exc}") from None
        if row is not None and row[0] != SCHEMA_VERSION:
            raise JudgeCacheError(f"{self.path}: judge cache schema {row[0]}, this reteco reads schema {SCHEMA_VERSION}")

    def _set_up(self) -> tuple[str] | None:
        """Put the file in its journal mode and create the tables it lacks; the stored schema version.

        A cache already set up is only read here. Setting up a new file (or one of an older
        reteco) writes, and two processes opening it at once race for that write: SQLite answers
        the loser SQLITE_BUSY at once, without consulting the busy handler, where waiting could
        deadlock (changing the journal mode; a read turning into a write). So the setup is
        retried here, with a short random pause, until ``wait_s`` has passed; each attempt is
        one transaction, so a lost race leaves nothing half done.
        """
        conn = self._conn
        journal = "delete" if self.single_file else "wal"
        give_up = time.monotonic() + self.wait_s
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != journal:
                    conn.execute(f"PRAGMA journal_mode={journal}")
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if not _TABLES <= tables:
                    conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}"
                                       "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', "
                                       f"'{SCHEMA_VERSION}');COMMIT;")
                columns = {r[1] for r in conn.execute("PRAGMA table_info(calls)")}
                missing = [c for c in _USAGE_COLUMNS if c not in columns]
                if missing:  # a cache of an older reteco: same schema, plus nullable usage columns
                    conn.executescript("BEGIN IMMEDIATE;" + "".join(
                        f"ALTER TABLE calls ADD COLUMN {c} INTEGER;" for c in missing) + "COMMIT;")
                conn.execute(f"PRAGMA synchronous={'FULL' if self.single_file else 'NORMAL'}")
                return conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if not _is_busy(exc):
                    raise
                if time.monotonic() >= give_up:
                    raise self._busy() from None
                time.sleep(random.uniform(0.005, 0.05))

    def _busy(self) -> JudgeCacheBusy:
        return JudgeCacheBusy(
            f"the judge cache {self.path} stayed locked for more than {self.wait_s:g} s: another process's write "
            f"transaction holds it (an archive import or another run); try again when it is done, or raise "
            f"{WAIT_ENV}")

    def _sql(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        """One statement; a lock held past the wait limit is JudgeCacheBusy, any other SQLite
        failure a JudgeCacheError naming the file."""
        try:
            return self._conn.execute(sql, tuple(params))
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise self._busy() from None
            raise JudgeCacheError(f"the judge cache {self.path}: {exc}") from None
        except sqlite3.Error as exc:
            raise JudgeCacheError(f"the judge cache {self.path}: {exc}") from None

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, its lock taken first (BEGIN IMMEDIATE: never a read turned
        into a write, which SQLite would refuse without waiting)."""
        self._sql("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._sql("COMMIT")

    def close(self) -> None:
        """Give back this connection's claims and close it (every row is already committed)."""
        try:
            self._conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
        except sqlite3.Error:
            pass  # locked or read-only: the claims expire with their lease
        self._conn.close()

    # --- claims: a judgment is paid for once, whoever asks --------------------------------

    def claim(self, cache_key: str, *, replacing: str | None = None) -> tuple[str, str | None]:
        """Claim the judgment ``cache_key`` before asking for it: (CLAIMED, None) when this
        cache may ask (nobody holds it and it has no verdict), (JUDGED, None) when a verdict is
        there, (HELD, owner) when another live process holds it. ``replacing``: the version of
        an invalid verdict to re-judge (``retry_invalid``): claimable only while that very row
        is stored, so two retries do not both pay. A claim lasts ``lease_s`` unless renewed
        (``renew_claims``) and ends with ``release``, ``close`` or its owner's death."""
        now = time.time()
        with self._write():
            row = self._sql("SELECT judged_at, call_ids, rationale FROM judgments WHERE cache_key = ?",
                            (cache_key,)).fetchone()
            if row is not None and (replacing is None or _version(*row) != replacing):
                return JUDGED, None
            held = self._sql("SELECT owner, expires_at FROM claims WHERE cache_key = ?", (cache_key,)).fetchone()
            if held is not None and held[0] != self.owner and held[1] > now:
                return HELD, held[0]
            self._sql("INSERT OR REPLACE INTO claims(cache_key, owner, claimed_at, expires_at) VALUES (?, ?, ?, ?)",
                      (cache_key, self.owner, now_iso(), now + self.lease_s))
        return CLAIMED, None

    def claim_holder(self, cache_key: str) -> str | None:
        """The owner of another process's live claim on ``cache_key``, if any (a read, no lock)."""
        row = self._sql("SELECT owner FROM claims WHERE cache_key = ? AND owner != ? AND expires_at > ?",
                        (cache_key, self.owner, time.time())).fetchone()
        return row[0] if row else None

    def renew_claims(self) -> None:
        """Extend the lease of every claim of this connection (its owner is still working)."""
        self._sql("UPDATE claims SET expires_at = ? WHERE owner = ?", (time.time() + self.lease_s, self.owner))

    def release(self, cache_key: str) -> None:
        """Give back the claim on ``cache_key`` (judged, or given up: another may ask)."""
        self._sql("DELETE FROM claims WHERE cache_key = ? AND owner = ?", (cache_key, self.owner))

    def claim_timeout(self, cache_key: str, holder: str) -> JudgeCacheBusy:
        """The error of a judgment claimed by ``holder`` for longer than ``claim_wait_s``."""
        return JudgeCacheBusy(
            f"the judge cache {self.path}: judgment {cache_key[:16]} has been claimed by {holder} for more than "
            f"{self.claim_wait_s:g} s without a verdict; try again when that process is done, or raise {CLAIM_WAIT_ENV}")

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
        """Merge the archive ``source`` (a file ``export_archive`` wrote, or the archive a killed
        scoring program left, hot journal and all) into this cache, in transactions of at most
        ``IMPORT_CHUNK_ROWS`` rows (module docstring). A verdict held is never replaced: a
        different one in the archive is recorded in ``conflicts``. Raises JudgeCacheError when
        ``source`` is not a judge cache of this schema, JudgeCacheBusy when this cache stays
        locked."""
        with _archive_connection(Path(source)) as archive:
            return self._merge(archive, str(source))

    def _chunks(self, rows: sqlite3.Cursor) -> Iterator[list[tuple]]:
        """The archive's rows in chunks, each to be written in one transaction of this cache."""
        while chunk := rows.fetchmany(IMPORT_CHUNK_ROWS):
            yield chunk

    def _merge(self, archive: sqlite3.Connection, name: str) -> ArchiveImport:
        counts = {"requests": 0, "calls": 0, "calls_present": 0, "failures": 0, "imported": 0, "present": 0}
        conflicting: list[str] = []
        # Requests and calls first, so that a verdict's calls are here before it is.
        for chunk in self._chunks(archive.execute("SELECT request_hash, prompt_version, request_json, created_at "
                                                  "FROM requests")):
            with self._write():
                for row in chunk:
                    counts["requests"] += self._sql("INSERT OR IGNORE INTO requests(request_hash, prompt_version, "
                                                    "request_json, created_at) VALUES (?, ?, ?, ?)", row).rowcount
        call_ids: dict[int, int] = {}  # archive call id -> this cache's
        present = {r[1] for r in archive.execute("PRAGMA table_info(calls)")}
        # An archive of an older reteco has no usage columns: its calls' usage is not recorded.
        selected = ", ".join(c if c in present else "NULL" for c in _CALL_COLUMNS)
        for chunk in self._chunks(archive.execute(f"SELECT id, {selected} FROM calls ORDER BY id")):  # noqa: S608
            with self._write():
                for row in chunk:
                    old, values = row[0], row[1:]
                    found = self._sql("SELECT id FROM calls WHERE request_hash = ? AND response_json = ? "
                                      "AND finished_at = ?", (values[0], values[1], values[-1])).fetchone()
                    if found is not None:
                        call_ids[old] = int(found[0])
                        counts["calls_present"] += 1
                        continue
                    cur = self._sql(f"INSERT INTO calls({', '.join(_CALL_COLUMNS)}) "  # noqa: S608 (constant names)
                                    f"VALUES ({', '.join('?' * len(_CALL_COLUMNS))})", values)
                    call_ids[old] = int(cur.lastrowid)
                    counts["calls"] += 1
        failures = archive.execute(f"SELECT {', '.join(_FAILURE_COLUMNS)} FROM failures ORDER BY id")  # noqa: S608
        for chunk in self._chunks(failures):
            with self._write():
                for values in chunk:
                    found = self._sql("SELECT 1 FROM failures WHERE request_hash = ? AND attempt = ? AND kind = ? "
                                      "AND at = ?", (values[0], values[1], values[2], values[-1])).fetchone()
                    if found is None:
                        self._sql(f"INSERT INTO failures({', '.join(_FAILURE_COLUMNS)}) "  # noqa: S608
                                  f"VALUES ({', '.join('?' * len(_FAILURE_COLUMNS))})", values)
                        counts["failures"] += 1
        for chunk in self._chunks(archive.execute(f"SELECT {', '.join(_JUDGMENT_COLUMNS)} FROM judgments")):  # noqa: S608
            with self._write():
                for row in chunk:
                    record = dict(zip(_JUDGMENT_COLUMNS, row))
                    # Ids of calls the archive does not hold are dropped: they would name another call here.
                    ids = [int(i) for i in json.loads(record["call_ids"] or "[]")]
                    record["call_ids"] = json.dumps([call_ids[i] for i in ids if i in call_ids])
                    # The first verdict stored wins, whoever stored it: a run of this cache or an import.
                    cur = self._sql(f"INSERT OR IGNORE INTO judgments({', '.join(_JUDGMENT_COLUMNS)}) "  # noqa: S608
                                    f"VALUES ({', '.join('?' * len(_JUDGMENT_COLUMNS))})", tuple(record.values()))
                    if cur.rowcount:
                        counts["imported"] += 1
                        continue
                    held = self._sql("SELECT status, score, rationale FROM judgments WHERE cache_key = ?",
                                     (record["cache_key"],)).fetchone()
                    archived = (record["status"], record["score"], record["rationale"])
                    if tuple(held) == archived:
                        counts["present"] += 1
                        continue
                    conflicting.append(record["cache_key"])
                    self._sql("INSERT OR IGNORE INTO conflicts(cache_key, archive, held_json, archived_json, at) "
                              "VALUES (?, ?, ?, ?, ?)", (record["cache_key"], name, _verdict_json(held),
                                                         _verdict_json(archived), now_iso()))
        return ArchiveImport(counts["imported"], counts["present"], tuple(conflicting), counts["calls"],
                             counts["calls_present"], counts["requests"], counts["failures"])

    def conflicts(self) -> list[dict[str, Any]]:
        """The verdicts imports brought that differ from those held, oldest first: cache key,
        archive, the held and the archived verdict (status, score, rationale)."""
        rows = self._sql("SELECT cache_key, archive, held_json, archived_json, at FROM conflicts ORDER BY id").fetchall()
        return [{"cache_key": r[0], "archive": r[1], "held": json.loads(r[2]), "archived": json.loads(r[3]), "at": r[4]}
                for r in rows]

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
        if not calls or any((e or "").rstrip("/") != endpoint for _, e, _ in calls):
            return None
        return verdict

    def _judgment_and_calls(
        self, cache_key: str
    ) -> tuple[CachedJudgment, list[tuple[str | None, str | None, TokenUsage]]] | None:
        """The stored verdict of ``cache_key`` (as ``judgment`` returns it, with the usage of its
        calls) and the (reported model, endpoint, usage) of each of its calls, read once."""
        row = self._sql(
            "SELECT cache_key, status, score, rationale, attempts, system_fingerprint, signature, call_ids, judged_at "
            "FROM judgments WHERE cache_key = ?",
            (cache_key,),
        ).fetchone()
        if row is None:
            return None
        calls = self._calls_of(row[7])
        last = calls[-1] if calls else (None, None)
        verdict = CachedJudgment(*row[:7], reported_model=last[0], endpoint=last[1], version=_version(row[8], row[7], row[3]),
                                 usage=total(u for _, _, u in calls))
        return verdict, calls

    def _calls_of(self, call_ids_json: str) -> list[tuple[str | None, str | None, TokenUsage]]:
        """(reported model, endpoint, usage) of the calls named by a judgment's call_ids, in its order."""
        ids = [int(i) for i in json.loads(call_ids_json or "[]")]
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        found = {r[0]: (r[1], r[2], TokenUsage.of_call(r[4:8], batch=(r[3] or "").startswith("batch:")))
                 for r in self._sql(
            f"SELECT id, model, endpoint, via, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens "
            f"FROM calls "  # noqa: S608
            f"WHERE id IN ({marks})", ids  # (placeholders only)
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
        replacing: str | None = None,
    ) -> CachedJudgment:
        """Store a verdict unless the cache holds one, and return the verdict the cache holds
        after it: the first verdict stored wins, so every caller reports the same one.

        ``replacing`` (``retry_invalid`` only): the version of the invalid verdict this one
        re-judges; it is replaced only if that very row is still stored (a compare-and-swap),
        never a verdict that another process stored meanwhile.
        """
        values = (cache_key, topic_key, dimension, prompt_version, signature, model, status, score, rationale,
                  attempts, system_fingerprint, json.dumps(list(call_ids)), now_iso())
        with self._write():
            inserted = self._sql(
                "INSERT OR IGNORE INTO judgments(cache_key, topic_key, dimension, prompt_version, signature, model, "
                "status, score, rationale, attempts, system_fingerprint, call_ids, judged_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values).rowcount
            if not inserted and replacing is not None:
                self._sql(
                    "UPDATE judgments SET topic_key = ?, dimension = ?, prompt_version = ?, signature = ?, model = ?, "
                    "status = ?, score = ?, rationale = ?, attempts = ?, system_fingerprint = ?, call_ids = ?, "
                    "judged_at = ? WHERE cache_key = ? AND status = 'invalid' AND judged_at = ? AND call_ids = ? "
                    "AND rationale = ?", (*values[1:], cache_key, *json.loads(replacing)))
        held = self.judgment(cache_key)
        assert held is not None  # stored above, and verdicts are never deleted
        return held

    # --- calls -----------------------------------------------------------------------------

    def put_request(self, request_hash_: str, prompt_version: int, body: Mapping[str, Any]) -> None:
        """Store a request body once (it holds no credentials)."""
        self._sql(
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
        usage: tuple[int, ...] | None = None,
    ) -> int:
        """Store one received response (already redacted); returns its row id. ``usage``: its
        (prompt, cached prompt, completion[, reasoning]) tokens as the server reported them
        (``reteco.llm.usage.call_usage``), None when it reported none."""
        tokens = (*usage, None, None, None, None)[:4] if usage is not None else (None, None, None, None)
        cur = self._sql(
            "INSERT INTO calls(request_hash, response_json, http_status, system_fingerprint, model, via, endpoint, "
            "prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, started_at, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (request_hash_, response_json, http_status, system_fingerprint, model, via, endpoint, *tokens, started_at,
             now_iso()),
        )
        return int(cur.lastrowid)

    def latest_call(self, request_hash_: str) -> tuple[int, str] | None:
        """(call id, raw response JSON) of the newest response to a request, if any."""
        row = self._sql(
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
        self._sql(
            "INSERT INTO failures(request_hash, attempt, kind, http_status, message, wait_s, endpoint, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (request_hash_, attempt, kind, http_status, message, wait_s, endpoint, now_iso()),
        )

    def failures(self, request_hash_: str) -> list[dict[str, Any]]:
        """The failed attempts recorded for a request, oldest first."""
        cur = self._sql(
            "SELECT attempt, kind, http_status, message, wait_s, at FROM failures WHERE request_hash = ? ORDER BY id",
            (request_hash_,),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    # --- batches ---------------------------------------------------------------------------

    def add_batch(self, batch_id: str, input_file_id: str, endpoint: str | None, status: str, hashes: Iterable[str]) -> None:
        """Record a submitted batch and the requests it carries."""
        self._sql(
            "INSERT OR REPLACE INTO batches(batch_id, input_file_id, endpoint, status, request_hashes, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (batch_id, input_file_id, endpoint, status, json.dumps(sorted(hashes)), now_iso()),
        )

    def update_batch(self, batch_id: str, status: str, *, collected: bool = False,
                     output_file_id: str | None = None, error_file_id: str | None = None) -> None:
        """Record a batch's status; ``collected`` once its results are in ``calls``."""
        self._sql(
            "UPDATE batches SET status = ?, collected_at = CASE WHEN ? THEN ? ELSE collected_at END, "
            "output_file_id = COALESCE(?, output_file_id), error_file_id = COALESCE(?, error_file_id) WHERE batch_id = ?",
            (status, collected, now_iso(), output_file_id, error_file_id, batch_id),
        )

    def queue_batch_request(self, request_hash_: str, prompt_version: int, body: Mapping[str, Any]) -> None:
        """Keep a first ask for the phase's Batch API job (``reteco.llm.batch.send_queued_batches``)."""
        self.put_request(request_hash_, prompt_version, body)
        self._sql("INSERT OR IGNORE INTO batch_queue(request_hash, queued_at) VALUES (?, ?)", (request_hash_, now_iso()))

    def queued_batch_requests(self) -> list[tuple[str, dict[str, Any]]]:
        """The queued first asks, (request hash, body), in the order they were queued."""
        rows = self._sql("SELECT q.request_hash, r.request_json FROM batch_queue q JOIN requests r "
                         "ON r.request_hash = q.request_hash ORDER BY q.queued_at, q.rowid").fetchall()
        return [(h, json.loads(body)) for h, body in rows]

    def clear_batch_queue(self) -> None:
        """Empty the queue: each judge-submissions run queues afresh what its submissions need, so
        nothing an earlier run (another config, another download) left is ever sent."""
        self._sql("DELETE FROM batch_queue")

    def dequeue_batch_requests(self, hashes: Iterable[str]) -> None:
        """Take requests off the queue (a batch carries them now)."""
        for h in hashes:
            self._sql("DELETE FROM batch_queue WHERE request_hash = ?", (h,))

    def open_batches(self) -> list[BatchRecord]:
        """Batches submitted but not yet collected (a crash or a timeout left them running)."""
        rows = self._sql(
            "SELECT batch_id, input_file_id, status, request_hashes, collected_at FROM batches "
            "WHERE collected_at IS NULL ORDER BY created_at"
        ).fetchall()
        return [BatchRecord(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4] is not None) for r in rows]


def _open_archive(path: Path, uri: str) -> sqlite3.Connection:
    """A connection to the judge archive ``path`` at ``uri``, checked to be a cache of this schema."""
    conn = None
    try:
        conn = sqlite3.connect(uri, uri=True)
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


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused for a lock another connection holds."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _version(judged_at: str, call_ids: str, rationale: str) -> str:
    """A stored verdict's version: the columns ``put_judgment``'s compare-and-swap checks (a
    re-judged verdict has new calls, a new time, and mostly a new rationale)."""
    return json.dumps([judged_at, call_ids, rationale])


def _verdict_json(verdict: Iterable[Any]) -> str:
    """(status, score, rationale) as the JSON of a ``conflicts`` row."""
    return canonical_json(dict(zip(("status", "score", "rationale"), verdict)))


@contextmanager
def _archive_connection(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a judge archive, checked to be a cache of this schema.

    An archive with a ``-journal`` (or ``-wal``) beside it was left by a process killed while
    writing: it is copied with that file into a temporary folder and opened there, where SQLite
    rolls the hot journal back (or replays the WAL), so what is read is the last committed
    state; the given files are left as they are. Any other archive is read in place, read-only.
    """
    if not path.is_file():
        raise JudgeCacheError(f"no judge archive {path}")
    leftovers = [Path(f"{path}{suffix}") for suffix in ("-journal", "-wal") if Path(f"{path}{suffix}").is_file()]
    with tempfile.TemporaryDirectory(prefix="reteco-archive-") as tmp:
        if leftovers:
            copy = Path(tmp) / path.name
            for source in (path, *leftovers):
                shutil.copyfile(source, Path(tmp) / source.name)
            uri = f"{copy.resolve().as_uri()}?mode=rw"
        else:
            uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = _open_archive(path, uri)
        try:
            yield conn
        finally:
            conn.close()
