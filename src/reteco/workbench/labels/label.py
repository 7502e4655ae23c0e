"""``reteco label-temporal``: judge a pool's unlabelled pairs with an LLM, append frozen labels.

    reteco label-temporal --ref REF/1a --pool pool.jsonl [--labels DIR] [--judge-config judge.yaml]

For every pair of the pool without a verdict in the label folder (``REF/temporal_labels``
unless ``--labels``; created from ``REF/temporal_periods.jsonl`` the first time), two focused
prompts are asked (``prompts/v<N>/``, frozen): *temporal relevance* (is the passage topically
relevant and aligned with the period the question needs; an unrelated date does not count)
and *period coverage* (which of the question's required periods it covers), each with a strict
json_schema reply. A pair whose two answers are both usable gets one row in ``labels.jsonl``:
``source: "llm"``, the model as labeller, the prompt version, the time, both rationales, and a
``judge`` record (model and decoding, the server's model and system fingerprints, the request
hashes under which the raw replies sit in the judge cache). A pair with a failed or unusable
answer gets no row (it is reported, and a later run asks again, reusing what the cache holds).

Labels are never changed silently: a pair that already has a verdict is skipped, so running
again on the same pool does nothing; a verdict changes only by a human override
(``reteco label-import``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from reteco.formats.reference import Reference
from reteco.formats.temporal_labels import LABELS_MANIFEST, LabelRow, TemporalLabels, utc_now
from reteco.formats.temporal_periods import QueryPeriods
from reteco.judge import JudgeConfig
from reteco.llm.calls import CallStats
from reteco.llm.config import public_url
from reteco.problems import InputError
from reteco.workbench.labels.calls import OK, Answer, Ask, chat_body, run_asks
from reteco.workbench.labels.pool import query_periods
from reteco.workbench.labels.prompts import CURRENT_VERSION, LabelInput, TemporalPrompts, load_prompts
from reteco.workbench.labels.relevance_prompts import RelevancePrompts

RELEVANCE = "temporal_relevance"
COVERAGE = "period_coverage"


@dataclass
class LabelReport:
    pool_pairs: int = 0
    already_labelled: int = 0
    labelled: int = 0
    not_in_labels: int = 0  # the pair's query has no periods record in the label folder
    no_passage: int = 0
    faults: list[dict] = field(default_factory=list)  # pairs left unlabelled, with why
    http_requests: int = 0
    usage: dict | None = None  # the server's usage of this run's requests, priced (TokenUsage.as_dict)
    cached_answers: int = 0
    content_hash: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def open_or_create_labels(reference: Reference, folder: Path) -> TemporalLabels:
    """The label folder, created over the reference's required periods if it does not exist."""
    if (folder / LABELS_MANIFEST).is_file():
        return TemporalLabels.read(folder)
    periods = query_periods(reference, None)
    return TemporalLabels.create(
        folder, periods.values(), reference.manifest.get("split"),
        f"created by label-temporal from {reference.subtrack} reference periods",
    )


