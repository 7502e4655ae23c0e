"""Running the judge: cache first, then bounded-concurrency Chat Completions calls.

How one judgment ends (the documented fault behaviour; the call loop is
``reteco.llm.calls.StructuredCaller``):

- cached verdict (ok, or invalid unless ``retry_invalid``) of the same request to the same
  endpoint: returned, no HTTP call.
- being judged by another process sharing the cache (its claim, ``reteco.llm.cache``): waited
  for, and its verdict returned, no HTTP call; taken over when that process gave up or died.
  Waiting longer than the cache's claim wait raises JudgeCacheBusy naming the holder; the
  deadline ends the wait as "error". A verdict this run gets is stored unless one was stored
  first, and the outcome is always the stored one (first verdict wins).
- 429, 408, 409, 5xx, timeout, connection error, or a 200 whose body is not a chat completion:
  retried up to ``max_retries`` times; the wait is the server's Retry-After (``retry-after-ms``
  or ``retry-after``, seconds or HTTP date) when given, else exponential backoff with jitter,
  never more than ``max_wait_s``. A 429's Retry-After pauses every worker, not just the one
  that got it. Still failing: status "error" (not cached, so the next run tries again).
- any other 4xx (400, 413, 422 ...), or a 500 saying that a named parameter is invalid: the
  request itself is refused: "error" at once, no retry, the parameter and the setting to
  change named.
- 401, 403, 404 or 429 with code ``insufficient_quota`` (no retry can help): "error", and
  the rest of the run is not sent (status "error", rationale says why).
- ``abort_after_errors`` judgments failing in a row: the rest is not sent either.
- the preflight (one tiny request before the first judgment, shaped like the judgments'
  requests) refused or failing: nothing else is sent; every judgment that needed a call ends
  "error" with "not sent: the preflight request ... failed: ..." (``stats.calls.preflight`` is
  "failed"). Cached verdicts are still returned. The preflight goes before the run's first claim,
  so a run stopped there (or by its deadline or budget) claims no judgment in the cache.
- the deadline or the call budget (``run_judge``'s ``deadline`` and ``max_calls``, the config's
  ``max_calls_per_run``) reached: no further request; unfinished judgments end "error" with
  "deadline reached" or "call budget reached (N HTTP requests)" in the rationale.
- reply not JSON, not matching the schema, score outside 1..5, empty, or cut off at the token
  cap: re-asked (the reply and what was wrong with it are sent back) up to ``max_reasks``
  times; then status "invalid", cached, score None. The check is the same whatever the
  ``response_format`` mode (strict ``json_schema``, or ``json_object`` / ``none`` with the
  schema written into the system message).
- refusal (``message.refusal`` set) or ``finish_reason`` "content_filter": "invalid" at once.

No path ever produces a score that the judge did not give. Each outcome records the endpoint
and the model the server reported; when a reported model differs from the configured one, the
run logs one warning with the counts.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reteco.judge.config import JudgeConfig, judge_available
from reteco.judge.items import ERROR, INVALID, OK, JudgeItem, JudgeOutcome, validate_items, verdicts_usage
from reteco.judge.provenance import judge_provenance, model_mismatch_warning
from reteco.llm.cache import CLAIMED, JUDGED, CachedJudgment, JudgeCacheError, default_cache_dir, request_hash
from reteco.llm.calls import DEADLINE_MARGIN_S, CallStats, StructuredCaller, StructuredRequest, run_coroutine
from reteco.llm.compatibility import shape_request
from reteco.llm.usage import Prices, TokenUsage

log = logging.getLogger("reteco.judge")


class JudgeNotAvailable(RuntimeError):
    """run_judge was called although ``judge_available`` says the judge cannot run."""


def build_request(item: JudgeItem, config: JudgeConfig) -> dict[str, Any]:
    """The Chat Completions request body for an item's first ask (no credentials in it), in
    the config's ``response_format`` mode (``reteco.llm.compatibility.shape_request``)."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": config.prompts.messages(item),
        "response_format": config.prompts.response_format,
        **config.decoding(),  # null leaves a parameter to the server (reasoning models refuse temperature)
    }
    return shape_request(body, config.response_format)


