"""What both tracks' preparation builds before writing: topic drafts and their qrels, the v1.1
duplicate maps (chains resolved, cycles refused), the flat layout's domain assignment, the
manifest, counts and the organizers' summary of a sub-track.

Why one module: what ``track1`` and ``track2`` both build, each piece short (topic
sets, id mapping and duplicate maps, the flat layout's assignment, manifest, counts, summaries):
kept in one module the tracks' modules share, so that neither imports the other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from reteco import __version__
from reteco.formats import release as rel
from reteco.formats.corpus_index import DocIdIndex, DuplicateCycle, DuplicateMap, resolve_chains
from reteco.formats.reference import Judgment, Topic
from reteco.formats.topic_ids import topic_key
from reteco.problems import InputError, quoted
from reteco.release.prepare.staging import PrepareContext
from reteco.scoring.retrieval import corpus_relevance_warning
from reteco.subtracks import subtrack


@dataclass
class TopicDraft:
    """A topic before its judgments are settled."""

    key: str
    domain: str
    topic_id: str
    unit: str
    conversation: str = ""
    depth: int | None = None
    gold: list[str] | None = None  # json gold ids, already mapped through the duplicate map
    turn: dict | None = None  # Track 2: the payload of turns.jsonl
    file: str = ""
    line: int = 0
    # Track 1, for the required periods of temporal coverage: the query's (or step's) text,
    # the step's instruction, and a step's query text (temporal_periods.jsonl)
    text: str = ""
    instruction: str = ""
    query_text: str = ""


@dataclass
class TopicSet:
    """Drafts of one sub-track (or of all three Track-2 sub-tracks, which share them)."""

    name: str
    drafts: dict[str, TopicDraft] = field(default_factory=dict)
    qrels: dict[str, list[str]] = field(default_factory=dict)  # key -> relevant doc ids, file order
    qrels_domains: set[str] = field(default_factory=set)  # domains whose relevance comes from qrels
    stats: Counter = field(default_factory=Counter)
    # expected file name -> domains lacking it; and domains holding only an unsuffixed variant
    missing_files: dict[str, list[str]] = field(default_factory=dict)
    unsuffixed: dict[str, list[str]] = field(default_factory=dict)

    def note_missing(self, folder: Path, domain: str, stem: str, expected: str, extensions: tuple[str, ...]) -> None:
        self.missing_files.setdefault(expected, []).append(domain)
        if rel.unsuffixed_files(folder, stem, extensions):
            self.unsuffixed.setdefault(expected, []).append(domain)

    # why the set may hold no topic: a flat layout's missing file ("no examples file in flat ...")
    absent: list[str] = field(default_factory=list)

    def missing_messages(self) -> list[str]:
        """One line per missing file name, listing the domains (13 lines say less than one)."""
        out = []
        for expected, domains in self.missing_files.items():
            message = f"{self.name}: no {expected} in {len(domains)} domain(s): {', '.join(domains)}"
            if self.unsuffixed.get(expected):
                message += f"; files without split suffix (not used) in: {', '.join(self.unsuffixed[expected])}"
            out.append(message)
        return out

    def warn_missing(self, ctx: "PrepareContext") -> None:
        for message in self.missing_messages():
            ctx.warn(message)

    def note_absent(self, ctx: "PrepareContext", message: str) -> None:
        self.absent.append(message)
        ctx.warn(message)

    def add(self, draft: TopicDraft) -> None:
        if draft.key in self.drafts:
            first = self.drafts[draft.key]
            raise InputError(
                f"topic {draft.topic_id!r} of domain {draft.domain!r} repeats (first at {first.file}:{first.line})",
                draft.file,
                draft.line,
            )
        self.drafts[draft.key] = draft

    def add_qrel(self, key: str, doc_id: str, relevance: int) -> None:
        docs = self.qrels.setdefault(key, [])
        if relevance > 0 and doc_id not in docs:
            docs.append(doc_id)


class IdMapper:
    """Removed -> kept document ids of one domain, chains already resolved (``resolve_chains``),
    counting what it changed."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping
        self.changed = 0

    def __call__(self, doc_id: str) -> str:
        return self.mapping.get(doc_id, doc_id)

    def many(self, doc_ids: list[str] | None) -> list[str] | None:
        if doc_ids is None:
            return None
        out: list[str] = []
        for d in doc_ids:
            m = self(d)
            self.changed += m != d
            if m not in out:
                out.append(m)
        return out


