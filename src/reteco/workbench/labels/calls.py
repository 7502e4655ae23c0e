"""Chat Completions calls of the temporal labeller, on the generation judge's structured-call layer.

The calls themselves are ``reteco.llm.calls.run_structured_calls``, the loop the
judge's ``run_judge`` runs on too; this module only words its questions (``Ask``) and reads its
answers (``Answer``). It shares with the judge everything a reviewer of the labels needs to trust:

- the configuration: ``load_judge_config`` (the same ``judge.yaml``, or the ``--judge-config``
  given): endpoint, where the key is read from, model, temperature, seed, token cap, timeouts,
  retry, backoff, re-ask and abort settings; ``endpoint_available`` says why it cannot run;
- the cache and audit trail: ``JudgeCache`` (the same SQLite file in the same folder): every
  request body, every raw response, every failed attempt with the wait that followed it;
- the key redactor (``Redactor``) and public endpoint text (``public_url``);
- the retry, pause, abort, re-ask and refusal handling, documented in ``judge.calls``.

Fault behaviour is therefore the judge's documented one:

- a response already in the cache for the same request: replayed, no HTTP call (parsing is
  deterministic, so a replay gives the same label); ``retry_invalid`` asks again the labels
  whose stored replies were unusable;
- 429, 408, 409, 5xx, timeout, connection error, or a 200 whose body is not a chat completion:
  retried up to ``max_retries`` times, waiting the server's Retry-After when given (a 429's
  pauses every worker) else exponential backoff with jitter, never more than ``max_wait_s``;
  still failing: status "error" (nothing cached as a verdict; the next run tries again);
- other 4xx, and a 500 saying a named parameter is invalid: "error" at once, the parameter and
  the setting to change named; 401, 403, 404, or 429 ``insufficient_quota``: "error" and the
  rest of the run is not sent; ``abort_after_errors`` failures in a row stop the run too;
- the preflight (one tiny request shaped like the run's, before the first) refused or failing:
  nothing else is sent and ``run_asks`` raises ``NotAvailable`` (``EndpointRefused``) with the
  parameter and the setting to change;
- the request shape follows the config's ``response_format`` (``json_schema`` strict, or
  ``json_object`` / ``none`` with the schema written into the system message); the replies are
  checked against the schema whatever the mode;
- a reply that breaks the strict schema, is empty or was cut at the token cap: re-asked with
  what was wrong, up to ``max_reasks`` times; then "invalid";
- a refusal or a content-filter stop: "invalid" at once.

No path produces a label the model did not give: a pair with any "error" or "invalid" answer
gets no label row at all, and the caller reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reteco.llm.calls import (
    ERROR,
    INVALID,
    OK,
    CallsNotAvailable,
    CallStats,
    EndpointRefused,
    StructuredReply,
    StructuredRequest,
    run_structured_calls,
    stream_structured_calls,
)
from reteco.llm.compatibility import shape_request
from reteco.llm.config import LLMConfig, Redactor, read_api_key

__all__ = ["ERROR", "INVALID", "OK", "Answer", "Ask", "EndpointRefused", "NotAvailable", "chat_body", "run_asks",
           "stream_asks"]

NotAvailable = CallsNotAvailable  # no key, no usable endpoint, or the preflight refused: nothing was sent


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


def chat_body(config: LLMConfig, messages: list[dict[str, str]], response_format: dict[str, Any]) -> dict[str, Any]:
    """A label's first request body: the messages and strict reply format, with the config's model,
    token cap and (when set) temperature and seed."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "response_format": response_format,
        config.token_limit_param: config.max_completion_tokens,
    }
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.seed is not None:
        body["seed"] = config.seed
    return body


def run_asks(
    asks: Sequence[Ask],
    config: LLMConfig,
    *,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
    on_stats: Callable[[CallStats], None] | None = None,
) -> list[Answer]:
    """Answer every ask (same order) with at most ``config.concurrency`` requests in flight.

    ``retry_invalid`` asks again instead of replaying the stored replies. Each ask's body (built
    with a strict json_schema) is sent in the config's ``response_format`` mode. ``on_stats``
    gets the run's request figures (the preflight included), as ``run_structured_calls`` gives them.
    """
    requests = [
        StructuredRequest(shape_request(a.body, config.response_format), a.parse, a.reask, a.cache_version, label=a.key)
        for a in asks
    ]
    replies = run_structured_calls(
        requests, config, cache_dir=cache_dir, progress=progress, fresh=retry_invalid,
        unit="label", desc=f"label {config.model}", on_stats=on_stats,
    )
    redact = Redactor(read_api_key(config)[0])
    return [_answer(r, redact) for r in replies]


def stream_asks(
    asks: Iterable[tuple[Any, Ask]],
    config: LLMConfig,
    on_answer: Callable[[Any, Answer], None],
    *,
    total: int | None = None,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
    on_stats: Callable[[CallStats], None] | None = None,
) -> None:
    """``run_asks`` for a stream of ``(item, ask)``: each answer goes to ``on_answer(item,
    answer)`` as it arrives (``reteco.llm.calls.stream_structured_calls``); only the asks in
    flight are held."""
    redact = Redactor(read_api_key(config)[0])
    items: dict[int, Any] = {}

    def requests():
        for item, a in asks:
            request = StructuredRequest(shape_request(a.body, config.response_format), a.parse, a.reask,
                                        a.cache_version, label=a.key)
            items[id(request)] = item
            yield request

    def reply(request: StructuredRequest, r: StructuredReply) -> None:
        on_answer(items.pop(id(request)), _answer(r, redact))

    stream_structured_calls(
        requests(), config, reply, total=total, cache_dir=cache_dir, progress=progress, fresh=retry_invalid,
        unit="label", desc=f"label {config.model}", on_stats=on_stats,
    )


def _answer(r: StructuredReply, redact: Redactor) -> Answer:
    label, rationale = r.value if r.status == OK else (None, r.detail)
    return Answer(
        r.status, label, (redact(rationale) or "") if r.status == OK else rationale, r.attempts, r.cached,
        r.system_fingerprint, r.reported_model, r.request_hashes, r.call_ids,
    )
