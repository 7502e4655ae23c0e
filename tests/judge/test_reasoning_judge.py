"""Reasoning models as judges (issue 31, item 1), against the fake server's reasoning mode, which
answers as OpenAI's gpt-5.x family does: HTTP 400 on ``temperature`` other than 1, reasoning
tokens inside ``usage.completion_tokens_details`` and inside the completion cap.

A config with ``temperature: null`` and ``reasoning_effort: low`` judges 2b and 2c end to end
through the scoring program; its verdicts are stored once, the reasoning tokens are recorded in
the cache's calls and the run's usage, and the effort is part of the signature. The plan's GPT-4o
configuration (temperature 0) is stopped by the preflight, which names the parameter.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest
from support.fake_openai_server import REASONING, REASONING_TOKENS, TEST_KEY, FakeOpenAI, http_error
from support.judged_program import judge_yaml, judged_input

from reteco.codabench.program import scoring_program
from reteco.codabench.program.judge_setup import count_turns
from reteco.judge import JudgeItem, build_request, load_judge_config, run_judge
from reteco.judge.config import PLAN_GPT4O_CONFIG
from reteco.llm.cache import ARCHIVE_FILE
from reteco.llm.config import REASONING_EFFORTS

ITEMS = [JudgeItem(f"law/{i}_turn_1", d, f"question {i}", "", f"answer {i}", (("d1", "text"),), "ref")
         for i in range(3) for d in ("relevance", "faithfulness")]


@pytest.fixture
def reasoning_server(monkeypatch):
    server = FakeOpenAI(mode=REASONING)
    server.start()
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    try:
        yield server
    finally:
        server.stop()


def reasoning_config(server, **changes):
    """The packaged judge on prompt version 1 (the fake judge's v1 replies), at the fake server."""
    from reteco.judge.prompts import load_prompt_set

    return dataclasses.replace(load_judge_config(), prompt_version=1, prompts=load_prompt_set(1),
                               base_url=server.base_url, backoff_initial_s=0.01, backoff_max_s=0.05,
                               timeout_s=5.0, max_retries=1, **changes)


def test_the_packaged_judge_sends_no_parameter_a_reasoning_model_refuses():
    config = load_judge_config()
    body = build_request(ITEMS[0], config)
    assert "temperature" not in body and "max_tokens" not in body and "top_p" not in body
    assert body["reasoning_effort"] == config.reasoning_effort == "low"
    assert body["max_completion_tokens"] == config.max_completion_tokens == 4000
    assert config.describe()["reasoning_effort"] == "low"


def test_the_effort_is_in_the_signature_and_an_unset_one_leaves_old_signatures_alone():
    config = load_judge_config()
    signatures = {e: dataclasses.replace(config, reasoning_effort=e).signature for e in (*REASONING_EFFORTS, None)}
    assert len(set(signatures.values())) == len(REASONING_EFFORTS) + 1
    with pytest.raises(ValueError, match="reasoning_effort must be one of none, minimal, low"):
        dataclasses.replace(config, reasoning_effort="lowest")


def test_a_config_file_can_leave_out_temperature_and_set_an_effort(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text("prompt_version: 3\nmodel: m\ntemperature: null\nreasoning_effort: minimal\n")
    from reteco.judge.config import load_judge_config as load

    body = build_request(ITEMS[0], load(path))
    assert "temperature" not in body and body["reasoning_effort"] == "minimal"


def test_the_plans_gpt4o_is_refused_by_a_reasoning_model_at_the_preflight_naming_temperature(reasoning_server,
                                                                                               tmp_path):
    plan = load_judge_config(PLAN_GPT4O_CONFIG)
    assert plan.model == "gpt-4o-2024-08-06" and plan.temperature == 0 and plan.reasoning_effort is None
    config = dataclasses.replace(reasoning_config(reasoning_server), temperature=0, reasoning_effort=None)
    outcomes = run_judge(ITEMS, config, cache_dir=tmp_path / "cache", progress=False)
    assert reasoning_server.all_chat_calls == 1 and outcomes.stats.calls.preflight == "failed"
    detail = outcomes.stats.calls.preflight_detail
    assert "the server rejected `temperature`" in detail and "Only the default (1) value is supported" in detail
    assert "set `temperature: null` in the judge config" in detail
    assert all(o.status == "error" and o.attempts == 0 for o in outcomes)


def test_an_effort_refused_by_a_server_is_named_with_its_setting(fake_openai, judge_config, tmp_path):
    fake_openai.preflight = lambda body: http_error(400, "Unrecognized request argument supplied: reasoning_effort")
    outcomes = run_judge(ITEMS, dataclasses.replace(judge_config, reasoning_effort="low"),
                         cache_dir=tmp_path / "cache", progress=False)
    detail = outcomes.stats.calls.preflight_detail
    assert "the server rejected `reasoning_effort`" in detail and "set `reasoning_effort: null`" in detail


def test_reasoning_tokens_are_recorded_per_call_and_in_the_run(reasoning_server, tmp_path):
    config = reasoning_config(reasoning_server)
    outcomes = run_judge(ITEMS, config, cache_dir=tmp_path / "cache", progress=False)
    assert all(o.status == "ok" for o in outcomes)
    assert reasoning_server.reasoning_efforts == ["low"] * len(ITEMS)
    usage = outcomes.stats.verdicts_usage
    assert usage.calls == len(ITEMS) and usage.reasoning_tokens == REASONING_TOKENS["low"] * len(ITEMS)
    assert usage.completion_tokens > usage.reasoning_tokens  # the reply's tokens on top, in the same count
    assert usage.as_dict()["reasoning_tokens"] == usage.reasoning_tokens
    conn = sqlite3.connect(tmp_path / "cache" / "judge-cache.sqlite")
    rows = conn.execute("SELECT via, completion_tokens, reasoning_tokens, response_json FROM calls").fetchall()
    conn.close()
    for via, completion, reasoning, raw in rows:
        reply_usage = json.loads(raw)["usage"]  # the reply's own figures, read from the stored JSON
        assert (completion, reasoning) == (reply_usage["completion_tokens"],
                                           reply_usage["completion_tokens_details"]["reasoning_tokens"])
        assert reasoning == REASONING_TOKENS["low"] if via == "chat" else True
    # Judged again: every verdict from the cache, nothing sent, the same usage.
    again = run_judge(ITEMS, config, cache_dir=tmp_path / "cache", progress=False)
    assert reasoning_server.chat_calls == len(ITEMS) and again.stats.verdicts_usage == usage


def test_a_cap_the_reasoning_fills_is_said_in_the_verdict(reasoning_server, tmp_path):
    config = reasoning_config(reasoning_server, reasoning_effort="high", max_completion_tokens=1000, max_reasks=0)
    (outcome,) = run_judge(ITEMS[:1], config, cache_dir=tmp_path / "cache", progress=False)
    assert outcome.status == "invalid"
    assert REASONING_TOKENS["high"] > 1000  # the reasoning alone fills the cap: an empty reply
    assert "1000 of the 1000 completion tokens went to reasoning" in outcome.rationale


@pytest.mark.parametrize("sub", ["2b", "2c"])
def test_a_reasoning_judge_scores_2b_and_2c_in_the_scoring_program(reasoning_server, ref_root, tmp_path, capsys, sub):
    config = judge_yaml(tmp_path, reasoning_server.base_url, prompt_version=3, temperature=None,
                        reasoning_effort="low", max_completion_tokens=4000)
    input_dir = judged_input(tmp_path, ref_root, sub, config)
    status = scoring_program.main([str(input_dir), str(tmp_path / "output")])
    log = capsys.readouterr()
    assert status == 0, log
    scores = json.loads((tmp_path / "output" / "scores.json").read_text())
    dimensions = load_judge_config().prompts.dimension_names
    assert all(0 <= scores[d] <= 1 for d in dimensions)
    judgments = count_turns(ref_root / sub) * len(dimensions)
    conn = sqlite3.connect(tmp_path / "output" / ARCHIVE_FILE)
    stored = conn.execute("SELECT COUNT(*), COUNT(DISTINCT cache_key) FROM judgments").fetchone()
    reasoning = conn.execute("SELECT COUNT(*), SUM(reasoning_tokens) FROM calls WHERE via = 'chat'").fetchone()
    conn.close()
    assert stored == (judgments, judgments)  # each verdict stored once
    assert reasoning == (judgments, judgments * REASONING_TOKENS["low"])
    assert all("temperature" not in r.body and r.body["reasoning_effort"] == "low" for r in reasoning_server.chat_requests)


def test_the_judge_probe_asks_with_the_judges_decoding_so_a_reasoning_model_answers_it(reasoning_server):
    from reteco.codabench.program.judge_probe import probe
    from reteco.workbench.codabench.bundle.judge_probe_bundle import probe_record

    class Setup:  # what probe_record reads of the bundle's judge setup
        config = reasoning_config(reasoning_server)

    record = probe_record(Setup, ("evaluation",))
    assert record["decoding"] == {"max_completion_tokens": 4000, "seed": 2027, "reasoning_effort": "low"}
    assert probe(record, TEST_KEY)["completion"]["ok"] is True
    # A probe.json of an older reteco names no decoding: 5 tokens at temperature 0, refused here.
    old = {k: v for k, v in record.items() if k != "decoding"}
    refused = probe(old, TEST_KEY)["completion"]
    assert (refused["ok"], refused["status"]) == (False, 400)
