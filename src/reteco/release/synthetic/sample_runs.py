"""Sample submissions for a release: TREC runs from a small BM25 ranker, standard library only.

The starting kit ships these runs (made on the synthetic release) so a participant sees well
formed files for every sub-track, and the test suite checks that they never drift from a fresh
regeneration. The ranker reads the release itself, independently of ``reteco.formats``, so a
bug there cannot hide in the very files used to test it.

Regenerate the starting kit's copy with::

    reteco synth --out build/synthetic_release --samples starting_kit/sample_submissions
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

from reteco.release.synthetic.release import TRACK1_DIR, TRACK2_DIR

DEPTH = 100
RUN_TAG = "reteco_lexical"
RUN_FILE = "run.txt"

_TOKEN = re.compile(r"[a-z0-9]+")
_TAG = re.compile(r"<[^>]+>")
# Words of the question frames and dialogue markers; they would only add noise to the ranking.
_STOPWORDS = frozenset(
    "a an and are as at be been by did do does for from had has have how i in is it its "
    "of on or so that the then there this to was were what when which who why with "
    "q about also".split()
)


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(_TAG.sub(" ", text).lower()) if t not in _STOPWORDS]


class LexicalRanker:
    """Okapi BM25 (k1 = 0.9, b = 0.4, the Pyserini defaults) over one domain's corpus."""

    def __init__(self, docs: list[tuple[str, str]], k1: float = 0.9, b: float = 0.4):
        self._ids = [doc_id for doc_id, _ in docs]
        self._k1, self._b = k1, b
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths: list[int] = []
        for index, (_, text) in enumerate(docs):
            counts = Counter(_tokens(text))
            self._lengths.append(sum(counts.values()))
            for term in sorted(counts):
                self._postings.setdefault(term, []).append((index, counts[term]))
        self._average = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0

    def rank(self, text: str, depth: int = DEPTH) -> list[tuple[str, float]]:
        """The ``depth`` best documents for ``text`` as (doc id, score), best first.

        Ties are broken by doc id so the order never depends on the corpus file's order.
        """
        n = len(self._ids)
        scores = [0.0] * n
        # Distinct terms in sorted order: float sums must be done in the same order every run.
        for term in sorted(set(_tokens(text))):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = math.log(1.0 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for index, tf in postings:
                norm = self._k1 * (1.0 - self._b + self._b * self._lengths[index] / self._average)
                scores[index] += idf * tf * (self._k1 + 1.0) / (tf + norm)
        order = sorted(range(n), key=lambda i: (-scores[i], self._ids[i]))[:depth]
        return [(self._ids[i], scores[i]) for i in order]


def _run_lines(topic: str, ranking: list[tuple[str, float]]) -> list[str]:
    """TREC lines with strictly decreasing scores.

    trec_eval orders by score and breaks ties by doc id, ignoring the rank column; equal
    scores would let it reorder the ranking we chose, so ties are separated by 1e-4 steps.
    """
    lines = []
    previous: int | None = None
    for rank, (doc_id, score) in enumerate(ranking, start=1):
        units = round(score * 10000)
        if previous is not None and units >= previous:
            units = previous - 1
        previous = units
        lines.append(f"{topic} Q0 {doc_id} {rank} {units / 10000:.4f} {RUN_TAG}\n")
    return lines


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _domains(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _track1_runs(release: Path, split: str) -> tuple[list[str], list[str]]:
    query_lines: list[str] = []
    step_lines: list[str] = []
    for folder in _domains(release / TRACK1_DIR):
        examples = folder / f"examples_{split}.jsonl"
        if not examples.exists():
            continue
        ranker = LexicalRanker([(d["id"], d["content"]) for d in _read_jsonl(folder / "documents.jsonl")])
        for example in _read_jsonl(examples):
            query_lines += _run_lines(example["id"], ranker.rank(example["query"]))
        for record in _read_jsonl(folder / f"steps_{split}.jsonl"):
            for step in record["steps"]:
                step_lines += _run_lines(step["step_id"], ranker.rank(step["step"]))
    return query_lines, step_lines


def _track2_run(release: Path, split: str) -> list[str]:
    turns: list[tuple[str, str, str]] = []  # (domain folder, bare turn id, query text)
    rankers: dict[str, LexicalRanker] = {}
    for folder in _domains(release / TRACK2_DIR):
        benchmark = folder / f"benchmark_{split}.json"
        if not benchmark.exists():
            continue
        rankers[folder.name] = LexicalRanker(
            [(d["doc_id"], d["content"]) for d in _read_jsonl(folder / "documents.jsonl")]
        )
        for conversation in json.loads(benchmark.read_text(encoding="utf-8")):
            for turn in conversation["turns"]:
                bare = f"{conversation['id']}_turn_{turn['turn_id']}"
                history = turn.get("conversation_history", "")
                text = turn["query"] if history == "No previous conversation." else f"{history}\n{turn['query']}"
                turns.append((folder.name, bare, text))
    # BRIGHT-derived conversation ids are bare integers that recur across domains: such a
    # turn id alone would be ambiguous, so it is qualified with the domain folder.
    domains_of = Counter(bare for _, bare, _ in turns)
    lines: list[str] = []
    for domain, bare, text in turns:
        topic = f"{domain}/{bare}" if domains_of[bare] > 1 else bare
        lines += _run_lines(topic, rankers[domain].rank(text))
    return lines


def write_sample_runs(release: Path, out: Path, split: str = "dev") -> dict[str, Path]:
    """Write BM25 sample runs of ``split`` for sub-tracks 1a, 1b, 2a and 2c under ``out``.

    Each is ``out/<sub-track>/run.txt`` in six-column TREC format ("topic Q0 docid rank score
    tag"), top 100 documents of the topic's own domain corpus (all of them when it has fewer).
    Topics: query ids (1a), step ids (1b), ``<conv id>_turn_<n>`` (2a, 2c), qualified as
    ``<domain>/<conv id>_turn_<n>`` when the bare id occurs in several domains. Track 2 queries
    are the conversation history followed by the current question. Returns the written paths
    by sub-track.
    """
    release, out = Path(release), Path(out)
    query_lines, step_lines = _track1_runs(release, split)
    turn_lines = _track2_run(release, split)
    written = {}
    for subtrack, lines in (("1a", query_lines), ("1b", step_lines), ("2a", turn_lines), ("2c", turn_lines)):
        path = out / subtrack / RUN_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(lines)
        written[subtrack] = path
    return written
