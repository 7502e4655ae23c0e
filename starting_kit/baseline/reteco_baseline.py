"""RETECO baseline: BM25 runs (1a, 1b, 2a, 2c) and extractive answers (2b, 2c) from a release folder.

    python reteco_baseline.py --release RELEASE --split dev --out submission/
    cd submission/2a && zip ../2a.zip run.txt          # the 2a competition's submission
    cd submission && zip -r ../all.zip 1a 1b 2a 2b 2c    # every sub-track's folder in one zip

Each sub-track is a competition of its own on Codabench and takes its own sub-track's files; the
zip of every folder can be sent to any of them, since each reads its own folder.

``RELEASE`` is the organizers' release folder (``track1_tempo/<domain>/...``,
``track2_recor/<domain>/...``) or the flat layout of their public sample; reteco's own readers
read it, so every trap of the release (``doc_id`` vs ``id``, ``Drones``, ``#turn`` ids, nested or
flattened steps) is handled as the scorer handles it. It writes::

    OUT/1a/run.txt  OUT/1b/run.txt  OUT/2a/run.txt  OUT/2c/run.txt  OUT/2b/answers.jsonl  OUT/2c/answers.jsonl

Retrieval: Okapi BM25 (bm25s, k1 = 0.9, b = 0.4, English stop words) over the corpus of the
topic's domain, the official rule. The flat sample's one corpus is split into its domains
exactly as ``reteco prepare`` splits it (``reteco.formats.release.attribute_flat_corpus``: a
Track-1 document belongs to the domain its id is prefixed with, a Track-2 document to the domains
whose gold ids cite it, an unattributable one to every domain), so the scorer discards none of
the documents ranked; a topic whose domain cannot be told is ranked against the whole corpus.
Queries: 1a the query text; 1b the step, its instruction and its query; 2a/2c the turn's
question plus, by default, the conversation history (``--no-history`` for the current turn only). Topic ids are written with
their domain (``<domain>/<id>``) whenever the domain is known, so ids that recur across domains
are never ambiguous.

Answers (extractive, no model): the sentences of the evidence passages that share the most words
with the turn's question, in passage order, up to ``--answer-words`` words. The evidence is the
turn's gold passages for 2b and the run's top 5 passages for 2c (the passages a 2c answer must
come from). Turns whose evidence has no text get a short fallback answer rather than none.

Needs ``pip install "reteco[baseline]"`` (bm25s); prints progress bars on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from reteco.formats import release as rel
from reteco.formats.corpus_index import DuplicateCycle, resolve_chains
from reteco.formats.topic_ids import canonical_domain, topic_key, turn_topic_id

SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")
RUN_TAG = "reteco_bm25"
TOP_EVIDENCE_2C = 5
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "me my of on or our so such than that the their them then there these they this to was we were what when "
    "where which who why will with would you your q".split()
)


@dataclass
class Topic:
    """One ranking to produce: its run id, its domain (corpus) and its query text."""

    topic_id: str  # as written in the run (domain-qualified when the domain is known)
    corpus: str  # key of the corpus it is ranked against
    text: str
    question: str = ""  # 2b/2c: the turn's own question (answers)
    gold: list[str] = field(default_factory=list)  # the gold ids (2b: the turn's gold passages)
    source_id: str = ""  # the id as the release's qrels write it (no domain)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--release", type=Path, required=True, help="release folder (or the public sample)")
    parser.add_argument("--split", default="dev", help="split suffix of the files: train, dev, test")
    parser.add_argument("--out", type=Path, required=True, help="folder for <sub-track>/run.txt and answers.jsonl")
    parser.add_argument("--subtracks", default=",".join(SUBTRACKS), help="comma-separated (default: all five)")
    parser.add_argument("--depth", type=int, default=100, help="documents per topic (default: 100)")
    parser.add_argument("--no-history", action="store_true", help="2a/2c: use the current turn only")
    parser.add_argument("--answer-words", type=int, default=80, help="longest extractive answer, in words")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (there are none when stderr is not a terminal)")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.subtracks.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUBTRACKS]
    if unknown:
        parser.error(f"unknown sub-track(s): {', '.join(unknown)}")
    written = run_baseline(
        args.release, args.split, args.out, wanted, depth=args.depth, history=not args.no_history,
        answer_words=args.answer_words, progress=not args.quiet and sys.stderr.isatty(),
    )
    for path in written:
        print(path)
    return 0


def run_baseline(
    release: Path,
    split: str,
    out: Path,
    subtracks: list[str] | tuple[str, ...] = SUBTRACKS,
    *,
    depth: int = 100,
    history: bool = True,
    answer_words: int = 80,
    progress: bool = True,
) -> list[Path]:
    """Write the baseline's files for ``subtracks`` under ``out``; returns the paths written."""
    written: list[Path] = []
    track1 = [s for s in subtracks if s in ("1a", "1b")]
    track2 = [s for s in subtracks if s in ("2a", "2b", "2c")]
    if track1:
        corpora, topics = _track1(Path(release) / rel.TRACK1_DIR, split)
        for sub in track1:
            if not topics[sub]:
                raise SystemExit(f"no {sub} topics for split {split!r} in {release}")
            rankings = _rank(corpora, topics[sub], depth, progress, f"{sub} BM25")
            written.append(_write_run(out / sub / "run.txt", topics[sub], rankings))
    if track2:
        corpora, turns = _track2(Path(release) / rel.TRACK2_DIR, split, history)
        if not turns:
            raise SystemExit(f"no Track-2 turns for split {split!r} in {release}")
        rankings = None
        if "2a" in track2 or "2c" in track2:
            rankings = _rank(corpora, turns, depth, progress, "2a/2c BM25")
            for sub in ("2a", "2c"):
                if sub in track2:
                    written.append(_write_run(out / sub / "run.txt", turns, rankings))
        if "2b" in track2:
            evidence = [[_passage(corpora, t.corpus, d) for d in t.gold] for t in turns]
            written.append(_write_answers(out / "2b" / "answers.jsonl", turns, evidence, answer_words))
        if "2c" in track2:
            evidence = [
                [_passage(corpora, t.corpus, d) for d, _ in ranking[:TOP_EVIDENCE_2C]]
                for t, ranking in zip(turns, rankings)
            ]
            written.append(_write_answers(out / "2c" / "answers.jsonl", turns, evidence, answer_words))
    return written


