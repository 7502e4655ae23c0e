"""Token accounting: every call's usage (prompt, cached prompt, completion tokens) is kept in the
cache as the server reported it, added up per verdict and run, and priced only at configured
prices (``reteco.llm.usage``; issue 20 item 1). The fake server counts tokens by its documented
rule (``count_tokens=True``) and records what it reported (``usage_reported``)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest
from support.fake_openai_server import FakeOpenAI

from reteco.judge import JudgeItem, run_judge
from reteco.llm.cache import CACHE_FILE, JudgeCache
from reteco.llm.usage import Prices, TokenUsage, call_usage

PASSAGES = (("doc-1", "The bridge opened in 1932 after six years of work."), ("doc-2", "It spans 503 metres."))


def items(n: int = 2) -> list[JudgeItem]:
    return [JudgeItem(f"law/{i}_turn_1", d, f"When did bridge {i} open?", "", f"It opened in 193{i}.", PASSAGES,
                      "In 1932.", PASSAGES) for i in range(n) for d in ("relevance", "correctness", "faithfulness")]


@pytest.fixture(name="counting")
def counting_fixture(judge_config):
    server = FakeOpenAI(count_tokens=True)
    server.start()
    try:
        yield server, dataclasses.replace(judge_config, base_url=server.base_url, concurrency=1)
    finally:
        server.stop()


def stored_usage(cache_dir) -> list[tuple]:
    with sqlite3.connect(cache_dir / CACHE_FILE) as conn:
        return conn.execute("SELECT prompt_tokens, cached_tokens, completion_tokens FROM calls WHERE via = 'chat' "
                            "ORDER BY id").fetchall()


def test_the_cache_keeps_the_usage_the_server_reported_for_every_call(counting, tmp_path):
    server, config = counting
    outcomes = run_judge(items(), config, cache_dir=tmp_path, progress=False)
    assert [o.status for o in outcomes] == ["ok"] * 6
    assert stored_usage(tmp_path) == server.usage_reported and len(server.usage_reported) == 6
    # Requests after the first share the system prompt's start: the server reported cached tokens.
    assert all(cached > 0 for _, cached, _ in server.usage_reported[1:])
    # Each verdict carries its call's usage; the run's sums are the server's (plus the preflight).
    assert [(o.usage.prompt_tokens, o.usage.cached_tokens, o.usage.completion_tokens) for o in outcomes] == \
        server.usage_reported
    reported = [sum(u[i] for u in server.usage_reported) for i in range(3)]
    verdicts = outcomes.stats.verdicts_usage
    assert (verdicts.calls, verdicts.prompt_tokens, verdicts.cached_tokens, verdicts.completion_tokens) == (6, *reported)
    run = outcomes.stats.as_dict()["usage_this_run"]
    assert run["calls"] == 7 and run["prompt_tokens"] == reported[0] + 12  # the preflight: 12 prompt tokens
    assert run["money_usd"] is None  # no prices in the config: tokens only


def test_a_verdict_served_from_the_cache_carries_what_it_cost_and_the_run_paid_nothing(counting, tmp_path):
    server, config = counting
    first = run_judge(items(1), config, cache_dir=tmp_path, progress=False)
    again = run_judge(items(1), config, cache_dir=tmp_path, progress=False)
    assert all(o.cached for o in again) and [o.usage for o in again] == [o.usage for o in first]
    assert again.stats.calls.usage == TokenUsage()
    assert again.stats.verdicts_usage == first.stats.verdicts_usage


def test_money_uses_the_configured_prices_and_the_batch_factor(counting, tmp_path):
    server, config = counting
    priced = dataclasses.replace(config, price_per_million={"input": 2.5, "cached_input": 1.25, "output": 10.0})
    outcomes = run_judge(items(1), priced, cache_dir=tmp_path / "live", progress=False)
    p, c, o = (sum(u[i] for u in server.usage_reported) for i in range(3))
    expected = ((p - c) * 2.5 + c * 1.25 + o * 10.0) / 1e6
    assert outcomes.stats.as_dict()["usage_of_verdicts"]["money_usd"] == pytest.approx(expected, abs=1e-6)
    server.usage_reported.clear()
    batched = run_judge(items(2)[3:], dataclasses.replace(priced, use_batch_api=True, batch_poll_interval_s=0.01),
                        cache_dir=tmp_path / "batch", progress=False)
    p, c, o = (sum(u[i] for u in server.usage_reported) for i in range(3))
    assert batched.stats.verdicts_usage.batch_prompt_tokens == p > 0
    assert batched.stats.as_dict()["usage_of_verdicts"]["money_usd"] == pytest.approx(
        0.5 * ((p - c) * 2.5 + c * 1.25 + o * 10.0) / 1e6, abs=1e-6)


def test_prices_are_checked_when_the_config_is_built(judge_config):
    with pytest.raises(ValueError, match="price_per_million must map each of input, cached_input, output"):
        dataclasses.replace(judge_config, price_per_million={"input": 2.5})
    with pytest.raises(ValueError, match="batch_price_factor must be a number within 0..1"):
        dataclasses.replace(judge_config, batch_price_factor=2)


def test_a_call_without_reported_usage_counts_as_not_recorded_never_as_zero():
    assert call_usage({"choices": []}) is None
    assert call_usage({"usage": {"prompt_tokens": 10, "completion_tokens": 2}}) == (10, 0, 2, None)
    # A reasoning model's reasoning tokens: inside the completion tokens, never more than them.
    reasoning = {"prompt_tokens": 10, "completion_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 40}}
    assert call_usage({"usage": reasoning}) == (10, 0, 50, 40)
    assert TokenUsage.of_call((10, 0, 50, 40)).reasoning_tokens == 40
    assert Prices(1.0, 0.5, 4.0).money(TokenUsage.of_call((10, 0, 50, 40))) == pytest.approx((10 + 50 * 4.0) / 1e6)
    usage = TokenUsage.of_call(None) + TokenUsage.of_call((10, 4, 2))
    assert (usage.calls, usage.not_recorded, usage.prompt_tokens) == (2, 1, 10)
    assert Prices(1.0, 0.5, 4.0).money(usage) == pytest.approx((6 * 1.0 + 4 * 0.5 + 2 * 4.0) / 1e6)


def test_a_cache_of_an_older_reteco_gets_the_usage_columns_and_its_calls_say_not_recorded(tmp_path):
    # The calls table as reteco wrote it before usage columns existed (schema 1 all the same).
    with JudgeCache(tmp_path / "new"):
        pass
    old = tmp_path / "old" / CACHE_FILE
    old.parent.mkdir()
    with sqlite3.connect(tmp_path / "new" / CACHE_FILE) as new, sqlite3.connect(old) as conn:
        for name, sql in new.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index') "
                                     "AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"):
            if name == "calls":
                sql = sql.split(",\n    prompt_tokens")[0] + "\n)"
            conn.execute(sql)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        conn.execute("INSERT INTO calls(request_hash, response_json, via, finished_at) VALUES ('h', '{}', 'chat', 't')")
        conn.execute("INSERT INTO judgments VALUES ('k', 'law/1_turn_1', 'relevance', 2, 'sig', 'm', 'ok', 4, 'r', 1, "
                     "NULL, '[1]', 't')")
    archive = tmp_path / "old-archive.sqlite"
    with sqlite3.connect(old) as conn:
        conn.execute("VACUUM INTO ?", (str(archive),))
    with JudgeCache(old.parent) as cache:
        verdict = cache.judgment("k")
        assert verdict.usage == TokenUsage(calls=1, not_recorded=1)
        assert verdict.usage.as_dict()["calls_usage_not_recorded"] == 1
    with JudgeCache(tmp_path / "imported") as cache:  # an archive of an older reteco imports too
        assert cache.import_archive(archive).judgments_imported == 1
        assert cache.judgment("k").usage == TokenUsage(calls=1, not_recorded=1)
    assert json.loads(json.dumps(TokenUsage().as_dict()))["money_usd"] is None


def test_the_judge_report_shows_what_each_scored_files_verdicts_cost(tmp_path):
    from reteco.commands import main
    from reteco.judge import load_judge_config

    # judge-report refuses inputs none of which the configured (here the packaged) judge made
    signature = load_judge_config().signature
    usage = {"calls": 10, "prompt_tokens": 15000, "cached_tokens": 9000, "completion_tokens": 900,
             "calls_usage_not_recorded": 0, "money_usd": 0.0390}
    for name, run in (("new.json", {"usage_of_verdicts": usage}), ("old.json", {})):
        (tmp_path / name).write_text(json.dumps({"generation": {"judge": {
            "ran": True, "signature": signature, "model": "m", "prompt_version": 3, "per_dimension": {},
            "run": run}}}), encoding="utf-8")
    assert main(["judge-report", "--out", str(tmp_path / "report"), "--details", str(tmp_path / "new.json"),
                 str(tmp_path / "old.json")]) == 0
    # Per file in the appendix (the report's own page carries one summary row per sub-track).
    markdown = (tmp_path / "report" / "judge-report-appendix.md").read_text()
    assert "new.json | 10 | 15,000 | 9,000 | 900 | $0.0390 |" in markdown
    assert "old.json | not recorded | - | - | - | - |" in markdown
    report = json.loads((tmp_path / "report" / "judge-report.json").read_text())
    assert [f["usage"] for f in report["judgments"]["files"]] == [usage, None]
