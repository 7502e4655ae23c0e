"""Running the judge: cache first, then bounded-concurrency Chat Completions calls.

How one judgment ends (the documented fault behaviour):

- cached verdict (ok, or invalid unless ``retry_invalid``): returned, no HTTP call.
- 429, 408, 409, 5xx, timeout, connection error, or a 200 whose body is not a chat completion:
  retried up to ``max_retries`` times; the wait is the server's Retry-After (``retry-after-ms``
  or ``retry-after``, seconds or HTTP date) when given, else exponential backoff with jitter,
  never more than ``max_wait_s``. A 429's Retry-After pauses every worker, not just the one
  that got it. Still failing: status "error" (not cached, so the next run tries again).
- 400, 413, 422 (the request itself is refused): "error" at once, no retry.
- 401, 403, 404 or 429 with code ``insufficient_quota`` (no retry can help): "error", and
  the rest of the run is not sent (status "error", rationale says why).
- ``abort_after_errors`` judgments failing in a row: the rest is not sent either.
- reply not JSON, not matching the strict schema, score outside 1..5, empty, or cut off
  at the token cap: re-asked (the reply and what was wrong with it are sent back) up to
  ``max_reasks`` times; then status "invalid", cached, score None.
- refusal (``message.refusal`` set) or ``finish_reason`` "content_filter": "invalid" at once.

No path ever produces a score that the judge did not give.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reteco.judge.config import JudgeConfig, judge_available
from reteco.judge.items import (
    ERROR,
    INVALID,
    OK,
    JudgeItem,
    JudgeOutcome,
    validate_items,
)
from reteco.llm.cache import CachedJudgment, default_cache_dir, request_hash
from reteco.llm.calls import (
    StructuredCaller,
    StructuredRequest,
    is_chat_completion,  # noqa: F401  (re-exported: batch.py and callers read it here)
    run_coroutine,
)

log = logging.getLogger("reteco.judge")


class JudgeNotAvailable(RuntimeError):
    """run_judge was called although ``judge_available`` says the judge cannot run."""


def build_request(item: JudgeItem, config: JudgeConfig) -> dict[str, Any]:
    """The Chat Completions request body for an item's first ask (no credentials in it)."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": config.prompts.messages(item),
        "response_format": config.prompts.response_format,
        config.token_limit_param: config.max_completion_tokens,
    }
    # null in the config means "leave it to the server" (some reasoning models reject both).
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.seed is not None:
        body["seed"] = config.seed
    return body


def run_judge(
    items: Sequence[JudgeItem],
    config: JudgeConfig,
    *,
    cache_dir: Path | None = None,
    progress: bool = True,
    retry_invalid: bool = False,
) -> list[JudgeOutcome]:
    """Judge every item; one outcome per item, in the order of ``items``.

    Verdicts come from the cache (``cache_dir``, default ``default_cache_dir()``) when there;
    the rest are asked through the OpenAI SDK (Chat Completions, strict json_schema) with at
    most ``config.concurrency`` in flight, or through the Batch API when
    ``config.use_batch_api``. Identical requests are asked once. ``retry_invalid`` asks
    again the judgments cached as invalid. See this module's docstring for how each fault
    ends. Raises JudgeNotAvailable when no key or endpoint is configured (check
    ``judge_available`` first), JudgeCacheError when the cache cannot be opened, ValueError or
    TypeError on a malformed item.
    """
    items = list(items)
    validate_items(items)
    ok, why = judge_available(config)
    if not ok:
        raise JudgeNotAvailable(f"the judge cannot run: {why}")
    if not items:
        return []
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    job = _Job(items, config, directory, progress, retry_invalid)
    return run_coroutine(job.run)


@dataclass
class _Group:
    """Items sharing one first request (same data and dimension): asked once."""

    cache_key: str
    body: dict[str, Any]
    items: list[JudgeItem] = field(default_factory=list)


@dataclass
class _Verdict:
    status: str
    score: int | None
    rationale: str
    attempts: int
    system_fingerprint: str | None
    cached: bool