@dataclass(frozen=True)
class JudgeRunStats:
    """What one ``run_judge`` call did, counted over the outcomes (items) and the requests."""

    judgments: int  # outcomes returned (one per item)
    judged: int  # outcomes with a verdict (ok or invalid)
    judged_now: int  # ... made with requests of this run
    from_cache: int  # outcomes answered without any HTTP request in this run
    unfinished: int  # outcomes with status "error" (the next run tries them again)
    calls: CallStats  # HTTP requests made, preflight, why requests stopped, the budget
    provenance: dict[str, Any]  # endpoint, configured and reported models, fingerprints (counts)
    verdicts_usage: TokenUsage = TokenUsage()  # what the verdicts cost, whichever run paid (items.verdicts_usage)
    prices: Prices | None = None  # the config's prices (None: tokens only)

    @property
    def http_requests(self) -> int:
        return self.calls.http_requests

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        return {
            "judgments": self.judgments, "judged": self.judged, "judged_now": self.judged_now,
            "from_cache": self.from_cache, "unfinished": self.unfinished,
            "http_requests": self.calls.http_requests, "max_calls": self.calls.max_calls,
            "max_tokens": self.calls.max_tokens, "tokens": self.calls.tokens,
            "preflight": self.calls.preflight, "preflight_detail": self.calls.preflight_detail,
            "stopped": self.calls.stopped,
            # Tokens: what this run's calls used (preflight and re-asks included), and what the
            # verdicts returned cost, whichever run paid for them (reteco.llm.usage).
            "usage_this_run": self.calls.usage.as_dict(self.prices),
            "usage_of_verdicts": self.verdicts_usage.as_dict(self.prices),
            **self.provenance,
        }


class JudgeOutcomes(list):
    """``run_judge``'s result: the outcomes in the items' order (a list of JudgeOutcome), and
    the run's figures in ``stats``."""

    def __init__(self, outcomes: Sequence[JudgeOutcome], stats: JudgeRunStats):
        super().__init__(outcomes)
        self.stats = stats


def run_judge(
    items: Sequence[JudgeItem],
    config: JudgeConfig,
    *,
    cache_dir: Path | None = None,
    progress: bool = True,
    retry_invalid: bool = False,
    deadline: float | None = None,
    max_calls: int | None = None,
    deadline_margin_s: float = DEADLINE_MARGIN_S,
) -> JudgeOutcomes:
    """Judge every item; one outcome per item, in the order of ``items``, with the run's figures
    in ``.stats`` (``JudgeRunStats``: judged, from the cache, HTTP requests, preflight).

    Verdicts come from the cache (``cache_dir``, default ``default_cache_dir()``) when there;
    the rest are asked through the OpenAI SDK (Chat Completions) with at most
    ``config.concurrency`` in flight, or through the Batch API when ``config.use_batch_api``.
    Identical requests are asked once. ``retry_invalid`` asks again the judgments cached as
    invalid. ``deadline`` (a ``time.monotonic()`` value): no request starts after ``deadline -
    deadline_margin_s`` and none runs past ``deadline``; ``max_calls``: at most this many HTTP
    requests (the smaller of it and ``config.max_calls_per_run``); what they leave unfinished
    ends "error" with the reason. See this module's docstring for how each fault ends. Raises
    JudgeNotAvailable when no key or endpoint is configured (check ``judge_available`` first),
    JudgeCacheError when the cache cannot be opened, ValueError or TypeError on a malformed item
    or on limits with the Batch API (a batch cannot keep a deadline).
    """
    items = list(items)
    validate_items(items, config.prompts.dimension_names)
    ok, why = judge_available(config)
    if not ok:
        raise JudgeNotAvailable(f"the judge cannot run: {why}")
    limited = deadline is not None or max_calls is not None or config.max_calls_per_run is not None
    if config.use_batch_api and (limited or config.max_tokens_per_run is not None):
        raise ValueError("a deadline, a call budget or a token budget cannot be kept with the Batch API (use_batch_api)")
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    job = _Job(items, config, directory, progress, retry_invalid, deadline, max_calls, deadline_margin_s)
    if not items:
        return JudgeOutcomes([], job.run_stats([]))
    return run_coroutine(job.run)


@dataclass
class _Group:
    """Items sharing one first request (same data and dimension): asked once."""

    cache_key: str
    legacy_key: str  # the key of caches written before the endpoint was part of it
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
    reported_model: str | None = None
    usage: TokenUsage | None = None


