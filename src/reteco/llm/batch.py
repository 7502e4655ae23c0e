"""Sending first asks through the Batch API (``use_batch_api: true``).

The requests whose first ask has no stored response are written as JSONL lines
(``custom_id`` = the request hash, ``method``, ``url``, ``body``), uploaded with the files
API (purpose "batch"), and submitted as batches of at most ``batch_max_requests`` lines.
The batch id is recorded in the cache the moment it exists, so a crash or a timeout does
not lose it: the next run polls and collects that batch instead of submitting (and paying
for) the same requests again. Results are stored in the cache like live responses
(``via`` = "batch:<id>"); the usual judging loop then reads them, and asks live only what
the batch could not answer (failed lines, re-asks after unusable replies). While a batch
is still running when ``batch_timeout_s`` runs out, its judgments end as status "error"
with the batch id and the advice to run again.

One job for a whole phase (``reteco judge-submissions``): a first pass scores every submission
with ``batch_queue_only``, so each run's first asks are queued in the cache (``batch_queue``)
instead of sent; ``send_queued_batches`` then sends the queue as one batch (or several of at most
``batch_max_requests`` lines), records each batch id before waiting, and collects them all; the
final pass scores every submission from the cache. A run killed at any point resumes: queued
requests a recorded batch carries are not sent again, and running batches are polled.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import openai

from reteco.llm.cache import BatchRecord, JudgeCache
from reteco.llm.calls import StructuredCaller, is_chat_completion, run_coroutine
from reteco.llm.config import LLMConfig
from reteco.llm.usage import TokenUsage, call_usage


class BatchGroup(Protocol):
    """Requests that share one first ask (the judge's groups of identical requests)."""

    cache_key: str  # the request hash, also the batch line's custom_id
    body: dict[str, Any]  # the Chat Completions request body


class BatchJob(Protocol):
    """What sending batches needs of its caller (the judge's run): the open session's client,
    cache and redactor, the configuration, and three records of what the batches did."""

    cache: JudgeCache
    client: Any  # openai.AsyncOpenAI
    config: LLMConfig
    endpoint: str
    batch_filled: set[str]  # request hashes answered by a batch
    batch_pending: dict[str, str]  # request hash -> why it is still waiting
    usage: TokenUsage  # the reported usage of the run's calls, batch answers added as collected

    def redact(self, text: str | None) -> str | None: ...


log = logging.getLogger("reteco.judge")

BATCH_ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


def batch_jsonl(requests: Sequence[tuple[str, dict[str, Any]]]) -> bytes:
    """The batch input file: one line per (request hash, body) first ask."""
    lines = [
        json.dumps({"custom_id": h, "method": "POST", "url": BATCH_ENDPOINT, "body": body}, ensure_ascii=False)
        for h, body in requests
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


async def run_batches(job: BatchJob, groups: Sequence[BatchGroup]) -> None:
    """Fill the cache with batch answers to the groups' first asks (see the module docstring);
    with ``batch_queue_only``, queue them for the phase's job and leave them pending."""
    wanted = {g.cache_key: g for g in groups}
    if not wanted:
        return
    running: list[BatchRecord] = [b for b in job.cache.open_batches() if wanted.keys() & set(b.request_hashes)]
    covered = {h for b in running for h in b.request_hashes}
    todo = [g for h, g in wanted.items() if h not in covered]
    if job.config.batch_queue_only:
        for g in todo:
            job.cache.queue_batch_request(g.cache_key, job.config.prompt_version, g.body)
        for h in wanted:
            job.batch_pending[h] = "queued for the phase's Batch API job (reteco judge-submissions sends it)"
        return
    for g in todo:
        job.cache.put_request(g.cache_key, job.config.prompt_version, g.body)
    running += await _submit_in_chunks(job, [(g.cache_key, g.body) for g in todo])
    await _collect(job, running, set(wanted))


async def _submit_in_chunks(job: BatchJob, requests: Sequence[tuple[str, dict[str, Any]]], *,
                            unsent: str = "asking these {n} requests live") -> list[BatchRecord]:
    """Upload and create batches of at most ``batch_max_requests`` (request hash, body) lines,
    each recorded in the cache the moment it exists; a chunk that cannot be sent is left to the
    caller (``unsent`` says what becomes of it in the warning)."""
    submitted = []
    size = job.config.batch_max_requests
    for start in range(0, len(requests), size):
        chunk = requests[start:start + size]
        try:
            uploaded = await job.client.files.create(
                file=("reteco-judge-batch.jsonl", batch_jsonl(chunk), "application/jsonl"), purpose="batch"
            )
            batch = await job.client.batches.create(
                input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h",
                metadata={"tool": "reteco judge", "signature": job.config.signature},
            )
        except openai.OpenAIError as exc:
            # The caller decides: a run asks them live, the phase job leaves them for the next run.
            log.warning("batch submission failed (%s); %s", job.redact(_describe(exc)), unsent.format(n=len(chunk)))
            continue
        hashes = tuple(h for h, _ in chunk)
        job.cache.add_batch(batch.id, uploaded.id, job.endpoint, batch.status, hashes)
        submitted.append(BatchRecord(batch.id, uploaded.id, batch.status, hashes, False))
        log.info("batch %s submitted: %d requests", batch.id, len(chunk))
    return submitted


@dataclass(frozen=True)
class PhaseBatches:
    """What ``send_queued_batches`` did: batches found running and resumed, batches sent now,
    the requests they carry, those answered, and those still waiting (why, per request hash)."""

    resumed: tuple[str, ...]
    submitted: tuple[str, ...]
    requests: int
    answered: int
    pending: Mapping[str, str]
    usage: TokenUsage


async def send_queued_batches(job: BatchJob) -> PhaseBatches:
    """Send the cache's queued first asks as the phase's batches and collect every open batch
    (module docstring). A queued request that a recorded batch carries, or that has a stored
    response, is not sent again."""
    running = job.cache.open_batches()
    covered = {h for b in running for h in b.request_hashes}
    queued = job.cache.queued_batch_requests()
    todo = [(h, body) for h, body in queued if h not in covered and job.cache.latest_call(h) is None]
    job.cache.dequeue_batch_requests(h for h, _ in queued if h in covered or job.cache.latest_call(h) is not None)
    # The preflight goes before a batch is paid for: a refused parameter fails once, nothing is sent.
    preflight = getattr(job, "ensure_preflight", None)
    go = todo and (preflight is None or await preflight(todo[0][1]))
    submitted = await _submit_in_chunks(job, todo, unsent="these {n} requests wait for the next run") if go else []
    sent = {h for b in submitted for h in b.request_hashes}
    reason = getattr(job, "abort_reason", None)
    why = f"not sent: {reason}" if reason else "a batch could not be sent (the warning above says why); run again"
    job.batch_pending.update({h: why for h, _ in todo if h not in sent})
    for record in submitted:
        job.cache.dequeue_batch_requests(record.request_hashes)
    every = [*running, *submitted]
    wanted = {h for b in every for h in b.request_hashes}
    await _collect(job, every, wanted)
    return PhaseBatches(tuple(b.batch_id for b in running), tuple(b.batch_id for b in submitted), len(wanted),
                        len(job.batch_filled & wanted), dict(job.batch_pending), job.usage)


def send_phase_batches(config: LLMConfig, cache_dir: Path) -> PhaseBatches:
    """``send_queued_batches`` with a client and the cache of ``cache_dir`` (judge-submissions'
    second pass); raises what the cache or the key raise."""
    job = _PhaseJob(config, log=log, attempts_noun="batch requests")

    async def send() -> PhaseBatches:
        async with job.session(cache_dir):
            return await send_queued_batches(job)

    return run_coroutine(send)


class _PhaseJob(StructuredCaller):
    """The call engine as a ``BatchJob``: its client, cache and redactor, no verdicts."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batch_pending: dict[str, str] = {}


async def _collect(job: BatchJob, running: list[BatchRecord], wanted: set[str]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + job.config.batch_timeout_s
    pending = {b.batch_id: b for b in running}
    status: dict[str, str] = {b.batch_id: b.status for b in running}
    while pending:
        for batch_id in list(pending):
            try:
                batch = await job.client.batches.retrieve(batch_id)
            except openai.OpenAIError as exc:
                log.warning("polling batch %s failed: %s", batch_id, job.redact(_describe(exc)))
                continue
            status[batch_id] = batch.status
            if batch.status in TERMINAL:
                await _collect_one(job, batch, pending.pop(batch_id))
            else:
                job.cache.update_batch(batch_id, batch.status)
        if not pending:
            break
        if loop.time() >= deadline:
            for batch_id, record in pending.items():
                why = (f"batch {batch_id} was still {status[batch_id]} after {job.config.batch_timeout_s:g} s; "
                       "run again to collect it (no new batch is sent for these requests)")
                for h in set(record.request_hashes) & wanted:
                    job.batch_pending[h] = why
            return
        await asyncio.sleep(min(job.config.batch_poll_interval_s, max(deadline - loop.time(), 0)))


async def _collect_one(job: BatchJob, batch: Any, record: BatchRecord) -> None:
    """Store every answered line of a finished batch; failed lines are left to the live path."""
    stored = failed = 0
    for file_id, kind in ((batch.output_file_id, "output"), (batch.error_file_id, "errors")):
        if not file_id:
            continue
        content = await job.client.files.content(file_id)
        text = content.text if isinstance(content.text, str) else content.read().decode("utf-8")
        for line in text.splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            h = entry.get("custom_id")
            response = entry.get("response") or {}
            body = response.get("body")
            if h not in record.request_hashes:
                continue
            if response.get("status_code") == 200 and is_chat_completion(body):
                raw = job.redact(json.dumps(body, ensure_ascii=False))
                usage = call_usage(body)
                job.usage = job.usage + TokenUsage.of_call(usage, batch=True)
                job.cache.add_call(
                    request_hash_=h, response_json=raw, http_status=200,
                    system_fingerprint=body.get("system_fingerprint"), model=body.get("model"),
                    via=f"batch:{batch.id}", endpoint=job.endpoint, started_at=None, usage=usage,
                )
                job.batch_filled.add(h)
                stored += 1
            else:
                failed += 1
                message = json.dumps(entry.get("error") or body, ensure_ascii=False)[:2000]
                job.cache.add_failure(
                    request_hash_=h, attempt=1, kind=f"batch {kind}", http_status=response.get("status_code"),
                    message=job.redact(f"batch {batch.id}: {message}"), wait_s=None, endpoint=job.endpoint,
                )
    job.cache.update_batch(batch.id, batch.status, collected=True,
                           output_file_id=batch.output_file_id, error_file_id=batch.error_file_id)
    missing = len(record.request_hashes) - stored
    log.info("batch %s %s: %d answers stored, %d failed, %d to ask live", batch.id, batch.status, stored, failed, missing)


def _describe(exc: openai.OpenAIError) -> str:
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}: {exc}" if status else f"{type(exc).__name__}: {exc}"
