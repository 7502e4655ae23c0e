"""A run's deadline, call budget and token budget (``run_judge(deadline=..., max_calls=...)``,
``max_calls_per_run``, ``max_tokens_per_run``), against a fake server with real latency: the Codabench scoring program
judges inside a 600 s limit on this API."""

from __future__ import annotations

import dataclasses
import time

import openai  # noqa: F401  (imported before the clock starts: the first run's import takes ~0.7 s)
import pytest
from support.fake_openai_server import FakeOpenAI, rate_limited

from reteco.judge import JudgeItem, run_judge
from reteco.llm.calls import StructuredCaller

ITEMS = [JudgeItem(f"law/{i}_turn_1", "relevance", f"question {i}", "", f"answer {i}", (), "") for i in range(10)]


def judge(config, tmp_path, items=ITEMS, **kwargs):
    return run_judge(items, config, cache_dir=tmp_path / "cache", progress=False, **kwargs)


@pytest.fixture
def slow_server(judge_config):
    server = FakeOpenAI(latency_s=0.25)
    server.start()
    try:
        yield server, dataclasses.replace(judge_config, base_url=server.base_url, concurrency=1)
    finally:
        server.stop()


@pytest.mark.slow
def test_no_request_starts_after_the_deadline_minus_the_margin(slow_server, tmp_path, monkeypatch):
    """The margin is the runner's rule, so it is checked on the runner's clock: the moment it
    commits to a request (``StructuredCaller._timeout``, called right after ``_limit`` let it go).
    The server's arrival stamps came a scheduling delay later: 5 ms past the boundary once under
    load, and the first request 1.7 s after the start with six test runs beside it, so the sizes
    leave room: 20 items at 0.25 s each (5 s of work) against 2.5 s before the boundary."""
    server, config = slow_server
    committed: list[float] = []
    original = StructuredCaller._timeout

    def recording(self):
        committed.append(time.monotonic())
        return original(self)

    monkeypatch.setattr(StructuredCaller, "_timeout", recording)
    items = [JudgeItem(f"law/{i}_turn_1", "relevance", f"question {i}", "", f"answer {i}", (), "") for i in range(20)]
    start = time.monotonic()
    deadline, margin = start + 3.0, 0.5
    outcomes = judge(config, tmp_path, items, deadline=deadline, deadline_margin_s=margin)
    ended = time.monotonic()
    assert committed and max(committed) < deadline - margin
    assert len(committed) == len(server.preflight_requests + server.chat_requests)  # each one reached the server
    # Not the 5 s the work would take: the last request started before 2.5 s ends by 2.75 s or
    # is cut at the deadline (the slack is for the machine, not for the runner).
    assert ended < deadline + 1.0
    done = [o for o in outcomes if o.status == "ok"]
    left = [o for o in outcomes if o.status == "error"]
    assert 1 <= len(done) <= 10 and len(left) >= 10 and len(done) + len(left) == len(items)
    assert all(o.rationale in ("not sent: deadline reached",) or o.rationale.startswith("deadline reached") for o in left)
    stats = outcomes.stats
    assert (stats.judged, stats.judged_now, stats.unfinished, stats.from_cache) == (len(done), len(done), len(left), 0)
    assert stats.http_requests == server.all_chat_calls and stats.calls.stopped == "deadline reached"
    # The next run (no deadline) finishes only what was left, from the cache for the rest.
    again = judge(config, tmp_path, items)
    assert all(o.status == "ok" for o in again)
    assert again.stats.from_cache == len(done) and again.stats.judged_now == len(left)


def test_a_request_in_flight_at_the_deadline_is_cut_there(judge_config, tmp_path):
    server = FakeOpenAI(latency_s=3.0)
    server.start()
    try:
        config = dataclasses.replace(judge_config, base_url=server.base_url, timeout_s=60.0)
        start = time.monotonic()
        outcomes = judge(config, tmp_path, ITEMS[:2], deadline=start + 0.8, deadline_margin_s=0.1)
        elapsed = time.monotonic() - start
    finally:
        server.stop()
    assert elapsed < 1.3  # not the 3 s the server takes, nor the 60 s timeout
    assert outcomes.stats.calls.preflight == "not sent" and server.chat_calls == 0
    assert all(o.status == "error" and "deadline reached" in o.rationale for o in outcomes)


def test_a_retry_whose_wait_ends_past_the_deadline_is_not_made(fake_openai, judge_config, tmp_path):
    fake_openai.script.append(rate_limited("30"))
    start = time.monotonic()
    (o,) = judge(judge_config, tmp_path, ITEMS[:1], deadline=start + 5.0)
    assert time.monotonic() - start < 2.0  # it did not wait the 30 s
    assert o.status == "error" and o.rationale.startswith("deadline reached: not retried after 1 attempt (last: HTTP 429")
    assert fake_openai.chat_calls == 1


def test_no_more_http_requests_than_the_budget(fake_openai, judge_config, tmp_path):
    config = dataclasses.replace(judge_config, concurrency=3)
    outcomes = judge(config, tmp_path, ITEMS[:6], max_calls=3)
    assert fake_openai.all_chat_calls == 3 == outcomes.stats.http_requests  # the preflight counts
    statuses = [o.status for o in outcomes]
    assert statuses.count("ok") == 2 and statuses.count("error") == 4
    reason = "call budget reached (3 HTTP requests)"
    assert all(o.rationale == f"not sent: {reason}" and o.attempts == 0 for o in outcomes if o.status == "error")
    assert outcomes.stats.calls.stopped == reason and outcomes.stats.calls.max_calls == 3


