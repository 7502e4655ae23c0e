"""What judging will cost, known before anything is sent (``reteco judge --estimate``,
``judge-submissions --estimate``, the bundle builder's judged phases).

The estimate builds every request body the run would send (``runner.build_request``: the same
prompts, the same deduplication of identical requests) and counts, without a network call:

- calls: one per distinct request (re-asks, retries and the preflight come on top: a few per
  thousand in practice);
- input tokens, by the documented ratio ``CHARS_PER_TOKEN``: each message written out as
  ``<|role|>\\ncontent\\n``, its ASCII characters / 4 (rounded up) plus one token for every other
  character (about right for English with OpenAI's tokenizers; CJK text is about one token a
  character). No tokenizer is used, so the figure is the same on every machine;
- cacheable input tokens: the part of each request's prompt that starts like an earlier request
  (the longest start shared with the first request of the same answer, the previous request of
  the same dimension or the previous request): what a prefix cache (OpenAI's automatic prompt
  caching, llama-server's, vLLM's) can reuse when requests are sent in the items' order, each
  answer's five together. Prompt version 3 puts everything but the rubric first; every version
  shares its system message across answers. OpenAI caches only prefixes of 1,024 tokens or more,
  in steps of 128 (``OPENAI_CACHE_MIN_TOKENS``): ``min_cached_tokens`` applies that rule;
- output tokens: ``EXPECTED_COMPLETION_TOKENS`` a request (a rationale of at most 60 words and the
  JSON around it), never more than the config's cap;
- money, at the config's prices (``reteco.llm.usage``), through the Batch API at its factor when
  the config uses it; none without prices. A range: from every cacheable token a cache hit (the
  cached-input price) to no cache hit at all (a provider's cache is best-effort: requests sent
  far apart, or by many workers, miss it);
- time: the calls over the config's ``concurrency``, each request taking ``LATENCY_S`` (1 to 4 s
  for a reply of about 95 tokens from a hosted model; a local server may be slower: time one with
  ``reteco judge-probe``); through the Batch API the provider's window (``BATCH_WINDOW_H``) instead.

Checked in tests/judge/test_judge_estimate.py within 25% of what the fake server counts by the
same rule; ``bench/bench_judge_cost.py`` compares it with llama-server's own usage.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reteco.judge.config import JudgeConfig
from reteco.judge.items import JudgeItem
from reteco.judge.runner import build_request
from reteco.llm.cache import canonical_json
from reteco.llm.calls import CHARS_PER_TOKEN
from reteco.llm.usage import TokenUsage

#: What a reply takes: a rationale of at most 60 words (about 80 tokens) and the JSON around it.
EXPECTED_COMPLETION_TOKENS = 95
#: Seconds one request takes, low and high (module docstring): the hours' range.
LATENCY_S = (1.0, 4.0)
#: The Batch API's completion window (OpenAI: 24 h).
BATCH_WINDOW_H = 24
OPENAI_CACHE_MIN_TOKENS = 1024
OPENAI_CACHE_STEP_TOKENS = 128
METHOD = (f"characters per token: ASCII characters / {CHARS_PER_TOKEN} plus one token per other character, "
          f"over the messages; {EXPECTED_COMPLETION_TOKENS} output tokens a request")


def text_tokens(text: str) -> int:
    """Tokens of ``text`` by the documented ratio (module docstring)."""
    ascii_chars = sum(1 for c in text if c < "\x80")
    return math.ceil(ascii_chars / CHARS_PER_TOKEN) + len(text) - ascii_chars


def prompt_of(body: dict[str, Any]) -> str:
    """A request's prompt as the estimate counts it: ``<|role|>\\ncontent\\n`` per message."""
    return "".join(f"<|{m.get('role')}|>\n{m.get('content') or ''}\n" for m in body.get("messages", []))


