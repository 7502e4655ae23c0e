"""What the judge is asked (``JudgeItem``) and what it answers (``JudgeOutcome``).

Both have a JSON form (one object per line in the files ``reteco judge`` reads and writes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reteco.formats.turns import KEY_POINT_IMPORTANCE, parse_key_points
from reteco.llm.usage import TokenUsage
from reteco.subtracks import DIMENSIONS

OK = "ok"
INVALID = "invalid"
ERROR = "error"
STATUSES = (OK, INVALID, ERROR)

ITEM_FIELDS = ("key", "dimension", "query", "history", "answer", "evidence", "reference_answer", "gold_evidence",
               "key_points")



@dataclass(frozen=True)
class JudgeItem:
    """One judgment to make: one answer of one turn on one dimension.

    ``evidence`` holds (doc_id, passage text) pairs: the passages the system had, i.e. the
    supplied gold passages (2b) or the run's top 5 (2c); faithfulness is judged against them.
    ``gold_evidence`` holds the turn's gold passages whatever the system retrieved (2b and 2c
    alike); correctness and completeness are judged against them and the reference answer
    (prompt version 2 on; version 1 showed ``evidence`` to every dimension). ``key_points``:
    the reference answer's written key points as (text, importance) pairs, importance "vital"
    or "okay" (empty: none written), shown from prompt version 3 on. Which inputs a dimension
    sees is its prompt's ``inputs``. Everything but ``key`` and ``dimension`` is data
    shown to the judge, never instructions to it.
    """

    key: str
    dimension: str
    query: str
    history: str
    answer: str
    evidence: tuple[tuple[str, str], ...]
    reference_answer: str
    gold_evidence: tuple[tuple[str, str], ...] = ()
    key_points: tuple[tuple[str, str], ...] = ()  # (text, "vital" | "okay"): the reference's, when written


@dataclass(frozen=True)
class JudgeOutcome:
    """The judge's verdict on one item.

    ``status`` is "ok" (``score`` in 1..5), "invalid" (no usable score after the bounded
    re-asks, or a refusal) or "error" (the request failed after the transport retries, or was
    not sent because the run was aborted). ``score`` is None unless the status is "ok": a
    missing judgment is never replaced by a number. ``rationale`` is the judge's own text when
    ok, otherwise what went wrong. ``cached`` is True when no HTTP call was made for the item
    in this run. ``attempts`` counts the HTTP requests that made the judgment (transport
    retries and re-asks included), in whichever run made them. ``cache_key`` names the
    judgment's row in the cache (the sha256 of its first request and endpoint), the audit
    trail's handle. Provenance: ``reported_model`` is the model the server named in the reply
    that gave the verdict (None when no reply did: status "error"), which may differ from the
    configured one; ``system_fingerprint`` that reply's fingerprint; ``endpoint`` the public URL
    of the server asked. ``usage``: the calls that made the verdict and their tokens, in whichever
    run they were made (``reteco.llm.usage``): what the verdict cost.
    """

    item: JudgeItem
    score: int | None
    status: str
    rationale: str
    cached: bool
    attempts: int
    system_fingerprint: str | None
    cache_key: str = ""
    reported_model: str | None = None
    endpoint: str | None = None
    usage: TokenUsage | None = None  # the tokens of the calls that made the verdict (None: no verdict)

    @property
    def normalized(self) -> float | None:
        """(score - 1) / 4, the evaluation plan's 0..1 scale; None when there is no score."""
        return None if self.score is None else (self.score - 1) / 4