def test_retries_and_reasks_count_against_the_budget(fake_openai, judge_config, tmp_path):
    from support.fake_openai_server import completion, http_error

    fake_openai.script.extend([http_error(503), completion("not json")])
    config = dataclasses.replace(judge_config, concurrency=1)
    (o,) = judge(config, tmp_path, ITEMS[:1], max_calls=3)  # preflight, 503, the unusable reply
    assert fake_openai.all_chat_calls == 3
    assert o.status == "error" and o.rationale == "not sent: call budget reached (3 HTTP requests)"


def test_the_config_budget_and_the_callers_the_smaller_counts(fake_openai, judge_config, tmp_path):
    config = dataclasses.replace(judge_config, max_calls_per_run=2, concurrency=1)
    outcomes = judge(config, tmp_path, ITEMS[:4], max_calls=5)
    assert fake_openai.all_chat_calls == 2 and outcomes.stats.calls.max_calls == 2
    assert [o.status for o in outcomes].count("ok") == 1


def test_a_budget_of_zero_answers_from_the_cache_only(fake_openai, judge_config, tmp_path):
    judge(judge_config, tmp_path, ITEMS[:2])
    calls = fake_openai.all_chat_calls
    outcomes = judge(judge_config, tmp_path, ITEMS[:4], max_calls=0)
    assert fake_openai.all_chat_calls == calls  # not even a preflight
    assert [(o.status, o.cached) for o in outcomes] == [("ok", True)] * 2 + [("error", True)] * 2
    assert outcomes[3].rationale == "not sent: call budget reached (0 HTTP requests)"
    assert (outcomes.stats.from_cache, outcomes.stats.unfinished, outcomes.stats.http_requests) == (2, 2, 0)


def test_limits_cannot_be_kept_with_the_batch_api(judge_config, tmp_path):
    config = dataclasses.replace(judge_config, use_batch_api=True)
    with pytest.raises(ValueError, match="Batch API"):
        judge(config, tmp_path, deadline=time.monotonic() + 60)
    with pytest.raises(ValueError, match="Batch API"):
        judge(dataclasses.replace(config, max_calls_per_run=5), tmp_path)
    with pytest.raises(ValueError, match="token budget cannot be kept with the Batch API"):
        judge(dataclasses.replace(config, max_tokens_per_run=50_000), tmp_path)


# ---------------------------------------------------------------------------------------------
# The token budget (``max_tokens_per_run``): estimated before sending, the reported usage after


def long_items(text: str, n: int = 10) -> list[JudgeItem]:
    return [JudgeItem(f"law/{i}_turn_1", "relevance", f"question {i}", "", f"{i} {text}", (), "") for i in range(n)]


def test_the_token_budget_counts_a_cjk_character_as_a_token_and_four_ascii_ones_as_one(fake_openai, judge_config,
                                                                                       tmp_path):
    # 32,000 characters: as ASCII about 8,000 tokens with the prompt and the cap, within 20,000;
    # as CJK 32,000 tokens at least, past it: the request is not sent (the documented ratio).
    config = dataclasses.replace(judge_config, max_tokens_per_run=20_000, concurrency=1)
    ascii_run = judge(config, tmp_path / "ascii", long_items("x" * 32_000, 3))
    assert [o.status for o in ascii_run] == ["ok"] * 3
    calls = fake_openai.all_chat_calls
    cjk_run = judge(config, tmp_path / "cjk", long_items("\u5b57" * 32_000, 3))
    assert fake_openai.all_chat_calls == calls + 1  # the preflight only
    reason = "token budget reached (20000 tokens)"
    assert all(o.status == "error" and o.rationale == f"not sent: {reason}" for o in cjk_run)
    assert cjk_run.stats.calls.stopped == reason and cjk_run.stats.calls.max_tokens == 20_000


def test_the_usage_the_server_reports_replaces_the_estimate(fake_openai, judge_config, tmp_path):
    # Each request is estimated at ~1,500 tokens (4,000 ASCII characters, the prompt, a cap of
    # 400): kept, the estimates would pass 6,000 by the fourth request. The fake server reports
    # 12 + 5 tokens for the preflight and 100 + 20 for each judgment, which is what counts.
    config = dataclasses.replace(judge_config, max_tokens_per_run=6_000, concurrency=1)
    outcomes = judge(config, tmp_path, long_items("y" * 4_000))
    assert [o.status for o in outcomes] == ["ok"] * 10
    assert outcomes.stats.calls.tokens == 12 + 5 + 10 * (100 + 20)


def test_without_reported_usage_the_estimate_counts_and_the_run_stops_within_the_budget(fake_openai, judge_config,
                                                                                        tmp_path):
    from support.fake_openai_server import fake_judge

    def no_usage(body):
        reply = fake_judge(body)
        reply.body.pop("usage")
        return reply

    fake_openai.judge = no_usage
    config = dataclasses.replace(judge_config, max_tokens_per_run=6_000, concurrency=3)
    outcomes = judge(config, tmp_path, long_items("y" * 4_000))
    statuses = [o.status for o in outcomes]
    assert 1 <= statuses.count("ok") < 10 and statuses.count("ok") + statuses.count("error") == 10
    assert fake_openai.chat_calls == statuses.count("ok")  # no request past the budget was sent
    assert outcomes.stats.calls.stopped == "token budget reached (6000 tokens)"
    assert outcomes.stats.calls.tokens <= 6_000
