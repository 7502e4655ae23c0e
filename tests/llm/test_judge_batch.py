"""The Batch API path, end to end against the fake server's /v1/files and /v1/batches."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

from support.fake_openai_server import TEST_KEY, FakeOpenAI, completion, http_error, user_text

from reteco.judge import JudgeItem, build_request, run_judge
from reteco.llm.cache import CACHE_FILE, request_hash


def items(n: int = 6) -> list[JudgeItem]:
    return [JudgeItem(f"robotics/{i}_turn_1", d, f"batch question {i}", "", f"answer {i}", (("doc", "text"),), "ref")
            for i in range(n) for d in ("relevance", "faithfulness")]


def batch_config(config, **changes):
    return dataclasses.replace(config, use_batch_api=True, batch_poll_interval_s=0.01, **changes)


def test_a_batch_job_judges_everything_without_live_calls(fake_openai, judge_config, tmp_path):
    todo = items()
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert fake_openai.chat_calls == 0
    assert fake_openai.batch_lines == len(todo) and len(fake_openai.batches) == 1
    assert all(o.status == "ok" and not o.cached and o.attempts == 1 for o in outcomes)
    # The uploaded file is the documented JSONL: custom_id = the request hash, body = the request.
    (upload,) = [f for f in fake_openai.files.values() if f["purpose"] == "batch"]
    lines = [json.loads(line) for line in upload["content"].decode().splitlines()]
    assert [line["custom_id"] for line in lines] == [o.cache_key for o in outcomes]
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    assert lines[0]["body"] == build_request(todo[0], judge_config)
    (create,) = [r for r in fake_openai.requests if r.path == "/v1/batches"]
    assert create.body["endpoint"] == "/v1/chat/completions" and create.body["completion_window"] == "24h"
    with sqlite3.connect(tmp_path / CACHE_FILE) as conn:
        vias = {row[0] for row in conn.execute("SELECT via FROM calls")}
        batches = conn.execute("SELECT status, collected_at FROM batches").fetchall()
    # The one live call is the preflight, sent before a batch is paid for.
    assert vias == {f"batch:{next(iter(fake_openai.batches))}", "preflight"}
    assert len(fake_openai.preflight_requests) == 1
    assert batches[0][0] == "completed" and batches[0][1]
    # Re-scoring: nothing is sent, neither live nor as a batch.
    requests_before = len(fake_openai.requests)
    again = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert len(fake_openai.requests) == requests_before
    assert [o.score for o in again] == [o.score for o in outcomes] and all(o.cached for o in again)


def test_batch_lines_that_failed_or_were_unusable_are_finished_live(fake_openai, judge_config, tmp_path):
    todo = items(3)
    fake_openai.rules.append((lambda b: "question 0" in user_text(b) and len(b["messages"]) == 2, http_error(500)))
    fake_openai.rules.append((lambda b: "question 1" in user_text(b) and len(b["messages"]) == 2, completion("??")))
    fake_openai.batch_skip = lambda custom_id: custom_id == _key(todo[4], judge_config)  # a line the batch lost
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert [o.status for o in outcomes] == ["error", "error", "ok", "ok", "ok", "ok"]
    # question 0's first ask fails in the batch, then live too: an error (not cached).
    assert "HTTP 500" in outcomes[0].rationale
    # question 1: the batch answer was unusable, the re-ask went live and succeeded.
    fake_openai.rules.clear()
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert all(o.status == "ok" for o in outcomes)


def test_batch_answers_with_unusable_content_are_reasked_live(fake_openai, judge_config, tmp_path):
    todo = items(1)
    fake_openai.rules.append((lambda b: len(b["messages"]) == 2, completion("four")))
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert fake_openai.batch_lines == 2 and fake_openai.chat_calls == 2  # two re-asks, live
    assert all(o.status == "ok" and o.attempts == 2 for o in outcomes)


def test_a_batch_still_running_at_the_timeout_is_collected_by_the_next_run(fake_openai, judge_config, tmp_path):
    todo = items(2)
    fake_openai.batch_polls_until_done = 10**6
    outcomes = run_judge(todo, batch_config(judge_config, batch_timeout_s=0.05), cache_dir=tmp_path, progress=False)
    (batch_id,) = fake_openai.batches
    assert all(o.status == "error" and o.score is None for o in outcomes)
    assert all(batch_id in o.rationale and "run again to collect it" in o.rationale for o in outcomes)
    assert fake_openai.chat_calls == 0  # not paid twice while the batch may still answer
    fake_openai.batch_polls_until_done = 0
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert len(fake_openai.batches) == 1  # the same batch, collected; no new one
    assert fake_openai.chat_calls == 0
    assert all(o.status == "ok" for o in outcomes)


def test_a_failed_submission_falls_back_to_live_calls(fake_openai, judge_config, tmp_path, caplog):
    todo = items(2)
    fake_openai.batch_create_reply = http_error(500, "batch service unavailable")
    outcomes = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False)
    assert all(o.status == "ok" for o in outcomes)
    assert fake_openai.chat_calls == len(todo) and fake_openai.batches == {}
    assert "batch submission failed (HTTP 500" in caplog.text and "asking these 4 requests live" in caplog.text


def _key(item, config):
    return request_hash(build_request(item, config), config.prompt_version)


def test_retry_invalid_through_a_batch_uses_the_batch_answer(fake_openai, judge_config, tmp_path):
    todo = items(1)[:1]
    fake_openai.rules.append((lambda b: True, completion("not JSON")))
    (o,) = run_judge(todo, judge_config, cache_dir=tmp_path, progress=False)
    assert o.status == "invalid" and fake_openai.chat_calls == 3
    fake_openai.rules.clear()
    (o,) = run_judge(todo, batch_config(judge_config), cache_dir=tmp_path, progress=False, retry_invalid=True)
    assert (o.status, o.cached, o.attempts) == ("ok", False, 1)
    assert fake_openai.batch_lines == 1 and fake_openai.chat_calls == 3  # asked in the batch, not again live


def test_batch_files_echoing_the_key_leave_no_trace_of_it(judge_config, tmp_path, caplog):
    server = FakeOpenAI(echo_auth=True)
    server.start()
    server.rules.append((lambda b: "question 0" in user_text(b) and len(b["messages"]) == 2, http_error(500)))
    try:
        config = batch_config(dataclasses.replace(judge_config, base_url=server.base_url, max_retries=0))
        outcomes = run_judge(items(2), config, cache_dir=tmp_path, progress=False)
    finally:
        server.stop()
    assert [o.status for o in outcomes] == ["error", "error", "ok", "ok"]
    assert server.batch_lines == 4
    texts = [repr(o) for o in outcomes] + [caplog.text]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert "[REDACTED]" in "".join(texts)
    assert not any(TEST_KEY in t for t in texts)
