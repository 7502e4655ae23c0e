"""A judge cache that cannot be used stops ``leaderboard`` and ``judge-submissions`` with exit 1
and a message naming the cache (and what holds it, or the option), never "internal error" and
never against a team: a write lock held past the wait limit (another process's transaction, an
archive import), a judgment claimed by another process past the claim wait, a cache that cannot
be read."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile

import pytest
from support.shared_cache import finish, judge_config, start_reteco
from support.tiny_track2 import write_tiny_reference

from reteco.llm.cache import CACHE_FILE, CLAIM_WAIT_ENV, WAIT_ENV, JudgeCache

ANSWERS = "".join(json.dumps({"turn_id": t, "answer": f"{t} has an answer"}) + "\n"
                  for t in ("biology/2_turn_1", "earth_science/2_turn_1"))


def _command(tmp_path, which: str, cache) -> list[str]:
    """The command line of ``leaderboard`` (two worker processes) or ``judge-submissions``."""
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    config = judge_config(tmp_path, "http://127.0.0.1:9/v1")  # never reached: the cache stops the run first
    if which == "leaderboard":
        folder = tmp_path / "subs"
        folder.mkdir(exist_ok=True)
        for team in ("teamA", "teamB"):
            (folder / f"{team}.jsonl").write_text(ANSWERS, encoding="utf-8")
        return ["leaderboard", "--ref", str(ref.root), "--submissions", str(folder), "--out", str(tmp_path / "out"),
                "--jobs", "2", "--resamples", "10", "--judge-config", str(config), "--judge-cache", str(cache)]
    bulk = tmp_path / "bulk.zip"
    with zipfile.ZipFile(bulk, "w") as z:
        z.writestr("10_alice_PhaseId4_2027-01-20_01-00_a.jsonl", ANSWERS)
        z.writestr("11_bob_PhaseId4_2027-01-20_01-01_b.jsonl", ANSWERS)
    return ["judge-submissions", "--ref", str(ref.root), "--submissions", str(bulk), "--out", str(tmp_path / "out"),
            "--judge-config", str(config), "--judge-cache", str(cache)]


def _assert_cache_refusal(code: int, err: str, *expected: str) -> None:
    assert code == 1, err
    assert "internal error" not in err and "please report" not in err and "Traceback" not in err, err
    for text in expected:
        assert text in err, err


_HOLD_WRITE_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.parametrize("which", ["leaderboard", "judge-submissions"])
@pytest.mark.slow
def test_a_write_lock_held_past_the_wait_limit_is_exit_1_naming_the_cache_and_holder(tmp_path, which):
    JudgeCache(tmp_path / "cache").close()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_WRITE_LOCK, str(tmp_path / "cache" / CACHE_FILE), "120"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        [(code, _, err)] = finish([start_reteco(tmp_path, *_command(tmp_path, which, tmp_path / "cache"),
                                                **{WAIT_ENV: "1"})])
    finally:
        holder.kill()
        holder.wait()
    _assert_cache_refusal(code, err, "--judge-cache", str(tmp_path / "cache" / CACHE_FILE),
                          "another process's write transaction", "more than 1 s")


@pytest.mark.parametrize("which", ["leaderboard", "judge-submissions"])
@pytest.mark.slow
def test_a_judgment_claimed_past_the_claim_wait_is_exit_1_naming_its_owner(tmp_path, slow_random_server, which):
    """Every judgment of the run is claimed by a live process elsewhere (its lease far ahead)."""
    command = _command(tmp_path, which, tmp_path / "cache")
    command[command.index("--judge-config") + 1] = str(judge_config(tmp_path, slow_random_server.base_url))
    [(code, _, err)] = finish([start_reteco(tmp_path, *command[:-1], str(tmp_path / "first"))])
    assert code == 0, err  # a first run learns the keys
    with JudgeCache(tmp_path / "first") as first:
        keys = [r[0] for r in first._conn.execute("SELECT cache_key FROM judgments")]
    with JudgeCache(tmp_path / "cache") as cache:
        for key in keys:
            cache._conn.execute("INSERT INTO claims VALUES (?, 'elsewhere/pid 4242/cafe', 'now', ?)",
                                (key, time.time() + 3600))
    calls = slow_random_server.chat_calls
    [(code, _, err)] = finish([start_reteco(tmp_path, *command, **{CLAIM_WAIT_ENV: "1"})])
    _assert_cache_refusal(code, err, "--judge-cache", str(tmp_path / "cache" / CACHE_FILE),
                          "claimed by elsewhere/pid 4242/cafe")
    assert slow_random_server.chat_calls == calls  # nothing claimed elsewhere was paid for


@pytest.mark.parametrize("which", ["leaderboard", "judge-submissions"])
@pytest.mark.parametrize("damage", ["a file", "not sqlite"])
@pytest.mark.slow
def test_an_unreadable_judge_cache_is_exit_1_naming_the_option(tmp_path, which, damage):
    cache = tmp_path / "cache"
    if damage == "a file":
        cache.write_text("not a folder")
    else:
        cache.mkdir()
        (cache / CACHE_FILE).write_bytes(b"this is not an SQLite database" * 100)
    [(code, _, err)] = finish([start_reteco(tmp_path, *_command(tmp_path, which, cache))])
    _assert_cache_refusal(code, err, "--judge-cache", str(cache))
