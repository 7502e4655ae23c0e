"""run_judge against a real HTTP server on 127.0.0.1: requests, order, cache, concurrency, crashes."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY, FakeOpenAI, fake_judge, judgment
from support.paths import REPO_ROOT

from reteco.judge import DIMENSIONS, JudgeItem, build_request, load_judge_config, run_judge
from reteco.llm.cache import CACHE_FILE, request_hash


def turns(n: int, dimensions=DIMENSIONS) -> list[JudgeItem]:
    return [
        JudgeItem(
            key=f"biology/{i}_turn_{1 + i % 3}",
            dimension=d,
            query=f"question {i}",
            history="" if i % 3 == 0 else f"Q: earlier {i}\nA: earlier answer {i}",
            answer=f"answer {i}",
            evidence=((f"biology_doc_{i}", f"passage {i}"),),
            reference_answer=f"reference {i}",
        )
        for i in range(n)
        for d in dimensions
    ]


def db(cache_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(cache_dir / CACHE_FILE)


def test_outcomes_follow_the_items_order_and_carry_the_judges_scores(fake_openai, judge_config, tmp_path):
    items = turns(6)
    outcomes = run_judge(items, judge_config, cache_dir=tmp_path, progress=False)
    assert [o.item for o in outcomes] == items
    assert fake_openai.chat_calls == len(items)
    for o in outcomes:
        expected = json.loads(fake_judge(build_request(o.item, judge_config)).body["choices"][0]["message"]["content"])
        assert o.status == "ok" and o.score == expected["score"]
        assert o.rationale == f"fake judge gives {o.score}"
        assert (o.cached, o.attempts, o.system_fingerprint) == (False, 1, "fp_fake_1")
        assert o.normalized == (o.score - 1) / 4
        assert len(o.cache_key) == 64


def test_each_request_is_the_configured_chat_completion(fake_openai, judge_config, tmp_path):
    run_judge(turns(1, ["coherence"]), judge_config, cache_dir=tmp_path, progress=False)
    (request,) = fake_openai.chat_requests
    body = request.body
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert body["model"] == judge_config.model
    assert body["temperature"] == 0 and body["seed"] == judge_config.seed
    assert body["max_completion_tokens"] == judge_config.max_completion_tokens
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "stream" not in body or body["stream"] is False
    # The SDK's own retries are off: ours are counted and logged.
    assert request.headers.get("x-stainless-retry-count", "0") == "0"


def test_token_limit_parameter_is_configurable_for_older_servers(fake_openai, judge_config, tmp_path):
    config = dataclasses.replace(judge_config, token_limit_param="max_tokens", temperature=None, seed=None)
    run_judge(turns(1, ["relevance"]), config, cache_dir=tmp_path, progress=False)
    body = fake_openai.chat_requests[0].body
    assert body["max_tokens"] == config.max_completion_tokens and "max_completion_tokens" not in body
    assert "temperature" not in body and "seed" not in body


def test_a_second_run_makes_zero_http_calls(fake_openai, judge_config, tmp_path):
    items = turns(4)
    first = run_judge(items, judge_config, cache_dir=tmp_path, progress=False)
    calls = fake_openai.chat_calls
    second = run_judge(items, judge_config, cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == calls
    assert all(o.cached for o in second)
    strip = lambda o: (o.score, o.status, o.rationale, o.attempts, o.system_fingerprint, o.cache_key)
    assert [strip(o) for o in second] == [strip(o) for o in first]


def test_the_cache_is_keyed_by_the_full_request(fake_openai, judge_config, tmp_path):
    items = turns(1, ["correctness"])
    run_judge(items, judge_config, cache_dir=tmp_path, progress=False)
    # Same item, other model / seed / prompt text: different requests, new calls.
    run_judge(items, dataclasses.replace(judge_config, model="other-model"), cache_dir=tmp_path, progress=False)
    run_judge(items, dataclasses.replace(judge_config, seed=7), cache_dir=tmp_path, progress=False)
    changed = [dataclasses.replace(items[0], answer=items[0].answer + ".")]
    run_judge(changed, judge_config, cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == 4
    # Settings that do not change the request do not change the key.
    run_judge(items, dataclasses.replace(judge_config, concurrency=3, timeout_s=9.0), cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == 4
    with db(tmp_path) as conn:
        stored = {row[0]: (json.loads(row[1]), row[2])
                  for row in conn.execute("SELECT request_hash, request_json, prompt_version FROM requests")}
    # Every key is the hash of the body, its prompt version and the endpoint (the preflight
    # requests are recorded under version 0).
    assert {version for _, version in stored.values()} == {0, judge_config.prompt_version}
    for h, (body, version) in stored.items():
        assert request_hash(body, version, judge_config.endpoint()) == h


def test_the_cache_holds_requests_raw_responses_and_fingerprints(fake_openai, judge_config, tmp_path):
    fake_openai.script.append(judgment(3, "stored verbatim", fingerprint="fp_abc"))
    (outcome,) = run_judge(turns(1, ["relevance"]), judge_config, cache_dir=tmp_path, progress=False)
    with db(tmp_path) as conn:
        call = conn.execute("SELECT request_hash, response_json, http_status, system_fingerprint, model, via, "
                            "started_at, finished_at FROM calls WHERE via = 'chat'").fetchone()
        row = conn.execute("SELECT status, score, rationale, attempts, system_fingerprint, signature, call_ids "
                           "FROM judgments WHERE cache_key = ?", (outcome.cache_key,)).fetchone()
    assert call[0] == outcome.cache_key
    raw = json.loads(call[1])
    assert json.loads(raw["choices"][0]["message"]["content"]) == {"rationale": "stored verbatim", "score": 3}
    assert call[2:6] == (200, "fp_abc", "fake-judge", "chat") and call[6] and call[7]
    assert row[:6] == ("ok", 3, "stored verbatim", 1, "fp_abc", judge_config.signature)
    assert outcome.system_fingerprint == "fp_abc"


def test_identical_requests_are_asked_once(fake_openai, judge_config, tmp_path):
    item = turns(1, ["relevance"])[0]
    twin = dataclasses.replace(item, key="biology/other_turn_1")  # same data: same request
    outcomes = run_judge([item, twin, item], judge_config, cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == 1
    assert [o.item.key for o in outcomes] == [item.key, twin.key, item.key]
    assert len({(o.score, o.cache_key) for o in outcomes}) == 1


def test_concurrency_is_bounded_by_the_config(judge_config, tmp_path):
    server = FakeOpenAI(latency_s=0.2)
    server.start()
    try:
        config = dataclasses.replace(judge_config, base_url=server.base_url, concurrency=4)
        run_judge(turns(4), config, cache_dir=tmp_path, progress=False)
    finally:
        server.stop()
    assert server.chat_calls == 20
    assert 2 <= server.max_in_flight <= 4


def test_the_progress_bar_can_be_shown_or_not(fake_openai, judge_config, tmp_path, capsys):
    run_judge(turns(2), judge_config, cache_dir=tmp_path / "a", progress=True)
    assert "judge gpt-4o-2024-08-06" in capsys.readouterr().err
    run_judge(turns(2), judge_config, cache_dir=tmp_path / "b", progress=False)
    assert capsys.readouterr().err == ""


def test_a_malformed_item_is_refused_before_any_call(fake_openai, judge_config, tmp_path):
    bad = dataclasses.replace(turns(1, ["relevance"])[0], dimension="fluency")
    with pytest.raises(ValueError, match="fluency"):
        run_judge([bad], judge_config, cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == 0


def test_run_judge_works_from_inside_an_event_loop(fake_openai, judge_config, tmp_path):
    import asyncio

    async def caller():
        return run_judge(turns(1, ["relevance"]), judge_config, cache_dir=tmp_path, progress=False)

    (outcome,) = asyncio.run(caller())
    assert outcome.status == "ok"


_CRASHING_RUN = """
import dataclasses, sys
from reteco.judge import JudgeItem, load_judge_config, run_judge
config = dataclasses.replace(load_judge_config(), base_url=sys.argv[1], concurrency=1, timeout_s=60.0)
items = [JudgeItem(f"law/{i}_turn_1", "relevance", f"q{i}", "", f"a{i}", (), "") for i in range(10)]
run_judge(items, config, cache_dir=sys.argv[2], progress=False)
"""


def test_a_crash_loses_only_the_calls_in_flight(tmp_path, monkeypatch):
    """Kill -9 a judging process mid-run: every answered call is in the cache, reused next run."""
    server = FakeOpenAI()
    server.start()
    hang = threading.Event()
    # The first 4 requests are answered at once; the 5th hangs until the process is dead.
    server.rules.append((lambda body: len(server.chat_requests) > 4, lambda body: hang_then_judge(hang, body)))
    cache_dir = tmp_path / "cache"
    # The killed run's claim on its 5th judgment is waited out by the rerun until its lease ends:
    # a 1 s lease instead of the default 60 s (no other process competes for the claims here).
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "PYTHONPATH": str(REPO_ROOT / "src"),
           "RETECO_JUDGE_CLAIM_LEASE_S": "1"}
    proc = subprocess.Popen([sys.executable, "-c", _CRASHING_RUN, server.base_url, str(cache_dir)], env=env)
    try:
        deadline = time.monotonic() + 60
        while server.chat_calls < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.chat_calls == 5, "the run should be waiting on its 5th call"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        hang.set()
        if proc.poll() is None:
            proc.kill()
    server.rules.clear()
    with db(cache_dir) as conn:
        assert conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 4
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    config = dataclasses.replace(load_judge_config(), base_url=server.base_url, concurrency=1)
    items = [JudgeItem(f"law/{i}_turn_1", "relevance", f"q{i}", "", f"a{i}", (), "") for i in range(10)]
    try:
        outcomes = run_judge(items, config, cache_dir=cache_dir, progress=False)
    finally:
        server.stop()
    assert server.chat_calls == 5 + 6  # only the call in flight and the ones never sent
    assert sum(o.cached for o in outcomes) == 4
    assert all(o.status == "ok" for o in outcomes)


def hang_then_judge(event, body):
    event.wait(60)
    return judgment(3)
