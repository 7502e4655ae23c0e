"""Servers that differ from OpenAI's: response_format modes, the preflight, refusals that name a
parameter (never retried), and a fake llama-cpp-python server (HTTP 500 on json_schema).

Measured before: llama-cpp-python's server answered every request with HTTP 500; reteco retried
each 7 times (200 failed requests in 84 s), said the judge ran out of tries and exited 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest
from support.fake_openai_server import (
    LLAMA_CPP_PYTHON,
    LLAMA_CPP_PYTHON_REJECTION,
    TEST_KEY,
    FakeOpenAI,
    completion,
    http_error,
    judgment,
)

from reteco.judge import JudgeItem, build_request, item_to_json, load_judge_config, run_judge
from reteco.llm.compatibility import PREFLIGHT_MESSAGE, SCHEMA_INTRO, rejected_parameter, setting_hint, shape_request
from reteco.problems import InputError
from reteco.workbench.commands.judge import add_judge_parser

ITEMS = [JudgeItem(f"law/{i}_turn_1", d, f"question {i}", "", f"answer {i}", (("d1", "text"),), "ref")
         for i in range(4) for d in ("relevance", "faithfulness")]


def judge(config, tmp_path, items=ITEMS, **kwargs):
    return run_judge(items, config, cache_dir=tmp_path / "cache", progress=False, **kwargs)


@pytest.fixture
def llama_cpp_python(monkeypatch):
    server = FakeOpenAI(mode=LLAMA_CPP_PYTHON)
    server.start()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        yield server
    finally:
        server.stop()


def test_json_object_mode_writes_the_schema_into_the_system_message_deterministically():
    config = dataclasses.replace(load_judge_config(), response_format="json_object")
    strict = build_request(ITEMS[0], load_judge_config())
    body = build_request(ITEMS[0], config)
    assert body["response_format"] == {"type": "json_object"}
    schema = strict["response_format"]["json_schema"]["schema"]
    system = body["messages"][0]["content"]
    assert system.startswith(strict["messages"][0]["content"].rstrip("\n"))
    assert system.endswith(f"\n\n{SCHEMA_INTRO}\n{json.dumps(schema, sort_keys=True, indent=2)}\n")
    assert body["messages"][1:] == strict["messages"][1:]  # the data are untouched
    assert build_request(ITEMS[0], config) == body
    none = build_request(ITEMS[0], dataclasses.replace(config, response_format="none"))
    assert "response_format" not in none and none["messages"] == body["messages"]
    assert {k: v for k, v in body.items() if k not in ("messages", "response_format")} == {
        k: v for k, v in strict.items() if k not in ("messages", "response_format")}


def test_shape_request_adds_a_system_message_when_there_is_none():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True,
                                                                       "schema": {"type": "object"}}}}
    shaped = shape_request(body, "json_object")
    assert shaped["messages"][0] == {"role": "system", "content": f'{SCHEMA_INTRO}\n{{\n  "type": "object"\n}}\n'}
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # the caller's body is not changed


def test_the_preflight_is_one_tiny_request_shaped_like_the_run(fake_openai, judge_config, tmp_path):
    outcomes = judge(judge_config, tmp_path)
    (probe,) = fake_openai.preflight_requests
    first = build_request(ITEMS[0], judge_config)
    assert probe.body["messages"] == [{"role": "user", "content": PREFLIGHT_MESSAGE}]
    assert probe.body["max_completion_tokens"] == 16
    for key in ("model", "response_format", "seed", "temperature", "reasoning_effort"):
        assert probe.body.get(key) == first.get(key), key
    assert outcomes.stats.calls.preflight == "passed"
    assert outcomes.stats.http_requests == 1 + len(ITEMS) == fake_openai.all_chat_calls
    # A second run has nothing to ask: no preflight either.
    again = judge(judge_config, tmp_path)
    assert again.stats.calls.preflight == "not needed" and len(fake_openai.preflight_requests) == 1


def test_the_preflight_warns_of_a_model_with_an_announced_shutdown_date(fake_openai, judge_config, tmp_path, caplog):
    """gpt-4o-2024-08-06 leaves the API on 2027-01-14 (openai-python's list of announced dates),
    inside the Evaluation phase: whoever judges with it is told at the preflight, and no request
    is added for it; a model without an announced date gets no such line."""
    dated = dataclasses.replace(judge_config, model="gpt-4o-2024-08-06")
    judge(dated, tmp_path / "dated")
    lines = [r.getMessage() for r in caplog.records if "announced shutdown date" in r.getMessage()]
    assert lines == ["preflight: the judge model gpt-4o-2024-08-06 has an announced shutdown date of 2027-01-14 "
                     "(as listed by openai-python 3.63.0); keep the judge cache and its archives: after that day its "
                     "verdicts cannot be asked again"]
    assert fake_openai.all_chat_calls == 1 + len(ITEMS)  # the preflight and the judgments, nothing more
    caplog.clear()
    judge(dataclasses.replace(judge_config, model="an-undated-model"), tmp_path / "undated")
    assert not [r for r in caplog.records if "announced shutdown date" in r.getMessage()]


def test_llama_cpp_python_refuses_json_schema_once_and_the_run_stops_naming_it(llama_cpp_python, judge_config, tmp_path):
    config = dataclasses.replace(judge_config, base_url=llama_cpp_python.base_url)
    outcomes = judge(config, tmp_path)
    assert llama_cpp_python.all_chat_calls == 1  # the preflight, not retried; no judgment sent
    assert outcomes.stats.calls.preflight == "failed" and outcomes.stats.http_requests == 1
    detail = outcomes.stats.calls.preflight_detail
    assert "the server rejected `response_format` (HTTP 500: " in detail and "Input should be 'text'" in detail
    assert "set `response_format: json_object` in the judge config" in detail
    for o in outcomes:
        assert (o.status, o.score, o.attempts) == ("error", None, 0)
        assert o.rationale == f"not sent: {detail}"


def test_with_json_object_the_same_server_judges_and_its_ignored_token_cap_is_said(llama_cpp_python, judge_config,
                                                                                   tmp_path, caplog):
    config = dataclasses.replace(judge_config, base_url=llama_cpp_python.base_url, response_format="json_object")
    outcomes = judge(config, tmp_path)
    assert [o.status for o in outcomes] == ["ok"] * len(ITEMS) and all(1 <= o.score <= 5 for o in outcomes)
    assert all(r.body["response_format"] == {"type": "json_object"} for r in llama_cpp_python.chat_requests)
    assert "ignore `max_completion_tokens`" in outcomes.stats.calls.preflight_detail
    assert "try `token_limit_param: max_tokens`" in outcomes.stats.calls.preflight_detail
    assert any("ignore `max_completion_tokens`" in r.getMessage() for r in caplog.records)


def test_the_validator_stays_on_when_the_server_does_not_enforce_the_schema(fake_openai, judge_config, tmp_path):
    config = dataclasses.replace(judge_config, response_format="none")
    fake_openai.script.extend([completion('{"score": 4}'), completion('{"rationale": "r", "score": 6}'),
                               completion("```json\n{}\n```")])
    (o,) = judge(config, tmp_path, ITEMS[:1])
    assert (o.status, o.score) == ("invalid", None) and fake_openai.chat_calls == 3
    assert "not valid JSON" in o.rationale


@pytest.mark.parametrize("reply, param, hint", [
    (http_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model.", code="unsupported_parameter"),
     "max_tokens", "set `token_limit_param: max_completion_tokens`"),
    (http_error(422, "temperature: Input should be less than or equal to 1"), "temperature", "set `temperature: null`"),
    (http_error(500, "Invalid value for seed: must be an unsigned 32-bit integer"), "seed", "set `seed: null`"),
])
def test_a_refusal_naming_a_parameter_is_not_retried_and_names_the_setting(fake_openai, judge_config, tmp_path,
                                                                           reply, param, hint):
    config = dataclasses.replace(judge_config, token_limit_param="max_tokens") if param == "max_tokens" else judge_config
    fake_openai.preflight = lambda body: reply
    outcomes = judge(config, tmp_path)
    assert len(fake_openai.preflight_requests) == 1 and fake_openai.chat_calls == 0
    assert f"the server rejected `{param}`" in outcomes[0].rationale and hint in outcomes[0].rationale


def test_a_500_of_one_judgment_saying_its_input_is_invalid_is_not_retried(fake_openai, judge_config, tmp_path):
    fake_openai.script.append(http_error(500, "response_format: validation error, not supported for this prompt"))
    a, b = judge(judge_config, tmp_path, ITEMS[:2])
    assert (a.status, a.attempts) == ("error", 1) and "request failed, not retried" in a.rationale
    assert "the server rejected `response_format`" in a.rationale
    assert b.status == "ok" and fake_openai.chat_calls == 2


def test_a_transient_500_is_still_retried(fake_openai, judge_config, tmp_path):
    fake_openai.script.extend([http_error(500, "The server had an error while processing your request"), judgment(3)])
    (o,) = judge(judge_config, tmp_path, ITEMS[:1])
    assert (o.status, o.score, o.attempts) == ("ok", 3, 2)


def test_rejected_parameter_reads_openai_llama_cpp_and_pydantic_errors():
    body = {"model": "m", "messages": [], "response_format": {"type": "json_schema"}, "max_completion_tokens": 9,
            "seed": 1, "temperature": 0}
    llama_cpp = "response_format type must be one of \"text\" or \"json_object\", but got: json_schema"
    assert rejected_parameter(500, llama_cpp, {"error": {"message": llama_cpp}}, body) == "response_format"
    assert rejected_parameter(500, LLAMA_CPP_PYTHON_REJECTION, None, body) == "response_format"
    declared = {"error": {"message": "bad", "param": "response_format.json_schema.strict"}}
    assert rejected_parameter(400, "bad", declared, body) == "response_format"
    # Not a setting: context length (the messages), an unnamed 400, a transient 500, a 503.
    length = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    assert rejected_parameter(400, length, {"error": {"message": length, "param": "messages"}}, body) is None
    assert rejected_parameter(400, "bad request", None, body) is None
    assert rejected_parameter(500, "seed generator crashed", None, body) is None
    assert rejected_parameter(503, "invalid seed", None, body) is None
    # A parameter the request does not carry is not named.
    assert rejected_parameter(400, "max_tokens is invalid", None, body) is None
    assert "response_format: none" in setting_hint("response_format", {"response_format": {"type": "json_object"}})


def reteco_judge(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="reteco")
    add_judge_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["judge", *argv])
    return args.func(args)


def test_reteco_judge_exits_1_naming_the_parameter_and_writes_nothing(llama_cpp_python, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llama_cpp_python.base_url)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(item_to_json(i)) + "\n" for i in ITEMS), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputError) as caught:  # the entry point prints it and exits 1
        reteco_judge("--items", str(items), "--out", str(out), "--cache", str(tmp_path / "cache"), "--no-progress")
    message = str(caught.value)
    assert "the judge did not run" in message and "rejected `response_format`" in message
    assert "response_format: json_object" in message and not out.exists()
    assert llama_cpp_python.all_chat_calls == 1
    config = tmp_path / "llama-cpp-python.yaml"
    config.write_text("prompt_version: 1\nmodel: local\nresponse_format: json_object\n", encoding="utf-8")
    assert reteco_judge("--items", str(items), "--out", str(out), "--judge-config", str(config), "--cache",
                        str(tmp_path / "cache"), "--no-progress") == 0
    assert all(json.loads(line)["status"] == "ok" for line in out.read_text().splitlines())


def test_the_labeller_stops_at_a_refused_preflight(llama_cpp_python, judge_config, tmp_path):
    from reteco.workbench.labels.calls import EndpointRefused, NotAvailable, run_asks
    from reteco.workbench.labels.label import RELEVANCE, _ask
    from reteco.workbench.labels.prompts import LabelInput, load_prompts

    config = dataclasses.replace(judge_config, base_url=llama_cpp_python.base_url)
    data = LabelInput("d/q1", "When?", (("p1", "2016"),), "doc/1", "In 2016.")
    asks = [_ask(load_prompts(1), config, RELEVANCE, data, ["p1"])]
    with pytest.raises(EndpointRefused, match="rejected `response_format`") as caught:
        run_asks(asks, config, cache_dir=tmp_path, progress=False)
    assert isinstance(caught.value, NotAvailable)  # label-temporal reports it and exits 1
    assert llama_cpp_python.all_chat_calls == 1
    json_object = dataclasses.replace(config, response_format="json_object")
    llama_cpp_python.judge = lambda body: completion(json.dumps({"rationale": "dated 2016", "temporally_relevant": True}))
    (answer,) = run_asks(asks, json_object, cache_dir=tmp_path, progress=False)
    (request,) = llama_cpp_python.chat_requests
    assert request.body["response_format"] == {"type": "json_object"}
    assert SCHEMA_INTRO in request.body["messages"][0]["content"]
    assert (answer.status, answer.label) == ("ok", True)
