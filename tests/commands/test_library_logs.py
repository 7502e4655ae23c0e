"""The library's log records on the command line: said once, in the command's words.

The judge and the call engine log what they meet (``reteco.judge``, ``reteco.llm``), and the
commands print what matters of it themselves. Without a handler, Python's last-resort handler
printed every warning record on stderr as raw text, so `reteco score` said the judge's model
warning twice, once without its ``judge: warning:`` prefix. Only a process of its own shows
this: pytest puts handlers on the root logger of its own process, where the last-resort
handler never speaks. So these tests run ``python -m reteco`` against the fake server.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY
from support.tiny_track2 import write_tiny_reference

from reteco.commands import main
from reteco.judge import JudgeItem, item_to_json

MISMATCH = "reported another model than the configured my-judge"


def _config(tmp_path: Path, base_url: str) -> Path:
    """A judge config naming the model my-judge; the fake server answers as fake-judge."""
    path = tmp_path / "judge.yaml"
    path.write_text(f"prompt_version: 1\nmodel: my-judge\nbase_url: {base_url}\napi_key_env: RETECO_TEST_KEY\n"
                    "max_retries: 0\n", encoding="utf-8")
    return path


def _reteco(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("RETECO_DEBUG", "OPENAI_BASE_URL")}
    environment.update(RETECO_TEST_KEY=TEST_KEY, RETECO_CACHE_DIR=str(tmp_path / "cache"), **env)
    return subprocess.run([sys.executable, "-m", "reteco", *args], capture_output=True, text=True, env=environment,
                          timeout=300)


def _score_2b(fake_openai, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"turn_id": "biology/2_turn_1", "answer": "cells need water"}) + "\n")
    return _reteco(tmp_path, "score", "--ref", str(ref.root), "--res", str(answers),
                   "--judge-config", str(_config(tmp_path, fake_openai.base_url)), **env)


@pytest.mark.slow
def test_score_says_the_judge_model_warning_once_with_its_prefix(fake_openai, tmp_path):
    done = _score_2b(fake_openai, tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if MISMATCH in line]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("judge: warning: the judge's server reported another model"), said
    assert "fake-judge (5)" in said[0]


@pytest.mark.slow
def test_judge_says_the_model_warning_once(fake_openai, tmp_path):
    items = tmp_path / "items.jsonl"
    item = JudgeItem("law/1_turn_1", "relevance", "question", "", "answer", (("d1", "text"),), "reference")
    items.write_text(json.dumps(item_to_json(item)) + "\n", encoding="utf-8")
    done = _reteco(tmp_path, "judge", "--items", str(items), "--out", str(tmp_path / "out.jsonl"),
                   "--judge-config", str(_config(tmp_path, fake_openai.base_url)), "--no-progress")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if MISMATCH in line]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("WARNING: the judge's server reported another model"), said


@pytest.mark.slow
def test_with_reteco_debug_the_records_are_shown_named_and_marked(fake_openai, tmp_path):
    done = _score_2b(fake_openai, tmp_path, RETECO_DEBUG="1")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if MISMATCH in line]
    # The command's own warning, and the record marked as the log's: never a bare copy.
    assert len(said) == 2, done.stderr
    assert said[0].startswith("reteco score: log: reteco.judge: WARNING: the judge's server reported"), said
    assert said[1].startswith("judge: warning: "), said


def test_main_leaves_the_logging_setup_as_it_found_it(capsys):
    root, package = logging.getLogger(), logging.getLogger("reteco")
    before = (list(root.handlers), root.level, list(package.handlers), package.level, package.propagate)
    assert main(["score", "--ref", "no-such-folder", "--res", "no-such-run"]) == 1
    assert (list(root.handlers), root.level, list(package.handlers), package.level, package.propagate) == before
    capsys.readouterr()


@pytest.mark.slow
def test_leaderboards_worker_processes_print_no_bare_record_either(fake_openai, tmp_path):
    # --jobs 2 scores in spawned processes, which start without the command's logging setup.
    write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    folder = tmp_path / "subs"
    folder.mkdir()
    for team in ("teamA", "teamB"):
        (folder / f"{team}.jsonl").write_text(json.dumps({"turn_id": "biology/2_turn_1", "answer": f"{team} says water"})
                                              + "\n", encoding="utf-8")
    done = _reteco(tmp_path, "leaderboard", "--ref", str(tmp_path / "ref" / "2b"), "--submissions", str(folder),
                   "--out", str(tmp_path / "out"), "--jobs", "2", "--resamples", "10",
                   "--judge-config", str(_config(tmp_path, fake_openai.base_url)))
    assert done.returncode == 0, done.stderr
    assert fake_openai.chat_calls == 10  # both submissions judged: 1 answered turn x 5 dimensions each
    assert MISMATCH not in done.stderr, done.stderr
