"""Structured Chat Completions calls: the one call loop of the generation judge and its users.

Why one module: one call engine. ``StructuredCaller`` carries out the fault
behaviour below (cache replay, retries and their waits, re-asks, the preflight, the deadline,
the call and token budgets) over state that every request of a run shares (the pause after a
429, the budgets, the failures in a row); the request, reply and statistics records and the
readers of HTTP errors are its vocabulary and serve nothing else.

A caller prepares ``StructuredRequest`` s (the first request body: model, messages, strict
json_schema response format, decoding settings; a validator turning a reply's content into a
value or raising ``ReplyProblem``; the builder of the re-ask message) and gets one
``StructuredReply`` per request: status ok / invalid / error, the parsed value, the raw reply
text, the attempts, the system fingerprint, the cache key and whether it came from the cache.
``run_structured_calls`` runs a list of them; ``StructuredCaller`` is the async engine behind
it, on which the judge's ``run_judge`` (which adds its verdict cache and the Batch API) builds.

How one request ends (the documented fault behaviour):

- a response already in the cache (``JudgeCache``) for the same request body: replayed, no
  HTTP call, unless the caller asks for fresh calls (a retried invalid verdict);
- 429, 408, 409, 5xx, timeout, connection error, or a 200 whose body is not a chat completion:
  retried up to ``max_retries`` times; the wait is the server's Retry-After (``retry-after-ms``
  or ``retry-after``, seconds or HTTP date) when given, else exponential backoff with jitter,
  never more than ``max_wait_s``. A 429's Retry-After pauses every worker, not just the one
  that got it. Still failing: status "error" (nothing cached as a verdict).
- any other 4xx (400, 413, 422 ...: the request itself is refused), and a 500 whose body names
  a request parameter and says the input is invalid (llama-cpp-python's validation errors):
  "error" at once, no retry; when the server names the parameter, the detail names it and the
  config setting to change (``reteco.llm.compatibility``).
- 401, 403, 404 or 429 with code ``insufficient_quota``: "error", and the rest of the run is
  not sent ("not sent: ..."); ``abort_after_errors`` failures in a row stop the run too.

Before its first HTTP request, a run sends one **preflight**: a tiny request shaped like the
run's own (``compatibility.preflight_body``). When the server refuses it (or cannot be reached
after the retries, or answers 401/403/404), nothing else is sent: every request that needed a
call ends "error" ("not sent: ...", the parameter and the setting to change named), and
``run_structured_calls`` raises ``EndpointRefused``. A reply that uses more tokens than the cap
is a warning: the server seems to ignore the cap's parameter.

Limits of one run (``deadline``, a ``time.monotonic()`` value, and ``max_calls`` together with
the config's ``max_calls_per_run``): no request starts later than ``deadline -
deadline_margin_s``, each request's timeout is cut so that it ends by the deadline, a retry
whose wait would end past it is not made, and no more than the budget's HTTP requests are made
(the preflight, retries and re-asks count; replies already in the cache do not). The config's
``max_tokens_per_run`` caps tokens the same way: each request counts, before it is sent, its
estimated prompt (``estimated_tokens``: ASCII characters of the body / ``CHARS_PER_TOKEN``, every
other character one token) plus its completion cap, and once answered the usage the server
reports instead (when it reports one); a request that would take the count past the budget is
not sent, nor any after it. A request not sent for a limit ends "error" with the reason
("deadline reached", "call budget reached (N HTTP requests)", "token budget reached (N
tokens)"); nothing is cached as a verdict, so the next run finishes the work.
- a reply the validator rejects, or cut off at the token cap: re-asked (the reply and what was
  wrong with it are sent back) up to ``max_reasks`` times; then "invalid".
- a refusal (``message.refusal``) or ``finish_reason`` "content_filter": "invalid" at once.

Every request body, raw response and failed attempt lands in the cache (the audit trail), with
the API key redacted. The openai SDK is imported on first call, never by importing this module.
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
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from reteco.llm.cache import JudgeCache, default_cache_dir, now_iso, request_hash
from reteco.llm.compatibility import ignored_token_cap, preflight_body, rejected_parameter, setting_hint
from reteco.llm.config import LLMConfig, Redactor, endpoint_available, read_api_key
from reteco.llm.model_retirement import SOURCE, known_shutdown
from reteco.llm.prompt_files import ReplyProblem
from reteco.llm.usage import TokenUsage, call_usage

OK = "ok"
INVALID = "invalid"
ERROR = "error"
RETRYABLE_STATUS = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})
MAX_STORED_ERROR_TEXT = 2000
#: No request starts later than this before the deadline: one starting later could not finish.
DEADLINE_MARGIN_S = 1.0
#: ASCII characters per token in the token budget's estimate (OpenAI's rule of thumb for English
#: text); any other character counts one token, as CJK text comes to about one token a character.
CHARS_PER_TOKEN = 4
#: The prompt version under which preflight requests are recorded in the cache (no prompt's).
PREFLIGHT_VERSION = 0

# What a run's preflight came to (``StructuredCaller.preflight_status``).
PREFLIGHT_PENDING = "pending"  # nothing sent yet
PREFLIGHT_NOT_NEEDED = "not needed"  # the run sent no request (every answer was in the cache)
PREFLIGHT_PASSED = "passed"
PREFLIGHT_FAILED = "failed"  # refused or unreachable: nothing else was sent
PREFLIGHT_NOT_SENT = "not sent"  # the deadline or the call budget came first

T = TypeVar("T")


class CallsNotAvailable(RuntimeError):
    """No key or no usable endpoint: nothing was sent."""


class EndpointRefused(CallsNotAvailable):
    """The preflight request was refused (the message names the parameter and the setting to
    change) or failed: nothing else was sent."""


@dataclass(frozen=True)
class StructuredRequest:
    """One question: its first request body, how to validate a reply and how to re-ask."""

    body: dict[str, Any]  # model, messages, response_format (as sent), decoding settings
    validate: Callable[[str | None], Any]  # the reply's content -> parsed value; raises ReplyProblem
    reask: Callable[[str], dict[str, str]]  # problem -> the user message sent after an unusable reply
    cache_version: int  # mixed into the request hash (the prompt version)
    label: str = ""  # names the request in debug log lines

    def cache_key(self, endpoint: str) -> str:
        """The hash of the first request sent to ``endpoint``: where its response is cached."""
        return request_hash(self.body, self.cache_version, endpoint)


@dataclass
class StructuredReply:
    status: str  # ok, invalid, error
    value: Any  # what the validator returned (ok only)
    text: str | None  # the content of the last reply, as received
    detail: str  # why it is not ok ("" when ok); redacted
    attempts: int  # HTTP requests made in this run
    cached: bool  # answered without any HTTP request in this run
    system_fingerprint: str | None
    reported_model: str | None
    cache_key: str  # hash of the first request
    request_hashes: list[str] = field(default_factory=list)  # one per ask
    ask_attempts: list[int] = field(default_factory=list)  # HTTP requests per ask (0: replayed)
    call_ids: list[int] = field(default_factory=list)
    refusal: str | None = None  # the model's refusal text, when it refused
    filtered: bool = False  # the reply was withheld by the content filter
    not_sent: bool = False  # the last ask was never sent: the run had been stopped
    endpoint: str = ""  # where the requests went (the public URL)


@dataclass(frozen=True)
class CallStats:
    """What one run's requests came to: the figures a caller with a deadline needs."""

    endpoint: str
    http_requests: int  # chat completion requests made (preflight, retries and re-asks included)
    preflight: str  # PREFLIGHT_* : passed, failed, not needed, not sent
    preflight_detail: str  # why it failed (or the token-cap warning); "" otherwise
    preflight_model: str | None  # the model the server named in its preflight reply
    stopped: str | None  # why requests stopped before the end (deadline, budget, refusal, abort)
    max_calls: int | None  # the budget in force (None: no limit)
    max_tokens: int | None = None  # the token budget in force (None: no limit)
    tokens: int = 0  # tokens counted against it (estimates, or the usage the server reported)
    usage: TokenUsage = TokenUsage()  # what the calls of this run used, as the servers reported it


