"""``reteco pool``: the (query, document) pairs of some runs' top 10 that have no frozen label yet.

The organizers pool the participants' runs before freezing the test set's temporal labels:

    reteco pool --ref REF/1a --release RELEASE --out pool.jsonl RUN [RUN ...]

Each run is read as scoring reads it (``apply_rules``: v1.0 ids mapped, unknown ids dropped,
duplicates removed) and cut at ``--depth`` (10, the diagnostics' cutoff). A 1b run's step
rankings pool under their parent query, whose labels judge them. Pairs that already have a
verdict in the label folder (``REF/temporal_labels`` unless ``--labels``) are left out, so
pooling again after labelling finds nothing new.

The pool file (``reteco-temporal-pool/1``), one JSON object per pair, sorted by query, best
rank, doc id::

    {"query": "bitcoin/122291_22", "doc_id": "bitcoin/x.txt", "query_text": "...",
     "periods": [{"period": "p1", "description": "...", "instruction": "...",
                  "start_iso": "2023-04", "end_iso": "2023-05", "granularity": "month"}],
     "passage": "<the document's text, or null when no corpus was given>",
     "runs": ["run_a.txt", "run_b.zip"], "best_rank": 3}

Passage texts come from the release's ``documents.jsonl`` files (``--release``) or from given
corpus files (``--documents``), streamed: only the pooled ids are kept, the corpus is never
loaded whole, and a file is left as soon as every id it could hold was found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from reteco.formats import release as rel
from reteco.formats.reference import Reference
from reteco.formats.submission import open_submission
from reteco.formats.temporal_labels import LABELS_DIR, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, QueryPeriods, read_periods
from reteco.formats.trec_run import read_trec_run
from reteco.problems import InputError, Problems
from reteco.scoring.aggregate import Units
from reteco.scoring.rules import apply_rules

POOL_FORMAT = "reteco-temporal-pool/1"
DEPTH = 10

# The id of a documents.jsonl line, read without decoding the (long) content: inside a JSON
# string every quote is escaped, so an unescaped "id": can only be a key.
_ID_FIELD = re.compile(rb'"(id|doc_id)"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class PoolResult:
    records: list[dict]
    summary: dict = field(default_factory=dict)


def labels_folder(reference: Reference, labels: Path | None) -> Path:
    """The label folder a workflow command works on: ``--labels``, else ``REF/temporal_labels``."""
    if labels is not None:
        return Path(labels)
    if reference.root is None:
        raise InputError("the reference has no folder; give --labels")
    return Path(reference.root) / LABELS_DIR


def query_periods(reference: Reference, labels: TemporalLabels | None) -> dict[str, QueryPeriods]:
    """Query texts and required periods: the label folder's if it exists, else the reference's."""
    if labels is not None:
        return labels.periods
    path = Path(reference.root or ".") / PERIODS_FILE
    if not path.is_file():
        raise InputError(
            f"the reference has no {PERIODS_FILE} (required periods and query texts); prepare it again with this "
            "version of reteco",
            str(reference.root),
        )
    return read_periods(path)


def check_track1(reference: Reference) -> None:
    if reference.row is None or reference.row.track != 1:
        raise InputError(
            f"temporal labels are for sub-tracks 1a and 1b; this reference is sub-track {reference.subtrack}",
            str(reference.root),
        )


def pool_runs(
    reference: Reference,
    runs: Iterable[Path],
    labels: TemporalLabels | None,
    *,
    depth: int = DEPTH,
    release: Path | None = None,
    documents: Iterable[Path] = (),
) -> PoolResult:
    """Pool the top ``depth`` of every run; keep the pairs without a verdict; attach texts."""
    check_track1(reference)
    if depth < 1:
        raise InputError(f"--depth must be at least 1, got {depth}")
    periods = query_periods(reference, labels)
    labelled = set(labels.effective) if labels is not None else set()
    pairs, per_run = top_pairs(reference, runs, depth, labelled)
    units = Units.of(reference)
    new = {k: v for k, v in pairs.items() if k not in labelled}
    domain_of = {k: d for k, d in zip(units.keys, units.domain)}
    wanted: dict[str, set[str]] = {}
    for query, doc in new:
        wanted.setdefault(domain_of[query], set()).add(doc)
    texts, sources = fetch_passages(wanted, release=release, documents=documents) if new and (release or documents) else ({}, [])

    records = []
    unknown_queries = 0
    for (query, doc), entry in sorted(new.items(), key=lambda item: (item[0][0], item[1]["best_rank"], item[0][1])):
        record = periods.get(query)
        unknown_queries += record is None
        records.append(
            {
                "query": query,
                "doc_id": doc,
                "query_text": record.text if record is not None else None,
                "periods": [p.to_json(oracle=False) for p in (record.periods if record is not None else ())],
                "passage": texts.get((domain_of[query], doc)),
                "runs": entry["runs"],
                "best_rank": entry["best_rank"],
            }
        )
    summary = {
        "format": POOL_FORMAT,
        "depth": depth,
        "runs": per_run,
        "pairs": len(pairs),
        "already_labelled": len(pairs) - len(new),
        "new": len(new),
        "queries_with_new_pairs": len({q for q, _ in new}),
        "passages_found": sum(1 for r in records if r["passage"] is not None),
        "passages_missing": sum(1 for r in records if r["passage"] is None) if (release or documents) else None,
        "corpus_files": [str(s) for s in sources],
        "queries_without_periods_record": unknown_queries,
    }
    return PoolResult(records, summary)


def top_pairs(
    reference: Reference, runs: Iterable[Path], depth: int, labelled: set[tuple[str, str]], *, by_unit: bool = True
) -> tuple[dict[tuple[str, str], dict], list[dict]]:
    """The (unit key, doc id) pairs in the top ``depth`` of every run, read as scoring reads it;
    with ``by_unit`` False, (topic key, doc id) pairs (a 1b step's own key, as the qrels key it).

    Returns the pairs, each with the runs that retrieved it and its best rank, and per run its
    display name, its pair count, how many are not in ``labelled`` and the reading's warnings.
    Shared by the temporal pool and the relevance round's pool.
    """
    units = Units.of(reference)
    if by_unit:
        keys, key_of_topic = units.keys, units.unit_of_topic
    else:
        keys, key_of_topic = [t.key for t in reference.topics], np.arange(len(reference.topics))
    pairs: dict[tuple[str, str], dict] = {}
    per_run = []
    for path in runs:
        opened = open_submission(Path(path), subtrack=reference.subtrack)
        name = opened.find("run")
        display = opened.display_name(name)
        problems = Problems()
        ranked = apply_rules(reference, read_trec_run(opened.read_bytes(name), display), problems)
        within = np.flatnonzero(ranked.rows.position < depth)
        unit = key_of_topic[ranked.rows.topic[within]]
        position = ranked.rows.position[within]
        docs = ranked.vocabulary.take(pa.array(ranked.doc_position[within])).to_pylist()
        run_pairs = set()
        for u, p, doc in zip(unit.tolist(), position.tolist(), docs):
            key = (keys[u], doc)
            run_pairs.add(key)
            entry = pairs.setdefault(key, {"runs": [], "best_rank": p + 1})
            if not entry["runs"] or entry["runs"][-1] != display:
                entry["runs"].append(display)
            entry["best_rank"] = min(entry["best_rank"], p + 1)
        per_run.append(
            {"run": display, "pairs": len(run_pairs), "new": sum(1 for k in run_pairs if k not in labelled),
             "warnings": [str(w) for w in problems.warnings()]}
        )
    return pairs, per_run


def write_pool(path: Path, records: list[dict]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def read_pool(path: Path) -> list[dict]:
    """A pool file; InputError (file, line) on a record that lacks what labelling needs."""
    return list(iter_pool(path))


def iter_pool(path: Path) -> Iterator[dict]:
    """``read_pool``'s records one at a time (a relevance round's labelling streams its pool)."""
    for line, record in rel.iter_jsonl(Path(path)):
        for name in ("query", "doc_id"):
            if not isinstance(record.get(name), str) or not record[name]:
                raise InputError(f'"{name}" is missing or not a string', str(path), line)
        if not isinstance(record.get("periods", []), list):
            raise InputError('"periods" must be a list', str(path), line)
        record["_line"] = line
        yield record


def fetch_passages(
    wanted: dict[str, set[str]], *, release: Path | None = None, documents: Iterable[Path] = (),
    track_dir: str = rel.TRACK1_DIR,
) -> tuple[dict[tuple[str, str], str], list[Path]]:
    """Texts of the wanted (domain -> doc ids), streamed from the corpus files; (texts, files read).

    With ``release``: ``<track_dir>/<domain>/documents.jsonl`` of each wanted domain (release
    layout) or ``<track_dir>/documents.jsonl`` (flat sample); ``track_dir`` is ``track1_tempo``
    unless given (the relevance round pools Track 2 too). ``documents``: corpus files whose ids
    are matched for every wanted domain.
    """
    files: list[tuple[Path, set[str] | None]] = []  # (file, the domains it serves; None: all)
    if release is not None:
        folder = Path(release) / track_dir
        layout = rel.detect_layout(folder)
        if layout is None:
            raise InputError(f"no {track_dir}/ release files here", str(release))
        if layout == rel.RELEASE:
            dirs = rel.domain_dirs(folder)
            for domain in sorted(wanted):
                path = dirs.get(domain, folder / domain) / "documents.jsonl"
                if not path.is_file():
                    raise InputError(f"no documents.jsonl for domain {domain!r}", str(path.parent))
                files.append((path, {domain}))
        else:
            files.append((folder / "documents.jsonl", None))
    for path in documents:
        if not Path(path).is_file():
            raise InputError("corpus file not found", str(path))
        files.append((Path(path), None))
    texts: dict[tuple[str, str], str] = {}
    for path, serves in files:
        domains = sorted(wanted) if serves is None else sorted(serves)
        owners: dict[str, list[str]] = {}
        for domain in domains:
            for doc in wanted.get(domain, ()):
                if (domain, doc) not in texts:
                    owners.setdefault(doc, []).append(domain)
        if owners:
            for doc, text in _stream_texts(path, owners):
                for domain in owners[doc]:
                    texts.setdefault((domain, doc), text)
    return texts, [p for p, _ in files]


def _stream_texts(path: Path, owners: dict[str, list[str]]):
    """(doc id, text) of the wanted ids in a documents.jsonl, decoding only their lines."""
    remaining = set(owners)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not remaining:
                return
            match = _ID_FIELD.search(raw)
            if match is not None:
                try:
                    doc_id = json.loads(b'"' + match.group(2) + b'"').strip()
                except (json.JSONDecodeError, UnicodeDecodeError):
                    doc_id = None
                if doc_id is not None and doc_id not in remaining:
                    continue
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.lstrip(b"\xef\xbb\xbf") if number == 1 else raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise InputError("not valid JSON", str(path), number) from None
            if not isinstance(record, dict):
                continue
            doc_id = record.get("id", record.get("doc_id"))
            doc_id = str(doc_id).strip() if isinstance(doc_id, (str, int)) and not isinstance(doc_id, bool) else None
            if doc_id in remaining:
                text = record.get("content", record.get("text"))
                remaining.discard(doc_id)
                yield doc_id, text if isinstance(text, str) else ""