@dataclass
class DuplicateMaps:
    """The duplicate_map.json of each domain of a track (domain "": the flat layout's), each
    with its chains resolved; a cycle is an error naming its ids and the file (organizers' data)."""

    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)

    def read(self, domain: str, path: Path) -> None:
        try:
            self.maps[domain] = resolve_chains(rel.read_duplicate_map(path))
        except DuplicateCycle as exc:
            raise InputError(f"removed ids form a cycle, {cycle_text(exc.ids)}: no id is kept for them", str(path)) from None
        self.paths[domain] = path

    def mapper(self, domain: str) -> IdMapper:
        return IdMapper(self.maps.get(domain, {}))

    def merged(self, ctx: "PrepareContext", track: str) -> DuplicateMap | None:
        """All domains' maps as the reference's one map (scoring maps every run id with it)."""
        merged: dict[str, str] = {}
        conflicts = 0
        for domain in sorted(self.maps):
            for removed, kept in self.maps[domain].items():
                if removed in merged and merged[removed] != kept:
                    conflicts += 1
                    continue
                merged[removed] = kept
        if conflicts:
            ctx.warn(
                f"{track}: {conflicts} removed ids map to different kept ids in different domains' duplicate_map.json; "
                "the reference keeps the first domain's (alphabetical), qrels use each domain's own"
            )
        if not merged:
            return None
        try:
            resolved = resolve_chains(merged)
        except DuplicateCycle as exc:
            files = [str(self.paths[d]) for d in sorted(self.maps) if set(exc.ids) & set(self.maps[d])]
            raise InputError(
                f"removed ids form a cycle across domains, {cycle_text(exc.ids)}, in {' and '.join(files)}: "
                "no id is kept for them",
                str(ctx.release),
            ) from None
        across = sum(1 for removed, kept in merged.items() if resolved[removed] != kept)
        if across:
            ctx.warn(
                f"{track}: {across} removed ids lead, through another domain's duplicate_map.json, to a further id; "
                "the reference follows such chains to their end, qrels use each domain's own map"
            )
        return DuplicateMap.from_mapping(resolved)


def cycle_text(ids: list[str]) -> str:
    return " -> ".join(quoted(i) for i in ids + ids[:1])


def assign_flat_qrels(
    lines: list[rel.QrelsLine],
    target: TopicSet,
    mapper: IdMapper,
    doc_prefix_decides: bool,
) -> None:
    """Give each line of a flat (domain-less) qrels file to its topic key.

    A topic id can name topics of several domains (bare-integer conversation ids); the line then
    goes to the one whose gold ids hold the document, or (Track 1) whose domain prefixes it.
    """
    by_topic: dict[str, list[str]] = {}
    for key, draft in target.drafts.items():
        by_topic.setdefault(draft.topic_id, []).append(key)
        # One file judges every domain: a topic it leaves out has no relevant document.
        target.qrels_domains.add(draft.domain)
    for line in lines:
        candidates = by_topic.get(line.topic_id)
        if not candidates:
            target.stats["qrels_lines_unknown_topic"] += 1
            continue
        doc = mapper(line.doc_id)
        target.stats["qrels_ids_remapped"] += doc != line.doc_id
        if len(candidates) > 1:
            narrowed = [k for k in candidates if doc in (target.drafts[k].gold or ())]
            if len(narrowed) != 1 and doc_prefix_decides and "/" in doc:
                prefix = rel.id_domain(doc)
                narrowed = [k for k in candidates if target.drafts[k].domain == prefix]
            if len(narrowed) != 1:
                target.stats["qrels_lines_ambiguous"] += 1
                continue
            candidates = narrowed
        target.add_qrel(candidates[0], doc, line.relevance)


def settle(target: TopicSet) -> tuple[list[TopicDraft], list[Topic], list[Judgment]]:
    """Topics and judgments of a draft set; drops topics without a relevant document."""
    kept: list[TopicDraft] = []
    topics: list[Topic] = []
    judgments: list[Judgment] = []
    stats = target.stats
    for draft in target.drafts.values():
        if draft.domain in target.qrels_domains:
            relevant = target.qrels.get(draft.key, [])
            stats["topics_judged_by_qrels"] += 1
            if draft.gold is not None and set(relevant) != set(draft.gold):
                stats["topics_qrels_gold_disagree"] += 1
                stats["judgments_only_in_qrels"] += len(set(relevant) - set(draft.gold))
                stats["gold_ids_not_in_qrels"] += len(set(draft.gold) - set(relevant))
        else:
            relevant = draft.gold or []
            stats["topics_judged_by_gold_ids"] += 1
        if not relevant:
            stats["dropped_topics"] += 1
            continue
        kept.append(draft)
        topics.append(
            Topic(draft.key, draft.domain, draft.topic_id, draft.unit, draft.conversation, draft.depth)
        )
        judgments.extend(Judgment(draft.key, d, 1) for d in relevant)
    return kept, topics, judgments


