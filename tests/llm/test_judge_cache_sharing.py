"""Several processes on one judge cache (``reteco.llm.cache`` claims): each judgment is paid
for once across all of them, every output is the verdict the cache holds, an archive imported
meanwhile replaces nothing (its disagreements are recorded and reported), and opening one cache
from many processes at once never fails.

The fake judge answers at random, so a judgment asked twice or a verdict overwritten would
show; the server counts what it received per request body."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import zipfile

import pytest
from support.shared_cache import cache_verdicts, finish, judge_config, outcome_lines, requests_per_body, start_reteco, write_items
from support.tiny_track2 import write_tiny_reference

from reteco.llm.cache import ARCHIVE_FILE, CACHE_FILE, JudgeCache

ITEMS = 24


def _judge_runs(tmp_path, server, count: int, cache, items) -> list[tuple[int, str, str]]:
    config = judge_config(tmp_path, server.base_url, concurrency=4)
    runs = [start_reteco(tmp_path, "judge", "--items", str(items), "--out", str(tmp_path / f"out{n}.jsonl"),
                         "--judge-config", str(config), "--judge-cache", str(cache), "--no-progress")
            for n in range(count)]
    return finish(runs)


@pytest.mark.parametrize("count", [2, 4])
@pytest.mark.slow
def test_judge_runs_on_one_cache_pay_each_judgment_once_and_agree_with_it(tmp_path, slow_random_server, count):
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    for code, _, err in _judge_runs(tmp_path, slow_random_server, count, tmp_path / "cache", items):
        assert code == 0, err
    asked = requests_per_body(slow_random_server)
    assert len(asked) == ITEMS and set(asked.values()) == {1}, asked.most_common(3)
    held = cache_verdicts(tmp_path / "cache")
    assert len(held) == ITEMS
    for n in range(count):
        assert outcome_lines(tmp_path / f"out{n}.jsonl") == held  # every output is the cache's verdict


@pytest.mark.slow
def test_an_import_during_runs_replaces_nothing_and_reports_its_conflicts(tmp_path, slow_random_server):
    items = write_items(tmp_path / "items.jsonl", ITEMS)
    (tmp_path / "platform").mkdir()
    assert [c for c, _, _ in _judge_runs(tmp_path / "platform", slow_random_server, 1, tmp_path / "platform-cache", items)] == [0]
    with JudgeCache(tmp_path / "platform-cache") as platform:
        platform.export_archive(tmp_path / ARCHIVE_FILE)
    archived = cache_verdicts(tmp_path / "platform-cache")
    before = requests_per_body(slow_random_server)
    config = judge_config(tmp_path, slow_random_server.base_url, concurrency=2)
    runs = [start_reteco(tmp_path, "judge", "--items", str(items), "--out", str(tmp_path / f"out{n}.jsonl"),
                         "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress")
            for n in range(2)]
    deadline = time.monotonic() + 120
    while sum((requests_per_body(slow_random_server) - before).values()) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)  # the runs have verdicts of their own when the import comes
    importing = start_reteco(tmp_path, "judge", "--import-archive", str(tmp_path / ARCHIVE_FILE),
                             "--judge-cache", str(tmp_path / "cache"))
    (code, _, err), *ends = finish([importing, *runs])
    assert code == 0, err
    assert [c for c, _, _ in ends] == [0, 0], [e for _, _, e in ends]
    asked = requests_per_body(slow_random_server) - before
    assert set(asked.values()) <= {1}, asked.most_common(3)  # none paid twice by the runs
    held = cache_verdicts(tmp_path / "cache")
    assert outcome_lines(tmp_path / "out0.jsonl") == held == outcome_lines(tmp_path / "out1.jsonl")
    differing = {k for k in held if held[k] != archived[k]}
    assert differing, "the runs judged nothing before the import: the test proves nothing"
    assert f"{len(differing)} in conflict" in err
    assert "SELECT * FROM conflicts" in err
    conn = sqlite3.connect(tmp_path / "cache" / CACHE_FILE)
    recorded = {r[0]: (json.loads(r[1]), json.loads(r[2])) for r in conn.execute(
        "SELECT cache_key, held_json, archived_json FROM conflicts")}
    conn.close()
    assert set(recorded) == differing
    for key, (kept, brought) in recorded.items():
        assert (kept["status"], kept["score"], kept["rationale"]) == held[key]
        assert (brought["status"], brought["score"], brought["rationale"]) == archived[key]


def _identical_submissions(tmp_path):
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    lines = "".join(json.dumps({"turn_id": t, "answer": f"{t} has an answer"}) + "\n"
                    for t in ("biology/2_turn_1", "biology/2_turn_2", "earth_science/2_turn_1"))
    return ref, lines


@pytest.mark.slow
def test_leaderboard_jobs_4_with_identical_submissions_pays_each_judgment_once(tmp_path, slow_random_server):
    ref, lines = _identical_submissions(tmp_path)
    folder = tmp_path / "subs"
    folder.mkdir()
    for team in ("teamA", "teamB", "teamC", "teamD"):
        (folder / f"{team}.jsonl").write_text(lines, encoding="utf-8")
    config = judge_config(tmp_path, slow_random_server.base_url)
    [(code, _, err)] = finish([start_reteco(
        tmp_path, "leaderboard", "--ref", str(ref.root), "--submissions", str(folder), "--out", str(tmp_path / "out"),
        "--jobs", "4", "--resamples", "10", "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"))])
    assert code == 0, err
    asked = requests_per_body(slow_random_server)
    assert len(asked) == 15 and set(asked.values()) == {1}  # 3 turns x 5 dimensions, once
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    rows = board["systems"] + board["unranked"]
    judged = {json.dumps({k: v for k, v in row.items() if k.startswith("judge")}, sort_keys=True) for row in rows}
    assert len(rows) == 4 and len(judged) == 1 and "judge_mean" in rows[0]  # the identical teams' verdicts agree


@pytest.mark.slow
def test_two_judge_submissions_at_once_pay_each_judgment_once(tmp_path, slow_random_server):
    ref, lines = _identical_submissions(tmp_path)
    config = judge_config(tmp_path, slow_random_server.base_url)
    runs = []
    for n in range(2):
        bulk = tmp_path / f"bulk{n}.zip"
        with zipfile.ZipFile(bulk, "w") as z:
            for i, team in enumerate(("alice", "bob")):
                z.writestr(f"{10 + i}_{team}_PhaseId4_2027-01-20_01-0{i}_a.jsonl", lines)
        runs.append(start_reteco(tmp_path, "judge-submissions", "--ref", str(ref.root), "--submissions", str(bulk),
                                 "--out", str(tmp_path / f"out{n}"), "--judge-config", str(config),
                                 "--judge-cache", str(tmp_path / "cache")))
    for code, _, err in finish(runs):
        assert code == 0, err
    asked = requests_per_body(slow_random_server)
    assert len(asked) == 15 and set(asked.values()) == {1}
    tables = [(tmp_path / f"out{n}" / "judged_submissions_2b.csv").read_text() for n in range(2)]
    assert tables[0] == tables[1]  # both commands report the verdicts the cache holds


_OPEN_AND_WRITE = """
import sys, time
from pathlib import Path
from reteco.llm.cache import JudgeCache
start = float(sys.argv[2])
while time.time() < start:
    pass
with JudgeCache(Path(sys.argv[1])) as cache:
    cache.put_request(sys.argv[3], 1, {"who": sys.argv[3]})
"""


@pytest.mark.slow
def test_many_processes_opening_a_new_cache_at_once_all_succeed(tmp_path):
    """The root of a flaky 'database is locked' at open: two processes setting up a new file
    race for its first write, and SQLite answers the loser at once, without its busy handler.
    Eight processes released at the same instant on a new cache, several rounds: all succeed."""
    for round_ in range(4):
        folder = tmp_path / f"cache{round_}"
        start = time.time() + 2.0  # every process imported and waiting when the moment comes
        openers = [subprocess.Popen([sys.executable, "-c", _OPEN_AND_WRITE, str(folder), str(start), f"p{n}"],
                                    stderr=subprocess.PIPE, text=True) for n in range(8)]
        failures = [p.communicate(timeout=120)[1] for p in openers if p.wait(timeout=120) != 0]
        assert failures == []
        conn = sqlite3.connect(folder / CACHE_FILE)
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 8
        conn.close()
