"""Track 1's required time periods (from the steps and the guidance's time scopes) and the frozen
temporal labels a release may carry, written beside 1a and 1b's reference data.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from reteco.formats import release as rel
from reteco.formats.reference import Topic
from reteco.formats.temporal_labels import LABEL_PERIODS, LABEL_ROWS, LABELS_DIR, LABELS_MANIFEST, TemporalLabels
from reteco.formats.temporal_periods import GRANULARITIES, PERIODS_FILE, PERIODS_FORMAT, Period, QueryPeriods, write_periods
from reteco.formats.topic_ids import topic_key
from reteco.problems import InputError
from reteco.release.prepare.drafts import IdMapper, TemporalDrafts, TopicDraft, TopicSet
from reteco.release.prepare.staging import PrepareContext
from reteco.subtracks import of_track


def release_guidance(ctx: PrepareContext, folder: Path, domain: str, temporal: TemporalDrafts, mapper: IdMapper) -> None:
    path = rel.find_file(folder, "guidance", ctx.split, (".jsonl",), rel.RELEASE)
    if path is None:
        temporal.missing.append(domain)
        return
    for guidance in rel.read_guidance(path):
        temporal.add(topic_key(domain, guidance.query_id), guidance, mapper)


def flat_guidance(ctx: PrepareContext, folder: Path, queries: TopicSet, steps: TopicSet, temporal: TemporalDrafts, mapper: IdMapper) -> None:
    """The flat layout's guidance file: a record goes to the one query key with its id."""
    path = rel.find_file(folder, "guidance", ctx.split, (".jsonl",), rel.SAMPLE)
    if path is None:
        temporal.missing.append(folder.name)
        return
    keys: dict[str, set[str]] = {}
    for draft in queries.drafts.values():
        keys.setdefault(draft.topic_id, set()).add(draft.key)
    for draft in steps.drafts.values():
        keys.setdefault(draft.unit.split("/", 1)[1], set()).add(draft.unit)
    for guidance in rel.read_guidance(path):
        candidates = keys.get(guidance.query_id, set())
        if len(candidates) != 1:
            temporal.stats["guidance_unmatched"] += 1
            continue
        temporal.add(next(iter(candidates)), guidance, mapper)


def temporal_periods(
    ctx: PrepareContext, queries: TopicSet, steps: TopicSet, settled: dict, temporal: TemporalDrafts, wanted: list[str]
) -> dict[str, QueryPeriods]:
    """Required periods of every Track-1 query, with the organizers' offline oracle.

    A query's steps, in file order, are its required periods ``p1, p2, ...``; a period's time
    scope spans the guidance's time scopes of the step's gold passages. The oracle: the query's
    qrels are temporally relevant (the union of its steps' gold ids when the query has none);
    a step's gold ids cover its period.
    """
    _, query_topics, query_judgments = settled["1a"]
    _, step_topics, step_judgments = settled["1b"]
    query_gold: dict[str, list[str]] = {}
    for j in query_judgments:
        query_gold.setdefault(j.key, []).append(j.doc_id)
    step_gold: dict[str, list[str]] = {}
    for j in step_judgments:
        step_gold.setdefault(j.key, []).append(j.doc_id)
    steps_of: dict[str, list[TopicDraft]] = {}
    for draft in steps.drafts.values():
        steps_of.setdefault(draft.unit, []).append(draft)
    keys = list(dict.fromkeys([t.key for t in query_topics] + [t.unit for t in step_topics]))

    stats = temporal.stats
    out: dict[str, QueryPeriods] = {}
    for key in keys:
        query = queries.drafts.get(key)
        step_drafts = steps_of.get(key, [])
        guidance = temporal.guidance.get(key)
        periods = []
        for number, step in enumerate(step_drafts, 1):
            docs = tuple(step_gold.get(step.key, []))
            scopes = [guidance.scopes[d] for d in docs if d in guidance.scopes] if guidance else []
            start, end, granularity = time_span(scopes)
            periods.append(
                Period(f"p{number}", step.topic_id, step.text, step.instruction, start, end, granularity, docs)
            )
            stats["periods"] += 1
            stats["periods_with_time_scope"] += start is not None
            stats["periods_without_oracle_docs"] += not docs
        relevant = query_gold.get(key) or list(dict.fromkeys(d for p in periods for d in p.oracle_docs))
        stats["queries_without_periods"] += not periods
        out[key] = QueryPeriods(
            key,
            query.text if query is not None else (step_drafts[0].query_text if step_drafts else ""),
            tuple(periods),
            guidance.key_time_anchors if guidance else (),
            guidance.is_temporal_query if guidance else None,
            tuple(relevant),
        )
    stats["guidance_for_unknown_queries"] = len(set(temporal.guidance) - set(out))

    subs = "/".join(s for s in of_track(1) if s in wanted)
    if stats["queries_without_periods"]:
        ctx.warn(
            f"{subs}: {stats['queries_without_periods']} queries have no step, hence no required period; "
            "they are left out of temporal coverage"
        )
    if stats["periods_without_oracle_docs"]:
        ctx.warn(
            f"{subs}: {stats['periods_without_oracle_docs']} steps have no gold document; without frozen labels "
            "their periods cannot be covered and are not counted as required"
        )
    if temporal.missing and temporal.guidance:
        # A release without any guidance (the public sample) is said by the counts, not warned about.
        ctx.warn(
            f"{subs}: no guidance_{ctx.split}.jsonl in {len(temporal.missing)} domain(s): {', '.join(temporal.missing)}; "
            "their required periods have no time scope"
        )
    for name, text in (
        ("guidance_unusable_scopes", "gold passage annotations of the guidance have no usable ISO time scope; skipped"),
        ("guidance_unmatched", "guidance records name no single query of the split; ignored"),
        ("guidance_repeated", "guidance records repeat a query; the first was used"),
        ("guidance_for_unknown_queries", "guidance records name queries that are not in the split; ignored"),
    ):
        if stats[name]:
            ctx.warn(f"{subs}: {stats[name]} {text}")
    return out


