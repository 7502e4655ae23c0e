"""The temporal labeller's calls against a fake OpenAI-compatible server on 127.0.0.1: retries,
re-asks, refusals, aborts and cache replay, as the generation judge documents them."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.fake_openai_server import TEST_KEY, Reply, completion, http_error, rate_limited

from reteco.judge import load_judge_config
from reteco.llm.cache import JudgeCache
from reteco.workbench.labels.calls import ERROR, INVALID, OK, NotAvailable, run_asks
from reteco.workbench.labels.label import COVERAGE, RELEVANCE, _ask
from reteco.workbench.labels.prompts import LabelInput, load_prompts

DATA = LabelInput("d/q1", "When did fees rise?", (("p1", "fees in 2016"), ("p2", "fees in 2017")), "doc/1", "In 2017 fees rose.")
RELEVANT = json.dumps({"rationale": "dated 2017", "temporally_relevant": True})
COVERS = json.dumps({"rationale": "2017 only", "covered_periods": ["p2"]})


@pytest.fixture
def judge_config(fake_openai, monkeypatch):
    """The generation judge's packaged config, pointed at the fake server, with short waits.

    One request at a time: these tests script the server's replies in order, and two requests
    in flight could take each other's reply (concurrency is tested with the judge's runner).
    """
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    return dataclasses.replace(
        load_judge_config(), base_url=fake_openai.base_url, backoff_initial_s=0.01, backoff_max_s=0.05,
        timeout_s=5.0, max_retries=3, max_reasks=2, concurrency=1,
    )


def asks(config, tasks=(RELEVANCE,), data=DATA):
    prompts = load_prompts(1)
    return [_ask(prompts, config, task, data, ["p1", "p2"]) for task in tasks]


def run(config, tmp_path, tasks=(RELEVANCE,), **kwargs):
    return run_asks(asks(config, tasks), config, cache_dir=tmp_path / "cache", progress=False, **kwargs)


def test_the_request_is_strict_and_deterministic(judge_config, fake_openai, tmp_path):
    fake_openai.script.extend([completion(RELEVANT), completion(COVERS)])
    relevance, coverage = run(judge_config, tmp_path, (RELEVANCE, COVERAGE))
    assert (relevance.status, relevance.label, relevance.rationale) == (OK, True, "dated 2017")
    assert (coverage.status, coverage.label) == (OK, ["p2"])
    bodies = sorted((r.body for r in fake_openai.chat_requests), key=lambda b: b["response_format"]["json_schema"]["name"])
    for body in bodies:
        assert body["response_format"]["json_schema"]["strict"] is True
        # The packaged judge is a reasoning model: no temperature (such a model refuses one), its
        # effort and seed as configured; the plan's GPT-4o config sends temperature 0 instead.
        assert judge_config.temperature is None and "temperature" not in body
        assert body["reasoning_effort"] == judge_config.reasoning_effort == "low"
        assert body["seed"] == judge_config.seed
        assert body["max_completion_tokens"] == judge_config.max_completion_tokens
    enum = bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["covered_periods"]["items"]["enum"]
    assert enum == ["p1", "p2"]


def test_a_second_run_replays_the_cache(judge_config, fake_openai, tmp_path):
    fake_openai.script.append(completion(RELEVANT))
    first = run(judge_config, tmp_path)[0]
    second = run(judge_config, tmp_path)[0]
    assert fake_openai.chat_calls == 1
    assert (second.status, second.label, second.cached, second.attempts) == (OK, True, True, 0)
    assert first.request_hashes == second.request_hashes


def test_server_errors_are_retried_and_recorded(judge_config, fake_openai, tmp_path):
    fake_openai.script.extend([http_error(503), rate_limited("0.01"), completion(RELEVANT)])
    answer = run(judge_config, tmp_path)[0]
    assert (answer.status, answer.attempts) == (OK, 3)
    with JudgeCache(tmp_path / "cache") as cache:
        failures = cache.failures(answer.request_hashes[0])
    assert [(f["attempt"], f["http_status"]) for f in failures] == [(1, 503), (2, 429)]
    assert failures[1]["wait_s"] == pytest.approx(0.01)


def test_retries_run_out_into_an_error_that_is_not_cached(judge_config, fake_openai, tmp_path):
    config = dataclasses.replace(judge_config, max_retries=1)
    fake_openai.script.extend([http_error(500), http_error(500)])
    answer = run(config, tmp_path)[0]
    assert answer.status == ERROR and "gave up after 2 attempts" in answer.rationale and answer.label is None
    fake_openai.script.append(completion(RELEVANT))
    assert run(config, tmp_path)[0].status == OK  # the next run asks again


def test_a_refused_request_is_not_retried(judge_config, fake_openai, tmp_path):
    fake_openai.script.append(http_error(400, "bad request"))
    answer = run(judge_config, tmp_path)[0]
    assert answer.status == ERROR and "not retried" in answer.rationale and fake_openai.chat_calls == 1


def test_an_auth_failure_stops_the_run(judge_config, fake_openai, tmp_path):
    config = dataclasses.replace(judge_config, concurrency=1)
    fake_openai.script.append(http_error(401, "invalid key"))
    answers = run(config, tmp_path, (RELEVANCE, COVERAGE))
    assert [a.status for a in answers] == [ERROR, ERROR]
    assert "not sent" in answers[1].rationale and fake_openai.chat_calls == 1


def test_unusable_replies_are_reasked_then_invalid(judge_config, fake_openai, tmp_path):
    config = dataclasses.replace(judge_config, max_reasks=1)
    fake_openai.script.extend([completion("maybe"), completion(RELEVANT)])
    answer = run(config, tmp_path)[0]
    assert (answer.status, answer.label, len(answer.request_hashes)) == (OK, True, 2)
    reask = fake_openai.chat_requests[1].body["messages"]
    assert reask[-2] == {"role": "assistant", "content": "maybe"} and "could not be used" in reask[-1]["content"]
    fake_openai.script.extend([completion('{"rationale": "x", "covered_periods": ["p9"]}')] * 2)
    answer = run(config, tmp_path, (COVERAGE,))[0]
    assert answer.status == INVALID and "not among p1, p2" in answer.rationale and answer.label is None


def test_cut_off_replies_are_reasked_and_refusals_are_invalid_at_once(judge_config, fake_openai, tmp_path):
    fake_openai.script.extend([completion(RELEVANT, finish_reason="length"), completion(RELEVANT)])
    assert run(judge_config, tmp_path)[0].status == OK and fake_openai.chat_calls == 2
    fake_openai.script.append(completion(None, refusal="I cannot label this"))
    answer = run(judge_config, tmp_path, (COVERAGE,))[0]
    assert answer.status == INVALID and "refused" in answer.rationale and fake_openai.chat_calls == 3


def test_a_malformed_body_is_retried(judge_config, fake_openai, tmp_path):
    fake_openai.script.extend([Reply(200, "not json at all"), completion(RELEVANT)])
    answer = run(judge_config, tmp_path)[0]
    assert (answer.status, answer.attempts) == (OK, 2)


def test_no_key_no_call(judge_config, fake_openai, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(NotAvailable, match="OPENAI_API_KEY"):
        run(judge_config, tmp_path)
    assert fake_openai.chat_calls == 0