def label_signature(prompts: TemporalPrompts | RelevancePrompts, config: JudgeConfig) -> str:
    """Who labels: the prompts' signature (temporal or relevance), the model and the decoding settings."""
    payload = {
        "prompts": prompts.signature,
        "model": config.model,
        "temperature": config.temperature,
        "seed": config.seed,
        "max_completion_tokens": config.max_completion_tokens,
        "token_limit_param": config.token_limit_param,
        "max_reasks": config.max_reasks,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def label_pool(
    labels: TemporalLabels,
    pool: list[dict],
    config: JudgeConfig,
    *,
    prompts: TemporalPrompts | None = None,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
) -> LabelReport:
    """Label the pool's unlabelled pairs and append their rows; returns what happened."""
    prompts = prompts or load_prompts(CURRENT_VERSION)
    report = LabelReport(pool_pairs=len(pool))
    todo: list[tuple[dict, QueryPeriods, LabelInput]] = []
    seen: set[tuple[str, str]] = set()
    for record in pool:
        pair = (record["query"], record["doc_id"])
        if pair in seen:
            continue
        seen.add(pair)
        if labels.label_of(*pair) is not None:
            report.already_labelled += 1
            continue
        periods = labels.periods.get(record["query"])
        if periods is None:
            report.not_in_labels += 1
            continue
        passage = record.get("passage")
        if not isinstance(passage, str):
            report.no_passage += 1
            continue
        data = LabelInput(
            query=periods.query,
            question=periods.text,
            periods=tuple((p.period, _period_text(p)) for p in periods.periods),
            doc_id=record["doc_id"],
            passage=passage,
        )
        todo.append((record, periods, data))
    if report.no_passage and not todo:
        raise InputError(
            f"{report.no_passage} pairs of the pool have no passage text; pool again with --release or --documents",
        )

    asks: list[Ask] = []
    index: list[tuple[int, str]] = []
    for n, (_, periods, data) in enumerate(todo):
        ids = periods.period_ids()
        asks.append(_ask(prompts, config, RELEVANCE, data, ids))
        index.append((n, RELEVANCE))
        if ids:
            asks.append(_ask(prompts, config, COVERAGE, data, ids))
            index.append((n, COVERAGE))
    stats: list[CallStats] = []
    answers = run_asks(asks, config, cache_dir=cache_dir, retry_invalid=retry_invalid, progress=progress,
                       on_stats=stats.append) if asks else []
    # Every request the run sent, the preflight included (the answers' attempts leave it out).
    report.http_requests = stats[0].http_requests if stats else 0
    report.usage = stats[0].usage.as_dict(config.prices()) if stats else None
    by_pair: dict[int, dict[str, Answer]] = {}
    for (n, task), answer in zip(index, answers):
        by_pair.setdefault(n, {})[task] = answer
        report.cached_answers += answer.cached

    signature = label_signature(prompts, config)
    rows: list[LabelRow] = []
    for n, (record, periods, data) in enumerate(todo):
        got = by_pair.get(n, {})
        failed = {task: a for task, a in got.items() if a.status != OK}
        if failed:
            report.faults.append(
                {"query": data.query, "doc_id": data.doc_id,
                 "problems": {task: f"{a.status}: {a.rationale}" for task, a in failed.items()}}
            )
            continue
        relevance = got[RELEVANCE]
        coverage = got.get(COVERAGE)
        rationale = f"temporal relevance: {relevance.rationale}"
        if coverage is not None:
            rationale += f" | period coverage: {coverage.rationale}"
        rows.append(
            LabelRow(
                query=data.query,
                doc_id=data.doc_id,
                temporally_relevant=bool(relevance.label),
                covers=tuple(coverage.label) if coverage is not None else (),
                source="llm",
                labeller=config.model,
                labelled_at=utc_now(),
                prompt_version=prompts.name,
                rationale=rationale,
                judge=_provenance(config, prompts, signature, got),
            )
        )
    report.labelled = labels.append(rows, f"label-temporal: {len(rows)} verdicts by {config.model} ({prompts.name})") if rows else 0
    report.content_hash = labels.content_hash
    return report


def _period_text(period) -> str:
    text = period.description.strip() or period.instruction.strip() or "(no description)"
    scope = period.scope_text()
    return f"{text} [{scope}]" if scope else text


def _ask(prompts: TemporalPrompts, config: JudgeConfig, task: str, data: LabelInput, period_ids: list[str]) -> Ask:
    return Ask(
        key=f"{data.query}\x1f{data.doc_id}\x1f{task}",
        body=chat_body(config, prompts.messages(task, data), prompts.response_format(task, period_ids)),
        parse=lambda content: prompts.parse(task, content, period_ids),
        reask=prompts.reask_message,
        cache_version=prompts.version,
    )


def _provenance(config: JudgeConfig, prompts: TemporalPrompts, signature: str, answers: dict[str, Answer]) -> dict:
    return {
        "signature": signature,
        "prompts": {"version": prompts.name, "signature": prompts.signature},
        "model": config.model,
        "temperature": config.temperature,
        "seed": config.seed,
        "max_completion_tokens": config.max_completion_tokens,
        "endpoint": public_url(config.resolved_base_url()),
        "answers": {
            task: {
                "reported_model": a.reported_model,
                "system_fingerprint": a.system_fingerprint,
                "request_hashes": a.request_hashes,
                "asks": len(a.request_hashes),
            }
            for task, a in sorted(answers.items())
        },
    }
