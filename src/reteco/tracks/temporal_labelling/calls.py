"""Chat Completions calls of the temporal labeller, on the generation judge's public layers.

The judge package (``reteco.tracks.judge``) exposes no call that takes a caller's own prompt
and schema (its ``run_judge`` asks its five 1-5 dimensions), so this module builds on its
lowest public pieces, and shares with it everything a reviewer of the labels needs to trust:

- the configuration: ``load_judge_config`` (the same ``judge.yaml``, or the ``--judge-config``
  given): endpoint, where the key is read from, model, temperature, seed, token cap, timeouts,
  retry, backoff, re-ask and abort settings; ``judge_available`` says why it cannot run;
- the cache and audit trail: ``JudgeCache`` (the same SQLite file in the same folder): every
  request body, every raw response, every failed attempt with the wait that followed it;
- the key redactor (``Redactor``) and public endpoint text (``public_url``).

Fault behaviour follows the judge runner's documented one:

- a response already in the cache for the same request: replayed, no HTTP call (parsing is
  deterministic, so a replay gives the same label); ``retry_invalid`` asks again the labels
  whose stored replies were unusable;
- 429, 408, 409, 5xx, timeout, connection error, or a 200 whose body is not a chat completion:
  retried up to ``max_retries`` times, waiting the server's Retry-After when given (a 429's
  pauses every worker) else exponential backoff with jitter, never more than ``max_wait_s``;
  still failing: status "error" (nothing cached as a verdict; the next run tries again);
- 400, 413, 422: "error" at once; 401, 403, 404, or 429 ``insufficient_quota``: "error" and the
  rest of the run is not sent; ``abort_after_errors`` failures in a row stop the run too;
- a reply that breaks the strict schema, is empty or was cut at the token cap: re-asked with
  what was wrong, up to ``max_reasks`` times; then "invalid";
- a refusal or a content-filter stop: "invalid" at once.

No path produces a label the model did not give: a pair with any "error" or "invalid" answer
gets no label row at all, and the caller reports it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reteco.tracks.judge import JudgeConfig, default_cache_dir, judge_available
from reteco.tracks.judge.cache import JudgeCache, now_iso, request_hash
from reteco.tracks.judge.config import Redactor, public_url, read_api_key
from reteco.tracks.temporal_labelling.prompting import ReplyProblem

OK = "ok"
INVALID = "invalid"
ERROR = "error"
RETRYABLE_STATUS = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})


@dataclass(frozen=True)
class Ask:
    """One question to the model: its first request body, how to read and re-ask a reply."""

    key: str  # unique within a run (query, doc, task)
    body: dict[str, Any]
    parse: Callable[[str | None], tuple[Any, str]]  # raises ReplyProblem
    reask: Callable[[str], dict[str, str]]
    cache_version: int  # mixed into the request hash (the prompt version)


@dataclass
class Answer:
    status: str  # ok, invalid, error
    label: Any
    rationale: str
    attempts: int  # HTTP requests made in this run
    cached: bool  # answered without any HTTP request in this run
    system_fingerprint: str | None
    reported_model: str | None
    request_hashes: list[str] = field(default_factory=list)
    call_ids: list[int] = field(default_factory=list)


class NotAvailable(RuntimeError):
    """No key or no usable endpoint: nothing was sent."""


def run_asks(
    asks: Sequence[Ask],
    config: JudgeConfig,
    *,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
) -> list[Answer]:
    """Answer every ask (same order) with at most ``config.concurrency`` requests in flight."""
    ok, why = judge_available(config)
    if not ok:
        raise NotAvailable(why)
    job = _Job(list(asks), config, Path(cache_dir) if cache_dir is not None else default_cache_dir(), retry_invalid, progress)
    return asyncio.run(job.run())


class _Job:
    def __init__(self, asks: list[Ask], config: JudgeConfig, cache_dir: Path, retry_invalid: bool, progress: bool):
        self.asks = asks
        self.config = config
        self.cache_dir = cache_dir
        self.retry_invalid = retry_invalid
        self.progress = progress
        self.endpoint = public_url(config.resolved_base_url())
        self._key, _ = read_api_key(config)
        self.redact = Redactor(self._key)
        self.abort_reason: str | None = None
        self._failed_in_a_row = 0
        self._pause_until = 0.0

    async def run(self) -> list[Answer]:
        import openai  # loaded on first call: ~0.4 s that other commands need not pay
        self.cache = JudgeCache(self.cache_dir)
        self.client = openai.AsyncOpenAI(
            api_key=self._key, base_url=self.config.resolved_base_url(), max_retries=0, timeout=self.config.timeout_s
        )
        semaphore = asyncio.Semaphore(self.config.concurrency)
        bar = tqdm(total=len(self.asks), disable=not self.progress, unit="label", desc=f"label {self.config.model}")

        async def one(ask: Ask) -> Answer:
            async with semaphore:
                answer = await self._answer(ask)
            bar.update(1)
            return answer

        try:
            return list(await asyncio.gather(*(one(a) for a in self.asks)))
        finally:
            bar.close()
            await self.client.close()
            self.cache.close()

    async def _answer(self, ask: Ask) -> Answer:
        messages = list(ask.body["messages"])
        answer = Answer(ERROR, None, "", 0, True, None, None)
        problem = ""
        for _ in range(self.config.max_reasks + 1):
            body = {**ask.body, "messages": messages}
            h = request_hash(body, ask.cache_version)
            answer.request_hashes.append(h)
            self.cache.put_request(h, ask.cache_version, body)
            stored = None if self.retry_invalid else self.cache.latest_call(h)
            if stored is not None:
                call_id, text = stored[0], stored[1]
                response = json.loads(text)
            else:
                if self.abort_reason:
                    answer.rationale = f"not sent: {self.abort_reason}"
                    return answer
                call_id, response, attempts, failure = await self._send(h, body)
                answer.attempts += attempts
                answer.cached = False
                if response is None:
                    self._count_failure(failure)
                    answer.rationale = failure
                    return answer
                self._failed_in_a_row = 0
            answer.call_ids.append(call_id)
            answer.system_fingerprint = response.get("system_fingerprint")
            answer.reported_model = response.get("model")
            choice = response["choices"][0]
            message = choice.get("message") or {}
            refusal = message.get("refusal")
            if refusal or choice.get("finish_reason") == "content_filter":
                answer.status = INVALID
                answer.rationale = self.redact(f"the model refused: {refusal}" if refusal else "withheld by the content filter")
                return answer
            content = message.get("content")
            try:
                if choice.get("finish_reason") == "length":
                    raise ReplyProblem("it was cut off at the token limit; keep the rationale short")
                label, rationale = ask.parse(content)
            except ReplyProblem as exc:
                problem = str(exc)
                messages = [*messages, {"role": "assistant", "content": content or ""}, ask.reask(problem)]
                continue
            answer.status, answer.label, answer.rationale = OK, label, self.redact(rationale) or ""
            return answer
        answer.status = INVALID
        asks = self.config.max_reasks + 1
        answer.rationale = f"no usable reply in {asks} ask{'s' if asks > 1 else ''}; last: {problem}"
        return answer

    def _count_failure(self, failure: str) -> None:
        self._failed_in_a_row += 1
        if self.abort_reason is None and self._failed_in_a_row >= self.config.abort_after_errors:
            self.abort_reason = f"stopped after {self._failed_in_a_row} requests in a row failed (last: {failure})"

    async def _send(self, h: str, body: dict[str, Any]) -> tuple[int | None, dict | None, int, str]:
        import openai  # loaded on first call: ~0.4 s that other commands need not pay
        """(call id, completion, attempts, failure) for one request, retrying transport failures."""
        for attempt in range(1, self.config.max_retries + 2):
            await self._wait_for_pause()
            if self.abort_reason:
                return None, None, attempt - 1, f"not sent: {self.abort_reason}"
            started = now_iso()
            status: int | None = None
            retry_after: float | None = None
            fatal = False
            try:
                raw = await self.client.chat.completions.with_raw_response.create(**body)
                status = raw.status_code
                text = self.redact(raw.text)
                completion = _completion(text)
                call_id = self.cache.add_call(
                    request_hash_=h, response_json=text, http_status=status,
                    system_fingerprint=completion.get("system_fingerprint"), model=completion.get("model"),
                    via="chat", endpoint=self.endpoint, started_at=started,
                )
                return call_id, completion, attempt, ""
            except openai.APIStatusError as exc:
                status = exc.status_code
                retry_after = _retry_after(exc.response.headers)
                code = _error_code(exc.body)
                kind, detail = f"http {status}", f"HTTP {status}: {_error_text(exc)}"
                retryable = status in RETRYABLE_STATUS or status >= 500
                if status == 429 and code == "insufficient_quota":
                    retryable, fatal = False, True
                elif status in FATAL_STATUS:
                    fatal = True
            except openai.APITimeoutError:
                kind, detail, retryable = "timeout", f"no response within {self.config.timeout_s:g} s", True
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc.__context__
                kind, detail, retryable = "connection", f"connection failed: {type(cause).__name__ if cause else 'unknown'}", True
            except _Malformed as exc:
                kind, detail, retryable = "malformed response", f"HTTP {status} with {exc}", True
            detail = self.redact(detail) or ""
            last = attempt > self.config.max_retries
            wait = None if (last or not retryable) else self._wait_after(attempt, retry_after, status)
            self.cache.add_failure(
                request_hash_=h, attempt=attempt, kind=kind, http_status=status, message=detail[:2000],
                wait_s=wait, endpoint=self.endpoint,
            )
            if fatal:
                self.abort_reason = self.abort_reason or f"the endpoint answered {detail}; no retry can help"
            if wait is None:
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                outcome = "not retried" if not retryable else f"gave up after {tries}"
                return None, None, attempt, f"request failed, {outcome}: {detail}"
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def _wait_after(self, attempt: int, retry_after: float | None, status: int | None) -> float:
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.config.max_wait_s)
            if status == 429:
                self._pause_until = max(self._pause_until, asyncio.get_running_loop().time() + wait)
            return wait
        ceiling = min(self.config.backoff_max_s, self.config.backoff_initial_s * 2 ** (attempt - 1))
        return min(ceiling * random.uniform(0.5, 1.0), self.config.max_wait_s)

    async def _wait_for_pause(self) -> None:
        loop = asyncio.get_running_loop()
        while (delay := self._pause_until - loop.time()) > 0:
            await asyncio.sleep(delay)


class _Malformed(ValueError):
    pass


def _completion(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise _Malformed("a body that is not JSON") from None
    choices = value.get("choices") if isinstance(value, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict)):
        raise _Malformed("a body without choices[0].message")
    return value


def _retry_after(headers: Any) -> float | None:
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
            return max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _error_code(body: object) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("code"), str):
            return inner["code"]
    return None


def _error_text(exc: "openai.APIStatusError") -> str:  # noqa: F821 (the SDK loads lazily)
    try:
        text = " ".join(exc.response.text.split())
    except Exception:  # an undecodable body still leaves the status to report
        text = ""
    return text[:500] if text else (exc.message or "")