def item_from_json(obj: Mapping[str, Any], dimensions: tuple[str, ...] = DIMENSIONS) -> JudgeItem:
    """Build an item from its JSON object, its dimension one of ``dimensions`` (the prompt
    version's: ``PromptSet.dimension_names``); raises ValueError naming the offending field.

    ``evidence`` and ``gold_evidence`` are lists of ``[doc_id, text]`` pairs or of
    ``{"doc_id", "text"}`` objects; ``history``, ``reference_answer``, ``evidence`` and
    ``gold_evidence`` may be absent (empty).
    """
    if not isinstance(obj, Mapping):
        raise ValueError("an item must be a JSON object")
    unknown = sorted(set(obj) - set(ITEM_FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(ITEM_FIELDS)}")
    for name in ("key", "dimension", "query", "answer"):
        if name not in obj:
            raise ValueError(f"missing field {name!r}")
    values = {}
    for name in ("key", "dimension", "query", "history", "answer", "reference_answer"):
        value = obj.get(name, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ValueError(f"field {name!r} must be a string, got {type(value).__name__}")
        values[name] = value
    if values["dimension"] not in dimensions:
        raise ValueError(f"dimension {values['dimension']!r} is not one of {', '.join(dimensions)}")
    evidence = {name: _passages(obj.get(name), name) for name in ("evidence", "gold_evidence")}
    return JudgeItem(**evidence, **values, key_points=parse_key_points(obj.get("key_points")))


def _passages(raw: Any, name: str) -> tuple[tuple[str, str], ...]:
    """A list of ``[doc_id, text]`` pairs or ``{"doc_id", "text"}`` objects as (doc_id, text) pairs."""
    pairs = []
    raw = raw or []
    if not isinstance(raw, list):
        raise ValueError(f"field {name!r} must be a list")
    for n, entry in enumerate(raw, 1):
        if isinstance(entry, Mapping) and set(entry) == {"doc_id", "text"}:
            pair = (entry["doc_id"], entry["text"])
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:
            pair = (entry[0], entry[1])
        else:
            raise ValueError(f"{name} entry {n} must be [doc_id, text] or {{\"doc_id\", \"text\"}}")
        if not all(isinstance(x, str) for x in pair):
            raise ValueError(f"{name} entry {n}: doc_id and text must be strings")
        pairs.append(pair)
    return tuple(pairs)


def item_to_json(item: JudgeItem) -> dict:
    """The JSON object of an item (the inverse of ``item_from_json``)."""
    return {
        "key": item.key,
        "dimension": item.dimension,
        "query": item.query,
        "history": item.history,
        "answer": item.answer,
        "evidence": [[doc_id, text] for doc_id, text in item.evidence],
        "reference_answer": item.reference_answer,
        "gold_evidence": [[doc_id, text] for doc_id, text in item.gold_evidence],
        "key_points": [{"text": text, "importance": importance} for text, importance in item.key_points],
    }


def outcome_to_json(outcome: JudgeOutcome, signature: str | None = None) -> dict:
    """The JSON object of an outcome: the item's key and dimension plus the verdict."""
    out = {
        "key": outcome.item.key,
        "dimension": outcome.item.dimension,
        "status": outcome.status,
        "score": outcome.score,
        "rationale": outcome.rationale,
        "cached": outcome.cached,
        "attempts": outcome.attempts,
        "system_fingerprint": outcome.system_fingerprint,
        "reported_model": outcome.reported_model,
        "endpoint": outcome.endpoint,
        "cache_key": outcome.cache_key,
    }
    if signature is not None:
        out["judge_signature"] = signature
    return out


def validate_items(items: Iterable[JudgeItem], dimensions: tuple[str, ...] = DIMENSIONS) -> None:
    """Raise ValueError on a dimension not among ``dimensions`` (the prompt version's), TypeError
    on fields of the wrong type."""
    for n, item in enumerate(items):
        if not isinstance(item, JudgeItem):
            raise TypeError(f"item {n} is a {type(item).__name__}, not a JudgeItem")
        if item.dimension not in dimensions:
            raise ValueError(f"item {n} ({item.key}): dimension {item.dimension!r} is not one of {', '.join(dimensions)}")
        for name in ("key", "query", "history", "answer", "reference_answer"):
            if not isinstance(getattr(item, name), str):
                raise TypeError(f"item {n} ({item.key}): {name} must be a string")
        for text, importance in item.key_points:
            if not isinstance(text, str) or importance not in KEY_POINT_IMPORTANCE:
                raise TypeError(f"item {n} ({item.key}): key_points must be (text, 'vital' | 'okay') pairs")
        for name in ("evidence", "gold_evidence"):
            for pair in getattr(item, name):
                if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                    raise TypeError(f"item {n} ({item.key}): {name} must be (doc_id, text) string pairs")


def summarize_outcomes(outcomes: Iterable[JudgeOutcome], dimensions: tuple[str, ...] = DIMENSIONS) -> dict[str, dict[str, int]]:
    """Counts per dimension: ok, invalid, error, and how many came from the cache.

    This is what a report discloses about the judge's reliability (invalid and missing
    judgments per dimension).
    """
    counts: dict[str, Counter] = {d: Counter() for d in dimensions}
    for o in outcomes:
        c = counts.setdefault(o.item.dimension, Counter())
        c[o.status] += 1
        c["cached"] += int(o.cached)
    return {d: {k: int(c.get(k, 0)) for k in (*STATUSES, "cached")} for d, c in counts.items()}


def verdicts_usage(outcomes: Iterable[JudgeOutcome]) -> TokenUsage:
    """The tokens the verdicts of ``outcomes`` cost (``JudgeOutcome.usage``), each judgment once:
    items asking the same request share one verdict and were paid once."""
    seen: dict[str, TokenUsage] = {}
    for o in outcomes:
        if o.usage is not None:
            seen.setdefault(o.cache_key or str(id(o)), o.usage)
    out = TokenUsage()
    for usage in seen.values():
        out = out + usage
    return out
