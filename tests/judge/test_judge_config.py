"""The judge's configuration: file format, availability, signature, cache location."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.fake_openai_server import TEST_KEY

from reteco.judge import JudgeItem, JudgeNotAvailable, default_cache_dir, judge_available, load_judge_config, run_judge
from reteco.judge.config import PACKAGED_CONFIG, PLAN_GPT4O_CONFIG
from reteco.llm.config import Redactor, public_url
from reteco.llm.model_retirement import known_shutdown
from reteco.problems import InputError

EXAMPLE = PACKAGED_CONFIG.parent / "open-weights.example.yaml"


def test_the_packaged_config_is_a_reasoning_judge_that_outlives_the_phases_and_gpt4o_stays_named():
    config = load_judge_config()
    assert config.model == "gpt-5.5-2026-04-23" and known_shutdown(config.model) is None  # no announced date
    assert (config.temperature, config.seed, config.reasoning_effort) == (None, 2027, "low")
    assert config.max_completion_tokens == 4000 and config.max_reasks >= 1 and config.max_retries >= 1
    assert not config.use_batch_api
    assert len(config.signature) == 16 and int(config.signature, 16) >= 0
    assert config.signature == load_judge_config(PACKAGED_CONFIG).signature
    plan = load_judge_config(PLAN_GPT4O_CONFIG)  # the plan's judge, for comparison
    assert (plan.model, plan.temperature, plan.reasoning_effort, plan.max_completion_tokens) == (
        "gpt-4o-2024-08-06", 0, None, 400)
    assert known_shutdown(plan.model) == "2027-01-14" and plan.prompt_version == config.prompt_version


def test_the_signature_is_who_judged_not_how_the_calls_were_made():
    base = load_judge_config()
    # Who answers is part of who judged: another endpoint or another response format is
    # another judge (a llama.cpp server answering under the name gpt-4o must not pass for it).
    for change in ({"model": "other"}, {"temperature": 0.7}, {"reasoning_effort": "medium"}, {"reasoning_effort": None}, {"seed": 1}, {"max_completion_tokens": 50}, {"max_reasks": 0},
                   {"base_url": "http://127.0.0.1:9/v1"}, {"response_format": "json_object"}):
        assert dataclasses.replace(base, **change).signature != base.signature, change
    for change in ({"concurrency": 64}, {"timeout_s": 5.0}, {"use_batch_api": True}, {"max_retries": 1},
                   {"api_key_env": "OTHER"}, {"max_calls_per_run": 10}):
        assert dataclasses.replace(base, **change).signature == base.signature, change


def test_equal_values_written_differently_are_one_signature():
    base = load_judge_config()
    assert dataclasses.replace(base, temperature=0).signature == dataclasses.replace(base, temperature=0.0).signature


def test_unknown_keys_and_bad_values_are_errors_naming_the_file(tmp_path):
    path = tmp_path / "judge.yaml"
    path.write_text("prompt_version: 1\nmodel: m\nconcurency: 8\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"judge\.yaml.*unknown key\(s\) concurency"):
        load_judge_config(path)
    path.write_text("prompt_version: 1\nmodel: m\nconcurrency: 0\ntemperature: 5\n", encoding="utf-8")
    with pytest.raises(InputError, match="concurrency must be a positive integer.*temperature"):
        load_judge_config(path)
    path.write_text("model: m\n", encoding="utf-8")
    with pytest.raises(InputError, match="prompt_version is required"):
        load_judge_config(path)
    path.write_text("prompt_version: 9\nmodel: m\n", encoding="utf-8")
    with pytest.raises(InputError, match="prompt version 9"):
        load_judge_config(path)
    with pytest.raises(InputError, match="cannot read"):
        load_judge_config(tmp_path / "missing.yaml")


def test_no_key_means_the_judge_is_not_available_and_says_why(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_judge_config()
    ok, why = judge_available(config)
    assert not ok and "OPENAI_API_KEY" in why
    item = JudgeItem("k/1_turn_1", "relevance", "q", "", "a", (), "")
    with pytest.raises(JudgeNotAvailable, match="OPENAI_API_KEY"):
        run_judge([item], config, progress=False)
    monkeypatch.setenv("OPENAI_API_KEY", "   ")
    assert not judge_available(config)[0]


def test_key_from_the_named_variable_or_a_file_and_never_in_the_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_JUDGE_KEY", TEST_KEY)
    config = dataclasses.replace(load_judge_config(), api_key_env="MY_JUDGE_KEY")
    ok, why = judge_available(config)
    assert ok and "MY_JUDGE_KEY" in why and TEST_KEY not in why
    key_file = tmp_path / "key.txt"
    path = tmp_path / "judge.yaml"
    path.write_text("prompt_version: 1\nmodel: m\napi_key_file: key.txt\n", encoding="utf-8")
    config = load_judge_config(path)
    assert config.api_key_file == key_file
    ok, why = judge_available(config)
    assert not ok and "key.txt" in why
    key_file.write_text(TEST_KEY + "\n", encoding="utf-8")
    ok, why = judge_available(config)
    assert ok and TEST_KEY not in why


def test_the_endpoint_comes_from_config_then_environment_then_openai(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = load_judge_config()
    assert config.resolved_base_url() == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1")
    assert config.resolved_base_url() == "http://10.0.0.5:8000/v1"
    assert dataclasses.replace(config, base_url="http://h:1/v1").resolved_base_url() == "http://h:1/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://nowhere")
    ok, why = judge_available(config)
    assert not ok and "OPENAI_BASE_URL" in why


def test_reports_never_carry_credentials(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:pa55word@judge.example.org:8443/v1?key=abc#x")
    config = load_judge_config()
    described = repr(config.describe()) + repr(config)
    assert TEST_KEY not in described and "pa55word" not in described and "key=abc" not in described
    assert config.describe()["endpoint"] == "https://judge.example.org:8443/v1"
    assert public_url("http://[::1]:8000/v1") == "http://::1:8000/v1"


def test_the_redactor_removes_the_key_but_not_placeholder_keys():
    assert Redactor(TEST_KEY)(f"Bearer {TEST_KEY} rejected") == "Bearer [REDACTED] rejected"
    assert Redactor("EMPTY")("EMPTY responses are EMPTY") == "EMPTY responses are EMPTY"
    assert Redactor(None)(None) is None


def test_an_open_weights_judge_is_a_configuration_change(fake_openai, monkeypatch, tmp_path):
    """The example vLLM config runs unchanged against any OpenAI-compatible server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("RETECO_JUDGE_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("RETECO_JUDGE_API_KEY", TEST_KEY)
    config = load_judge_config(EXAMPLE)
    assert config.model == "Qwen/Qwen2.5-72B-Instruct" and config.signature != load_judge_config().signature
    items = [JudgeItem("law/1_turn_1", d, "q", "", "a", (("d", "p"),), "r") for d in ("relevance", "faithfulness")]
    outcomes = run_judge(items, config, cache_dir=tmp_path, progress=False)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    sent = fake_openai.chat_requests
    assert {r.body["model"] for r in sent} == {"Qwen/Qwen2.5-72B-Instruct"}
    assert {r.headers["authorization"] for r in sent} == {f"Bearer {TEST_KEY}"}


def test_default_cache_dir_honours_reteco_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("RETECO_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("RETECO_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "reteco" / "judge"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == Path(tmp_path / "home" / ".cache" / "reteco" / "judge")
