"""RETECO baseline: BM25 runs (1a, 1b, 2a, 2c) and extractive answers (2b, 2c) from a release folder.

    python reteco_baseline.py --release RELEASE --split dev --out submission/
    cd submission/2a && zip ../2a.zip run.txt          # one sub-track's submission
    cd submission && zip -r ../all.zip 1a 1b 2a 2b 2c    # all sub-tracks (one competition, five tasks)

``RELEASE`` is the organizers' release folder (``track1_tempo/<domain>/...``,
``track2_recor/<domain>/...``) or the flat layout of their public sample; reteco's own readers
read it, so every trap of the release (``doc_id`` vs ``id``, ``Drones``, ``#turn`` ids, nested or
flattened steps) is handled as the scorer handles it. It writes::

    OUT/1a/run.txt  OUT/1b/run.txt  OUT/2a/run.txt  OUT/2c/run.txt  OUT/2b/answers.jsonl  OUT/2c/answers.jsonl

Retrieval: Okapi BM25 (bm25s, k1 = 0.9, b = 0.4, English stop words) over each domain's corpus
(the flat layout's single corpus when it has no domains). Queries: 1a the query text; 1b the
step, its instruction and its query; 2a/2c the turn's question plus, by default, the
conversation history (``--no-history`` for the current turn only). Topic ids are written with
their domain (``<domain>/<id>``) whenever the domain is known, so ids that recur across domains
are never ambiguous.

Answers (extractive, no model): the sentences of the evidence passages that share the most words
with the turn's question, in passage order, up to ``--answer-words`` words. The evidence is the
turn's gold passages for 2b and the run's top 5 passages for 2c (the passages a 2c answer must
come from). Turns whose evidence has no text get a short fallback answer rather than none.

Needs ``pip install "reteco[baseline]"`` (bm25s); prints progress bars on stderr.
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
    gold: list[str] = field(default_factory=list)  # 2b: the turn's gold passages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--release", type=Path, required=True, help="release folder (or the public sample)")
    parser.add_argument("--split", default="dev", help="split suffix of the files: train, dev, test")
    parser.add_argument("--out", type=Path, required=True, help="folder for <sub-track>/run.txt and answers.jsonl")
    parser.add_argument("--subtracks", default=",".join(SUBTRACKS), help="comma-separated (default: all five)")
    parser.add_argument("--depth", type=int, default=100, help="documents per topic (default: 100)")
    parser.add_argument("--no-history", action="store_true", help="2a/2c: use the current turn only")
    parser.add_argument("--answer-words", type=int, default=80, help="longest extractive answer, in words")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.subtracks.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUBTRACKS]
    if unknown:
        parser.error(f"unknown sub-track(s): {', '.join(unknown)}")
    written = run_baseline(
        args.release, args.split, args.out, wanted, depth=args.depth, history=not args.no_history,
        answer_words=args.answer_words, progress=not args.quiet,
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


def _track1(folder: Path, split: str) -> tuple[dict, dict[str, list[Topic]]]:
    layout = rel.detect_layout(folder)
    if layout is None:
        raise SystemExit(f"no Track-1 data in {folder}")
    corpora: dict[str, dict[str, str]] = {}
    topics: dict[str, list[Topic]] = {"1a": [], "1b": []}
    places = rel.domain_dirs(folder) if layout == rel.RELEASE else {"": folder}
    for domain, path in places.items():
        documents = path / "documents.jsonl"
        if documents.is_file():
            corpora[domain] = {d: t or "" for _, d, t in rel.iter_documents(documents, ("id", "doc_id"), True)}
        examples = rel.find_file(path, "examples", split, (".jsonl",), layout)
        if examples is not None:
            for query in rel.read_examples(examples):
                topics["1a"].append(Topic(_qualified(domain, query.query_id), domain, _clean(query.query)))
        steps = rel.find_file(path, "steps", split, (".jsonl",), layout)
        if steps is not None:
            for step in rel.read_steps(steps):
                # The flattened sample's steps carry only their query's text.
                parts = dict.fromkeys(t for t in (step.text, step.instruction, step.query_text) if t)
                topics["1b"].append(Topic(_qualified(domain, step.step_id), domain, _clean(" ".join(parts))))
    return corpora, topics


def _track2(folder: Path, split: str, history: bool) -> tuple[dict, list[Topic]]:
    layout = rel.detect_layout(folder)
    if layout is None:
        raise SystemExit(f"no Track-2 data in {folder}")
    corpora: dict[str, dict[str, str]] = {}
    turns: list[Topic] = []
    places = rel.domain_dirs(folder) if layout == rel.RELEASE else {"": folder}
    for domain, path in places.items():
        documents = path / "documents.jsonl"
        if documents.is_file():
            corpora[domain] = {d: t or "" for _, d, t in rel.iter_documents(documents, ("doc_id", "id"), True)}
        benchmark = rel.find_file(path, "benchmark", split, (".json", ".jsonl"), layout)
        if benchmark is None:
            continue
        for conversation in rel.read_benchmark(benchmark):
            # In the flat sample the conversation's "task" names its domain; the corpus is shared.
            named = domain or conversation.task
            for turn in conversation.turns:
                topic_id = _qualified(named, turn_topic_id(conversation.conversation_id, turn.turn))
                past = _flatten(turn.history) if history else ""
                turns.append(
                    Topic(topic_id, domain, _clean(f"{turn.query} {past}"), _clean(turn.query), list(turn.gold_doc_ids or []))
                )
    return corpora, turns


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