@dataclass(frozen=True)
class Estimate:
    """What a run would send: calls, input, cacheable input and output tokens, money (None: no
    prices) with every cacheable token a cache hit and with none, the config's concurrency, and
    how they were counted."""

    calls: int
    input_tokens: int
    cacheable_tokens: int
    output_tokens: int
    money_usd: float | None  # every cacheable token a cache hit
    batch: bool
    method: str = METHOD
    money_no_cache_usd: float | None = None  # no cache hit at all
    concurrency: int = 16

    def scaled(self, factor: float) -> Estimate:
        """The estimate for ``factor`` times as many answers alike (a phase's expected size)."""
        def times(money):
            return None if money is None else money * factor

        return Estimate(round(self.calls * factor), round(self.input_tokens * factor),
                        round(self.cacheable_tokens * factor), round(self.output_tokens * factor),
                        times(self.money_usd), self.batch, self.method, times(self.money_no_cache_usd), self.concurrency)

    def hours(self) -> tuple[float, float]:
        """(low, high) hours the calls take at the config's concurrency (``LATENCY_S``)."""
        return tuple(self.calls * s / max(self.concurrency, 1) / 3600 for s in LATENCY_S)

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        low, high = self.hours()
        return {"calls": self.calls, "input_tokens": self.input_tokens, "cacheable_input_tokens": self.cacheable_tokens,
                "output_tokens": self.output_tokens,
                "money_usd": None if self.money_usd is None else round(self.money_usd, 4),
                "money_usd_no_cache_hit": None if self.money_no_cache_usd is None else round(self.money_no_cache_usd, 4),
                "concurrency": self.concurrency, "hours": None if self.batch else [round(low, 4), round(high, 4)],
                "batch_api": self.batch, "method": self.method}

    def lines(self) -> list[str]:
        """The estimate as a person reads it."""
        batch = " (Batch API price)" if self.batch else ""
        if self.money_usd is None:
            money = "no prices in the judge config (price_per_million): tokens only"
        elif self.money_no_cache_usd is None or abs(self.money_no_cache_usd - self.money_usd) < 0.005:
            money = f"${self.money_usd:,.2f}{batch}"
        else:
            money = (f"${self.money_usd:,.2f} (every cacheable token a cache hit) to ${self.money_no_cache_usd:,.2f} "
                     f"(no cache hit){batch}")
        if self.batch:
            time = f"time: within the Batch API's window ({BATCH_WINDOW_H} h), whatever the concurrency"
        else:
            low, high = self.hours()
            time = (f"time: {low:,.1f} to {high:,.1f} hours at concurrency {self.concurrency} "
                    f"({LATENCY_S[0]:g} to {LATENCY_S[1]:g} s a request; time yours with reteco judge-probe)")
        return [
            f"calls: {self.calls:,} (plus the preflight, and re-asks or retries if any)",
            f"input tokens: {self.input_tokens:,}, of which cacheable (a shared prefix): {self.cacheable_tokens:,}",
            f"output tokens: {self.output_tokens:,}",
            f"money: {money}",
            time,
            f"method: {self.method}",
        ]


def _shared_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # a binary search over slice comparisons
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def estimate_judging(items: Sequence[JudgeItem], config: JudgeConfig, *, min_cached_tokens: int = 0) -> Estimate:
    """The estimate for judging ``items`` with ``config`` (module docstring). ``min_cached_tokens``:
    a prefix shorter than this is not cached (``OPENAI_CACHE_MIN_TOKENS`` for OpenAI, which also
    caches in steps of ``OPENAI_CACHE_STEP_TOKENS``; 0: any shared prefix, as llama-server)."""
    seen: set[str] = set()
    earlier: dict[tuple[str, str], str] = {}  # (turn, answer) -> the first prompt sent for it
    last_of: dict[str, str] = {}  # dimension -> the previous prompt asking for it
    previous = ""
    usage = TokenUsage()
    completion = min(EXPECTED_COMPLETION_TOKENS, config.max_completion_tokens)
    for item in items:
        body = build_request(item, config)
        key = canonical_json(body)
        if key in seen:
            continue  # identical requests are asked once
        seen.add(key)
        prompt = prompt_of(body)
        tokens = text_tokens(prompt)
        first = earlier.setdefault((item.key, item.answer), prompt)
        candidates = [c for c in (first, last_of.get(item.dimension, ""), previous) if c is not prompt]
        cached = text_tokens(prompt[:max((_shared_prefix(c, prompt) for c in candidates), default=0)])
        last_of[item.dimension] = previous = prompt
        if min_cached_tokens:
            cached = 0 if cached < min_cached_tokens else cached // OPENAI_CACHE_STEP_TOKENS * OPENAI_CACHE_STEP_TOKENS
        usage = usage + TokenUsage.of_call((tokens, cached, completion), batch=config.use_batch_api)
    prices = config.prices()
    uncached = replace(usage, cached_tokens=0, batch_cached_tokens=0)  # no cache hit
    return Estimate(usage.calls, usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens,
                    None if prices is None else prices.money(usage), config.use_batch_api,
                    money_no_cache_usd=None if prices is None else prices.money(uncached),
                    concurrency=config.concurrency)


def estimate_lines(estimate: Estimate, what: str) -> Iterable[str]:
    """The printed estimate, headed by what it is for."""
    yield f"estimate for {what} (nothing was sent):"
    for line in estimate.lines():
        yield f"  {line}"
