"""``reteco prepare``: turn an organizers' release folder into reference data, one folder per sub-track.

``prepare_release(release, split, out)`` reads ``release/track1_tempo`` and ``release/track2_recor``
(per-domain release layout or the flat public sample, see ``reteco.formats.release``) and writes
``out/1a``, ``out/1b``, ``out/2a``, ``out/2b``, ``out/2c`` in the ``reteco-reference/1`` format
(``reteco.formats.reference``). It returns a summary of what it wrote and of every oddity it
met, for the organizers (counts, never document ids).

Decisions worth knowing:

- Relevance comes from a domain's qrels file when there is one (the official judgments), else
  from the gold ids of the json records. Where both exist they are compared and disagreements
  counted. A topic left with no relevant document is dropped: nothing can be measured on it.
- Gold ids missing from the corpus are kept in the qrels (dropping them would inflate every
  score) and counted.
- A removed id of a ``duplicate_map.json`` in qrels or gold ids is replaced by its kept id,
  using the map of the topic's own domain; all domains' maps are merged into the reference's
  DuplicateMap so scoring can map runs the same way. Chains (a -> b -> kept) are followed to
  their end, here and in the written map alike; a cycle (a -> b -> a) is an error naming the
  ids and the file.
- Every sub-track asked for must get at least one topic: a split whose files do not exist (or
  whose topics all lack a relevant document) is an error that lists the splits the release's
  file names give, raised after the topic files are read and before anything is written. The
  flat sample's files carry no split and serve whichever split is asked.
- In the flat layout the corpus is not split by domain: a Track-1 document belongs to the
  domain its id is prefixed with, a Track-2 document to the domains whose gold ids cite it; an
  unattributable document is accepted in every domain.
- Each sub-track folder is built beside its destination and moved into place at the end, so a
  failed run never leaves a half-written reference; an existing destination is replaced only
  if it is a reference folder (or empty).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from reteco import __version__
from reteco.formats import release as rel
from reteco.formats.phase_record import local_phase, write_phase
from reteco.formats.reference import (
    MANIFEST,
    PASSAGES,
    SUBTRACKS,
    TURNS,
    DocIdIndex,
    DuplicateCycle,
    DuplicateMap,
    Judgment,
    Reference,
    Topic,
    resolve_chains,
)
from reteco.formats.temporal_labels import (
    GRANULARITIES,
    LABEL_PERIODS,
    LABEL_ROWS,
    LABELS_DIR,
    LABELS_MANIFEST,
    PERIODS_FILE,
    PERIODS_FORMAT,
    Period,
    QueryPeriods,
    TemporalLabels,
    write_periods,
)
from reteco.formats.topic_ids import canonical_domain, topic_key, turn_topic_id
from reteco.problems import InputError, Problems, quoted

TRACK1_SUBTRACKS = ("1a", "1b")
TRACK2_SUBTRACKS = ("2a", "2b", "2c")
_BATCH = 10_000  # sqlite rows per executemany: large enough to be fast, small enough to stay flat


@dataclass
class _Draft:
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
class _Set:
    """Drafts of one sub-track (or of all three Track-2 sub-tracks, which share them)."""

    name: str
    drafts: dict[str, _Draft] = field(default_factory=dict)
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

    def warn_missing(self, ctx: "_Context") -> None:
        for message in self.missing_messages():
            ctx.warn(message)

    def note_absent(self, ctx: "_Context", message: str) -> None:
        self.absent.append(message)
        ctx.warn(message)

    def add(self, draft: _Draft) -> None:
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


class _Mapper:
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
class _DuplicateMaps:
    """The duplicate_map.json of each domain of a track (domain "": the flat layout's), each
    with its chains resolved; a cycle is an error naming its ids and the file (organizers' data)."""

    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)

    def read(self, domain: str, path: Path) -> None:
        try:
            self.maps[domain] = resolve_chains(rel.read_duplicate_map(path))
        except DuplicateCycle as exc:
            raise InputError(f"removed ids form a cycle, {_cycle_text(exc.ids)}: no id is kept for them", str(path)) from None
        self.paths[domain] = path

    def mapper(self, domain: str) -> _Mapper:
        return _Mapper(self.maps.get(domain, {}))

    def merged(self, ctx: "_Context", track: str) -> DuplicateMap | None:
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
                f"removed ids form a cycle across domains, {_cycle_text(exc.ids)}, in {' and '.join(files)}: "
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


def _cycle_text(ids: list[str]) -> str:
    return " -> ".join(quoted(i) for i in ids + ids[:1])


# =============================================================================================
# Entry point


def prepare_release(
    release: Path,
    split: str,
    out: Path,
    subtracks: Iterable[str] = SUBTRACKS,
) -> dict:
    """Read an organizers' release folder and write reference data to ``out/<sub-track>``.

    ``release`` holds ``track1_tempo/`` and/or ``track2_recor/`` in the release or the flat
    sample layout; ``split`` picks the ``*_<split>`` files (``train``, ``dev``, ...). A track
    whose folder is absent is skipped and said so. Returns the summary: per track and per
    sub-track counts, and a list of warnings for the organizers. Raises ``InputError`` (file and
    line) on malformed release files, and (writing nothing) when a sub-track asked for of a
    present track gets no topic.
    """
    release = Path(release)
    out = Path(out)
    wanted = list(dict.fromkeys(subtracks))
    unknown = [s for s in wanted if s not in SUBTRACKS]
    if unknown:
        raise InputError(f"unknown sub-track(s) {', '.join(unknown)}; choose from {', '.join(SUBTRACKS)}")
    if not split or "/" in split or split.strip() != split:
        raise InputError(f"invalid split name {split!r}")
    if not release.is_dir():
        raise InputError("release folder not found", str(release))
    for sub in wanted:
        _check_destination(out / sub)

    summary: dict = {
        "release": str(release),
        "split": split,
        "out": str(out),
        "created_by": f"reteco {__version__}",
        "tracks": {},
        "subtracks": {},
        "warnings": [],
    }
    context = _Context(release, split, out, summary)
    present = 0
    collected: list[tuple[_Collected, object]] = []
    # First every track's topic files, then (only if every sub-track asked for has topics) the
    # corpora and the folders: a split that gives nothing is refused before anything is written.
    for track_dir, subs, collect, build in (
        (rel.TRACK1_DIR, TRACK1_SUBTRACKS, _collect_track1, _build_track1),
        (rel.TRACK2_DIR, TRACK2_SUBTRACKS, _collect_track2, _build_track2),
    ):
        mine = [s for s in wanted if s in subs]
        folder = release / track_dir
        layout = rel.detect_layout(folder)
        if layout is not None:
            present += 1
        if not mine:
            summary["tracks"][track_dir] = {"status": "not requested"}
            continue
        if layout is None:
            reason = f"{track_dir}/ absent" if not folder.exists() else f"{track_dir}/ holds no release files"
            summary["tracks"][track_dir] = {"status": "absent"}
            for sub in mine:
                summary["subtracks"][sub] = {"status": "skipped", "reason": reason}
            summary["warnings"].append(f"{track_dir}: {reason}; sub-tracks {', '.join(mine)} not written")
            continue
        collected.append((collect(context, folder, layout, mine), build))
    if present == 0:
        raise InputError(
            f"neither {rel.TRACK1_DIR}/ nor {rel.TRACK2_DIR}/ found: not an organizers' release folder", str(release)
        )
    _refuse_subtracks_without_topics(context, [c for c, _ in collected])
    for track, build in collected:
        try:
            build(context, track)
        finally:
            # Whatever was not moved into place is incomplete: never leave it behind.
            for staging in context.staged:
                if staging.exists():
                    shutil.rmtree(staging)
            context.staged.clear()
    return summary


def _refuse_subtracks_without_topics(ctx: "_Context", tracks: list["_Collected"]) -> None:
    """An ``InputError`` when a sub-track asked for gives no topic (a split that does not exist,
    a topic file missing, every topic without a relevant document), saying why, one line per
    sub-track, and which splits the release's file names hold."""
    problems = Problems()
    where = str(ctx.release)
    for track in tracks:
        for sub in track.wanted:
            target = track.sets[sub]
            if track.settled[sub][1]:
                continue
            reasons = []
            if target.stats["dropped_topics"]:
                reasons.append(f"its {target.stats['dropped_topics']} topics have no relevant document")
            if target.stats["topics_without_domain"]:
                reasons.append(f"its {target.stats['topics_without_domain']} topics have no gold id to tell their domain")
            prefix = f"{target.name}: "
            reasons += [m.removeprefix(prefix) for m in target.missing_messages() + target.absent]
            problems.error(
                where, None, f"sub-track {sub}: split {ctx.split!r} gives no topic: {'; '.join(reasons) or 'no topic file'}"
            )
    if not problems.has_errors:
        return
    found = rel.splits_in_release(ctx.release)
    if ctx.split in found:
        listing = (
            f"the release's files of split {ctx.split!r} give no topic for these sub-tracks (the splits its file "
            f"names give: {', '.join(found)})"
        )
    elif found:
        listing = f"split {ctx.split!r} is not in this release: the splits its file names give are {', '.join(found)}"
    else:
        listing = "no file name of this release names a split (the flat sample's files serve any split)"
    problems.error(where, None, f"{listing}; nothing was written")
    raise InputError(problems)


def format_summary(summary: dict) -> str:
    """The summary as a few human-readable lines (what the CLI prints)."""
    lines = [f"prepared {summary['release']} (split {summary['split']}) -> {summary['out']}"]
    for name, track in summary["tracks"].items():
        if track.get("status") != "prepared":
            lines.append(f"  {name}: {track.get('status')}")
            continue
        lines.append(
            f"  {name}: {track['layout']} layout, {len(track['domains'])} domains, {track['documents']} documents"
        )
    for sub, info in summary["subtracks"].items():
        if info.get("status") != "written":
            lines.append(f"  {sub}: {info.get('status')} ({info.get('reason', '')})")
            continue
        parts = [f"{info['topics']} topics", f"{info['units']} units", f"{info['judgments']} judgments"]
        if "conversations" in info:
            parts.insert(0, f"{info['conversations']} conversations")
        if "passages" in info:
            parts.append(f"{info['passages']} passages")
        if info.get("dropped_topics"):
            parts.append(f"{info['dropped_topics']} dropped (no relevant document)")
        lines.append(f"  {sub}: " + ", ".join(parts) + f" -> {info['path']}")
    for warning in summary["warnings"]:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)


