"""Every fault the server can make, and how each judgment ends (see runner's docstring).

The server misbehaves for real (429 + Retry-After, 5xx, answers past the timeout, bodies that
are not JSON, replies out of the schema, refusals, auth failures); nothing of reteco is mocked.
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import sqlite3
import time

import pytest
from support.fake_openai_server import TEST_KEY, FakeOpenAI, Reply, completion, http_error, judgment, rate_limited, user_text

from reteco.judge import JudgeItem, outcome_to_json, run_judge
from reteco.llm.cache import CACHE_FILE


def one(dimension: str = "relevance", n: int = 0) -> JudgeItem:
    return JudgeItem(f"law/{n}_turn_2", dimension, f"What about case {n}?", "Q: rule?\nA: two parts.",
                     f"It depends on part {n}.", (("law_doc_1", "The rule has two parts."),), "Part two applies.")


def judge(config, cache_dir, items=None, **kwargs):
    return run_judge(items or [one()], config, cache_dir=cache_dir, progress=False, **kwargs)


def failures(cache_dir, cache_key):
    with sqlite3.connect(cache_dir / CACHE_FILE) as conn:
        return conn.execute("SELECT attempt, kind, http_status, message, wait_s FROM failures "
                            "WHERE request_hash = ? ORDER BY id", (cache_key,)).fetchall()


def judgments(cache_dir):
    with sqlite3.connect(cache_dir / CACHE_FILE) as conn:
        return conn.execute("SELECT status, score FROM judgments").fetchall()


# --- transport: retried with backoff, Retry-After honoured -------------------------------------


def test_429_waits_what_retry_after_says_then_succeeds(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([rate_limited("1"), judgment(4)])
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts, o.cached) == ("ok", 4, 2, False)
    first, second = fake_openai.chat_requests
    assert second.at - first.at >= 1.0  # the backoff alone would be ~0.01 s
    ((attempt, kind, status, message, wait),) = failures(tmp_path, o.cache_key)
    assert (attempt, kind, status, wait) == (1, "http 429", 429, 1.0)
    assert "Rate limit reached" in message


def test_retry_after_ms_is_preferred_and_capped_by_max_wait(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([
        http_error(429, headers={"retry-after-ms": "150", "Retry-After": "30"}),
        http_error(503, headers={"Retry-After": "3600"}),
        judgment(2),
    ])
    config = dataclasses.replace(judge_config, max_wait_s=0.2)
    (o,) = judge(config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 2, 3)
    assert [f[4] for f in failures(tmp_path, o.cache_key)] == [0.15, 0.2]


def test_retry_after_as_an_http_date_is_honoured(fake_openai, judge_config, tmp_path):
    # Three seconds ahead, in whole seconds: the wait is between 3 s and 2 s less whatever time
    # passes before the runner reads the header (a loaded CI machine can take a second).
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    fake_openai.script.extend([http_error(429, headers={"Retry-After": when}), judgment(4)])
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.attempts) == ("ok", 2)
    ((*_, wait),) = failures(tmp_path, o.cache_key)
    assert 0.0 < wait <= 3.0


def test_a_429_pauses_every_worker_not_just_the_one_that_got_it(fake_openai, judge_config, tmp_path):
    a, b, c = one(n=1), one(n=2), one(n=3)
    seen = {"a": 0}

    def first_a_limited(body):
        seen["a"] += 1
        return rate_limited("1") if seen["a"] == 1 else judgment(3)

    fake_openai.rules.append((lambda body: "case 1" in user_text(body), first_a_limited))
    # b answers a little later than a's 429, so c starts only once the pause is known.
    fake_openai.rules.append((lambda body: "case 2" in user_text(body), Reply(**{**judgment(3).__dict__, "delay_s": 0.2})))
    config = dataclasses.replace(judge_config, concurrency=2)
    outcomes = judge(config, tmp_path, [a, b, c])
    assert all(o.status == "ok" for o in outcomes)
    first_sent = {}
    for r in fake_openai.chat_requests:
        first_sent.setdefault(user_text(r.body).split("What about ")[1][:6], r.at)
    assert first_sent["case 3"] - first_sent["case 1"] >= 1.0


def test_429_forever_ends_as_error_not_cached_and_the_next_run_retries(fake_openai, judge_config, tmp_path):
    fake_openai.rules.append((lambda b: True, rate_limited("0")))
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("error", None, judge_config.max_retries + 1)
    assert fake_openai.chat_calls == judge_config.max_retries + 1
    assert o.rationale.startswith("request failed, gave up after 4 attempts: HTTP 429")
    assert judgments(tmp_path) == []  # a transport failure is not a verdict
    fake_openai.rules.clear()
    (again,) = judge(judge_config, tmp_path)
    assert again.status == "ok" and not again.cached


def test_500_is_retried_with_exponential_backoff(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([http_error(500), http_error(502), http_error(503), judgment(5)])
    config = dataclasses.replace(judge_config, backoff_initial_s=0.02, backoff_max_s=0.05)
    (o,) = judge(config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 5, 4)
    waits = [f[4] for f in failures(tmp_path, o.cache_key)]
    assert [f[2] for f in failures(tmp_path, o.cache_key)] == [500, 502, 503]
    # initial * 2^(n-1), capped at backoff_max_s, with jitter in [0.5, 1] of that
    for wait, ceiling in zip(waits, (0.02, 0.04, 0.05)):
        assert ceiling / 2 <= wait <= ceiling


def test_500_forever_ends_as_error_after_max_retries(fake_openai, judge_config, tmp_path):
    fake_openai.rules.append((lambda b: True, http_error(500, "upstream down")))
    config = dataclasses.replace(judge_config, max_retries=2)
    (o,) = judge(config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("error", None, 3)
    assert fake_openai.chat_calls == 3
    assert "HTTP 500" in o.rationale and "upstream down" in o.rationale
    assert [f[4] for f in failures(tmp_path, o.cache_key)][-1] is None  # no wait after the last


def test_a_slow_answer_past_the_timeout_is_retried(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([Reply(**{**judgment(1).__dict__, "delay_s": 2.0}), judgment(3)])
    config = dataclasses.replace(judge_config, timeout_s=0.3)
    (o,) = judge(config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 3, 2)  # the late "1" was never read
    ((_, kind, status, message, _),) = failures(tmp_path, o.cache_key)
    assert (kind, status) == ("timeout", None) and "0.3 s" in message


def test_always_too_slow_ends_as_error(fake_openai, judge_config, tmp_path):
    fake_openai.rules.append((lambda b: True, Reply(**{**judgment(1).__dict__, "delay_s": 1.0})))
    config = dataclasses.replace(judge_config, timeout_s=0.2, max_retries=1)
    (o,) = judge(config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("error", None, 2)
    assert "no response within 0.2 s" in o.rationale


def test_a_server_too_slow_even_for_the_preflight_gets_nothing_else(judge_config, tmp_path):
    server = FakeOpenAI(latency_s=1.0)
    server.start()
    try:
        config = dataclasses.replace(judge_config, base_url=server.base_url, timeout_s=0.2, max_retries=1)
        outcomes = judge(config, tmp_path, [one(n=i) for i in range(5)])
    finally:
        server.stop()
    assert len(server.preflight_requests) == 2 and server.chat_calls == 0  # the preflight and its one retry
    assert outcomes.stats.calls.preflight == "failed" and outcomes.stats.http_requests == 2
    for o in outcomes:
        assert (o.status, o.score, o.attempts) == ("error", None, 0)
        assert o.rationale.startswith("not sent: the preflight request to ") and "no response within 0.2 s" in o.rationale


def test_a_body_that_is_not_a_chat_completion_is_retried(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([Reply(200, "<html>proxy error</html>"), Reply(200, {"object": "error"}), judgment(2)])
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 2, 3)
    kinds = [(f[1], f[3]) for f in failures(tmp_path, o.cache_key)]
    assert kinds == [("malformed response", "HTTP 200 with a body that is not JSON"),
                     ("malformed response", "HTTP 200 with a body without choices[0].message")]


def test_connection_refused_ends_as_error(judge_config, tmp_path):
    server = FakeOpenAI()
    server.start()
    url = server.base_url
    server.stop()  # nobody listens there any more
    config = dataclasses.replace(judge_config, base_url=url, max_retries=1)
    outcomes = judge(config, tmp_path, [one(n=i) for i in range(4)])
    # The preflight is tried (with its retry) and fails: no judgment request follows.
    assert outcomes.stats.http_requests == 2 and outcomes.stats.calls.preflight == "failed"
    assert all((o.status, o.score, o.attempts) == ("error", None, 0) for o in outcomes)
    assert all("connection failed" in o.rationale for o in outcomes)


# --- requests that no retry can fix -------------------------------------------------------------


def test_400_fails_that_judgment_only(fake_openai, judge_config, tmp_path):
    items = [one(n=0), one(n=1)]
    fake_openai.rules.append((lambda b: "case 0" in user_text(b), http_error(400, "context length exceeded")))
    bad, good = judge(judge_config, tmp_path, items)
    assert (bad.status, bad.attempts) == ("error", 1) and "not retried" in bad.rationale
    assert "context length exceeded" in bad.rationale
    assert good.status == "ok"


@pytest.mark.parametrize("reply", [
    http_error(401, "Incorrect API key provided"),
    http_error(403, "forbidden"),
    http_error(404, "The model `gpt-4o-2024-08-06` does not exist"),
    http_error(429, "You exceeded your current quota", code="insufficient_quota"),
])
def test_auth_model_or_quota_failures_stop_the_run(fake_openai, judge_config, tmp_path, reply):
    fake_openai.rules.append((lambda b: True, reply))
    config = dataclasses.replace(judge_config, concurrency=1)
    outcomes = judge(config, tmp_path, [one(n=i) for i in range(6)])
    assert fake_openai.chat_calls == 1  # no retry, and nothing more is sent
    assert all(o.status == "error" and o.score is None for o in outcomes)
    assert f"HTTP {reply.status}" in outcomes[0].rationale
    assert all(o.rationale.startswith("not sent: the endpoint answered HTTP") for o in outcomes[1:])
    assert all(o.attempts == 0 for o in outcomes[1:])


def test_many_failures_in_a_row_stop_the_run(fake_openai, judge_config, tmp_path):
    fake_openai.rules.append((lambda b: True, http_error(500)))
    config = dataclasses.replace(judge_config, concurrency=1, max_retries=0, abort_after_errors=3)
    outcomes = judge(config, tmp_path, [one(n=i) for i in range(8)])
    assert fake_openai.chat_calls == 3
    assert [o.attempts for o in outcomes] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert "3 judgments in a row failed" in outcomes[-1].rationale


# --- replies: re-asked while unusable, then invalid -- never a made-up score ---------------------


def test_malformed_json_is_reasked_with_the_problem_then_accepted(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([completion("I would give this a 4."), judgment(4, "fine now")])
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.rationale, o.attempts) == ("ok", 4, "fine now", 2)
    first, reask = (r.body for r in fake_openai.chat_requests)
    assert reask["messages"][:2] == first["messages"]
    assert reask["messages"][2] == {"role": "assistant", "content": "I would give this a 4."}
    assert reask["messages"][3]["role"] == "user" and "not valid JSON" in reask["messages"][3]["content"]
    assert reask["response_format"] == first["response_format"] and reask["seed"] == first["seed"]


@pytest.mark.parametrize("content, problem", [
    ('{"rationale": "great", "score": 7}', "not one of 1, 2, 3, 4, 5"),
    ('{"rationale": "great", "score": 0}', "not one of 1, 2, 3, 4, 5"),
    ('{"rationale": "great", "score": "5"}', "not an integer"),
    ('{"score": 5}', "lacked the key(s) 'rationale'"),
    ('{"rationale": "great", "score": 5, "bonus": 1}', "'bonus'"),
    ("not json at all", "not valid JSON"),
    ("", "empty"),
])
def test_out_of_schema_replies_end_invalid_after_the_reasks(fake_openai, judge_config, tmp_path, content, problem):
    fake_openai.rules.append((lambda b: True, completion(content)))
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score) == ("invalid", None)
    assert o.attempts == judge_config.max_reasks + 1 == fake_openai.chat_calls
    assert o.rationale.startswith("no usable reply in 3 asks; last: ") and problem in o.rationale
    assert judgments(tmp_path) == [("invalid", None)]


def test_a_reply_cut_at_the_token_limit_is_reasked(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([completion('{"rationale": "long', finish_reason="length"), judgment(3)])
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 3, 2)
    assert "cut off at the token limit" in fake_openai.chat_requests[1].body["messages"][-1]["content"]


def test_a_refusal_is_invalid_at_once(fake_openai, judge_config, tmp_path):
    fake_openai.script.append(completion(None, refusal="I can't help with grading this."))
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("invalid", None, 1)
    assert o.rationale == "the judge refused: I can't help with grading this."
    assert fake_openai.chat_calls == 1


def test_a_content_filter_stop_is_invalid(fake_openai, judge_config, tmp_path):
    fake_openai.script.append(completion(None, finish_reason="content_filter"))
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score) == ("invalid", None) and "content filter" in o.rationale


def test_invalid_is_cached_and_retry_invalid_asks_again(fake_openai, judge_config, tmp_path):
    fake_openai.rules.append((lambda b: True, completion("no JSON")))
    (o,) = judge(judge_config, tmp_path)
    assert o.status == "invalid" and fake_openai.chat_calls == 3
    (again,) = judge(judge_config, tmp_path)
    assert (again.status, again.cached, fake_openai.chat_calls) == ("invalid", True, 3)  # not paid twice
    fake_openai.rules.clear()
    fake_openai.rules.append((lambda b: True, judgment(4)))
    (fixed,) = judge(judge_config, tmp_path, retry_invalid=True)
    assert (fixed.status, fixed.score, fixed.cached, fake_openai.chat_calls) == ("ok", 4, False, 4)
    (later,) = judge(judge_config, tmp_path, retry_invalid=True)
    assert (later.status, later.cached, fake_openai.chat_calls) == ("ok", True, 4)  # ok is never re-asked


def test_retry_invalid_bypasses_stored_replies_only_for_invalid_verdicts(fake_openai, judge_config, tmp_path):
    invalid, ok, interrupted = one(n=1), one(n=2), one(n=3)
    fake_openai.rules.append((lambda b: "case 1" in user_text(b), completion("not JSON")))
    fake_openai.rules.append((lambda b: "case 3" in user_text(b) and len(b["messages"]) == 2, completion("bad")))
    fake_openai.rules.append((lambda b: "case 3" in user_text(b), http_error(400, "rejected")))
    first = judge(judge_config, tmp_path, [invalid, ok, interrupted])
    assert [o.status for o in first] == ["invalid", "ok", "error"]
    assert fake_openai.chat_calls == 3 + 1 + 2
    fake_openai.rules.clear()
    again = judge(judge_config, tmp_path, [invalid, ok, interrupted], retry_invalid=True)
    assert [(o.status, o.cached) for o in again] == [("ok", False), ("ok", True), ("ok", False)]
    # invalid: asked afresh (1 call); ok: untouched; interrupted: its stored first reply is
    # reused and only the re-ask is sent (1 call).
    assert fake_openai.chat_calls == 6 + 2
    assert [o.attempts for o in again] == [1, 1, 2]


def test_a_reask_answered_in_a_previous_run_is_reused(fake_openai, judge_config, tmp_path):
    """A crash between a bad reply and its re-ask: the stored bad reply is not paid again."""
    fake_openai.script.extend([completion("oops"), http_error(400, "rejected")])
    (o,) = judge(judge_config, tmp_path)
    assert o.status == "error" and fake_openai.chat_calls == 2
    fake_openai.script.append(judgment(5))
    (o,) = judge(judge_config, tmp_path)
    assert (o.status, o.score, o.attempts) == ("ok", 5, 2)
    assert fake_openai.chat_calls == 3  # only the re-ask went out again


# --- the key never leaks ------------------------------------------------------------------------


def test_the_key_never_appears_in_outputs_logs_errors_or_the_cache(judge_config, tmp_path, caplog, capsys):
    """A hostile server echoes the Authorization header in every body, in every kind of failure."""
    server = FakeOpenAI(echo_auth=True)
    server.start()
    topics = {
        "ok": [judgment(4)],
        "429": [rate_limited("0"), judgment(3)],
        "500": [http_error(500)] * 2,
        "slow": [Reply(**{**judgment(2).__dict__, "delay_s": 1.0})] * 2,
        "malformed": [Reply(200, "not json")] * 2,
        "badjson": [completion("nope")] * 3,
        "range": [judgment(9)] * 3,
        "refusal": [completion(None, refusal="no")],
        "badreq": [http_error(400, "bad request")],
    }
    queues = {name: list(replies) for name, replies in topics.items()}

    def reply_for(body):
        for name, queue in queues.items():
            if f"topic-{name}-" in user_text(body):
                return queue.pop(0) if len(queue) > 1 else queue[0]
        raise AssertionError("unknown topic")

    server.rules.append((lambda b: True, reply_for))
    items = [JudgeItem(f"law/{name}_turn_1", "relevance", f"topic-{name}-", "", "a", (), "") for name in topics]
    config = dataclasses.replace(judge_config, base_url=server.base_url, timeout_s=0.3, max_retries=1)
    caplog.set_level(logging.DEBUG)
    try:
        outcomes = run_judge(items, config, cache_dir=tmp_path, progress=True)
        server.rules.insert(0, (lambda b: True, http_error(401, "Incorrect API key")))
        late = run_judge([one(n=99)], config, cache_dir=tmp_path, progress=True)
    finally:
        server.stop()
    statuses = {o.item.key.split("/")[1].split("_")[0]: o.status for o in outcomes}
    assert statuses == {"ok": "ok", "429": "ok", "500": "error", "slow": "error", "malformed": "error",
                        "badjson": "invalid", "range": "invalid", "refusal": "invalid", "badreq": "error"}
    assert late[0].status == "error"
    assert any(TEST_KEY in json.dumps(r.headers) for r in server.requests)  # it was sent, to the server only
    everything = [repr(o) for o in outcomes + late]
    everything += [json.dumps(outcome_to_json(o, config.signature)) for o in outcomes + late]
    everything += [r.getMessage() for r in caplog.records]
    captured = capsys.readouterr()
    everything += [captured.out, captured.err]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            everything.append(path.read_bytes().decode("utf-8", "replace"))
    assert "[REDACTED]" in "".join(everything)  # the echoes were there, and were caught
    for text in everything:
        assert TEST_KEY not in text