def run_structured_calls(
    requests: Sequence[StructuredRequest],
    config: LLMConfig,
    *,
    cache_dir: Path | None = None,
    progress: bool = True,
    fresh: bool = False,
    unit: str = "request",
    desc: str | None = None,
    deadline: float | None = None,
    max_calls: int | None = None,
    on_stats: Callable[[CallStats], None] | None = None,
) -> list[StructuredReply]:
    """Answer every request (same order) with at most ``config.concurrency`` in flight.

    ``fresh`` bypasses the responses stored in the cache (they are still recorded). ``deadline``
    and ``max_calls``: the run's limits (module docstring). Raises CallsNotAvailable when no key
    or endpoint is configured (``endpoint_available`` says why), EndpointRefused when the
    preflight request was refused or failed (nothing else was sent; the answers in the cache
    are kept for the next run). ``on_stats`` is given the run's request figures (``CallStats``:
    the preflight, retries and re-asks counted, which the replies' ``attempts`` leave out) when
    the run ends, refused or not.
    """
    ok, why = endpoint_available(config)
    if not ok:
        raise CallsNotAvailable(why)
    requests = list(requests)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    async def main() -> list[StructuredReply]:
        caller = StructuredCaller(config, log=logging.getLogger("reteco.llm"), deadline=deadline, max_calls=max_calls)
        async with caller.session(directory):
            semaphore = asyncio.Semaphore(config.concurrency)
            bar = tqdm(total=len(requests), disable=not progress, unit=unit, desc=desc or f"{unit} {config.model}")

            async def one(request: StructuredRequest) -> StructuredReply:
                async with semaphore:
                    reply = await caller.ask(request, fresh=fresh)
                bar.update(1)
                return reply

            try:
                replies = list(await asyncio.gather(*(one(r) for r in requests)))
            finally:
                bar.close()
        if on_stats is not None:
            on_stats(caller.stats())
        if caller.preflight_status == PREFLIGHT_FAILED:
            raise EndpointRefused(caller.preflight_detail)
        return replies

    return run_coroutine(main)