# =============================================================================================
# Shared machinery


@dataclass
class _Context:
    release: Path
    split: str
    out: Path
    summary: dict
    staged: list[Path] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.summary["warnings"].append(message)

    @property
    def release_name(self) -> str:
        return self.release.resolve().name


def _check_destination(path: Path) -> None:
    # Refuse before any work: overwriting someone's unrelated folder would be worse than failing.
    if path.exists() and not (path.is_dir() and ((path / MANIFEST).is_file() or not any(path.iterdir()))):
        raise InputError("exists and is not a reference folder written by `reteco prepare`; not overwriting", str(path))


def _staging(ctx: _Context, name: str) -> Path:
    staging = ctx.out / f".{name}.preparing"
    if staging.exists():
        shutil.rmtree(staging)  # left over by an interrupted run
    staging.mkdir(parents=True)
    ctx.staged.append(staging)
    return staging


def _install(staging: Path, final: Path, split: str) -> None:
    """Move a written reference folder into place, with a local phase record beside its manifest
    (per-topic figures on; the bundle builder writes each phase's own record over it)."""
    write_phase(staging, local_phase(split))
    _check_destination(final)
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)


def _prefix_domain(doc_ids: Iterable[str]) -> tuple[str | None, bool]:
    """The domain most gold ids are prefixed with ("bitcoin/x.txt"), and whether they disagree."""
    counts = Counter(canonical_domain(d.split("/", 1)[0]) for d in doc_ids if "/" in d)
    if not counts:
        return None, False
    best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return best, len(counts) > 1