class _Job(StructuredCaller):
    """One run_judge call: the shared call engine plus the verdict cache, grouping and batches."""

    def __init__(self, items: list[JudgeItem], config: JudgeConfig, cache_dir: Path, progress: bool, retry_invalid: bool,
                 deadline: float | None, max_calls: int | None, deadline_margin_s: float):
        super().__init__(config, log=log, attempts_noun="judgments", abort_prefix="the run was stopped",
                         deadline=deadline, max_calls=max_calls, deadline_margin_s=deadline_margin_s)
        self.items = items
        self.cache_dir = cache_dir
        self.progress = progress
        self.retry_invalid = retry_invalid
        self.batch_pending: dict[str, str] = {}  # request hash -> why it is still waiting

    async def run(self) -> JudgeOutcomes:
        async with self.session(self.cache_dir):
            renewing = asyncio.create_task(self._renew_claims())
            try:
                groups = self._groups()
                if self.config.use_batch_api:
                    from reteco.llm.batch import run_batches

                    needing = [g for g in groups.values() if self._needs_call(g)]
                    # The preflight goes before a batch is paid for: a refused parameter fails once
                    # (queued requests: once for the phase's job, by send_queued_batches).
                    if needing and (self.config.batch_queue_only or await self.ensure_preflight(needing[0].body)):
                        await run_batches(self, needing)
                verdicts = await self._judge_groups(list(groups.values()))
            finally:
                renewing.cancel()
        out = []
        for item in self.items:
            key = self._keys[id(item)]
            v = verdicts[key]
            out.append(JudgeOutcome(item, v.score, v.status, v.rationale, v.cached, v.attempts, v.system_fingerprint,
                                    key, reported_model=v.reported_model, endpoint=self.endpoint, usage=v.usage))
        stats = self.run_stats(out)
        warning = model_mismatch_warning(stats.provenance)
        if warning:
            log.warning("%s", warning)  # once per run, with the counts
        return JudgeOutcomes(out, stats)

    def run_stats(self, outcomes: list[JudgeOutcome]) -> JudgeRunStats:
        statuses = Counter(o.status for o in outcomes)
        judged = statuses[OK] + statuses[INVALID]
        judged_now = sum(1 for o in outcomes if o.status != ERROR and not o.cached)
        return JudgeRunStats(
            judgments=len(outcomes), judged=judged, judged_now=judged_now,
            from_cache=sum(1 for o in outcomes if o.cached and o.status != ERROR),
            unfinished=statuses[ERROR], calls=self.stats(), provenance=judge_provenance(outcomes, self.config),
            verdicts_usage=verdicts_usage(outcomes), prices=self.config.prices(),
        )

    def _groups(self) -> dict[str, _Group]:
        groups: dict[str, _Group] = {}
        self._keys: dict[int, str] = {}
        for item in self.items:
            body = build_request(item, self.config)
            key = self.key(body, self.config.prompt_version)
            if key not in groups:
                groups[key] = _Group(key, request_hash(body, self.config.prompt_version), body)
            groups[key].items.append(item)
            self._keys[id(item)] = key
        return groups

    def _stored(self, group: _Group) -> CachedJudgment | None:
        """The group's stored verdict: under its key, else under its pre-endpoint key when every
        call that made it came from this endpoint (``JudgeCache.legacy_judgment``)."""
        return self.cache.judgment(group.cache_key) or self.cache.legacy_judgment(group.legacy_key, self.endpoint)

    def _usable_judgment(self, group: _Group) -> CachedJudgment | None:
        """The cached verdict to return as is: ok, or invalid unless invalid ones are retried."""
        stored = self._stored(group)
        if stored is None or (stored.status == INVALID and self.retry_invalid):
            return None
        return stored

    def _fresh(self, group: _Group) -> bool:
        """Whether the group's calls must bypass stored responses: an invalid verdict retried."""
        return self.retry_invalid and self._stored(group) is not None

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
            verdict = await self._claimed_verdict(group, semaphore)
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

    async def _renew_claims(self) -> None:
        """Renew this run's claims while it works, so that only a dead run's claims expire."""
        while True:
            await asyncio.sleep(self.cache.lease_s / 4)
            try:
                self.cache.renew_claims()
            except JudgeCacheError:
                pass  # the cache is locked for now: the next renewal comes well within the lease

    async def _claimed_verdict(self, group: _Group, semaphore: asyncio.Semaphore) -> _Verdict:
        """The group's verdict, paid for at most once across every process sharing the cache.

        A verdict held is returned. Else, once the run's preflight has passed (``_asks``), the
        judgment is claimed in the cache before its request is sent (``JudgeCache.claim``); a
        judgment claimed by another live process is waited for (the cache polled, outside the
        concurrency limit) and its verdict returned, or claimed here when that process gave it
        up or died (its lease expired). Waiting longer than the cache's ``claim_wait_s`` raises
        JudgeCacheBusy naming the holder; the deadline ends the wait as an unfinished judgment.
        """
        first = self._stored(group)
        # retry_invalid re-judges the invalid verdict read now, and only it (compare-and-swap).
        replacing = first.version if first is not None and first.status == INVALID and self.retry_invalid else None
        if self._asks(group, first, replacing):
            await self.ensure_preflight(group.body)  # once per run, before its first claim
        waiting_since: float | None = None
        while True:
            stored = first if waiting_since is None else self._stored(group)
            if stored is not None and (replacing is None or stored.version != replacing):
                return _Verdict(stored.status, stored.score, stored.rationale, stored.attempts,
                                stored.system_fingerprint, cached=True, reported_model=stored.reported_model,
                                usage=stored.usage)
            holder = self.cache.claim_holder(group.cache_key)
            if holder is None:
                if self.abort_reason and self._asks(group, self._stored(group), replacing):
                    return self._not_sent()  # a stopped run claims nothing it could not ask for
                async with semaphore:
                    state, holder = self.cache.claim(group.cache_key, replacing=replacing)
                    if state == CLAIMED:
                        try:
                            return await self._judge(group, replacing)
                        finally:
                            self.cache.release(group.cache_key)
                if state == JUDGED:
                    waiting_since = waiting_since or time.monotonic()
                    continue
            now = time.monotonic()
            waiting_since = waiting_since or now
            if now - waiting_since > self.cache.claim_wait_s:
                raise self.cache.claim_timeout(group.cache_key, holder)
            cut = self._cut()
            if cut is not None and now >= cut:
                return _Verdict(ERROR, None, f"deadline reached while another process ({holder}) judged it", 0, None,
                                cached=True)
            await asyncio.sleep(random.uniform(0.05, 0.25))

    def _asks(self, group: _Group, stored: CachedJudgment | None, replacing: str | None) -> bool:
        """Whether judging the group starts with an HTTP request: no verdict to return (``stored``,
        unless it is the invalid one being replaced), no stored reply to its first request to
        replay, not waiting for a batch, and no other process holding its claim.

        Such a judgment is claimed only once the run's preflight has passed, and not at all once
        the run is stopped (its preflight refused or failing, its deadline or budget reached,
        failures in a row): each claim and its release are write transactions of the cache,
        fsync'd in the scoring program's archive, and a run stopped at its preflight would
        otherwise claim and release every judgment, on the platform's clock, for nothing.
        """
        if stored is not None and (replacing is None or stored.version != replacing):
            return False
        if group.cache_key in self.batch_pending or self.cache.claim_holder(group.cache_key) is not None:
            return False
        return replacing is not None or self.cache.latest_call(group.cache_key) is None

    # --- one judgment ----------------------------------------------------------------------

    async def _judge(self, group: _Group, replacing: str | None = None) -> _Verdict:
        item = group.items[0]
        if group.cache_key in self.batch_pending:
            return _Verdict(ERROR, None, self.batch_pending[group.cache_key], 0, None, cached=False)
        if self.abort_reason:
            return self._not_sent()
        request = StructuredRequest(
            body=group.body, validate=self.config.prompts.parse_reply, reask=self.config.prompts.reask_message,
            cache_version=self.config.prompt_version, label=f"{item.key} {item.dimension}",
        )
        # A re-judged invalid verdict (``replacing``, read once by _claimed_verdict) must come from new calls.
        reply = await self.ask(request, fresh=replacing is not None, cache_key=group.cache_key)
        attempts = sum(max(a, 1) for a in reply.ask_attempts)  # an ask answered from the cache counts 1
        made_calls = any(a > 0 or h in self.batch_filled for a, h in zip(reply.ask_attempts, reply.request_hashes))
        fingerprint = reply.system_fingerprint
        if reply.status == ERROR:
            if self.abort_reason and reply.not_sent and not made_calls:
                return self._not_sent()
            return _Verdict(ERROR, None, reply.detail, attempts, None, cached=not made_calls)
        if reply.status == INVALID and (reply.refusal or reply.filtered):
            why = f"the judge refused: {reply.refusal}" if reply.refusal else "the reply was withheld by the content filter"
            reply.detail = self.redact(why) or ""
        value = reply.value if reply.status == OK else (None, reply.detail)
        score, rationale = value
        rationale = self.redact(rationale) or ""
        # What the cache holds afterwards is the outcome: another process's verdict, when it
        # stored one first (an import, a run whose claim had expired), so every output agrees.
        held = self.cache.put_judgment(
            cache_key=group.cache_key, topic_key=item.key, dimension=item.dimension,
            prompt_version=self.config.prompt_version, signature=self.config.signature, model=self.config.model,
            status=reply.status, score=score, rationale=rationale, attempts=attempts, system_fingerprint=fingerprint,
            call_ids=reply.call_ids, replacing=replacing,
        )
        return _Verdict(held.status, held.score, held.rationale, held.attempts, held.system_fingerprint,
                        cached=not made_calls, reported_model=held.reported_model, usage=held.usage)

    def _not_sent(self) -> _Verdict:
        return _Verdict(ERROR, None, f"not sent: {self.abort_reason}", 0, None, cached=True)