def stream_structured_calls(
    requests: Iterable[StructuredRequest],
    config: LLMConfig,
    on_reply: Callable[[StructuredRequest, StructuredReply], None],
    *,
    total: int | None = None,
    cache_dir: Path | None = None,
    progress: bool = True,
    fresh: bool = False,
    unit: str = "request",
    desc: str | None = None,
    on_stats: Callable[[CallStats], None] | None = None,
) -> None:
    """``run_structured_calls`` for a stream: the requests are taken from ``requests`` as a
    worker is free (at most ``config.concurrency`` in flight, no more held), and each reply is
    given to ``on_reply(request, reply)`` as it arrives, in the order they arrive; nothing is
    kept. So a caller that stores each reply (the relevance round's labels) holds no more than
    the requests in flight, whatever the number of requests. ``total`` sizes the progress bar.
    Same key, preflight, cache, retries and refusals as ``run_structured_calls``."""
    ok, why = endpoint_available(config)
    if not ok:
        raise CallsNotAvailable(why)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    source = iter(requests)

    async def main() -> None:
        caller = StructuredCaller(config, log=logging.getLogger("reteco.llm"))
        async with caller.session(directory):
            bar = tqdm(total=total, disable=not progress, unit=unit, desc=desc or f"{unit} {config.model}")

            async def worker() -> None:
                for request in source:  # one event loop: a request is taken by one worker
                    reply = await caller.ask(request, fresh=fresh)
                    on_reply(request, reply)
                    bar.update(1)

            try:
                await asyncio.gather(*(worker() for _ in range(max(1, config.concurrency))))
            finally:
                bar.close()
        if on_stats is not None:
            on_stats(caller.stats())
        if caller.preflight_status == PREFLIGHT_FAILED:
            raise EndpointRefused(caller.preflight_detail)

    run_coroutine(main)


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion; from inside a running event loop, in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    # Called from inside an event loop (a notebook, an async caller): run ours in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, factory()).result()


class _Session:
    def __init__(self, caller: StructuredCaller, cache_dir: Path):
        self.caller = caller
        self.cache_dir = cache_dir

    async def __aenter__(self) -> StructuredCaller:
        import httpx2
        import openai  # loaded on first call: ~0.5 s that other commands need not pay

        c = self.caller
        # The SQLite connection and the HTTP client belong to the thread running this loop.
        c.cache = JudgeCache(self.cache_dir)
        c.client = openai.AsyncOpenAI(
            api_key=c._key,
            base_url=c.config.resolved_base_url(),
            max_retries=0,  # retries are ours: counted, logged, honouring Retry-After
            timeout=httpx2.Timeout(c.config.timeout_s),
        )
        return c

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.caller.client.close()
        finally:
            self.caller.cache.close()