class _Job(StructuredCaller):
    """One run_judge call: the shared call engine plus the verdict cache, grouping and batches."""

    def __init__(self, items: list[JudgeItem], config: JudgeConfig, cache_dir: Path, progress: bool, retry_invalid: bool):
        super().__init__(config, log=log, attempts_noun="judgments", abort_prefix="the run was stopped")
        self.items = items
        self.cache_dir = cache_dir
        self.progress = progress
        self.retry_invalid = retry_invalid
        self.batch_pending: dict[str, str] = {}  # request hash -> why it is still waiting

    async def run(self) -> list[JudgeOutcome]:
        async with self.session(self.cache_dir):
            groups = self._groups()
            if self.config.use_batch_api:
                from reteco.llm.batch import run_batches

                await run_batches(self, [g for g in groups.values() if self._needs_call(g)])
            verdicts = await self._judge_groups(list(groups.values()))
        out = []
        for item in self.items:
            key = self._keys[id(item)]
            v = verdicts[key]
            out.append(JudgeOutcome(item, v.score, v.status, v.rationale, v.cached, v.attempts, v.system_fingerprint, key))
        return out

    def _groups(self) -> dict[str, _Group]:
        groups: dict[str, _Group] = {}
        self._keys: dict[int, str] = {}
        for item in self.items:
            body = build_request(item, self.config)
            key = request_hash(body, self.config.prompt_version)
            groups.setdefault(key, _Group(key, body)).items.append(item)
            self._keys[id(item)] = key
        return groups

    def _usable_judgment(self, group: _Group) -> CachedJudgment | None:
        """The cached verdict to return as is: ok, or invalid unless invalid ones are retried."""
        stored = self.cache.judgment(group.cache_key)
        if stored is None or (stored.status == INVALID and self.retry_invalid):
            return None
        return stored

    def _fresh(self, group: _Group) -> bool:
        """Whether the group's calls must bypass stored responses: an invalid verdict retried."""
        return self.retry_invalid and self.cache.judgment(group.cache_key) is not None

    def _needs_call(self, group: _Group) -> bool:
        """Whether the group's first request has neither a verdict nor a stored response to use."""
        if self._usable_judgment(group) is not None:
            return False
        return self._fresh(group) or self.cache.latest_call(group.cache_key) is None

    async def _judge_groups(self, groups: list[_Group]) -> dict[str, _Verdict]:
        semaphore = asyncio.Semaphore(self.config.concurrency)
        verdicts: dict[str, _Verdict] = {}
        not_ok = {INVALID: 0, ERROR: 0}  # shown beside the bar, so trouble is visible while it runs
        bar = tqdm(
            total=len(self.items), disable=not self.progress, unit="judgment", desc=f"judge {self.config.model}",
            dynamic_ncols=True,
        )

        async def one(group: _Group) -> None:
            stored = self._usable_judgment(group)
            if stored is not None:
                verdict = _Verdict(stored.status, stored.score, stored.rationale, stored.attempts,
                                   stored.system_fingerprint, cached=True)
            else:
                async with semaphore:
                    verdict = await self._judge(group)
            verdicts[group.cache_key] = verdict
            if verdict.status != OK:
                not_ok[verdict.status] += len(group.items)
                bar.set_postfix(not_ok, refresh=False)
            bar.update(len(group.items))

        try:
            tasks = [asyncio.create_task(one(g)) for g in groups]
            await asyncio.gather(*tasks)
        finally:
            bar.close()
        return verdicts

    # --- one judgment ----------------------------------------------------------------------

    async def _judge(self, group: _Group) -> _Verdict:
        item = group.items[0]
        if group.cache_key in self.batch_pending:
            return _Verdict(ERROR, None, self.batch_pending[group.cache_key], 0, None, cached=False)
        if self.abort_reason:
            return self._not_sent()
        request = StructuredRequest(
            body=group.body, validate=self.config.prompts.parse_reply, reask=self.config.prompts.reask_message,
            cache_version=self.config.prompt_version, label=f"{item.key} {item.dimension}",
        )
        # A re-judged invalid verdict must come from new calls.
        reply = await self.ask(request, fresh=self._fresh(group), cache_key=group.cache_key)
        attempts = sum(max(a, 1) for a in reply.ask_attempts)  # an ask answered from the cache counts 1
        made_calls = any(a > 0 or h in self.batch_filled for a, h in zip(reply.ask_attempts, reply.request_hashes))
        fingerprint = reply.system_fingerprint
        if reply.status == ERROR:
            if self.abort_reason and reply.not_sent:
                return self._not_sent()
            return _Verdict(ERROR, None, reply.detail, attempts, None, cached=not made_calls)
        if reply.status == INVALID and (reply.refusal or reply.filtered):
            why = f"the judge refused: {reply.refusal}" if reply.refusal else "the reply was withheld by the content filter"
            return self._store(group, INVALID, None, self.redact(why), attempts, fingerprint, reply.call_ids, made_calls)
        if reply.status == INVALID:
            return self._store(group, INVALID, None, reply.detail, attempts, fingerprint, reply.call_ids, made_calls)
        score, rationale = reply.value
        return self._store(group, OK, score, rationale, attempts, fingerprint, reply.call_ids, made_calls)

    def _store(self, group: _Group, status: str, score: int | None, rationale: str, attempts: int,
               fingerprint: str | None, call_ids: list[int], made_calls: bool) -> _Verdict:
        rationale = self.redact(rationale) or ""
        item = group.items[0]
        self.cache.put_judgment(
            cache_key=group.cache_key, topic_key=item.key, dimension=item.dimension,
            prompt_version=self.config.prompt_version, signature=self.config.signature, model=self.config.model,
            status=status, score=score, rationale=rationale, attempts=attempts, system_fingerprint=fingerprint,
            call_ids=call_ids,
        )
        return _Verdict(status, score, rationale, attempts, fingerprint, cached=not made_calls)

    def _not_sent(self) -> _Verdict:
        return _Verdict(ERROR, None, f"not sent: {self.abort_reason}", 0, None, cached=True)
