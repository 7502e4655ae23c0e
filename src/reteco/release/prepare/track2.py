"""Track 2 (RECOR) reference data: the target turns of 2a, 2b and 2c, their qrels, the corpus
index, turns.jsonl (query, history, reference answer) and the passages the judge reads.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterator

from reteco.formats import release as rel
from reteco.formats.corpus_index import DocIdIndex
from reteco.formats.passages import BATCH_ROWS, count_rows, create_passages, subset_passages
from reteco.formats.reference import PASSAGES, TURNS, Reference
from reteco.formats.topic_ids import topic_key, turn_topic_id
from reteco.formats.turns import write_turns
from reteco.problems import InputError
from reteco.release.prepare.drafts import (
    CollectedTrack,
    DuplicateMaps,
    IdMapper,
    TopicDraft,
    TopicSet,
    add_corpus_relevance,
    add_domain_qrels,
    assign_flat_qrels,
    by_topic,
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
from reteco.release.prepare.staging import PrepareContext, install, staging_folder
from reteco.subtracks import of_track


def collect_track2(ctx: PrepareContext, folder: Path, layout: str, wanted: list[str]) -> CollectedTrack:
    turns = TopicSet("2x")
    duplicates = DuplicateMaps()
    corpora: dict[str, Path] = {}
    conversations: set[str] = set()

    if layout == rel.RELEASE:
        dirs = rel.domain_dirs(folder)
        domains = sorted(dirs)
        for domain, d in dirs.items():
            mapper = domain_corpus(domain, d, corpora, duplicates)
            path = rel.find_file(d, "benchmark", ctx.split, (".json", ".jsonl"), rel.RELEASE)
            if path is None:
                turns.note_missing(d, domain, "benchmark", f"benchmark_{ctx.split}.json(l)", (".json", ".jsonl"))
                continue
            for conversation in rel.read_benchmark(path):
                if conversation.task and conversation.task != domain:
                    turns.stats["task_differs_from_folder"] += 1
                add_conversation(turns, domain, conversation, mapper, conversations)
            qrels = rel.find_file(d, "qrels", ctx.split, (".txt",), rel.RELEASE)
            if qrels is not None:
                add_domain_qrels(turns, domain, qrels, mapper)
        turns.warn_missing(ctx)
        if turns.stats["task_differs_from_folder"]:
            ctx.warn(
                f"2x: {turns.stats['task_differs_from_folder']} conversations have a \"task\" other than their "
                "folder's domain; the folder was used"
            )
    else:
        mapper = domain_corpus("", folder, corpora, duplicates)  # the flat layout: one corpus
        path = rel.find_file(folder, "benchmark", ctx.split, (".json", ".jsonl"), rel.SAMPLE)
        if path is None:
            turns.note_absent(ctx, f"2x: no benchmark file in flat {folder.name}/")
        else:
            for conversation in rel.read_benchmark(path):
                if not conversation.task:
                    raise InputError(
                        f'conversation {conversation.conversation_id!r} has no "task": its domain is unknown',
                        conversation.file,
                        conversation.line,
                    )
                add_conversation(turns, conversation.task, conversation, mapper, conversations)
        qrels = rel.find_file(folder, "qrels", ctx.split, (".txt",), rel.SAMPLE)
        if qrels is not None:
            assign_flat_qrels(list(rel.read_qrels(qrels)), turns, mapper, doc_prefix_decides=False)
        domains = sorted({d.domain for d in turns.drafts.values()})

    dup = duplicates.merged(ctx, rel.TRACK2_DIR)
    settled = settle(turns)
    return CollectedTrack(
        folder, layout, wanted, domains, corpora, dup, {s: turns for s in of_track(2)},
        {s: settled for s in of_track(2)}, conversations=conversations,
    )


def build_track2(ctx: PrepareContext, track: CollectedTrack) -> None:
    name = rel.TRACK2_DIR
    folder, layout, wanted, domains, corpora, dup = (
        track.folder, track.layout, track.wanted, track.domains, track.corpora, track.dup
    )
    turns, conversations = track.sets["2a"], track.conversations
    kept, topics, judgments = track.settled["2a"]

    need_text = bool({"2b", "2c"} & set(wanted))
    full_db: Path | None = None
    staging = {sub: staging_folder(ctx, sub) for sub in wanted}
    if need_text:
        # 2c keeps the whole corpus table; without 2c it is only the source of 2b's subset.
        full_db = (staging["2c"] if "2c" in staging else staging_folder(ctx, "passages")) / PASSAGES

    if not corpora:
        index = None
        ctx.warn(f"{name}: no documents.jsonl; the reference accepts every document id and has no passages")
        if full_db is not None:
            create_passages(full_db).close()
        lines: Counter = Counter()
    else:
        if layout == rel.RELEASE:
            lacking = sorted({d.domain for d in turns.drafts.values()} - set(corpora))
            if lacking:
                raise InputError(f"domains with topics but no documents.jsonl: {', '.join(lacking)}", str(folder))
            owners = None
            unattributed = 0
        else:
            # The flat layout's rule (reteco.formats.release.attribute_flat_corpus), from the ids
            # alone; the texts are read once, below. Flat corpora are samples: reading twice is cheap.
            citations = [(d.domain, list(d.gold or []) + turns.qrels.get(d.key, [])) for d in turns.drafts.values()]
            ids = (doc_id for _, doc_id, _ in rel.iter_documents(corpora[""], ("doc_id", "id"), with_text=False))
            attribution = rel.attribute_flat_corpus(ids, citations, domains, by_prefix=False)
            owners, unattributed = attribution.owners, attribution.unattributed
        with ctx.reading(f"{name} documents", corpora.values()) as bytes_read:
            index, lines = index_track2(corpora, domains, owners, full_db, bytes_read)
        warn_duplicate_docs(ctx, name, index, lines)
        turns.stats["documents_unattributed"] += unattributed
        if unattributed:
            ctx.warn(
                f"{name}: {unattributed} documents of the flat corpus are cited by no "
                "conversation; they are accepted in every domain"
            )

    missing = missing_from_corpus(judgments, topics, index)
    ctx.summary["tracks"][name] = track_summary(layout, domains, index, dup) | {"conversations": len(conversations)}

    relevant = {t.key: [] for t in topics}
    for j in judgments:
        relevant[j.key].append(j.doc_id)
    turn_records = []
    for draft in kept:
        record = dict(draft.turn or {})
        record["gold_doc_ids"] = relevant[draft.key]
        turn_records.append(record)

    counts = subtrack_counts(topics, judgments, turns.stats, index)
    counts["conversations"] = len({t.conversation for t in topics})
    counts["gold_missing_from_corpus"] = missing
    extra_all = {}
    # 2b's passages come from the full table, so it is built before 2c's folder moves into place.
    order = [s for s in ("2b", "2a", "2c") if s in wanted]
    for sub in order:
        sub_counts = dict(counts)
        if sub in ("2b", "2c"):
            write_turns(staging[sub] / TURNS, turn_records)
            if sub == "2b":
                wanted_passages = [(t.domain, j.doc_id) for t, docs in by_topic(topics, judgments) for j in docs]
                sub_counts["passages"] = subset_passages(full_db, staging[sub] / PASSAGES, wanted_passages)
            else:
                sub_counts["passages"] = count_rows(staging[sub] / PASSAGES)
        manifest = subtrack_manifest(ctx, sub, "turn", domains, sub_counts, layout)
        add_corpus_relevance(ctx, sub, manifest, topics, judgments, index)
        reference = Reference(manifest, topics, judgments, index, dup)
        reference.write(staging[sub])
        extra_all[sub] = sub_counts
    for sub in wanted:
        install(staging[sub], ctx.out / sub, ctx.split)
        ctx.summary["subtracks"][sub] = subtrack_summary(ctx.out / sub, extra_all[sub], turns.stats)
    warn_stats(ctx, "2a/2b/2c", turns.stats, missing)


def add_conversation(
    target: TopicSet, domain: str, conversation: rel.Conversation, mapper: IdMapper, conversations: set[str]
) -> None:
    conv_key = topic_key(domain, conversation.conversation_id)
    if conv_key in conversations:
        raise InputError(
            f"conversation {conversation.conversation_id!r} of domain {domain!r} repeats",
            conversation.file,
            conversation.line,
        )
    conversations.add(conv_key)
    for turn in conversation.turns:
        topic_id = turn_topic_id(conversation.conversation_id, turn.turn)
        key = topic_key(domain, topic_id)
        gold = mapper.many(turn.gold_doc_ids)
        payload = {
            "key": key,
            "domain": domain,
            "conversation": conv_key,
            "turn": turn.turn,
            "query": turn.query,
            "history": turn.history,
            "answer": turn.answer,
        }
        if turn.key_points:  # absent when none are written: turns.jsonl stays as it was
            payload["key_points"] = [{"text": text, "importance": importance} for text, importance in turn.key_points]
        target.add(
            TopicDraft(key, domain, topic_id, key, conv_key, turn.turn, gold, payload, conversation.file, conversation.line)
        )
    target.stats["gold_ids_remapped"] += mapper.changed
    mapper.changed = 0


def index_track2(
    corpora: dict[str, Path],
    domains: list[str],
    owners: dict[str, tuple[str, ...]] | None,
    full_db: Path | None,
    bytes_read=None,
) -> tuple[DocIdIndex, Counter]:
    """Stream the corpus once: ids into the index, texts (when needed) into passages.sqlite.
    ``owners`` (the flat layout): each document's domains; None: a corpus's documents belong to
    its own domain."""
    lines: Counter = Counter()
    conn = create_passages(full_db) if full_db is not None else None
    batch: list[tuple[str, str, str]] = []

    def flush() -> None:
        if conn is not None and batch:
            conn.executemany("INSERT OR IGNORE INTO passages(domain, doc_id, text) VALUES (?, ?, ?)", batch)
            batch.clear()

    def pairs() -> Iterator[tuple[str, str]]:
        for corpus_domain, path in corpora.items():
            documents = rel.iter_documents(path, ("doc_id", "id"), with_text=conn is not None, bytes_read=bytes_read)
            for _, doc_id, text in documents:
                for domain in (corpus_domain,) if owners is None else owners[doc_id]:
                    lines[domain] += 1
                    if conn is not None:
                        batch.append((domain, doc_id, text or ""))
                    yield domain, doc_id
                if len(batch) >= BATCH_ROWS:
                    flush()
        flush()

    try:
        index = DocIdIndex.from_pairs(pairs(), domains)
        if conn is not None:
            conn.commit()
    finally:
        if conn is not None:
            conn.close()
    return index, lines