class StructuredCaller:
    """The call engine: one client, one cache, one shared pause, abort and limit state per run.

    ``log``, when given, receives the debug lines and the error lines (run stopped); the
    ``abort_message`` and ``attempts_noun`` say how a stopped run is described. ``deadline``
    (a ``time.monotonic()`` value), ``max_calls`` (with the config's ``max_calls_per_run``: the
    smaller counts) and ``deadline_margin_s`` are the run's limits (module docstring).
    """

    cache: JudgeCache
    client: Any

    def __init__(self, config: LLMConfig, *, log: logging.Logger | None = None, attempts_noun: str = "requests",
                 abort_prefix: str = "stopped", deadline: float | None = None, max_calls: int | None = None,
                 deadline_margin_s: float = DEADLINE_MARGIN_S):
        self.config = config
        self.endpoint = config.endpoint()
        self._key, _ = read_api_key(config)
        self.redact = Redactor(self._key)
        self.log = log
        self.attempts_noun = attempts_noun
        self.abort_prefix = abort_prefix
        self.abort_reason: str | None = None
        self._failed_in_a_row = 0
        self._pause_until = 0.0  # time.monotonic() before which nobody sends (a 429's Retry-After)
        self.batch_filled: set[str] = set()  # request hashes whose stored response is fresh (a batch of this run)
        self.deadline = deadline
        self.deadline_margin_s = deadline_margin_s
        budgets = [b for b in (config.max_calls_per_run, max_calls) if b is not None]
        self.max_calls: int | None = min(budgets) if budgets else None
        self.http_requests = 0  # chat completion requests made in this run
        self.max_tokens: int | None = config.max_tokens_per_run
        self.tokens = 0  # counted against max_tokens: estimates before sending, then the reported usage
        self.usage = TokenUsage()  # the reported usage of this run's calls (preflight and re-asks included)
        self.limit_reached: str | None = None  # "deadline reached", "call budget reached (...)", "token budget ..."
        self.preflight_status = PREFLIGHT_PENDING
        self.preflight_detail = ""
        self.preflight_model: str | None = None
        self._preflight_lock: asyncio.Lock | None = None

    def session(self, cache_dir: Path) -> _Session:
        """``async with caller.session(dir):`` opens the cache and the HTTP client for a run."""
        return _Session(self, cache_dir)

    def key(self, body: dict[str, Any], version: int) -> str:
        """The cache key of a request body sent to this run's endpoint."""
        return request_hash(body, version, self.endpoint)

    def stats(self) -> CallStats:
        """The run's request figures so far."""
        preflight = PREFLIGHT_NOT_NEEDED if self.preflight_status == PREFLIGHT_PENDING else self.preflight_status
        return CallStats(self.endpoint, self.http_requests, preflight, self.preflight_detail, self.preflight_model,
                         self.abort_reason, self.max_calls, self.max_tokens, self.tokens, self.usage)

    # --- one request, re-asked until usable ------------------------------------------------

    async def ask(self, request: StructuredRequest, *, fresh: bool = False, cache_key: str | None = None) -> StructuredReply:
        """Ask until the validator accepts a reply or the re-asks run out (see the module doc)."""
        first_key = cache_key or request.cache_key(self.endpoint)
        reply = StructuredReply(ERROR, None, None, "", 0, True, None, None, first_key, endpoint=self.endpoint)
        messages = list(request.body["messages"])
        problem = ""
        for n in range(self.config.max_reasks + 1):
            body = {**request.body, "messages": messages}
            h = first_key if n == 0 else self.key(body, request.cache_version)
            reply.request_hashes.append(h)
            self.cache.put_request(h, request.cache_version, body)
            stored = self.cache.latest_call(h) if (not fresh or h in self.batch_filled) else None
            if stored is not None:
                call_id, response = stored[0], json.loads(stored[1])
                reply.ask_attempts.append(0)
            else:
                if self.abort_reason:
                    reply.ask_attempts.append(0)
                    reply.detail, reply.not_sent = f"not sent: {self.abort_reason}", True
                    return reply
                sent = await self._send(h, body)
                call_id, response = sent.call_id, sent.response
                reply.ask_attempts.append(sent.attempts)
                reply.attempts += sent.attempts
                reply.cached = False
                if response is None:
                    if not sent.stopped:
                        self._count_failure(sent.failure)
                    reply.detail, reply.not_sent = sent.failure, sent.attempts == 0
                    return reply
                self._failed_in_a_row = 0
            reply.call_ids.append(call_id)
            reply.system_fingerprint = response.get("system_fingerprint")
            reply.reported_model = response.get("model")
            choice = response["choices"][0]
            message = choice.get("message") or {}
            refusal = message.get("refusal")
            reply.text = message.get("content")
            if refusal or choice.get("finish_reason") == "content_filter":
                reply.status, reply.refusal, reply.filtered = INVALID, refusal or None, not refusal
                why = f"the model refused: {refusal}" if refusal else "withheld by the content filter"
                reply.detail = self.redact(why) or ""
                return reply
            try:
                if choice.get("finish_reason") == "length":
                    raise ReplyProblem("it was cut off at the token limit; keep the rationale short")
                value = request.validate(reply.text)
            except ReplyProblem as exc:
                problem = str(exc)
                if self.log:
                    self.log.debug("%s: unusable reply (%s), ask %d", request.label, problem, n + 1)
                messages = [*messages, {"role": "assistant", "content": reply.text or ""}, request.reask(problem)]
                continue
            reply.status, reply.value = OK, value
            return reply
        reply.status = INVALID
        asks = self.config.max_reasks + 1
        reply.detail = f"no usable reply in {asks} ask{'s' if asks > 1 else ''}; last: {problem}"
        return reply

    def _count_failure(self, failure: str) -> None:
        self._failed_in_a_row += 1
        if self.abort_reason is None and self._failed_in_a_row >= self.config.abort_after_errors:
            self.abort_reason = (
                f"{self.abort_prefix} after {self._failed_in_a_row} {self.attempts_noun} in a row failed (last: {failure})"
            )
            if self.log:
                self.log.error("%s", self.abort_reason)

    # --- the preflight -----------------------------------------------------------------------

    async def ensure_preflight(self, body: dict[str, Any]) -> bool:
        """Send the run's preflight (shaped like ``body``) unless it was sent; whether the run
        may go on. Concurrent callers wait for the one preflight."""
        if self._preflight_lock is None:
            self._preflight_lock = asyncio.Lock()
        async with self._preflight_lock:
            if self.preflight_status == PREFLIGHT_PENDING:
                await self._preflight(body)
        return self.preflight_status == PREFLIGHT_PASSED

    async def _preflight(self, body: dict[str, Any]) -> None:
        probe = preflight_body(body)
        h = self.key(probe, PREFLIGHT_VERSION)
        self.cache.put_request(h, PREFLIGHT_VERSION, probe)
        sent = await self._send(h, probe, via="preflight")
        if sent.response is not None:
            self.preflight_status = PREFLIGHT_PASSED
            self.preflight_model = sent.response.get("model")
            warning = ignored_token_cap(probe, sent.response)
            if warning:
                self.preflight_detail = warning
                if self.log:
                    self.log.warning("preflight: %s", warning)
            self._warn_of_shutdown()
            return
        if sent.stopped:  # the deadline or the budget came first: no answer, but no refusal either
            self.preflight_status, self.preflight_detail = PREFLIGHT_NOT_SENT, sent.failure
            return
        self.preflight_status = PREFLIGHT_FAILED
        self.preflight_detail = f"the preflight request to {self.endpoint} failed: {sent.failure}"
        # Every request left ends "not sent: <this>": the parameter and the setting to change.
        self.abort_reason = self.abort_reason or self.preflight_detail
        if self.log:
            self.log.error("%s; nothing else is sent", self.preflight_detail)

    def _warn_of_shutdown(self) -> None:
        """Warn once per run when the configured (or the answering) model has an announced
        shutdown date (``reteco.llm.model_retirement``'s table: no request is made for it), so
        that whoever judges knows its verdicts cannot be asked again after that day. Whether a
        judged phase ends after the date is checked where the phase is known (check-bundle, the
        judge probe)."""
        for model in dict.fromkeys(m for m in (self.config.model, self.preflight_model) if m):
            shutdown = known_shutdown(model)  # a table key: nothing of the server's is printed
            if shutdown and self.log:
                self.log.warning("preflight: the judge model %s has an announced shutdown date of %s (%s); "
                                 "keep the judge cache and its archives: after that day its verdicts cannot be asked "
                                 "again", model, shutdown, "as listed by " + SOURCE.split(",")[0])

    # --- the run's limits --------------------------------------------------------------------

    def _cut(self) -> float | None:
        """The monotonic time after which no request starts (None: no deadline)."""
        return None if self.deadline is None else self.deadline - self.deadline_margin_s

    def _limit(self, tokens: int = 0) -> str | None:
        """Why no further request may start (the deadline or a budget; ``tokens``: the next
        request's estimate), else None; the first time a limit is met, it stops the run
        (``abort_reason``) and is logged once."""
        if self.limit_reached:
            return self.limit_reached
        cut = self._cut()
        reason = None
        if cut is not None and (time.monotonic() >= cut or self._pause_until >= cut):
            reason = "deadline reached"
        elif self.max_calls is not None and self.http_requests >= self.max_calls:
            reason = f"call budget reached ({self.max_calls} HTTP requests)"
        elif self.max_tokens is not None and self.tokens + max(tokens, 1) > self.max_tokens:
            reason = f"token budget reached ({self.max_tokens} tokens)"
        if reason is not None:
            self.limit_reached = reason
            self.abort_reason = self.abort_reason or reason
            if self.log:
                self.log.warning("%s: no further request is sent; what is left ends as errors (run again to finish it)",
                                 reason)
        return reason

    def _timeout(self) -> float:
        """The request's timeout: the configured one, cut so that the request ends by the deadline."""
        timeout = float(self.config.timeout_s)
        if self.deadline is not None:
            timeout = min(timeout, max(self.deadline - time.monotonic(), 0.001))
        return timeout

    # --- one request body, retried over HTTP -----------------------------------------------

    async def _send(self, h: str, body: dict[str, Any], *, via: str = "chat") -> _Sent:
        """POST ``body``, retrying transport failures; every attempt lands in the cache. The
        run's preflight goes first (``via`` "preflight" is the preflight itself)."""
        import openai

        if via != "preflight":
            await self.ensure_preflight(body)  # refused or failed: abort_reason stops the loop below
        last_failure = ""
        estimate = estimated_tokens(body, self.config.max_completion_tokens)
        for attempt in range(1, self.config.max_retries + 2):
            await self._wait_for_pause()
            if self.abort_reason or self._limit(estimate):
                return _Sent(None, None, attempt - 1, self._stopped_detail(attempt - 1, last_failure), stopped=True)
            self.http_requests += 1
            self.tokens += estimate  # replaced by the reported usage once answered
            timeout = self._timeout()
            started = now_iso()
            status: int | None = None
            retry_after: float | None = None
            fatal = False
            try:
                raw = await self.client.chat.completions.with_raw_response.create(**body, timeout=timeout)
                status = raw.status_code
                text = self.redact(raw.text)
                completion = _chat_completion(text)
                self.tokens += reported_tokens(completion, estimate) - estimate
                usage = call_usage(completion)
                self.usage = self.usage + TokenUsage.of_call(usage)
                call_id = self.cache.add_call(
                    request_hash_=h, response_json=text, http_status=status,
                    system_fingerprint=completion.get("system_fingerprint"), model=completion.get("model"),
                    via=via, endpoint=self.endpoint, started_at=started, usage=usage,
                )
                return _Sent(call_id, completion, attempt, "")
            except openai.APIStatusError as exc:
                status = exc.status_code
                retry_after = retry_after_seconds(exc.response.headers)
                code = _error_code(exc.body)
                error_text = _error_text(exc)
                kind = f"http {status}"
                detail = f"HTTP {status}: {error_text}"
                rejected = rejected_parameter(status, error_text, exc.body, body)
                # A 4xx other than 408/409/429 is the request's fault, and so is a 500 saying the
                # input is invalid: the same body would get the same answer.
                retryable = (status in RETRYABLE_STATUS or status >= 500) and rejected is None
                if rejected is not None:
                    detail = f"the server rejected `{rejected}` ({detail}); {setting_hint(rejected, body)}"
                if status == 429 and code == "insufficient_quota":
                    retryable, fatal = False, True
                elif status in FATAL_STATUS:
                    fatal = True
            except openai.APITimeoutError:
                kind, detail, retryable = "timeout", f"no response within {_seconds(timeout)} s", True
            except openai.APIConnectionError as exc:
                kind, detail, retryable = "connection", f"connection failed: {_cause(exc)}", True
            except _MalformedResponse as exc:
                kind, detail, retryable = "malformed response", f"HTTP {status} with {exc}", True
            detail = self.redact(detail) or ""
            last = attempt > self.config.max_retries
            wait = None if (last or not retryable) else self._wait_after(attempt, retry_after, status)
            cut = self._cut()
            past_deadline = wait is not None and cut is not None and time.monotonic() + wait >= cut
            self.cache.add_failure(
                request_hash_=h, attempt=attempt, kind=kind, http_status=status,
                message=detail[:MAX_STORED_ERROR_TEXT], wait_s=None if past_deadline else wait, endpoint=self.endpoint,
            )
            if self.log:
                self.log.debug("attempt %d failed (%s)%s", attempt, detail, f"; waiting {wait:.2f} s" if wait else "")
            if fatal:
                self.abort_reason = self.abort_reason or f"the endpoint answered {detail}; no retry can help"
                if self.log:
                    self.log.error("judge stopped: %s", detail)
            tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
            if past_deadline:
                return _Sent(None, None, attempt, f"deadline reached: not retried after {tries} (last: {detail})", stopped=True)
            if wait is None:
                outcome = "not retried" if not retryable else f"gave up after {tries}"
                return _Sent(None, None, attempt, f"request failed, {outcome}: {detail}")
            last_failure = detail
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: the loop returns on its last attempt")

    def _stopped_detail(self, attempts: int, last_failure: str) -> str:
        if attempts == 0:
            return f"not sent: {self.abort_reason}"
        tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
        return f"{self.abort_reason}: not retried after {tries} (last: {last_failure})"

    def _wait_after(self, attempt: int, retry_after: float | None, status: int | None) -> float:
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.config.max_wait_s)
            if status == 429:
                self._pause_until = max(self._pause_until, time.monotonic() + wait)
            return wait
        ceiling = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2 ** (attempt - 1))
        # Jitter spreads the retries of many workers that failed at once.
        return min(ceiling * random.uniform(0.5, 1.0), self.config.max_wait_s)

    async def _wait_for_pause(self) -> None:
        cut = self._cut()
        while (delay := self._pause_until - time.monotonic()) > 0:
            if cut is not None and self._pause_until >= cut:
                return  # the pause outlasts the deadline: _limit() stops the run
            await asyncio.sleep(delay)


