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
import concurrent.futures
import email.utils
import json
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import openai
from tqdm import tqdm

from reteco.tracks.judge.cache import (
    CachedJudgment,
    JudgeCache,
    default_cache_dir,
    now_iso,
    request_hash,
)
from reteco.tracks.judge.config import (
    JudgeConfig,
    Redactor,
    judge_available,
    public_url,
    read_api_key,
)
from reteco.tracks.judge.items import (
    ERROR,
    INVALID,
    OK,
    JudgeItem,
    JudgeOutcome,
    validate_items,
)
from reteco.tracks.judge.prompting import ReplyProblem

log = logging.getLogger("reteco.judge")

RETRYABLE_STATUS = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})
MAX_STORED_ERROR_TEXT = 2000


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
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(job.run())
    # Called from inside an event loop (a notebook, an async caller): run ours in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, job.run()).result()


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


@dataclass
class _CallResult:
    response: dict[str, Any] | None  # the parsed chat completion when ok
    call_id: int | None
    attempts: int  # HTTP requests made (0 when served from the cache)
    failure: str = ""  # why it failed, when response is None


class _Job:
    def __init__(self, items: list[JudgeItem], config: JudgeConfig, cache_dir: Path, progress: bool, retry_invalid: bool):
        self.items = items
        self.config = config
        self.cache_dir = cache_dir
        self.progress = progress
        self.retry_invalid = retry_invalid
        self.endpoint = public_url(config.resolved_base_url())
        key, _ = read_api_key(config)
        self._key = key
        self.redact = Redactor(key)
        self.abort_reason: str | None = None
        self._failed_in_a_row = 0
        self._pause_until = 0.0  # loop time before which nobody sends (a 429's Retry-After)
        self.batch_filled: set[str] = set()  # request hashes answered through a batch in this run
        self.batch_pending: dict[str, str] = {}  # request hash -> why it is still waiting

    async def run(self) -> list[JudgeOutcome]:
        # The SQLite connection and the HTTP client belong to the thread running this loop.
        cache = JudgeCache(self.cache_dir)
        client = openai.AsyncOpenAI(
            api_key=self._key,
            base_url=self.config.resolved_base_url(),
            max_retries=0,  # retries are ours: counted, logged, honouring Retry-After
            timeout=httpx2.Timeout(self.config.timeout_s),
        )
        try:
            self.cache = cache
            self.client = client
            groups = self._groups()
            if self.config.use_batch_api:
                from reteco.tracks.judge.batch import run_batches

                await run_batches(self, [g for g in groups.values() if self._needs_call(g)])
            verdicts = await self._judge_groups(list(groups.values()))
        finally:
            await client.close()
            cache.close()
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
        fresh = self._fresh(group)  # a re-judged invalid verdict must come from new calls
        messages = list(group.body["messages"])
        attempts = 0
        call_ids: list[int] = []
        made_calls = False
        problem = ""
        for ask in range(self.config.max_reasks + 1):
            body = {**group.body, "messages": messages}
            h = group.cache_key if ask == 0 else request_hash(body, self.config.prompt_version)
            result = await self._response(h, body, fresh)
            attempts += max(result.attempts, 1)
            made_calls = made_calls or result.attempts > 0 or h in self.batch_filled
            if result.response is None:
                self._count_failure(result.failure)
                if self.abort_reason and result.attempts == 0:
                    return self._not_sent()
                return _Verdict(ERROR, None, result.failure, attempts, None, cached=not made_calls)
            self._failed_in_a_row = 0
            call_ids.append(result.call_id)
            response = result.response
            fingerprint = response.get("system_fingerprint")
            choice = response["choices"][0]
            message = choice.get("message") or {}
            refusal = message.get("refusal")
            if refusal or choice.get("finish_reason") == "content_filter":
                why = f"the judge refused: {refusal}" if refusal else "the reply was withheld by the content filter"
                return self._store(group, INVALID, None, self.redact(why), attempts, fingerprint, call_ids, made_calls)
            content = message.get("content")
            try:
                if choice.get("finish_reason") == "length":
                    raise ReplyProblem("it was cut off at the token limit; keep the rationale short")
                score, rationale = self.config.prompts.parse_reply(content)
            except ReplyProblem as exc:
                problem = str(exc)
                log.debug("%s %s: unusable reply (%s), ask %d", item.key, item.dimension, problem, ask + 1)
                messages = [*messages, {"role": "assistant", "content": content or ""},
                            self.config.prompts.reask_message(problem)]
                continue
            return self._store(group, OK, score, rationale, attempts, fingerprint, call_ids, made_calls)
        asks = self.config.max_reasks + 1
        why = f"no usable reply in {asks} ask{'s' if asks > 1 else ''}; last: {problem}"
        return self._store(group, INVALID, None, why, attempts, fingerprint, call_ids, made_calls)

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

    def _count_failure(self, failure: str) -> None:
        self._failed_in_a_row += 1
        if self.abort_reason is None and self._failed_in_a_row >= self.config.abort_after_errors:
            self.abort_reason = (
                f"the run was stopped after {self._failed_in_a_row} judgments in a row failed (last: {failure})"
            )
            log.error("%s", self.abort_reason)

    # --- one request -----------------------------------------------------------------------

    async def _response(self, h: str, body: dict[str, Any], fresh: bool) -> _CallResult:
        """The response to a request: from the cache unless ``fresh``, else over HTTP.

        A response a batch of this very run brought is always used: it is already fresh.
        """
        self.cache.put_request(h, self.config.prompt_version, body)
        if not fresh or h in self.batch_filled:
            stored = self.cache.latest_call(h)
            if stored is not None:
                return _CallResult(json.loads(stored[1]), stored[0], 0)
        return await self._send(h, body)

    async def _send(self, h: str, body: dict[str, Any]) -> _CallResult:
        """POST the request, retrying transport failures; every attempt lands in the cache."""
        for attempt in range(1, self.config.max_retries + 2):
            await self._wait_for_pause()
            if self.abort_reason:
                return _CallResult(None, None, attempt - 1, f"not sent: {self.abort_reason}")
            started = now_iso()
            status: int | None = None
            retry_after: float | None = None
            fatal = False
            try:
                raw = await self.client.chat.completions.with_raw_response.create(**body)
                status = raw.status_code
                text = self.redact(raw.text)
                completion = _chat_completion(text)
                call_id = self.cache.add_call(
                    request_hash_=h, response_json=text, http_status=status,
                    system_fingerprint=completion.get("system_fingerprint"), model=completion.get("model"),
                    via="chat", endpoint=self.endpoint, started_at=started,
                )
                return _CallResult(completion, call_id, attempt)
            except openai.APIStatusError as exc:
                status = exc.status_code
                retry_after = _retry_after(exc.response.headers)
                code = _error_code(exc.body)
                kind = f"http {status}"
                detail = f"HTTP {status}: {_error_text(exc)}"
                retryable = status in RETRYABLE_STATUS or status >= 500
                if status == 429 and code == "insufficient_quota":
                    retryable, fatal = False, True
                elif status in FATAL_STATUS:
                    fatal = True
            except openai.APITimeoutError:
                kind, detail, retryable = "timeout", f"no response within {self.config.timeout_s:g} s", True
            except openai.APIConnectionError as exc:
                kind, detail, retryable = "connection", f"connection failed: {_cause(exc)}", True
            except _MalformedResponse as exc:
                kind, detail, retryable = "malformed response", f"HTTP {status} with {exc}", True
            detail = self.redact(detail) or ""
            last = attempt > self.config.max_retries
            wait = None if (last or not retryable) else self._wait_after(attempt, retry_after, status)
            self.cache.add_failure(
                request_hash_=h, attempt=attempt, kind=kind, http_status=status,
                message=detail[:MAX_STORED_ERROR_TEXT], wait_s=wait, endpoint=self.endpoint,
            )
            log.debug("attempt %d failed (%s)%s", attempt, detail, f"; waiting {wait:.2f} s" if wait else "")
            if fatal:
                self.abort_reason = self.abort_reason or f"the endpoint answered {detail}; no retry can help"
                log.error("judge stopped: %s", detail)
            if wait is None:
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                outcome = "not retried" if not retryable else f"gave up after {tries}"
                return _CallResult(None, None, attempt, f"request failed, {outcome}: {detail}")
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: the loop returns on its last attempt")

    def _wait_after(self, attempt: int, retry_after: float | None, status: int | None) -> float:
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.config.max_wait_s)
            if status == 429:
                loop_now = asyncio.get_running_loop().time()
                self._pause_until = max(self._pause_until, loop_now + wait)
            return wait
        ceiling = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2 ** (attempt - 1))
        # Jitter spreads the retries of many workers that failed at once.
        return min(ceiling * random.uniform(0.5, 1.0), self.config.max_wait_s)

    async def _wait_for_pause(self) -> None:
        loop = asyncio.get_running_loop()
        while (delay := self._pause_until - loop.time()) > 0:
            await asyncio.sleep(delay)


class _MalformedResponse(ValueError):
    """A 2xx response whose body is not a chat completion."""


def _chat_completion(text: str) -> dict[str, Any]:
    """Parse a response body; raise _MalformedResponse unless it holds a choice with a message."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise _MalformedResponse("a body that is not JSON") from None
    if not isinstance(value, dict):
        raise _MalformedResponse("a JSON body that is not an object")
    if not is_chat_completion(value):
        raise _MalformedResponse("a body without choices[0].message")
    return value


def is_chat_completion(value: Any) -> bool:
    """Whether a parsed body has what the judge reads: a first choice with a message object."""
    choices = value.get("choices") if isinstance(value, dict) else None
    return (isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict)
            and isinstance(choices[0].get("message"), dict))


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    value = headers.get("retry-after")
    if value:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
            return max(parsed.timestamp() - time.time(), 0.0)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _error_code(body: object) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return inner["code"]
    return None


def _error_text(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except (httpx2.HTTPError, RuntimeError, UnicodeDecodeError):  # unread or undecodable: the status remains
        text = ""
    text = " ".join(text.split())
    return text[:500] if text else (exc.message or "")


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return type(cause).__name__ if cause is not None else "unknown"
