"""Test helper: several reteco processes on one judge cache, against the fake OpenAI server.

The judge here answers at random (``random_judge``), so a judgment paid twice, or a verdict
overwritten, shows as two different verdicts; ``requests_per_body`` counts what the server
received per request body (the judgments' first asks; the preflight is counted apart).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

from reteco.judge import JudgeItem, item_to_json
from reteco.llm.cache import CACHE_FILE, canonical_json
from support.fake_openai_server import TEST_KEY, FakeOpenAI, Reply, judgment


def random_judge(body: dict) -> Reply:
    """A verdict drawn at random: two asks of one judgment (almost) never agree."""
    return judgment(random.randint(1, 5), f"random verdict {uuid.uuid4().hex}")


def requests_per_body(server: FakeOpenAI) -> Counter:
    """How often the server received each judgment request body."""
    return Counter(canonical_json(r.body) for r in server.chat_requests)


def judge_config(folder: Path, base_url: str, **settings) -> Path:
    """A judge config (prompt version 1, the key from RETECO_TEST_KEY) pointed at ``base_url``."""
    values = {"prompt_version": 1, "model": "fake-judge", "base_url": base_url, "api_key_env": "RETECO_TEST_KEY",
              "max_retries": 1, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 30, **settings}
    path = folder / "judge.yaml"
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()), encoding="utf-8")
    return path


def write_items(path: Path, count: int) -> Path:
    """``count`` distinct judge items, one JSON line each."""
    items = [JudgeItem(f"law/{i}_turn_1", "relevance", f"question {i}", "", f"answer {i}", (), "") for i in range(count)]
    path.write_text("".join(json.dumps(item_to_json(i)) + "\n" for i in items), encoding="utf-8")
    return path


def environment(tmp_path: Path, **env: str) -> dict[str, str]:
    """The environment of a reteco subprocess: the test key, a cache of its own by default."""
    values = {k: v for k, v in os.environ.items() if k not in ("RETECO_DEBUG", "OPENAI_BASE_URL")}
    values.update(RETECO_TEST_KEY=TEST_KEY, RETECO_CACHE_DIR=str(tmp_path / "default-cache"), **env)
    return values


def start_reteco(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen:
    """``python -m reteco ARGS`` started in the background (text output captured)."""
    return subprocess.Popen([sys.executable, "-m", "reteco", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environment(tmp_path, **env))


def finish(processes: list[subprocess.Popen], timeout: float = 600) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each process, once all have ended."""
    outputs = [p.communicate(timeout=timeout) for p in processes]
    return [(p.returncode, out, err) for p, (out, err) in zip(processes, outputs)]


def cache_verdicts(cache_dir: Path) -> dict[str, tuple]:
    """cache key -> (status, score, rationale) of every verdict the cache holds."""
    conn = sqlite3.connect(cache_dir / CACHE_FILE)
    try:
        return {r[0]: tuple(r[1:]) for r in conn.execute("SELECT cache_key, status, score, rationale FROM judgments")}
    finally:
        conn.close()


def outcome_lines(path: Path) -> dict[str, tuple]:
    """cache key -> (status, score, rationale) of a ``reteco judge`` output file."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {o["cache_key"]: (o["status"], o["score"], o["rationale"]) for o in lines}