@dataclass(frozen=True)
class _Sent:
    """How one request body fared over HTTP."""

    call_id: int | None
    response: dict[str, Any] | None  # the chat completion, None when it failed
    attempts: int  # HTTP requests made for it
    failure: str  # why it failed ("" when it did not)
    stopped: bool = False  # not (or no more) sent: the run was stopped (limit, abort, refusal)


def estimated_tokens(body: dict[str, Any], completion_cap: int) -> int:
    """What one request counts against the token budget before it is sent: its body's ASCII
    characters / ``CHARS_PER_TOKEN`` and one token for every other character (the prompt, the
    schema and the settings: more than the server counts for English text), plus the completion
    cap (the body's ``max_completion_tokens`` / ``max_tokens``, else ``completion_cap``)."""
    text = json.dumps(body, ensure_ascii=False)
    ascii_chars = sum(1 for c in text if c < "\x80")
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or completion_cap
    return math.ceil(ascii_chars / CHARS_PER_TOKEN) + (len(text) - ascii_chars) + int(cap)


def reported_tokens(completion: dict[str, Any], estimate: int) -> int:
    """The tokens a reply used by the server's ``usage`` (prompt + completion), else ``estimate``."""
    usage = completion.get("usage")
    if isinstance(usage, dict):
        parts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in parts):
            return parts[0] + parts[1]
    return estimate


def _seconds(value: float) -> str:
    """A duration for a message: 0.3, 120, 0.723."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


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


def retry_after_seconds(headers: Any) -> float | None:
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


def _error_text(exc: Any) -> str:
    import httpx2

    try:
        text = exc.response.text
    except (httpx2.HTTPError, RuntimeError, UnicodeDecodeError):  # unread or undecodable: the status remains
        text = ""
    text = " ".join(text.split())
    return text[:500] if text else (exc.message or "")


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return type(cause).__name__ if cause is not None else "unknown"
