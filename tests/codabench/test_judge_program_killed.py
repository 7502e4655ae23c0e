"""The scoring program killed (kill -9, as a platform time-out kills it) while it judges: the
archive in its output is still a valid judge archive holding the verdicts paid for before the
kill, ``reteco judge --import-archive`` takes it (hot journal and all), and a re-score through
the cache it was imported into pays nothing again for them."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fake_openai_server import FakeOpenAI
from support.judged_program import judge_yaml, judged_input
from support.paths import SAMPLES

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.judge import load_judge_config
from reteco.llm.cache import ARCHIVE_FILE, CACHE_FILE
from reteco.scoring.submission import score_submission

_PROGRAM = "import sys; from reteco.codabench.program.scoring_program import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture(name="slow_server")
def slow_server_fixture(slow_judge_server):
    return slow_judge_server(0.2)


def _start_program(tmp_path: Path, ref_root: Path, server: FakeOpenAI, **settings) -> subprocess.Popen:
    config = judge_yaml(tmp_path, server.base_url, **settings)
    input_dir = judged_input(tmp_path, ref_root, "2b", config)
    return subprocess.Popen([sys.executable, "-u", "-c", _PROGRAM, str(input_dir), str(tmp_path / "output")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _archived_verdicts(archive: Path) -> int:
    """Verdicts in an archive, read from a copy (hot journal included), so the file stays as left."""
    copy = archive.parent.parent / "archive-copy"
    copy.mkdir()
    for path in archive.parent.glob(ARCHIVE_FILE + "*"):
        shutil.copyfile(path, copy / path.name)
    conn = sqlite3.connect(copy / ARCHIVE_FILE)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    finally:
        conn.close()


def _rescore(tmp_path: Path, ref_root: Path, cache: Path):
    config = load_judge_config(tmp_path / "organizers" / "judge.yaml")
    return score_submission(Reference.read(ref_root / "2b"), SAMPLES / "2b", judge_config=config, cache_dir=cache,
                            progress=False)


@pytest.mark.slow
def test_killed_mid_judging_the_archive_keeps_what_was_paid_for(ref_root, tmp_path, slow_server, capsys):
    program = _start_program(tmp_path, ref_root, slow_server, concurrency=2)
    _wait_for(lambda: slow_server.chat_calls >= 12, "12 judgment requests")
    program.send_signal(signal.SIGKILL)
    program.communicate(timeout=60)
    paid = slow_server.chat_calls
    archive = tmp_path / "output" / ARCHIVE_FILE
    held = _archived_verdicts(archive)
    assert 0 < held <= paid

    cache = tmp_path / "organizers-cache"
    assert main(["judge", "--import-archive", str(tmp_path / "output"), "--judge-cache", str(cache)]) == 0
    assert f"{held} judgments imported" in capsys.readouterr().err
    conn = sqlite3.connect(cache / CACHE_FILE)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    result = _rescore(tmp_path, ref_root, cache)
    run = result.details["generation"]["judge"]["run"]
    assert run["unfinished"] == 0 and run["from_cache"] >= held
    # The re-score paid only for what the archive did not hold: its requests are the rest.
    assert slow_server.chat_calls - paid <= run["judgments"] - held


@pytest.mark.slow
def test_killed_after_judging_the_rescore_pays_nothing(ref_root, tmp_path, fake_openai, capsys):
    program = _start_program(tmp_path, ref_root, fake_openai)
    for line in program.stdout:  # the program says what the judge did as soon as it is done
        if line.startswith("judge: ") and " judgments: " in line:
            program.send_signal(signal.SIGKILL)
            break
    program.communicate(timeout=60)
    assert program.returncode == -signal.SIGKILL
    cache = tmp_path / "organizers-cache"
    assert main(["judge", "--import-archive", str(tmp_path / "output" / ARCHIVE_FILE), "--judge-cache", str(cache)]) == 0
    capsys.readouterr()
    paid = fake_openai.all_chat_calls
    result = _rescore(tmp_path, ref_root, cache)
    assert fake_openai.all_chat_calls == paid  # not one request, not even the preflight
    assert result.details["generation"]["judge"]["run"]["judged_now"] == 0
