"""``passages.sqlite`` of a 2b/2c reference folder: passage text by (domain, doc_id).

One ``WITHOUT ROWID`` table ``passages(domain, doc_id, text)``, written by ``reteco prepare``
(``create_passages`` for the whole corpus once, then ``subset_passages`` per sub-track: only the
passages the judge can be shown) and read by generation scoring (``PassageStore``, read-only).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reteco.formats.reference import PASSAGES
from reteco.problems import InputError

BATCH_ROWS = 10_000  # sqlite rows per executemany: large enough to be fast, small enough to stay flat


def create_passages(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path))
    # Passages run to a few KB: on the default 4 KB pages a WITHOUT ROWID table spills them to
    # overflow pages (measured: file 2x the text, 5x slower); 16 KB pages keep them inline.
    conn.execute("PRAGMA page_size=16384")
    # A file built from scratch and moved into place only when complete needs no journal.
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(
        "CREATE TABLE passages(domain TEXT, doc_id TEXT, text TEXT, PRIMARY KEY(domain, doc_id)) WITHOUT ROWID"
    )
    return conn


def subset_passages(full_db: Path | None, path: Path, wanted: list[tuple[str, str]]) -> int:
    """Copy the wanted (domain, doc_id) rows of the full table into a new passages.sqlite."""
    conn = create_passages(path)
    try:
        if full_db is None or not full_db.exists():
            conn.commit()
            return 0
        conn.execute("ATTACH DATABASE ? AS corpus", (str(full_db),))
        conn.execute("CREATE TEMP TABLE wanted(domain TEXT, doc_id TEXT, PRIMARY KEY(domain, doc_id)) WITHOUT ROWID")
        conn.executemany("INSERT OR IGNORE INTO temp.wanted VALUES (?, ?)", wanted)
        conn.execute(
            "INSERT INTO main.passages SELECT p.domain, p.doc_id, p.text FROM temp.wanted w "
            "JOIN corpus.passages p ON p.domain = w.domain AND p.doc_id = w.doc_id ORDER BY p.domain, p.doc_id"
        )
        conn.commit()
        conn.execute("DETACH DATABASE corpus")
        return conn.execute("SELECT COUNT(*) FROM main.passages").fetchone()[0]
    finally:
        conn.close()


def count_rows(path: Path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    finally:
        conn.close()


class PassageStore:
    """Passage text by (domain, doc_id) from a reference's passages.sqlite, opened read-only."""

    def __init__(self, path: Path):
        if not Path(path).is_file():
            raise InputError(f"no {PASSAGES}: the reference is incomplete", str(Path(path).parent))
        self._conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)

    def text(self, domain: str, doc_id: str) -> str | None:
        row = self._conn.execute("SELECT text FROM passages WHERE domain = ? AND doc_id = ?", (domain, doc_id)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        self._conn.close()


class PassageTexts:
    """(doc_id, text) pairs of a turn's documents from a ``PassageStore``; ``missing`` counts the
    ids that have no text there (they are left out: the judge is never shown an empty passage)."""

    def __init__(self, store: PassageStore):
        self.store = store
        self.missing = 0

    def of(self, domain: str, doc_ids: list[str]) -> tuple[tuple[str, str], ...]:
        pairs = []
        for doc_id in doc_ids:
            text = self.store.text(domain, doc_id)
            if text is None:
                self.missing += 1
                continue
            pairs.append((doc_id, text))
        return tuple(pairs)
