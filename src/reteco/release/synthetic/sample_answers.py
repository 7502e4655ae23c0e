"""Sample answers for sub-tracks 2b and 2c: extractive, deterministic, standard library only.

The starting kit ships these (made on the synthetic release's dev split) so a participant sees a
well-formed ``answers.jsonl``, and the test suite checks that they never drift from a fresh
regeneration. Like ``sample_runs``, this reads the release itself, not through
``reteco.formats``, so a bug there cannot hide in the files used to test it.

The method, per target turn: the answer is the first sentence of each of the first
``PASSAGES_USED`` passages, joined by a space, where the passages are

- 2b: the turn's gold passages (``gold_doc_ids`` of the benchmark, in their order; the
  sub-track gives them to participants), ids missing from the corpus skipped;
- 2c: the top 5 of the same BM25 ranking as the 2c sample run (``sample_runs``: the history
  followed by the question, over the turn's domain corpus), i.e. the passages the run retrieved.

Turn ids are ``<conv id>_turn_<n>``, qualified as ``<domain>/<conv id>_turn_<n>`` when the bare
id occurs in several domains, as in the runs. Regenerate the starting kit's copies with::

    reteco synth --out build/synthetic_release --samples starting_kit/sample_submissions
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from reteco.release.synthetic.release import TRACK2_DIR
from reteco.release.synthetic.sample_runs import LexicalRanker

ANSWERS_FILE = "answers.jsonl"
PASSAGES_USED = 2
TOP_K = 5

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (., ! or ? followed by blanks), stripped."""
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()


def extractive_answer(passages: list[str]) -> str:
    """The first sentence of each of the first ``PASSAGES_USED`` passages, joined by a space."""
    return " ".join(s for s in (first_sentence(p) for p in passages[:PASSAGES_USED]) if s)


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _turns(release: Path, split: str):
    """(domain folder, bare turn id, retrieval text, gold ids, corpus dict, ranker) per dev turn."""
    root = release / TRACK2_DIR
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        benchmark = folder / f"benchmark_{split}.json"
        if not benchmark.exists():
            continue
        docs = [(d["doc_id"], d["content"]) for d in _read_jsonl(folder / "documents.jsonl")]
        corpus = dict(docs)
        ranker = LexicalRanker(docs)
        for conversation in json.loads(benchmark.read_text(encoding="utf-8")):
            for turn in conversation["turns"]:
                bare = f"{conversation['id']}_turn_{turn['turn_id']}"
                history = turn.get("conversation_history", "")
                text = turn["query"] if history == "No previous conversation." else f"{history}\n{turn['query']}"
                yield folder.name, bare, text, list(turn.get("gold_doc_ids") or []), corpus, ranker


def sample_answers(release: Path, split: str = "dev") -> dict[str, list[dict]]:
    """The 2b and 2c answer records of ``split``, in release order."""
    rows = list(_turns(Path(release), split))
    domains_of = Counter(bare for _, bare, *_ in rows)
    out: dict[str, list[dict]] = {"2b": [], "2c": []}
    for domain, bare, text, gold, corpus, ranker in rows:
        turn_id = f"{domain}/{bare}" if domains_of[bare] > 1 else bare
        top = [doc_id for doc_id, _ in ranker.rank(text, TOP_K)]
        gold_texts = [corpus[d] for d in gold if d in corpus] or [corpus[d] for d in top]
        out["2b"].append({"turn_id": turn_id, "answer": extractive_answer(gold_texts)})
        out["2c"].append({"turn_id": turn_id, "answer": extractive_answer([corpus[d] for d in top])})
    return out


def write_sample_answers(release: Path, out: Path, split: str = "dev") -> dict[str, Path]:
    """Write ``out/2b/answers.jsonl`` and ``out/2c/answers.jsonl``; returns the paths."""
    written = {}
    for subtrack, records in sample_answers(release, split).items():
        path = Path(out) / subtrack / ANSWERS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
        written[subtrack] = path
    return written