# ---------------------------------------------------------------------------------------------
# Reading the release


TRACK1_ID_KEYS = ("id", "doc_id")
TRACK2_ID_KEYS = ("doc_id", "id")


def _track1(folder: Path, split: str) -> tuple[dict, dict[str, list[Topic]]]:
    layout = rel.detect_layout(folder)
    if layout is None:
        raise SystemExit(f"no Track-1 data in {folder}")
    if layout == rel.RELEASE:
        corpora: dict[str, dict[str, str]] = {}
        topics: dict[str, list[Topic]] = {"1a": [], "1b": []}
        for domain, path in rel.domain_dirs(folder).items():
            if (path / "documents.jsonl").is_file():
                corpora[domain] = _read_corpus(path / "documents.jsonl", TRACK1_ID_KEYS)
            for sub, found in _track1_topics(path, split, layout, lambda *_, d=domain: d).items():
                topics[sub] += found
        return corpora, topics
    # The flat sample: a query's domain is the prefix of its gold ids (a step's, else its
    # query's), as `reteco prepare` decides it (reteco.formats.release.prefix_domain).
    mapped = _duplicate_mapper(folder)
    qrels = {**_flat_qrels(folder, split, "qrels"), **_flat_qrels(folder, split, "qrels_steps")}
    query_domain: dict[str, set[str]] = {}

    def domain_of(topic_id: str, gold: list[str], parent: str | None) -> str:
        domain = rel.prefix_domain([mapped(d) for d in gold] or qrels.get(topic_id, []))[0]
        if domain is None and parent is not None and len(query_domain.get(parent, ())) == 1:
            domain = next(iter(query_domain[parent]))
        return domain or ""

    topics = _track1_topics(folder, split, layout, domain_of, query_domain)
    corpora = _flat_corpora(folder, TRACK1_ID_KEYS, topics["1a"] + topics["1b"], qrels, mapped, by_prefix=True)
    return corpora, topics


def _track1_topics(folder: Path, split: str, layout: str, domain_of, query_domain: dict | None = None) -> dict[str, list[Topic]]:
    """1a queries and 1b steps of one folder; ``domain_of(topic id, gold ids, parent query id or
    None)`` names a topic's domain ("": unknown, ranked against the whole corpus)."""
    topics: dict[str, list[Topic]] = {"1a": [], "1b": []}
    examples = rel.find_file(folder, "examples", split, (".jsonl",), layout)
    if examples is not None:
        for query in rel.read_examples(examples):
            domain = domain_of(query.query_id, list(query.gold_ids or []), None)
            if query_domain is not None and domain:
                query_domain.setdefault(query.query_id, set()).add(domain)
            topics["1a"].append(Topic(_qualified(domain, query.query_id), domain, _clean(query.query),
                                      gold=list(query.gold_ids or []), source_id=query.query_id))
    steps = rel.find_file(folder, "steps", split, (".jsonl",), layout)
    if steps is not None:
        for step in rel.read_steps(steps):
            # The flattened sample's steps carry only their query's text.
            parts = dict.fromkeys(t for t in (step.text, step.instruction, step.query_text) if t)
            domain = domain_of(step.step_id, list(step.gold_ids or []), step.parent_id)
            topics["1b"].append(Topic(_qualified(domain, step.step_id), domain, _clean(" ".join(parts)),
                                      gold=list(step.gold_ids or []), source_id=step.step_id))
    return topics


