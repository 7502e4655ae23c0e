"""``reteco judge-submissions`` with ``use_batch_api``: one Batch API job for the whole phase
(issue 20 item 4): every team's requests in one batch file, its id recorded before waiting, so a
command killed while the batch runs resumes by polling the same batch and never uploads or pays
twice; the per-team tables as without batches."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.fake_openai_server import http_error
from support.judged_program import judge_yaml
from support.paths import REPO_ROOT, SAMPLES

from reteco.commands import main
from reteco.llm.cache import CACHE_FILE, JudgeCache
from reteco.subtracks import JUDGE
from reteco.workbench.leaderboard import bulk_download as bd


def _zipped(lines: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("answers.jsonl", "".join(lines))
    return buffer.getvalue()


def _bulk_of_two_teams(tmp_path: Path) -> Path:
    """alice: the 2b sample; bob: the same turns answered in other words (other requests)."""
    lines = (SAMPLES / "2b" / "answers.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    bob = []
    for line in lines:
        record = json.loads(line)
        record["answer"] = f"In short: {record['answer']}"
        bob.append(json.dumps(record) + "\n")
    path = tmp_path / bd.BULK_ZIP
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("15_alice_PhaseId4_2027-01-21_02-00_final.zip", _zipped(lines))
        z.writestr("12_bob_PhaseId4_2027-01-20_03-00_bob.zip", _zipped(bob))
    return path


def _uploads(server) -> int:
    return sum(1 for r in server.requests if r.method == "POST" and r.path == "/v1/files")


def _batch_creations(server) -> int:
    return sum(1 for r in server.requests if r.method == "POST" and r.path == "/v1/batches")


@pytest.mark.slow
def test_the_phase_is_one_batch_and_a_killed_command_resumes_it_without_paying_twice(ref_root, tmp_path, server):
    config = judge_yaml(tmp_path, server.base_url, use_batch_api=True, batch_poll_interval_s=0.05)
    cache, out = tmp_path / "cache", tmp_path / "out"
    argv = ["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_two_teams(tmp_path)),
            "--out", str(out), "--judge-config", str(config), "--judge-cache", str(cache), "--no-progress"]
    server.batch_polls_until_done = 10**9  # the batch runs until the command is killed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    command = subprocess.Popen([sys.executable, "-m", "reteco", *argv], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        # Killed once it polls the batch: the upload and the creation are done, the batch is running.
        give_up = time.monotonic() + 300
        while not any(r.method == "GET" and r.path.startswith("/v1/batches/") for r in list(server.requests)):
            assert command.poll() is None, command.stderr.read().decode()
            assert time.monotonic() < give_up, "the command never polled a batch"
            time.sleep(0.05)
    finally:
        command.kill()
        command.wait()
        command.stderr.close()
    assert _uploads(server) == 1 and _batch_creations(server) == 1 and not out.exists()
    (batch,) = server.batches.values()
    with JudgeCache(cache) as held:
        (recorded,) = held.open_batches()
    assert recorded.batch_id == batch["id"]
    # Both teams' requests are in that one batch: alice's and bob's answers differ, so do their requests.
    lines = [json.loads(line) for line in server.files[batch["input_file_id"]]["content"].decode().splitlines()]
    answers = {m["content"] for line in lines for m in line["body"]["messages"] if m["role"] == "user"}
    assert any("In short: " in a for a in answers) and any("In short: " not in a for a in answers)
    assert len(lines) == len(recorded.request_hashes) == len({line["custom_id"] for line in lines})

    server.batch_polls_until_done = 0  # the batch finishes on the next poll
    assert main(argv) == 0
    assert _uploads(server) == 1 and _batch_creations(server) == 1  # resumed: the same batch, polled
    assert server.chat_calls == 0  # every verdict came from the batch: nothing asked live at full price
    table = list(csv.DictReader(io.StringIO((out / "judged_submissions_2b.csv").read_text(encoding="utf-8"))))
    assert sorted(r["team"] for r in table) == ["alice", "bob"]
    assert all(r[k] for r in table for k in JUDGE)  # the judge columns filled for both teams
    assert sum(int(r["calls"]) for r in table) == len(lines)  # each verdict's call is one line of the batch
    with JudgeCache(cache) as held:
        assert held.open_batches() == [] and held.queued_batch_requests() == []


def test_a_batch_still_running_at_the_timeout_writes_nothing_and_says_to_run_again(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url, use_batch_api=True, batch_poll_interval_s=0.05, batch_timeout_s=0.3)
    server.batch_polls_until_done = 10**9
    out = tmp_path / "out"
    argv = ["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_two_teams(tmp_path)),
            "--out", str(out), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress"]
    with JudgeCache(tmp_path / "cache") as held:  # left queued by an earlier run (another config): never sent
        held.queue_batch_request("stale-request", 2, {"model": "another-judge", "messages": []})
    assert main(argv) == 4
    (batch,) = server.batches.values()
    assert b"stale-request" not in server.files[batch["input_file_id"]]["content"]
    err = capsys.readouterr().err
    assert "run the same command again to collect the batches" in err and "still in_progress" in err
    assert not out.exists() and server.chat_calls == 0
    assert main(argv) == 4  # again: the same batch polled, none sent
    assert _batch_creations(server) == 1 and (tmp_path / "cache" / CACHE_FILE).is_file()


def test_a_batch_that_cannot_be_created_is_not_asked_live_at_full_price(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url, use_batch_api=True, batch_poll_interval_s=0.05)
    server.batch_create_reply = http_error(500, "batches are down")
    out = tmp_path / "out"
    argv = ["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_two_teams(tmp_path)),
            "--out", str(out), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"), "--no-progress"]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "a batch could not be sent" in err and "run the same command again" in err
    assert server.chat_calls == 0 and not out.exists() and server.batches == {}
    server.batch_create_reply = None  # the next run sends the same requests as one batch
    server.batch_polls_until_done = 0
    assert main(argv) == 0 and len(server.batches) == 1 and server.chat_calls == 0