def missing_from_corpus(judgments: list[Judgment], topics: list[Topic], index: DocIdIndex | None) -> int:
    """How many judgments name a document absent from their domain's corpus."""
    if index is None or not judgments:
        return 0
    domain_of = {t.key: t.domain for t in topics}
    docs = pa.array([j.doc_id for j in judgments], type=pa.string())
    bits = np.array([index.domain_bit(domain_of[j.key]) for j in judgments], dtype=np.uint64)
    return int(np.count_nonzero(index.lookup(docs, bits) < 0))


# Over this share of a domain's corpus judged relevant, its ranking figures say little about a
# system. Why a half: the release's corpora hold a few relevant documents per hundred (TEMPO
# ~1.17M documents for 1,730 queries, RECOR 507K for 2,971 turns; the synthetic release 4-5 %
# per domain), while a sample built from the gold passages alone holds nothing else (100 %, the
# organizers' sample). A half sits far from both; past it most documents any ranking puts in its
# top 10 are relevant to some topic of the domain, and a random ranking scores near the best.
MOSTLY_RELEVANT_SHARE = 0.5


def corpus_relevance(topics: list[Topic], judgments: list[Judgment], index: DocIdIndex | None) -> dict | None:
    """How much of each topic domain's corpus is judged relevant to some topic of the domain
    (distinct relevant documents present in the corpus / the corpus's documents), and the domains
    over ``MOSTLY_RELEVANT_SHARE``: the reference manifest's ``corpus_relevance``, which scoring
    warns about. None without a corpus (every id accepted)."""
    if index is None:
        return None
    domain_of = {t.key: t.domain for t in topics}
    relevant: dict[str, set[str]] = {}
    for j in judgments:
        if j.relevance > 0:
            relevant.setdefault(domain_of[j.key], set()).add(j.doc_id)
    share: dict[str, float] = {}
    mostly: list[str] = []
    for domain in sorted({t.domain for t in topics}):
        size = index.count_in(domain)
        docs = sorted(relevant.get(domain, ()))
        if not size:
            continue  # an empty corpus: nothing to rank, nothing to say about its share
        bits = np.full(len(docs), index.domain_bit(domain), dtype=np.uint64)
        present = int(np.count_nonzero(index.lookup(pa.array(docs, type=pa.string()), bits) >= 0)) if docs else 0
        share[domain] = round(present / size, 4)
        if present > MOSTLY_RELEVANT_SHARE * size:
            mostly.append(domain)
    return {"threshold": MOSTLY_RELEVANT_SHARE, "relevant_share": share, "mostly_relevant": mostly}


def add_corpus_relevance(ctx: PrepareContext, sub: str, manifest: dict, topics: list[Topic], judgments: list[Judgment],
                         index: DocIdIndex | None) -> None:
    """Record ``corpus_relevance`` in a sub-track's manifest (nothing without a corpus), and warn
    in the summary, in scoring's words, where scoring will: a sub-track that ranks (2b does not)
    with domains whose corpus is mostly relevant documents. The organizers learn it here, before
    any submission is scored."""
    relevance = corpus_relevance(topics, judgments, index)
    if relevance is None:
        return
    manifest["corpus_relevance"] = relevance
    warning = corpus_relevance_warning(manifest) if subtrack(sub).takes_run else None
    if warning:
        ctx.warn(f"{sub}: {warning}")


def subtrack_manifest(ctx: PrepareContext, sub: str, unit: str, domains: list[str], counts: dict, layout: str) -> dict:
    return {
        "subtrack": sub,
        "benchmark": "reteco",
        "split": ctx.split,
        "relevance": "binary",
        "cutoffs": [10],
        "official": "ndcg_10",
        "unit": unit,
        "domains": domains,
        "counts": counts,
        "source": {"release": ctx.release_name, "layout": layout},
        "created_by": f"reteco {__version__}",
    }


def subtrack_counts(topics: list[Topic], judgments: list[Judgment], stats: Counter, index: DocIdIndex | None) -> dict:
    per_domain = Counter(t.domain for t in topics)
    return {
        "topics": len(topics),
        "units": len({t.unit for t in topics}),
        "judgments": len(judgments),
        "dropped_topics": stats["dropped_topics"],
        "documents": len(index) if index is not None else 0,
        "topics_per_domain": dict(sorted(per_domain.items())),
    }


def subtrack_summary(path: Path, counts: dict, stats: Counter) -> dict:
    info = {"status": "written", "path": str(path)}
    info.update(counts)
    for name in (
        "topics_judged_by_qrels",
        "topics_judged_by_gold_ids",
        "topics_qrels_gold_disagree",
        "judgments_only_in_qrels",
        "gold_ids_not_in_qrels",
        "qrels_lines_unknown_topic",
        "qrels_lines_ambiguous",
        "qrels_ids_remapped",
        "gold_ids_remapped",
    ):
        info[name] = stats[name]
    return info