def _track2(folder: Path, split: str, history: bool) -> tuple[dict, list[Topic]]:
    layout = rel.detect_layout(folder)
    if layout is None:
        raise SystemExit(f"no Track-2 data in {folder}")
    corpora: dict[str, dict[str, str]] = {}
    turns: list[Topic] = []
    places = rel.domain_dirs(folder) if layout == rel.RELEASE else {"": folder}
    for domain, path in places.items():
        if layout == rel.RELEASE and (path / "documents.jsonl").is_file():
            corpora[domain] = _read_corpus(path / "documents.jsonl", TRACK2_ID_KEYS)
        benchmark = rel.find_file(path, "benchmark", split, (".json", ".jsonl"), layout)
        if benchmark is None:
            continue
        for conversation in rel.read_benchmark(benchmark):
            # In the flat sample the conversation's "task" names its domain.
            named = domain or conversation.task
            for turn in conversation.turns:
                source_id = turn_topic_id(conversation.conversation_id, turn.turn)
                past = _flatten(turn.history) if history else ""
                turns.append(
                    Topic(_qualified(named, source_id), named, _clean(f"{turn.query} {past}"), _clean(turn.query),
                          list(turn.gold_doc_ids or []), source_id)
                )
    if layout == rel.SAMPLE:
        # The flat sample's one corpus: a document belongs to the domains whose turns cite it.
        mapped = _duplicate_mapper(folder)
        qrels = _flat_qrels(folder, split, "qrels")
        corpora = _flat_corpora(folder, TRACK2_ID_KEYS, turns, qrels, mapped, by_prefix=False)
    return corpora, turns


def _read_corpus(path: Path, id_keys: tuple[str, ...]) -> dict[str, str]:
    """Text by doc id; a repeated id keeps its first text, as the reference's passages do."""
    texts: dict[str, str] = {}
    for _, doc_id, text in rel.iter_documents(path, id_keys, True):
        texts.setdefault(doc_id, text or "")
    return texts


def _duplicate_mapper(folder: Path):
    """Removed (v1.0) -> kept id through the flat folder's duplicate_map.json, chains followed."""
    path = folder / "duplicate_map.json"
    if not path.is_file():
        return lambda doc_id: doc_id
    try:
        mapping = resolve_chains(rel.read_duplicate_map(path))
    except DuplicateCycle:
        raise SystemExit(f"{path}: removed ids form a cycle") from None
    return lambda doc_id: mapping.get(doc_id, doc_id)


def _flat_qrels(folder: Path, split: str, stem: str) -> dict[str, list[str]]:
    """Relevant doc ids by topic id (as the release writes it) of a flat qrels file."""
    path = rel.find_file(folder, stem, split, (".txt",), rel.SAMPLE)
    found: dict[str, list[str]] = {}
    for line in rel.read_qrels(path) if path is not None else ():
        if line.relevance > 0:
            found.setdefault(line.topic_id, []).append(line.doc_id)
    return found


def _flat_corpora(
    folder: Path, id_keys: tuple[str, ...], topics: list[Topic], qrels: dict[str, list[str]], mapped, by_prefix: bool
) -> dict[str, dict[str, str]]:
    """The flat corpus split into its domains' corpora exactly as `reteco prepare` splits it
    (``reteco.formats.release.attribute_flat_corpus``), so no ranked document is one the scorer
    discards; key "" is the whole corpus, for topics whose domain is unknown.

    A topic cites its gold ids and its qrels' documents (v1.1 ids). A qrels line whose topic id
    names topics of several domains cites nothing, as in `reteco prepare` (which gives such a line
    to the one topic whose gold ids hold it, already cited, or ignores it)."""
    documents = folder / "documents.jsonl"
    if not documents.is_file():
        return {}
    texts = _read_corpus(documents, id_keys)
    domains_of_id: dict[str, set[str]] = {}
    for topic in topics:
        if topic.corpus:
            domains_of_id.setdefault(topic.source_id, set()).add(topic.corpus)
    citations = []
    for topic in topics:
        if not topic.corpus:
            continue
        cited = [mapped(d) for d in topic.gold]
        if len(domains_of_id[topic.source_id]) == 1:
            cited += [mapped(d) for d in qrels.get(topic.source_id, [])]
        citations.append((topic.corpus, cited))
    attribution = rel.attribute_flat_corpus(texts, citations, {t.corpus for t in topics if t.corpus}, by_prefix=by_prefix)
    corpora: dict[str, dict[str, str]] = {"": texts}
    for doc_id, text in texts.items():
        for domain in attribution.owners[doc_id]:
            corpora.setdefault(domain, {})[doc_id] = text
    return corpora


