"""Relevance judgments (qrels) and stance labels for graded benchmarks such as FactIR.

Accepted qrels forms:

- TREC text: ``topic iteration docid relevance`` per line, spaces or tabs (the iteration column
  is ignored); relevance an integer >= 0 (graded levels are gains in nDCG);
- pytrec_eval JSON: ``{"topic": {"docid": relevance, ...}, ...}``.

Stance file: ``topic docid stance`` per line (tab- or space-separated; stance a single word
such as Supports or Refutes).

Qrels a caller gives as Python objects (``reteco.evaluate(run, qrels)``) are written as TREC
text and read by ``trec_qrels_judgments``; ``given_qrels_reference`` makes them a reference.

Both are UTF-8 (a byte-order mark is fine). A relevance is written in ASCII digits (``int()``
would also read ``٣`` or ``1_0``) and at most ``MAX_RELEVANCE`` (judgments are 64-bit integers).
Every problem is an ``InputError`` naming the file and, in text files, the line: a file that
cannot be opened, bytes that are not UTF-8, a bad column or level, JSON that cannot be read.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.text_file import read_text_file
from reteco.problems import InputError, Problems, quoted
from reteco.subtracks import BENCHMARKS, benchmark

FACTIR_CUTOFFS = list(BENCHMARKS["factir"].cutoffs)  # the reader of FactIR's qrels names its row
# The benchmark of qrels given as they are (a file or a Python object), outside the table: the
# plain-qrels preset (``given_qrels_reference``).
GIVEN_QRELS = "qrels"

#: The largest relevance level accepted: judgments are stored as 64-bit integers.
MAX_RELEVANCE = 2**63 - 1
_LEVEL = re.compile(r"[0-9]{1,19}", re.ASCII)


def read_qrels(path: Path) -> list[Judgment]:
    """Judgments from a TREC qrels file or a pytrec_eval JSON file; a repeated (topic, doc) pair
    keeps its highest relevance."""
    name = Path(path).name
    text = read_text_file(Path(path), "qrels")
    if text.lstrip().startswith("{"):
        return _json_qrels(text, name)
    return trec_qrels_judgments(text, name)


def trec_qrels_judgments(text: str, name: str) -> list[Judgment]:
    """Judgments from the text of a TREC qrels file (``topic iteration docid relevance`` lines),
    its problems named ``name`` and the line; a repeated (topic, doc) pair keeps its highest
    relevance. Qrels given as Python objects are written as such text and read here
    (``reteco.api.in_memory``), so they follow a file's rules and messages."""
    best: dict[tuple[str, str], int] = {}
    problems = Problems()
    for number, line in enumerate(text.split("\n"), start=1):  # numbered as editors do
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            problems.error(name, number, f"expected 4 columns: topic iteration docid relevance, found {len(parts)}")
            continue
        rel = relevance_level(parts[3])
        if rel is None:
            problems.error(name, number, not_a_level(parts[3]))
            continue
        _keep_best(best, parts[0], parts[2], rel)
    return _judgments(best, problems, name)


def relevance_level(text: str) -> int | None:
    """The level a qrels line's relevance column holds, or None when it is not ASCII digits of a
    value from 0 to ``MAX_RELEVANCE``."""
    rel = int(text) if _LEVEL.fullmatch(text) else -1
    return rel if 0 <= rel <= MAX_RELEVANCE else None


def not_a_level(text: str) -> str:
    """The message for a relevance column ``relevance_level`` refuses."""
    return f"relevance {quoted(text)} is not an integer >= 0"


def _json_qrels(text: str, name: str) -> list[Judgment]:
    best: dict[tuple[str, str], int] = {}
    problems = Problems()
    try:
        data = json.loads(text, parse_int=_json_level)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", name, exc.lineno) from None
    except RecursionError:
        raise InputError("not usable JSON: nested too deeply", name) from None
    for topic, docs in data.items():
        if not isinstance(docs, dict):
            problems.error(name, None, f"topic {quoted(topic)} must map doc ids to relevance levels")
            continue
        for doc, rel in docs.items():
            if not isinstance(rel, int) or isinstance(rel, bool) or not 0 <= rel <= MAX_RELEVANCE:
                problems.error(
                    name, None, f"topic {quoted(topic)}, document {quoted(doc)}: relevance must be an integer >= 0"
                )
                continue
            _keep_best(best, topic, doc, rel)
    return _judgments(best, problems, name)


def _judgments(best: dict[tuple[str, str], int], problems: Problems, name: str) -> list[Judgment]:
    if problems.has_errors:
        raise InputError(problems)
    if not best:
        raise InputError("no judgments found", name)
    return [Judgment(t, d, r) for (t, d), r in best.items()]


def _json_level(text: str) -> int:
    """JSON integers as json reads them, but one past MAX_RELEVANCE for a longer one: int() of
    4,300 digits or more raises, and the value is refused as out of range anyway."""
    return int(text) if len(text) <= 20 else MAX_RELEVANCE + 1


def _keep_best(best: dict[tuple[str, str], int], topic: str, doc: str, rel: int) -> None:
    best[(topic, doc)] = max(rel, best.get((topic, doc), rel))


def read_stance(path: Path) -> dict[tuple[str, str], str]:
    """(topic, doc) -> stance from a ``topic docid stance`` file."""
    name = Path(path).name
    out: dict[tuple[str, str], str] = {}
    problems = Problems()
    for number, line in enumerate(read_text_file(Path(path), "stance").split("\n"), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3:
            problems.error(name, number, f"expected 3 columns: topic docid stance, found {len(parts)}")
            continue
        out[(parts[0], parts[1])] = parts[2]
    if problems.has_errors:
        raise InputError(problems)
    return out


def benchmark_reference(
    judgments: list[Judgment],
    *,
    benchmark: str,
    cutoffs: list[int],
    official: str,
    stance: dict[tuple[str, str], str] | None = None,
    source: dict | None = None,
) -> Reference:
    """An in-memory reference for a single-domain graded benchmark without a distributed corpus
    (every doc id is accepted). Topic keys are the qrels' topic ids."""
    domain = benchmark
    topic_ids = list(dict.fromkeys(j.key for j in judgments))
    topics = [Topic(t, domain, t, t) for t in topic_ids]
    manifest = {
        "subtrack": benchmark,
        "benchmark": benchmark,
        "relevance": "graded",
        "cutoffs": cutoffs,
        "official": official,
        "unit": "query",
        "domains": [domain],
        "source": source or {},
        "counts": {
            "topics": len(topics),
            "judgments": len(judgments),
            "relevant": sum(1 for j in judgments if j.relevance > 0),
            "topics_without_relevant": len(topic_ids) - len({j.key for j in judgments if j.relevance > 0}),
        },
    }
    return Reference(manifest, topics, judgments, None, None, dict(stance or {}))


def given_qrels_reference(judgments: list[Judgment], source: dict | None = None) -> Reference:
    """An in-memory reference of qrels a caller gives (``reteco.evaluate(run, qrels)``): graded
    relevance, no corpus (every doc id is accepted), no domains and no temporal labels. Its
    benchmark is ``GIVEN_QRELS``, which the table does not hold, so its row is the plain-qrels
    preset (``reteco.subtracks.benchmark``): cutoffs (10,), official nDCG@10."""
    row = benchmark(GIVEN_QRELS)
    return benchmark_reference(judgments, benchmark=row.id, cutoffs=list(row.cutoffs), official=row.official,
                               source=source)