def warn_stats(ctx: PrepareContext, sub: str, stats: Counter, missing: int) -> None:
    if stats["topics_qrels_gold_disagree"]:
        ctx.warn(
            f"{sub}: qrels and json gold ids disagree on {stats['topics_qrels_gold_disagree']} topics "
            f"({stats['judgments_only_in_qrels']} judgments only in qrels, {stats['gold_ids_not_in_qrels']} gold ids "
            "not in qrels); the qrels were used"
        )
    if stats["qrels_lines_unknown_topic"]:
        ctx.warn(f"{sub}: {stats['qrels_lines_unknown_topic']} qrels lines name no known topic; ignored")
    if stats["qrels_lines_ambiguous"]:
        ctx.warn(f"{sub}: {stats['qrels_lines_ambiguous']} qrels lines match topics of several domains; ignored")
    if stats["dropped_topics"]:
        ctx.warn(f"{sub}: {stats['dropped_topics']} topics have no relevant document and were dropped")
    if missing:
        ctx.warn(f"{sub}: {missing} judgments name documents absent from the corpus (kept in the qrels)")


@dataclass
class TemporalDrafts:
    """Track 1 temporal guidance, by query key, with gold passage ids mapped to v1.1."""

    guidance: dict[str, rel.Guidance] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # domains without a guidance file
    stats: Counter = field(default_factory=Counter)

    def add(self, key: str, guidance: rel.Guidance, mapper: IdMapper) -> None:
        if key in self.guidance:
            self.stats["guidance_repeated"] += 1
            return
        scopes = {mapper(doc): scope for doc, scope in guidance.scopes.items()}
        self.guidance[key] = rel.Guidance(
            guidance.query_id, guidance.is_temporal_query, guidance.key_time_anchors, guidance.reasoning_class,
            scopes, guidance.unusable_scopes, guidance.file, guidance.line,
        )
        self.stats["guidance_unusable_scopes"] += guidance.unusable_scopes


@dataclass
class CollectedTrack:
    """A track's topic files read and settled, before its corpus is read or anything written."""

    folder: Path
    layout: str
    wanted: list[str]
    domains: list[str]
    corpora: dict[str, Path]
    dup: DuplicateMap | None
    sets: dict[str, TopicSet]  # sub-track -> its drafts (Track 2's three share one set)
    settled: dict[str, tuple[list[TopicDraft], list[Topic], list[Judgment]]]  # sub-track -> settle(...)
    temporal: "TemporalDrafts | None" = None  # Track 1
    conversations: set[str] = field(default_factory=set)  # Track 2


def domain_corpus(domain: str, folder: Path, corpora: dict[str, Path], duplicates: DuplicateMaps) -> "IdMapper":
    """Note a release-layout domain's documents.jsonl and duplicate_map.json (domain "": the flat
    layout's, at the top of the track folder); its id mapper."""
    if (folder / "documents.jsonl").is_file():
        corpora[domain] = folder / "documents.jsonl"
    if (folder / "duplicate_map.json").is_file():
        duplicates.read(domain, folder / "duplicate_map.json")
    return duplicates.mapper(domain)


def track_summary(layout: str, domains: list[str], index: DocIdIndex | None, dup: DuplicateMap | None) -> dict:
    """What the summary says of a prepared track's corpus."""
    return {
        "status": "prepared",
        "layout": layout,
        "domains": domains,
        "documents": len(index) if index is not None else 0,
        "documents_per_domain": {d: index.count_in(d) for d in domains} if index is not None else {},
        "duplicate_map_entries": len(dup) if dup is not None else 0,
    }


def add_domain_qrels(target: "TopicSet", domain: str, path: Path, mapper: "IdMapper") -> None:
    """A release-layout domain's qrels file: judgments for that domain's topics, ids mapped to v1.1."""
    target.qrels_domains.add(domain)
    for line in rel.read_qrels(path):
        key = topic_key(domain, line.topic_id)
        if key not in target.drafts:
            target.stats["qrels_lines_unknown_topic"] += 1
            continue
        doc = mapper(line.doc_id)
        target.stats["qrels_ids_remapped"] += doc != line.doc_id
        target.add_qrel(key, doc, line.relevance)


def warn_duplicate_docs(ctx: PrepareContext, track: str, index: DocIdIndex, lines: Counter) -> None:
    repeated = {d: n - index.count_in(d) for d, n in lines.items() if n > index.count_in(d)}
    if repeated:
        detail = ", ".join(f"{d} {n}" for d, n in sorted(repeated.items()))
        ctx.warn(f"{track}: document ids repeated within a domain's corpus ({detail}); each counted once")


def by_topic(topics: list[Topic], judgments: list[Judgment]) -> list[tuple[Topic, list[Judgment]]]:
    grouped: dict[str, list[Judgment]] = {t.key: [] for t in topics}
    for j in judgments:
        grouped[j.key].append(j)
    return [(t, grouped[t.key]) for t in topics]
