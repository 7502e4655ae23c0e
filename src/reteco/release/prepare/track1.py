"""Track 1 (TEMPO) reference data: queries (1a) and steps (1b) from the release layout or the flat
public sample, their qrels, the corpus index and the temporal periods and labels.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterator

from reteco.formats import release as rel
from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.reference import Reference
from reteco.formats.topic_ids import topic_key
from reteco.problems import InputError
from reteco.release.prepare.drafts import (
    CollectedTrack,
    DuplicateMaps,
    IdMapper,
    TemporalDrafts,
    TopicDraft,
    TopicSet,
    add_corpus_relevance,
    add_domain_qrels,
    assign_flat_qrels,
    domain_corpus,
    missing_from_corpus,
    settle,
    subtrack_counts,
    subtrack_manifest,
    subtrack_summary,
    track_summary,
    warn_duplicate_docs,
    warn_stats,
)
from reteco.release.prepare.periods import flat_guidance, frozen_labels, release_guidance, temporal_periods, write_temporal
from reteco.release.prepare.staging import PrepareContext, install, staging_folder
from reteco.subtracks import of_track


def collect_track1(ctx: PrepareContext, folder: Path, layout: str, wanted: list[str]) -> CollectedTrack:
    queries = TopicSet("1a")
    steps = TopicSet("1b")
    temporal = TemporalDrafts()
    duplicates = DuplicateMaps()
    corpora: dict[str, Path] = {}

    if layout == rel.RELEASE:
        dirs = rel.domain_dirs(folder)
        for domain, d in dirs.items():
            mapper = domain_corpus(domain, d, corpora, duplicates)
            # Both files are read for either sub-track: a query's steps are its required periods
            # (temporal coverage, 1a and 1b), its qrels the temporal oracle of 1b.
            release_track1_file(ctx, d, domain, "examples", "qrels", queries, mapper, is_steps=False)
            release_track1_file(ctx, d, domain, "steps", "qrels_steps", steps, mapper, is_steps=True)
            release_guidance(ctx, d, domain, temporal, mapper)
        domains = sorted(dirs)
        if "1a" in wanted:
            queries.warn_missing(ctx)
        if "1b" in wanted:
            steps.warn_missing(ctx)
    else:
        mapper = domain_corpus("", folder, corpora, duplicates)  # the flat layout: one corpus
        flat_track1(ctx, folder, list(of_track(1)), queries, steps, mapper)
        flat_guidance(ctx, folder, queries, steps, temporal, mapper)
        domains = sorted({d.domain for s in (queries, steps) for d in s.drafts.values()})
    dup = duplicates.merged(ctx, rel.TRACK1_DIR)
    settled = {"1a": settle(queries), "1b": settle(steps)}
    return CollectedTrack(folder, layout, wanted, domains, corpora, dup, {"1a": queries, "1b": steps}, settled, temporal)


def build_track1(ctx: PrepareContext, track: CollectedTrack) -> None:
    name = rel.TRACK1_DIR
    folder, layout, wanted, domains, corpora, dup = (
        track.folder, track.layout, track.wanted, track.domains, track.corpora, track.dup
    )
    queries, steps, settled, temporal = track.sets["1a"], track.sets["1b"], track.settled, track.temporal

    # Corpus: ids only, streamed; texts of Track 1 are never needed for scoring.
    if not corpora:
        index = None
        ctx.warn(f"{name}: no documents.jsonl; the reference accepts every document id")
    else:
        topic_domains = {d.domain for s in (queries, steps) for d in s.drafts.values()}
        if layout == rel.RELEASE:
            lacking = sorted(topic_domains - set(corpora))
            if lacking:
                raise InputError(
                    f"domains with topics but no documents.jsonl: {', '.join(lacking)}", str(folder)
                )
            index, lines_per_domain = index_release(ctx, corpora, domains, ("id", "doc_id"), f"{name} documents")
        else:
            index, lines_per_domain, domains, unattributed = index_flat_track1(ctx, corpora[""], domains, queries, steps)
            if unattributed:
                ctx.warn(
                    f"{name}: {unattributed} documents of the flat corpus have no domain prefix and are cited by no "
                    "query; they are accepted in every domain"
                )
        warn_duplicate_docs(ctx, name, index, lines_per_domain)

    ctx.summary["tracks"][name] = track_summary(layout, domains, index, dup)
    periods = temporal_periods(ctx, queries, steps, settled, temporal, wanted)
    frozen = frozen_labels(ctx, folder, periods)
    for sub, target, unit in (("1a", queries, "query"), ("1b", steps, "query")):
        if sub not in wanted:
            continue
        kept, topics, judgments = settled[sub]
        missing = missing_from_corpus(judgments, topics, index)
        counts = subtrack_counts(topics, judgments, target.stats, index)
        counts["gold_missing_from_corpus"] = missing
        if sub == "1b":
            counts["queries"] = counts["units"]
        staging = staging_folder(ctx, sub)
        manifest = subtrack_manifest(ctx, sub, unit, domains, counts, layout)
        manifest["temporal"] = write_temporal(staging, topics, periods, frozen)
        add_corpus_relevance(ctx, sub, manifest, topics, judgments, index)
        reference = Reference(manifest, topics, judgments, index, dup)
        reference.write(staging)
        install(staging, ctx.out / sub, ctx.split)
        ctx.summary["subtracks"][sub] = subtrack_summary(ctx.out / sub, counts, target.stats)
        ctx.summary["subtracks"][sub]["temporal"] = manifest["temporal"]
        warn_stats(ctx, sub, target.stats, missing)
    if "1b" in wanted and steps.stats["steps_numbered"]:
        # The public sample's steps file: one record per query, its gold the query's, no step id.
        ctx.warn(
            f"1b: {steps.stats['steps_numbered']} records of the steps file have no step id (a query's record "
            "without its steps, as in the public sample): each is taken as its query's one step, "
            "'<query id>_step1', the id a run must use"
        )
    if "1b" in wanted and steps.stats["steps_parent_not_in_id"]:
        ctx.warn(
            f"1b: {steps.stats['steps_parent_not_in_id']} nested steps have a step_id that does not rsplit('_step') "
            "to their record's id; the record's id was taken as the parent query"
        )


def release_track1_file(
    ctx: PrepareContext,
    folder: Path,
    domain: str,
    stem: str,
    qrels_stem: str,
    target: TopicSet,
    mapper: IdMapper,
    is_steps: bool,
) -> None:
    path = rel.find_file(folder, stem, ctx.split, (".jsonl",), rel.RELEASE)
    if path is None:
        target.note_missing(folder, domain, stem, f"{stem}_{ctx.split}.jsonl", (".jsonl",))
        return
    if is_steps:
        for step in rel.read_steps(path):
            target.stats["steps_parent_not_in_id"] += step.parent_disagrees
            target.stats["steps_numbered"] += step.numbered
            gold = mapper.many(step.gold_ids)
            target.add(
                TopicDraft(
                    topic_key(domain, step.step_id), domain, step.step_id, topic_key(domain, step.parent_id),
                    gold=gold, file=step.file, line=step.line,
                    text=step.text, instruction=step.instruction, query_text=step.query_text,
                )
            )
    else:
        for query in rel.read_examples(path):
            key = topic_key(domain, query.query_id)
            gold = mapper.many(query.gold_ids)
            target.add(
                TopicDraft(key, domain, query.query_id, key, gold=gold, file=query.file, line=query.line, text=query.query)
            )
    target.stats["gold_ids_remapped"] += mapper.changed
    mapper.changed = 0
    qrels = rel.find_file(folder, qrels_stem, ctx.split, (".txt",), rel.RELEASE)
    if qrels is None:
        return
    add_domain_qrels(target, domain, qrels, mapper)


def flat_track1(
    ctx: PrepareContext, folder: Path, wanted: list[str], queries: TopicSet, steps: TopicSet, mapper: IdMapper
) -> None:
    """The sample's flat Track 1: a query's domain is the prefix of its gold doc ids."""
    examples_path = rel.find_file(folder, "examples", ctx.split, (".jsonl",), rel.SAMPLE)
    qrels_path = rel.find_file(folder, "qrels", ctx.split, (".txt",), rel.SAMPLE)
    qrels_lines = list(rel.read_qrels(qrels_path)) if qrels_path else []
    qrels_docs: dict[str, list[str]] = {}
    for line in qrels_lines:
        qrels_docs.setdefault(line.topic_id, []).append(line.doc_id)

    # Examples are read even for 1b alone: they tell a step's parent query its domain.
    query_domains: dict[str, set[str]] = {}
    if examples_path is not None:
        for query in rel.read_examples(examples_path):
            gold = mapper.many(query.gold_ids)
            domain, mixed = rel.prefix_domain(gold or qrels_docs.get(query.query_id, []))
            queries.stats["gold_ids_remapped"] += mapper.changed
            mapper.changed = 0
            if domain is None:
                queries.stats["topics_without_domain"] += 1
                continue
            queries.stats["topics_with_mixed_prefixes"] += mixed
            query_domains.setdefault(query.query_id, set()).add(domain)
            key = topic_key(domain, query.query_id)
            queries.add(
                TopicDraft(key, domain, query.query_id, key, gold=gold, file=query.file, line=query.line, text=query.query)
            )
    elif "1a" in wanted:
        queries.note_absent(ctx, f"1a: no examples file in flat {folder.name}/")
    if "1a" in wanted and qrels_path is not None:
        assign_flat_qrels(qrels_lines, queries, mapper, doc_prefix_decides=True)
    if queries.stats["topics_without_domain"]:
        ctx.warn(f"1a: {queries.stats['topics_without_domain']} queries have no gold id to tell their domain; dropped")
    if queries.stats["topics_with_mixed_prefixes"]:
        ctx.warn(f"1a: {queries.stats['topics_with_mixed_prefixes']} queries have gold ids of several domains")

    if "1b" not in wanted:
        return
    steps_path = rel.find_file(folder, "steps", ctx.split, (".jsonl",), rel.SAMPLE)
    if steps_path is None:
        steps.note_absent(ctx, f"1b: no steps file in flat {folder.name}/")
        return
    step_qrels_path = rel.find_file(folder, "qrels_steps", ctx.split, (".txt",), rel.SAMPLE)
    step_qrels = list(rel.read_qrels(step_qrels_path)) if step_qrels_path else []
    step_docs: dict[str, list[str]] = {}
    for line in step_qrels:
        step_docs.setdefault(line.topic_id, []).append(line.doc_id)
    for step in rel.read_steps(steps_path):
        steps.stats["steps_numbered"] += step.numbered
        gold = mapper.many(step.gold_ids)
        steps.stats["gold_ids_remapped"] += mapper.changed
        mapper.changed = 0
        domain, _ = rel.prefix_domain(gold or step_docs.get(step.step_id, []))
        if domain is None and len(query_domains.get(step.parent_id, ())) == 1:
            domain = next(iter(query_domains[step.parent_id]))
        if domain is None:
            steps.stats["topics_without_domain"] += 1
            continue
        steps.add(
            TopicDraft(
                topic_key(domain, step.step_id), domain, step.step_id, topic_key(domain, step.parent_id),
                gold=gold, file=step.file, line=step.line,
                text=step.text, instruction=step.instruction, query_text=step.query_text,
            )
        )
    if step_qrels_path is not None:
        assign_flat_qrels(step_qrels, steps, mapper, doc_prefix_decides=True)
    if steps.stats["topics_without_domain"]:
        ctx.warn(f"1b: {steps.stats['topics_without_domain']} steps have no gold id to tell their domain; dropped")


def index_release(
    ctx: PrepareContext, corpora: dict[str, Path], domains: list[str], id_keys: tuple[str, ...], label: str
) -> tuple[DocIdIndex, Counter]:
    """The id index of per-domain corpora, streamed straight into DocIdIndex.from_pairs."""
    lines: Counter = Counter()

    def pairs(bytes_read) -> Iterator[tuple[str, str]]:
        for domain, path in corpora.items():
            for _, doc_id, _ in rel.iter_documents(path, id_keys, with_text=False, bytes_read=bytes_read):
                lines[domain] += 1
                yield domain, doc_id

    with ctx.reading(label, corpora.values()) as bytes_read:
        return DocIdIndex.from_pairs(pairs(bytes_read), domains), lines


def index_flat_track1(
    ctx: PrepareContext, path: Path, topic_domains: list[str], queries: TopicSet, steps: TopicSet
) -> tuple[DocIdIndex, Counter, list[str], int]:
    """Flat TEMPO corpus: each document's domains by the flat layout's rule
    (``reteco.formats.release.attribute_flat_corpus``: its id's prefix, else its citers')."""
    citations = [
        (draft.domain, list(draft.gold or []) + target.qrels.get(draft.key, []))
        for target in (queries, steps)
        for draft in target.drafts.values()
    ]
    # The domain list must be known before building the index, and in a flat file only the ids
    # tell it: keep the ids of this one file (flat corpora are samples).
    with ctx.reading(f"{rel.TRACK1_DIR} documents", [path]) as bytes_read:
        ids = [doc_id for _, doc_id, _ in rel.iter_documents(path, ("id", "doc_id"), with_text=False, bytes_read=bytes_read)]
    attribution = rel.attribute_flat_corpus(ids, citations, topic_domains, by_prefix=True)
    pairs = [(domain, doc_id) for doc_id in ids for domain in attribution.owners[doc_id]]
    lines = Counter(d for d, _ in pairs)
    return DocIdIndex.from_pairs(pairs, attribution.domains), lines, attribution.domains, attribution.unattributed