def _qualified(domain: str, topic_id: str) -> str:
    return topic_key(canonical_domain(domain), topic_id) if domain else topic_id


def _flatten(history) -> str:
    if history is None:
        return ""
    if isinstance(history, str):
        return history
    if isinstance(history, dict):
        return " ".join(_flatten(v) for v in history.values())
    if isinstance(history, list):
        return " ".join(_flatten(v) for v in history)
    return str(history)


def _clean(text: str) -> str:
    return _TAG.sub(" ", text or "")


def _passage(corpora: dict, corpus: str, doc_id: str) -> str:
    return corpora.get(corpus, {}).get(doc_id, "")


# ---------------------------------------------------------------------------------------------
# Ranking


def _rank(corpora: dict, topics: list[Topic], depth: int, progress: bool, label: str) -> list[list[tuple[str, float]]]:
    """BM25 rankings, one per topic, each against its own domain's corpus."""
    import bm25s

    rankings: list[list[tuple[str, float]]] = [[] for _ in topics]
    by_corpus: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        by_corpus.setdefault(topic.corpus, []).append(i)
    for corpus in tqdm(sorted(by_corpus), desc=label, unit="domain", disable=not progress, file=sys.stderr):
        documents = corpora.get(corpus, {})
        if not documents:
            continue  # no corpus for this domain: its topics get an empty ranking (they score 0)
        ids = list(documents)
        retriever = bm25s.BM25(k1=0.9, b=0.4)
        retriever.index(bm25s.tokenize([_clean(documents[d]) for d in ids], stopwords="en", show_progress=False),
                        show_progress=False)
        members = by_corpus[corpus]
        k = min(depth, len(ids))
        queries = bm25s.tokenize([topics[i].text for i in members], stopwords="en", show_progress=False)
        results, scores = retriever.retrieve(queries, k=k, show_progress=False, n_threads=1)
        for row, i in enumerate(members):
            ranking = [(ids[int(d)], float(s)) for d, s in zip(results[row], scores[row]) if float(s) > 0]
            rankings[i] = ranking
    return rankings


def _write_run(path: Path, topics: list[Topic], rankings: list[list[tuple[str, float]]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for topic, ranking in zip(topics, rankings):
            for rank, (doc_id, score) in enumerate(ranking, 1):
                handle.write(f"{topic.topic_id} Q0 {doc_id} {rank} {score:.6f} {RUN_TAG}\n")
    return path


# ---------------------------------------------------------------------------------------------
# Extractive answers


def extractive_answer(question: str, passages: list[str], max_words: int = 80) -> str:
    """The passages' sentences sharing the most words with ``question``, in passage order.

    Sentences are taken by decreasing overlap (ties: the earlier one) while they fit in
    ``max_words`` words; only sentences sharing at least one word are taken. Falls back to the first
    sentence of the first passage when no sentence shares a word, and to a fixed sentence when
    there is no passage text at all (an answer is never empty: empty answers are invalid).
    """
    wanted = {w for w in _WORD.findall(question.lower()) if w not in _STOP}
    sentences: list[tuple[int, int, str]] = []  # (overlap, position, sentence)
    for passage in passages:
        for sentence in _SENTENCE.split(_clean(passage).strip()):
            sentence = " ".join(sentence.split())
            if sentence:
                overlap = len(wanted & set(_WORD.findall(sentence.lower())))
                sentences.append((overlap, len(sentences), sentence))
    if not sentences:
        return "No supporting passage was found for this question."
    best = sorted(sentences, key=lambda s: (-s[0], s[1]))
    # Only sentences that share a word; none does: the first sentence, as a last resort.
    best = [s for s in best if s[0] > 0] or sentences[:1]
    chosen: list[tuple[int, str]] = []
    words = 0
    for _, position, sentence in best:
        n = len(sentence.split())
        if chosen and words + n > max_words:
            break
        chosen.append((position, sentence))
        words += n
        if words >= max_words:
            break
    text = " ".join(s for _, s in sorted(chosen))
    return " ".join(text.split()[:max_words])


def _write_answers(path: Path, turns: list[Topic], evidence: list[list[str]], max_words: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for turn, passages in zip(turns, evidence):
            answer = extractive_answer(turn.question, [p for p in passages if p], max_words)
            handle.write(json.dumps({"turn_id": turn.topic_id, "answer": answer}, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
