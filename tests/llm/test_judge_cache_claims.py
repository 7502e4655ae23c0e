"""The judge cache's rules for one judgment asked by several processes (``reteco.llm.cache``):
the first verdict stored wins and is what every caller gets back; an invalid verdict is
re-judged only by a compare-and-swap on the row read; an archive left with a hot journal by a
killed writer is imported as of its last commit."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from support import shared_cache as shared
from support.fake_openai_server import completion

from reteco.llm.cache import ARCHIVE_FILE, CLAIMED, HELD, JUDGED, JudgeCache


def _put(cache: JudgeCache, key: str, status: str, score, rationale: str, replacing=None):
    return cache.put_judgment(cache_key=key, topic_key="law/1_turn_1", dimension="relevance", prompt_version=1,
                              signature="s", model="m", status=status, score=score, rationale=rationale, attempts=1,
                              system_fingerprint=None, call_ids=[], replacing=replacing)


def test_the_first_verdict_stored_wins_and_is_returned_to_the_second(tmp_path):
    with JudgeCache(tmp_path / "c") as one, JudgeCache(tmp_path / "c") as two:
        first = _put(one, "k", "ok", 4, "first")
        second = _put(two, "k", "ok", 2, "second")
    assert (first.score, first.rationale) == (second.score, second.rationale) == (4, "first")


def test_an_invalid_verdict_is_replaced_only_through_the_row_read(tmp_path):
    with JudgeCache(tmp_path / "c") as one, JudgeCache(tmp_path / "c") as two:
        invalid = _put(one, "k", "invalid", None, "no usable reply")
        assert one.claim("k", replacing=invalid.version) == (CLAIMED, None)
        assert two.claim("k", replacing=invalid.version) == (HELD, one.owner)  # the other retry waits
        retried = _put(one, "k", "ok", 5, "retried", replacing=invalid.version)
        one.release("k")
        late = _put(two, "k", "ok", 1, "late retry", replacing=invalid.version)  # its row is gone: no swap
        assert two.claim("k", replacing=invalid.version) == (JUDGED, None)
    assert (retried.score, late.score, late.rationale) == (5, 5, "retried")


def test_a_dead_owners_claim_expires_and_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setenv("RETECO_JUDGE_CLAIM_LEASE_S", "0.05")
    with JudgeCache(tmp_path / "c") as one, JudgeCache(tmp_path / "c") as two:
        assert one.claim("k") == (CLAIMED, None)
        assert two.claim("k") == (HELD, one.owner)
        time.sleep(0.1)  # one stopped renewing, as a killed process does
        assert two.claim("k") == (CLAIMED, None)


@pytest.mark.slow
def test_two_retry_invalid_runs_pay_once_for_each_invalid_verdict(tmp_path, slow_random_server):
    items = shared.write_items(tmp_path / "items.jsonl", 8)
    slow_random_server.judge = lambda body: completion("no json")  # every verdict invalid
    config = shared.judge_config(tmp_path, slow_random_server.base_url, max_reasks=0)
    first = shared.start_reteco(tmp_path, "judge", "--items", str(items), "--out", str(tmp_path / "first.jsonl"),
                                "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress")
    [(code, _, err)] = shared.finish([first])
    assert code == 0, err
    assert {v[0] for v in shared.cache_verdicts(tmp_path / "cache").values()} == {"invalid"}
    slow_random_server.judge = shared.random_judge
    before = shared.requests_per_body(slow_random_server)
    runs = [shared.start_reteco(tmp_path, "judge", "--items", str(items), "--out", str(tmp_path / f"out{n}.jsonl"),
                                "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"),
                                "--no-progress", "--retry-invalid") for n in range(2)]
    for code, _, err in shared.finish(runs):
        assert code == 0, err
    asked = shared.requests_per_body(slow_random_server) - before
    assert len(asked) == 8 and set(asked.values()) == {1}
    held = shared.cache_verdicts(tmp_path / "cache")
    assert {v[0] for v in held.values()} == {"ok"}
    assert shared.outcome_lines(tmp_path / "out0.jsonl") == held == shared.outcome_lines(tmp_path / "out1.jsonl")


_KILLED_MID_TRANSACTION = """
import os, signal, sys
from pathlib import Path
from reteco.llm.cache import JudgeCache
cache = JudgeCache(Path(sys.argv[1]))
for n in range(3):
    cache.put_judgment(cache_key=f"committed{n}", topic_key="t", dimension="relevance", prompt_version=1, signature="s",
                       model="m", status="ok", score=3, rationale="x", attempts=1, system_fingerprint=None, call_ids=[])
conn = cache._conn
conn.execute("PRAGMA cache_size=1")  # the transaction's pages spill into the file before its commit
conn.execute("BEGIN IMMEDIATE")
for n in range(2000):
    conn.execute("INSERT INTO requests VALUES (?, 1, ?, 'now')", (f"h{n}", "y" * 500))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_archive_killed_mid_transaction_imports_as_of_its_last_commit(tmp_path):
    archive = tmp_path / "output" / ARCHIVE_FILE
    done = subprocess.run([sys.executable, "-c", _KILLED_MID_TRANSACTION, str(archive)], env=dict(os.environ))
    assert done.returncode == -signal.SIGKILL
    assert (tmp_path / "output" / f"{ARCHIVE_FILE}-journal").is_file()  # a hot journal was left
    with JudgeCache(tmp_path / "organizers") as cache:
        merged = cache.import_archive(archive)
    assert merged.judgments_imported == 3 and merged.requests_imported == 0
    assert (tmp_path / "output" / f"{ARCHIVE_FILE}-journal").is_file()  # the given files are left as they were
    conn = sqlite3.connect(archive)  # and open as a valid archive: SQLite rolls the journal back
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 0
    conn.close()
