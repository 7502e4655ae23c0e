"""A judge run stopped at its preflight claims nothing in the cache, and a later run judges
everything once (``reteco.judge.runner``: the preflight goes before the first claim).

The cache is the scoring program's one-file archive (rollback journal, ``synchronous=FULL``:
every write transaction is fsync'd). Its writes are counted two ways that do not go through
reteco: a trigger added to the file logs every row inserted into ``claims``, and SQLite's own
file change counter (the database header's bytes 24-27, incremented by every transaction that
changes the file in rollback-journal mode) counts the write transactions.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from support.fake_openai_server import http_error

from reteco.judge import DIMENSIONS, JudgeItem, run_judge
from reteco.llm.cache import ARCHIVE_FILE, JudgeCache

TURNS = 10


def items() -> list[JudgeItem]:
    return [
        JudgeItem(key=f"biology/{i}_turn_1", dimension=d, query=f"question {i}", history="", answer=f"answer {i}",
                  evidence=((f"biology_doc_{i}", f"passage {i}"),), reference_answer=f"reference {i}")
        for i in range(TURNS)
        for d in DIMENSIONS
    ]


def archive_with_claim_log(path: Path) -> Path:
    """A new archive (reteco's schema) whose ``claims`` table logs every row inserted into it."""
    JudgeCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE claim_log(cache_key TEXT NOT NULL);"
            "CREATE TRIGGER log_claims AFTER INSERT ON claims BEGIN INSERT INTO claim_log VALUES (NEW.cache_key); END;"
        )
    conn.close()
    return path


def change_counter(path: Path) -> int:
    """SQLite's file change counter (header offset 24, 4 bytes big-endian)."""
    with open(path, "rb") as handle:
        handle.seek(24)
        return int.from_bytes(handle.read(4), "big")


def rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_run_stopped_at_its_preflight_claims_nothing_and_the_next_run_judges_everything_once(
    fake_openai, judge_config, tmp_path
):
    archive = archive_with_claim_log(tmp_path / ARCHIVE_FILE)
    asked = items()
    assert len(asked) == 50
    before = change_counter(archive)

    fake_openai.preflight = lambda body: http_error(401, "Incorrect API key provided")
    stopped = run_judge(asked, judge_config, cache_dir=archive, progress=False)
    assert stopped.stats.calls.preflight == "failed"
    assert {o.status for o in stopped} == {"error"}
    assert {o.rationale for o in stopped} == {
        'not sent: the endpoint answered HTTP 401: {"error": {"message": "Incorrect API key provided", "type": '
        '"fake_error", "code": null}}; no retry can help'}
    assert (len(fake_openai.preflight_requests), fake_openai.chat_calls) == (1, 0)  # a 401 is not retried
    assert rows(archive, "SELECT COUNT(*) FROM claim_log") == [(0,)]
    # Two write transactions: the preflight's request body and its failed attempt; no claim, no
    # release, no judgment's request body.
    assert change_counter(archive) - before == 2
    assert rows(archive, "SELECT COUNT(*) FROM requests") == [(1,)]
    assert rows(archive, "SELECT COUNT(*) FROM failures") == [(1,)]

    fake_openai.preflight = fake_openai.default_preflight
    judged = run_judge(asked, judge_config, cache_dir=archive, progress=False)
    assert judged.stats.calls.preflight == "passed"
    assert {o.status for o in judged} == {"ok"} and not any(o.cached for o in judged)
    assert (len(fake_openai.preflight_requests), fake_openai.chat_calls) == (2, 50)  # each judgment asked once
    assert len({json.dumps(r.body, sort_keys=True) for r in fake_openai.chat_requests}) == 50  # none twice
    assert rows(archive, "SELECT COUNT(*), COUNT(DISTINCT cache_key) FROM claim_log") == [(50, 50)]
    assert rows(archive, "SELECT COUNT(*) FROM judgments") == [(50,)]
    assert rows(archive, "SELECT COUNT(*) FROM claims") == [(0,)]  # every claim released
