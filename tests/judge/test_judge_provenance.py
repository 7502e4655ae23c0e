"""Who answered: the endpoint in the signature and the cache key, the reported model per verdict,
old cache rows, and the judge options of ``reteco score``.

The measured failure these tests pin down: a server on 127.0.0.1 answering as model ``tiny``
stored its verdicts under the gpt-4o signature; pointed at a dead port, the same figures came
back from the cache without a warning.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
from types import SimpleNamespace

import pytest
from support.fake_openai_server import TEST_KEY, FakeOpenAI, judgment
from support.tiny_track2 import write_tiny_reference

from reteco.commands import main
from reteco.judge import JudgeItem, build_request, outcome_to_json, run_judge
from reteco.judge.provenance import judge_provenance, model_mismatch_warning
from reteco.llm.cache import CACHE_FILE, JudgeCache, request_hash

ITEMS = [JudgeItem(f"law/{i}_turn_1", "relevance", f"question {i}", "", f"answer {i}", (("d1", "text"),), "ref")
         for i in range(3)]


def tiny_server() -> FakeOpenAI:
    """A server that answers as the model 'tiny' (as a llama.cpp server started with --alias tiny)."""
    server = FakeOpenAI()
    server.judge = lambda body: judgment(2, "tiny says 2", model="tiny", fingerprint="b1-0c1e570")
    server.start()
    return server


def dead_url() -> str:
    server = FakeOpenAI()
    server.start()
    url = server.base_url
    server.stop()
    return url


def test_a_verdict_of_one_server_is_never_served_for_another(judge_config, tmp_path):
    server = tiny_server()
    try:
        at_tiny = dataclasses.replace(judge_config, base_url=server.base_url)
        first = run_judge(ITEMS, at_tiny, cache_dir=tmp_path, progress=False)
        assert [(o.status, o.score, o.reported_model) for o in first] == [("ok", 2, "tiny")] * 3
        # The same config pointed at a dead port: nothing comes from the cache.
        at_dead = dataclasses.replace(judge_config, base_url=dead_url(), max_retries=0)
        assert at_dead.signature != at_tiny.signature
        dead = run_judge(ITEMS, at_dead, cache_dir=tmp_path, progress=False)
        assert [o.status for o in dead] == ["error"] * 3 and not any(o.score for o in dead)
        assert dead.stats.from_cache == 0 and dead.stats.calls.preflight == "failed"
        # Back at the first server: all from the cache, with their provenance.
        calls = server.all_chat_calls
        again = run_judge(ITEMS, at_tiny, cache_dir=tmp_path, progress=False)
        assert server.all_chat_calls == calls and again.stats.http_requests == 0
        assert [(o.score, o.cached, o.reported_model, o.endpoint) for o in again] == [
            (2, True, "tiny", at_tiny.endpoint())] * 3
    finally:
        server.stop()
    keys = {o.cache_key for o in first} | {o.cache_key for o in dead}
    assert len(keys) == 6  # one key per (request, endpoint)
    body = build_request(ITEMS[0], judge_config)
    assert first[0].cache_key == request_hash(body, judge_config.prompt_version, at_tiny.endpoint())


def test_the_endpoint_in_keys_and_signature_is_public_and_ignores_a_trailing_slash(judge_config):
    secret = dataclasses.replace(judge_config, base_url="https://user:pw@judge.example.org/v1/?key=abc")
    assert secret.endpoint() == "https://judge.example.org/v1"
    assert dataclasses.replace(judge_config, base_url="https://judge.example.org/v1").signature == secret.signature
    assert "pw" not in json.dumps(secret.describe()) and "abc" not in json.dumps(secret.describe())


def test_a_reported_model_that_differs_is_one_warning_per_run_with_counts(judge_config, tmp_path, caplog):
    server = FakeOpenAI()
    models = iter(["tiny", "tiny", "other"])
    server.judge = lambda body: judgment(3, model=next(models))
    server.start()
    caplog.set_level(logging.WARNING, logger="reteco.judge")
    try:
        config = dataclasses.replace(judge_config, base_url=server.base_url, concurrency=1)
        outcomes = run_judge(ITEMS, config, cache_dir=tmp_path, progress=False)
    finally:
        server.stop()
    assert [o.reported_model for o in outcomes] == ["tiny", "tiny", "other"]
    warnings = [r.getMessage() for r in caplog.records if "reported another model" in r.getMessage()]
    assert len(warnings) == 1
    assert "for 3 of 3 verdicts: other (1), tiny (2)" in warnings[0] and "gpt-4o-2024-08-06" in warnings[0]
    assert outcomes.stats.provenance["reported_models"] == {"other": 1, "tiny": 2}
    line = outcome_to_json(outcomes[0], config.signature)
    assert (line["reported_model"], line["endpoint"], line["system_fingerprint"]) == ("tiny", config.endpoint(), "fp_fake_1")


def test_the_configured_model_reported_back_gives_no_warning(judge_config, fake_openai, tmp_path, caplog):
    fake_openai.judge = lambda body: judgment(4, model=judge_config.model)
    caplog.set_level(logging.WARNING, logger="reteco.judge")
    outcomes = run_judge(ITEMS, judge_config, cache_dir=tmp_path, progress=False)
    assert not outcomes.stats.provenance["reported_model_differs"]
    assert not [r for r in caplog.records if "reported another model" in r.getMessage()]


def write_legacy_verdict(cache_dir, config, item, endpoint: str, score: int) -> str:
    """A verdict as reteco wrote it before the endpoint was part of the key: key = sha256 of
    {prompt_version, request}; the call row carries the endpoint it came from."""
    body = build_request(item, config)
    legacy = request_hash(body, config.prompt_version)
    with JudgeCache(cache_dir) as cache:
        cache.put_request(legacy, config.prompt_version, body)
        call = cache.add_call(request_hash_=legacy, response_json=json.dumps(judgment(score, "old").body),
                              http_status=200, system_fingerprint="fp_old", model="gpt-4o-2024-08-06", via="chat",
                              endpoint=endpoint, started_at=None)
        cache.put_judgment(cache_key=legacy, topic_key=item.key, dimension=item.dimension,
                           prompt_version=config.prompt_version, signature="oldsignature", model=config.model,
                           status="ok", score=score, rationale="old", attempts=1, system_fingerprint="fp_old",
                           call_ids=[call])
    return legacy


def test_old_cache_rows_are_served_only_for_the_endpoint_that_made_them(fake_openai, judge_config, tmp_path):
    here, elsewhere = ITEMS[0], ITEMS[1]
    # An old row made at this endpoint (written with a trailing slash, as public_url kept it),
    # and one made by another server.
    legacy = write_legacy_verdict(tmp_path, judge_config, here, judge_config.endpoint() + "/", 5)
    write_legacy_verdict(tmp_path, judge_config, elsewhere, "http://127.0.0.1:9/v1", 1)
    fake_openai.judge = lambda body: judgment(3, "asked now")
    a, b = run_judge([here, elsewhere], judge_config, cache_dir=tmp_path, progress=False)
    assert (a.score, a.cached, a.rationale, a.reported_model) == (5, True, "old", "gpt-4o-2024-08-06")
    assert (b.score, b.cached, b.rationale) == (3, False, "asked now")
    assert fake_openai.chat_calls == 1
    with sqlite3.connect(tmp_path / CACHE_FILE) as conn:  # the old rows are untouched
        assert conn.execute("SELECT score, signature FROM judgments WHERE cache_key = ?", (legacy,)).fetchone() == (
            5, "oldsignature")


def test_the_provenance_helper_counts_models_and_fingerprints():
    config = SimpleNamespace(model="gpt-4o-2024-08-06", endpoint=lambda: "http://127.0.0.1:8080/v1")
    outcome = lambda status, model, fp: SimpleNamespace(status=status, reported_model=model, system_fingerprint=fp)
    outcomes = [outcome("ok", "tiny", "b1"), outcome("ok", "tiny", "b2"), outcome("invalid", None, None),
                outcome("error", None, None), outcome("ok", "gpt-4o-2024-08-06", "b1")]
    p = judge_provenance(outcomes, config)
    assert p == {
        "endpoint": "http://127.0.0.1:8080/v1",
        "configured_model": "gpt-4o-2024-08-06",
        "reported_models": {"(not reported)": 1, "gpt-4o-2024-08-06": 1, "tiny": 2},
        "reported_model_differs": True,
        "system_fingerprints": {"(not reported)": 1, "b1": 2, "b2": 1},
    }
    assert model_mismatch_warning(p).endswith("for 3 of 4 verdicts: (not reported) (1), tiny (2); "
                                              "each verdict records the reported model")


def test_score_takes_the_judge_config_and_cache_from_the_command_line(fake_openai, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RETECO_TEST_KEY", TEST_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("RETECO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "default-cache"))  # must stay unused
    config_file = tmp_path / "judge.yaml"
    config_file.write_text(f"prompt_version: 1\nmodel: my-judge\nbase_url: {fake_openai.base_url}\n"
                           "api_key_env: RETECO_TEST_KEY\nmax_retries: 0\n", encoding="utf-8")
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"turn_id": "biology/2_turn_1", "answer": "cells need water"}) + "\n")
    code = main(["score", "--ref", str(ref.root), "--res", str(answers), "--out", str(tmp_path / "out"),
                 "--judge-config", str(config_file), "--judge-cache", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "cache" / CACHE_FILE).is_file() and not (tmp_path / "default-cache").exists()
    judge = json.loads((tmp_path / "out" / "details.json").read_text())["generation"]["judge"]
    assert judge["ran"] and judge["model"] == "my-judge" and judge["config"]["endpoint"] == fake_openai.base_url
    assert judge["calls"] == {"judgments": 5, "cached": 0, "new": 5}
    assert fake_openai.chat_calls == 5


def test_score_refuses_a_bad_judge_config_before_scoring(tmp_path, capsys):
    config_file = tmp_path / "judge.yaml"
    config_file.write_text("prompt_version: 1\nmodel: m\nresponse_format: xml\n", encoding="utf-8")
    ref = write_tiny_reference(tmp_path / "ref" / "2b", "2b")
    code = main(["score", "--ref", str(ref.root), "--res", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"),
                 "--judge-config", str(config_file)])
    assert code == 1
    assert "response_format must be one of json_schema, json_object, none" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["-1", "true", "2.5"])
def test_max_calls_per_run_must_be_a_count(tmp_path, value):
    from reteco.judge import load_judge_config
    from reteco.problems import InputError

    path = tmp_path / "judge.yaml"
    path.write_text(f"prompt_version: 1\nmodel: m\nmax_calls_per_run: {value}\n", encoding="utf-8")
    with pytest.raises(InputError, match="max_calls_per_run must be an integer >= 0"):
        load_judge_config(path)