def _assign_flat_qrels(
    lines: list[rel.QrelsLine],
    target: _Set,
    mapper: _Mapper,
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
                prefix = canonical_domain(doc.split("/", 1)[0])
                narrowed = [k for k in candidates if target.drafts[k].domain == prefix]
            if len(narrowed) != 1:
                target.stats["qrels_lines_ambiguous"] += 1
                continue
            candidates = narrowed
        target.add_qrel(candidates[0], doc, line.relevance)


def _settle(target: _Set) -> tuple[list[_Draft], list[Topic], list[Judgment]]:
    """Topics and judgments of a draft set; drops topics without a relevant document."""
    kept: list[_Draft] = []
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


def _missing_from_corpus(judgments: list[Judgment], topics: list[Topic], index: DocIdIndex | None) -> int:
    """How many judgments name a document absent from their domain's corpus."""
    if index is None or not judgments:
        return 0
    domain_of = {t.key: t.domain for t in topics}
    docs = pa.array([j.doc_id for j in judgments], type=pa.string())
    bits = np.array([index.domain_bit(domain_of[j.key]) for j in judgments], dtype=np.uint64)
    return int(np.count_nonzero(index.lookup(docs, bits) < 0))


def _manifest(ctx: _Context, sub: str, unit: str, domains: list[str], counts: dict, layout: str) -> dict:
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


def _counts(topics: list[Topic], judgments: list[Judgment], stats: Counter, index: DocIdIndex | None) -> dict:
    per_domain = Counter(t.domain for t in topics)
    return {
        "topics": len(topics),
        "units": len({t.unit for t in topics}),
        "judgments": len(judgments),
        "dropped_topics": stats["dropped_topics"],
        "documents": len(index) if index is not None else 0,
        "topics_per_domain": dict(sorted(per_domain.items())),
    }


def _subtrack_summary(path: Path, counts: dict, stats: Counter) -> dict:
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


def _warn_stats(ctx: _Context, sub: str, stats: Counter, missing: int) -> None:
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


# =============================================================================================
# Track 1 (TEMPO)


@dataclass
class _Collected:
    """A track's topic files read and settled, before its corpus is read or anything written."""

    folder: Path
    layout: str
    wanted: list[str]
    domains: list[str]
    corpora: dict[str, Path]
    dup: DuplicateMap | None
    sets: dict[str, _Set]  # sub-track -> its drafts (Track 2's three share one set)
    settled: dict[str, tuple[list[_Draft], list[Topic], list[Judgment]]]  # sub-track -> _settle(...)
    temporal: "_Temporal | None" = None  # Track 1
    conversations: set[str] = field(default_factory=set)  # Track 2


def _collect_track1(ctx: _Context, folder: Path, layout: str, wanted: list[str]) -> _Collected:
    queries = _Set("1a")
    steps = _Set("1b")
    temporal = _Temporal()
    duplicates = _DuplicateMaps()
    corpora: dict[str, Path] = {}

    if layout == rel.RELEASE:
        dirs = rel.domain_dirs(folder)
        for domain, d in dirs.items():
            mapper = _domain_corpus(domain, d, corpora, duplicates)
            # Both files are read for either sub-track: a query's steps are its required periods
            # (temporal coverage, 1a and 1b), its qrels the temporal oracle of 1b.
            _release_track1_file(ctx, d, domain, "examples", "qrels", queries, mapper, is_steps=False)
            _release_track1_file(ctx, d, domain, "steps", "qrels_steps", steps, mapper, is_steps=True)
            _release_guidance(ctx, d, domain, temporal, mapper)
        domains = sorted(dirs)
        if "1a" in wanted:
            queries.warn_missing(ctx)
        if "1b" in wanted:
            steps.warn_missing(ctx)
    else:
        mapper = _domain_corpus("", folder, corpora, duplicates)  # the flat layout: one corpus
        _flat_track1(ctx, folder, list(TRACK1_SUBTRACKS), queries, steps, mapper)
        _flat_guidance(ctx, folder, queries, steps, temporal, mapper)
        domains = sorted({d.domain for s in (queries, steps) for d in s.drafts.values()})
    dup = duplicates.merged(ctx, rel.TRACK1_DIR)
    settled = {"1a": _settle(queries), "1b": _settle(steps)}
    return _Collected(folder, layout, wanted, domains, corpora, dup, {"1a": queries, "1b": steps}, settled, temporal)


def _build_track1(ctx: _Context, track: _Collected) -> None:
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
            index, lines_per_domain = _index_release(corpora, domains, ("id", "doc_id"))
        else:
            index, lines_per_domain, domains, unattributed = _index_flat_track1(corpora[""], domains, queries, steps)
            if unattributed:
                ctx.warn(
                    f"{name}: {unattributed} documents of the flat corpus have no domain prefix and are cited by no "
                    "query; they are accepted in every domain"
                )
        _warn_duplicate_docs(ctx, name, index, lines_per_domain)

    ctx.summary["tracks"][name] = _track_summary(layout, domains, index, dup)
    periods = _temporal_periods(ctx, queries, steps, settled, temporal, wanted)
    frozen = _frozen_labels(ctx, folder, periods)
    for sub, target, unit in (("1a", queries, "query"), ("1b", steps, "query")):
        if sub not in wanted:
            continue
        kept, topics, judgments = settled[sub]
        missing = _missing_from_corpus(judgments, topics, index)
        counts = _counts(topics, judgments, target.stats, index)
        counts["gold_missing_from_corpus"] = missing
        if sub == "1b":
            counts["queries"] = counts["units"]
        staging = _staging(ctx, sub)
        manifest = _manifest(ctx, sub, unit, domains, counts, layout)
        manifest["temporal"] = _write_temporal(staging, topics, periods, frozen)
        reference = Reference(manifest, topics, judgments, index, dup)
        reference.write(staging)
        _install(staging, ctx.out / sub, ctx.split)
        ctx.summary["subtracks"][sub] = _subtrack_summary(ctx.out / sub, counts, target.stats)
        ctx.summary["subtracks"][sub]["temporal"] = manifest["temporal"]
        _warn_stats(ctx, sub, target.stats, missing)
    if "1b" in wanted and steps.stats["steps_parent_not_in_id"]:
        ctx.warn(
            f"1b: {steps.stats['steps_parent_not_in_id']} nested steps have a step_id that does not rsplit('_step') "
            "to their record's id; the record's id was taken as the parent query"
        )


def _release_track1_file(
    ctx: _Context,
    folder: Path,
    domain: str,
    stem: str,
    qrels_stem: str,
    target: _Set,
    mapper: _Mapper,
    is_steps: bool,
) -> None:
    path = rel.find_file(folder, stem, ctx.split, (".jsonl",), rel.RELEASE)
    if path is None:
        target.note_missing(folder, domain, stem, f"{stem}_{ctx.split}.jsonl", (".jsonl",))
        return
    if is_steps:
        for step in rel.read_steps(path):
            target.stats["steps_parent_not_in_id"] += step.parent_disagrees
            gold = mapper.many(step.gold_ids)
            target.add(
                _Draft(
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
                _Draft(key, domain, query.query_id, key, gold=gold, file=query.file, line=query.line, text=query.query)
            )
    target.stats["gold_ids_remapped"] += mapper.changed
    mapper.changed = 0
    qrels = rel.find_file(folder, qrels_stem, ctx.split, (".txt",), rel.RELEASE)
    if qrels is None:
        return
    _add_domain_qrels(target, domain, qrels, mapper)


def _domain_corpus(domain: str, folder: Path, corpora: dict[str, Path], duplicates: _DuplicateMaps) -> "_Mapper":
    """Note a release-layout domain's documents.jsonl and duplicate_map.json (domain "": the flat
    layout's, at the top of the track folder); its id mapper."""
    if (folder / "documents.jsonl").is_file():
        corpora[domain] = folder / "documents.jsonl"
    if (folder / "duplicate_map.json").is_file():
        duplicates.read(domain, folder / "duplicate_map.json")
    return duplicates.mapper(domain)


def _track_summary(layout: str, domains: list[str], index: DocIdIndex | None, dup: DuplicateMap | None) -> dict:
    """What the summary says of a prepared track's corpus."""
    return {
        "status": "prepared",
        "layout": layout,
        "domains": domains,
        "documents": len(index) if index is not None else 0,
        "documents_per_domain": {d: index.count_in(d) for d in domains} if index is not None else {},
        "duplicate_map_entries": len(dup) if dup is not None else 0,
    }


def _add_domain_qrels(target: "_Set", domain: str, path: Path, mapper: "_Mapper") -> None:
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


def _flat_track1(
    ctx: _Context, folder: Path, wanted: list[str], queries: _Set, steps: _Set, mapper: _Mapper
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
            domain, mixed = _prefix_domain(gold or qrels_docs.get(query.query_id, []))
            queries.stats["gold_ids_remapped"] += mapper.changed
            mapper.changed = 0
            if domain is None:
                queries.stats["topics_without_domain"] += 1
                continue
            queries.stats["topics_with_mixed_prefixes"] += mixed
            query_domains.setdefault(query.query_id, set()).add(domain)
            key = topic_key(domain, query.query_id)
            queries.add(
                _Draft(key, domain, query.query_id, key, gold=gold, file=query.file, line=query.line, text=query.query)
            )
    elif "1a" in wanted:
        queries.note_absent(ctx, f"1a: no examples file in flat {folder.name}/")
    if "1a" in wanted and qrels_path is not None:
        _assign_flat_qrels(qrels_lines, queries, mapper, doc_prefix_decides=True)
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
        gold = mapper.many(step.gold_ids)
        steps.stats["gold_ids_remapped"] += mapper.changed
        mapper.changed = 0
        domain, _ = _prefix_domain(gold or step_docs.get(step.step_id, []))
        if domain is None and len(query_domains.get(step.parent_id, ())) == 1:
            domain = next(iter(query_domains[step.parent_id]))
        if domain is None:
            steps.stats["topics_without_domain"] += 1
            continue
        steps.add(
            _Draft(
                topic_key(domain, step.step_id), domain, step.step_id, topic_key(domain, step.parent_id),
                gold=gold, file=step.file, line=step.line,
                text=step.text, instruction=step.instruction, query_text=step.query_text,
            )
        )
    if step_qrels_path is not None:
        _assign_flat_qrels(step_qrels, steps, mapper, doc_prefix_decides=True)
    if steps.stats["topics_without_domain"]:
        ctx.warn(f"1b: {steps.stats['topics_without_domain']} steps have no gold id to tell their domain; dropped")


@dataclass
class _Temporal:
    """Track 1 temporal guidance, by query key, with gold passage ids mapped to v1.1."""

    guidance: dict[str, rel.Guidance] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # domains without a guidance file
    stats: Counter = field(default_factory=Counter)

    def add(self, key: str, guidance: rel.Guidance, mapper: _Mapper) -> None:
        if key in self.guidance:
            self.stats["guidance_repeated"] += 1
            return
        scopes = {mapper(doc): scope for doc, scope in guidance.scopes.items()}
        self.guidance[key] = rel.Guidance(
            guidance.query_id, guidance.is_temporal_query, guidance.key_time_anchors, guidance.reasoning_class,
            scopes, guidance.unusable_scopes, guidance.file, guidance.line,
        )
        self.stats["guidance_unusable_scopes"] += guidance.unusable_scopes


def _release_guidance(ctx: _Context, folder: Path, domain: str, temporal: _Temporal, mapper: _Mapper) -> None:
    path = rel.find_file(folder, "guidance", ctx.split, (".jsonl",), rel.RELEASE)
    if path is None:
        temporal.missing.append(domain)
        return
    for guidance in rel.read_guidance(path):
        temporal.add(topic_key(domain, guidance.query_id), guidance, mapper)


def _flat_guidance(ctx: _Context, folder: Path, queries: _Set, steps: _Set, temporal: _Temporal, mapper: _Mapper) -> None:
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


def _temporal_periods(
    ctx: _Context, queries: _Set, steps: _Set, settled: dict, temporal: _Temporal, wanted: list[str]
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
    steps_of: dict[str, list[_Draft]] = {}
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
            start, end, granularity = _span(scopes)
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

    subs = "/".join(s for s in TRACK1_SUBTRACKS if s in wanted)
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


def _span(scopes: list[rel.TimeScope]) -> tuple[str | None, str | None, str | None]:
    """The earliest start and latest end of some time scopes, and their coarsest granularity."""
    if not scopes:
        return None, None, None
    start = min(scopes, key=lambda s: _iso_key(s.start_iso, end=False)).start_iso
    end = max(scopes, key=lambda s: _iso_key(s.end_iso, end=True)).end_iso
    known = [s.granularity for s in scopes if s.granularity in GRANULARITIES]
    granularity = min(known, key=GRANULARITIES.index) if known else None
    return start, end, granularity


def _iso_key(iso: str, end: bool) -> tuple[int, int, int]:
    """An ISO date of any precision as (year, month, day): "2017" starts 2017-01-01, ends 2017-12-31."""
    negative = iso.startswith("-")
    parts = iso.lstrip("-").split("-")
    year = -int(parts[0]) if negative else int(parts[0])
    month = int(parts[1]) if len(parts) > 1 else (12 if end else 1)
    day = int(parts[2]) if len(parts) > 2 else (31 if end else 1)
    return year, month, day


def _frozen_labels(ctx: _Context, folder: Path, periods: dict[str, QueryPeriods]) -> TemporalLabels | None:
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


def _write_temporal(
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


def _index_release(
    corpora: dict[str, Path], domains: list[str], id_keys: tuple[str, ...]
) -> tuple[DocIdIndex, Counter]:
    """The id index of per-domain corpora, streamed straight into DocIdIndex.from_pairs."""
    lines: Counter = Counter()

    def pairs() -> Iterator[tuple[str, str]]:
        for domain, path in corpora.items():
            for _, doc_id, _ in rel.iter_documents(path, id_keys, with_text=False):
                lines[domain] += 1
                yield domain, doc_id

    return DocIdIndex.from_pairs(pairs(), domains), lines


def _index_flat_track1(
    path: Path, topic_domains: list[str], queries: _Set, steps: _Set
) -> tuple[DocIdIndex, Counter, list[str], int]:
    """Flat TEMPO corpus: a document's domain is its id's prefix ("bitcoin/..."), else its citers'."""
    cited: dict[str, set[str]] = {}
    for target in (queries, steps):
        for draft in target.drafts.values():
            for doc in list(draft.gold or []) + target.qrels.get(draft.key, []):
                cited.setdefault(doc, set()).add(draft.domain)
    # The domain list must be known before building the index, and in a flat file only the ids
    # tell it: keep (domain, id) pairs of this one file (flat corpora are samples).
    pairs: list[tuple[str, str]] = []
    unattributed: list[str] = []
    for _, doc_id, _ in rel.iter_documents(path, ("id", "doc_id"), with_text=False):
        if "/" in doc_id:
            pairs.append((canonical_domain(doc_id.split("/", 1)[0]), doc_id))
        elif doc_id in cited:
            pairs.extend((d, doc_id) for d in sorted(cited[doc_id]))
        else:
            unattributed.append(doc_id)
    domains = sorted(set(topic_domains) | {d for d, _ in pairs})
    pairs.extend((d, doc_id) for doc_id in unattributed for d in domains)
    lines = Counter(d for d, _ in pairs)
    return DocIdIndex.from_pairs(pairs, domains), lines, domains, len(unattributed)


def _warn_duplicate_docs(ctx: _Context, track: str, index: DocIdIndex, lines: Counter) -> None:
    repeated = {d: n - index.count_in(d) for d, n in lines.items() if n > index.count_in(d)}
    if repeated:
        detail = ", ".join(f"{d} {n}" for d, n in sorted(repeated.items()))
        ctx.warn(f"{track}: document ids repeated within a domain's corpus ({detail}); each counted once")


# =============================================================================================
# Track 2 (RECOR)


def _collect_track2(ctx: _Context, folder: Path, layout: str, wanted: list[str]) -> _Collected:
    turns = _Set("2x")
    duplicates = _DuplicateMaps()
    corpora: dict[str, Path] = {}
    conversations: set[str] = set()

    if layout == rel.RELEASE:
        dirs = rel.domain_dirs(folder)
        domains = sorted(dirs)
        for domain, d in dirs.items():
            mapper = _domain_corpus(domain, d, corpora, duplicates)
            path = rel.find_file(d, "benchmark", ctx.split, (".json", ".jsonl"), rel.RELEASE)
            if path is None:
                turns.note_missing(d, domain, "benchmark", f"benchmark_{ctx.split}.json(l)", (".json", ".jsonl"))
                continue
            for conversation in rel.read_benchmark(path):
                if conversation.task and conversation.task != domain:
                    turns.stats["task_differs_from_folder"] += 1
                _add_conversation(turns, domain, conversation, mapper, conversations)
            qrels = rel.find_file(d, "qrels", ctx.split, (".txt",), rel.RELEASE)
            if qrels is not None:
                _add_domain_qrels(turns, domain, qrels, mapper)
        turns.warn_missing(ctx)
        if turns.stats["task_differs_from_folder"]:
            ctx.warn(
                f"2x: {turns.stats['task_differs_from_folder']} conversations have a \"task\" other than their "
                "folder's domain; the folder was used"
            )
    else:
        mapper = _domain_corpus("", folder, corpora, duplicates)  # the flat layout: one corpus
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
                _add_conversation(turns, conversation.task, conversation, mapper, conversations)
        qrels = rel.find_file(folder, "qrels", ctx.split, (".txt",), rel.SAMPLE)
        if qrels is not None:
            _assign_flat_qrels(list(rel.read_qrels(qrels)), turns, mapper, doc_prefix_decides=False)
        domains = sorted({d.domain for d in turns.drafts.values()})

    dup = duplicates.merged(ctx, rel.TRACK2_DIR)
    settled = _settle(turns)
    return _Collected(
        folder, layout, wanted, domains, corpora, dup, {s: turns for s in TRACK2_SUBTRACKS},
        {s: settled for s in TRACK2_SUBTRACKS}, conversations=conversations,
    )


def _build_track2(ctx: _Context, track: _Collected) -> None:
    name = rel.TRACK2_DIR
    folder, layout, wanted, domains, corpora, dup = (
        track.folder, track.layout, track.wanted, track.domains, track.corpora, track.dup
    )
    turns, conversations = track.sets["2a"], track.conversations
    kept, topics, judgments = track.settled["2a"]

    need_text = bool({"2b", "2c"} & set(wanted))
    full_db: Path | None = None
    staging = {sub: _staging(ctx, sub) for sub in wanted}
    if need_text:
        # 2c keeps the whole corpus table; without 2c it is only the source of 2b's subset.
        full_db = (staging["2c"] if "2c" in staging else _staging(ctx, "passages")) / PASSAGES

    if not corpora:
        index = None
        ctx.warn(f"{name}: no documents.jsonl; the reference accepts every document id and has no passages")
        if full_db is not None:
            _create_passages(full_db).close()
        lines: Counter = Counter()
    else:
        if layout == rel.RELEASE:
            lacking = sorted({d.domain for d in turns.drafts.values()} - set(corpora))
            if lacking:
                raise InputError(f"domains with topics but no documents.jsonl: {', '.join(lacking)}", str(folder))
            attribute = None
        else:
            cited: dict[str, set[str]] = {}
            for draft in turns.drafts.values():
                for doc in list(draft.gold or []) + turns.qrels.get(draft.key, []):
                    cited.setdefault(doc, set()).add(draft.domain)
            attribute = (cited, domains)
        index, lines = _index_track2(corpora, domains, attribute, full_db, turns.stats)
        _warn_duplicate_docs(ctx, name, index, lines)
        if turns.stats["documents_unattributed"]:
            ctx.warn(
                f"{name}: {turns.stats['documents_unattributed']} documents of the flat corpus are cited by no "
                "conversation; they are accepted in every domain"
            )

    missing = _missing_from_corpus(judgments, topics, index)
    ctx.summary["tracks"][name] = _track_summary(layout, domains, index, dup) | {"conversations": len(conversations)}

    relevant = {t.key: [] for t in topics}
    for j in judgments:
        relevant[j.key].append(j.doc_id)
    turn_records = []
    for draft in kept:
        record = dict(draft.turn or {})
        record["gold_doc_ids"] = relevant[draft.key]
        turn_records.append(record)

    counts = _counts(topics, judgments, turns.stats, index)
    counts["conversations"] = len({t.conversation for t in topics})
    counts["gold_missing_from_corpus"] = missing
    extra_all = {}
    # 2b's passages come from the full table, so it is built before 2c's folder moves into place.
    order = [s for s in ("2b", "2a", "2c") if s in wanted]
    for sub in order:
        sub_counts = dict(counts)
        if sub in ("2b", "2c"):
            _write_turns(staging[sub] / TURNS, turn_records)
            if sub == "2b":
                wanted_passages = [(t.domain, j.doc_id) for t, docs in _by_topic(topics, judgments) for j in docs]
                sub_counts["passages"] = _subset_passages(full_db, staging[sub] / PASSAGES, wanted_passages)
            else:
                sub_counts["passages"] = _count_rows(staging[sub] / PASSAGES)
        reference = Reference(_manifest(ctx, sub, "turn", domains, sub_counts, layout), topics, judgments, index, dup)
        reference.write(staging[sub])
        extra_all[sub] = sub_counts
    for sub in wanted:
        _install(staging[sub], ctx.out / sub, ctx.split)
        ctx.summary["subtracks"][sub] = _subtrack_summary(ctx.out / sub, extra_all[sub], turns.stats)
    _warn_stats(ctx, "2a/2b/2c", turns.stats, missing)


def _add_conversation(
    target: _Set, domain: str, conversation: rel.Conversation, mapper: _Mapper, conversations: set[str]
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
        target.add(
            _Draft(key, domain, topic_id, key, conv_key, turn.turn, gold, payload, conversation.file, conversation.line)
        )
    target.stats["gold_ids_remapped"] += mapper.changed
    mapper.changed = 0


def _index_track2(
    corpora: dict[str, Path],
    domains: list[str],
    attribute: tuple[dict[str, set[str]], list[str]] | None,
    full_db: Path | None,
    stats: Counter,
) -> tuple[DocIdIndex, Counter]:
    """Stream the corpus once: ids into the index, texts (when needed) into passages.sqlite."""
    lines: Counter = Counter()
    conn = _create_passages(full_db) if full_db is not None else None
    batch: list[tuple[str, str, str]] = []

    def flush() -> None:
        if conn is not None and batch:
            conn.executemany("INSERT OR IGNORE INTO passages(domain, doc_id, text) VALUES (?, ?, ?)", batch)
            batch.clear()

    def pairs() -> Iterator[tuple[str, str]]:
        for corpus_domain, path in corpora.items():
            for _, doc_id, text in rel.iter_documents(path, ("doc_id", "id"), with_text=conn is not None):
                if attribute is None:
                    owners: Iterable[str] = (corpus_domain,)
                else:
                    cited, all_domains = attribute
                    owners = sorted(cited.get(doc_id, ()))
                    if not owners:
                        stats["documents_unattributed"] += 1
                        owners = all_domains
                for domain in owners:
                    lines[domain] += 1
                    if conn is not None:
                        batch.append((domain, doc_id, text or ""))
                    yield domain, doc_id
                if len(batch) >= _BATCH:
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


def _create_passages(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path))
    # Passages run to a few KB: on the default 4 KB pages a WITHOUT ROWID table spills them to
    # overflow pages (measured: file 2x the text, 5x slower); 16 KB pages keep them inline.
    conn.execute("PRAGMA page_size=16384")
    # A file built from scratch and moved into place only when complete needs no journal.
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute(
        "CREATE TABLE passages(domain TEXT, doc_id TEXT, text TEXT, PRIMARY KEY(domain, doc_id)) WITHOUT ROWID"
    )
    return conn


def _subset_passages(full_db: Path | None, path: Path, wanted: list[tuple[str, str]]) -> int:
    """Copy the wanted (domain, doc_id) rows of the full table into a new passages.sqlite."""
    conn = _create_passages(path)
    try:
        if full_db is None or not full_db.exists():
            conn.commit()
            return 0
        conn.execute("ATTACH DATABASE ? AS corpus", (str(full_db),))
        conn.execute("CREATE TEMP TABLE wanted(domain TEXT, doc_id TEXT, PRIMARY KEY(domain, doc_id)) WITHOUT ROWID")
        conn.executemany("INSERT OR IGNORE INTO temp.wanted VALUES (?, ?)", wanted)
        conn.execute(
            "INSERT INTO main.passages SELECT p.domain, p.doc_id, p.text FROM temp.wanted w "
            "JOIN corpus.passages p ON p.domain = w.domain AND p.doc_id = w.doc_id ORDER BY p.domain, p.doc_id"
        )
        conn.commit()
        conn.execute("DETACH DATABASE corpus")
        return conn.execute("SELECT COUNT(*) FROM main.passages").fetchone()[0]
    finally:
        conn.close()


def _count_rows(path: Path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    finally:
        conn.close()


def _by_topic(topics: list[Topic], judgments: list[Judgment]) -> list[tuple[Topic, list[Judgment]]]:
    grouped: dict[str, list[Judgment]] = {t.key: [] for t in topics}
    for j in judgments:
        grouped[j.key].append(j)
    return [(t, grouped[t.key]) for t in topics]


def _write_turns(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