def time_span(scopes: list[rel.TimeScope]) -> tuple[str | None, str | None, str | None]:
    """The earliest start and latest end of some time scopes, and their coarsest granularity."""
    if not scopes:
        return None, None, None
    start = min(scopes, key=lambda s: iso_key(s.start_iso, end=False)).start_iso
    end = max(scopes, key=lambda s: iso_key(s.end_iso, end=True)).end_iso
    known = [s.granularity for s in scopes if s.granularity in GRANULARITIES]
    granularity = min(known, key=GRANULARITIES.index) if known else None
    return start, end, granularity


def iso_key(iso: str, end: bool) -> tuple[int, int, int]:
    """An ISO date of any precision as (year, month, day): "2017" starts 2017-01-01, ends 2017-12-31."""
    negative = iso.startswith("-")
    parts = iso.lstrip("-").split("-")
    year = -int(parts[0]) if negative else int(parts[0])
    month = int(parts[1]) if len(parts) > 1 else (12 if end else 1)
    day = int(parts[2]) if len(parts) > 2 else (31 if end else 1)
    return year, month, day


def frozen_labels(ctx: PrepareContext, folder: Path, periods: dict[str, QueryPeriods]) -> TemporalLabels | None:
    """The release's frozen temporal labels of the split (``temporal_labels_<split>/``), verified."""
    path = folder / f"{rel.TEMPORAL_LABELS_PREFIX}{ctx.split}"
    if not path.is_dir():
        return None
    labels = TemporalLabels.read(path)
    split = labels.manifest.get("split")
    if split not in (None, ctx.split):
        raise InputError(f"frozen temporal labels of split {split!r} in the folder of split {ctx.split!r}", str(path))
    unknown = [q for q in labels.periods if q not in periods]
    if unknown:
        ctx.warn(f"frozen temporal labels: {len(unknown)} labelled queries are not queries of split {ctx.split}; ignored")
    differ = sum(
        1 for q, p in labels.periods.items() if q in periods and p.period_ids() != periods[q].period_ids()
    )
    if differ:
        ctx.warn(
            f"frozen temporal labels: {differ} queries have other required periods than the release's steps; "
            "the labels' own periods are used"
        )
    missing = sum(1 for q in periods if q not in labels.periods)
    if missing:
        ctx.warn(
            f"frozen temporal labels: {missing} queries of split {ctx.split} have none; with frozen labels they "
            "have no required period and no temporally relevant document"
        )
    return labels


def write_temporal(
    staging: Path, topics: list[Topic], periods: dict[str, QueryPeriods], frozen: TemporalLabels | None
) -> dict:
    """Write temporal_periods.jsonl (and a copy of the frozen labels); returns the manifest entry."""
    keys = list(dict.fromkeys(t.unit for t in topics))
    records = [periods[k] for k in keys if k in periods]
    write_periods(staging / PERIODS_FILE, records, oracle=True)
    info: dict = {
        "format": PERIODS_FORMAT,
        "periods_file": PERIODS_FILE,
        "queries": len(keys),
        "queries_with_periods": sum(1 for r in records if r.periods),
        "periods": sum(len(r.periods) for r in records),
        "periods_with_time_scope": sum(1 for r in records for p in r.periods if p.start_iso is not None),
        "periods_without_oracle_docs": sum(1 for r in records for p in r.periods if not p.oracle_docs),
        "frozen_labels": None,
    }
    if frozen is not None:
        target = staging / LABELS_DIR
        target.mkdir()
        for name in (LABELS_MANIFEST, LABEL_PERIODS, LABEL_ROWS):
            shutil.copyfile(frozen.root / name, target / name)
        info["frozen_labels"] = {"folder": LABELS_DIR, "content_hash": frozen.content_hash, **frozen.counts()}
    return info
