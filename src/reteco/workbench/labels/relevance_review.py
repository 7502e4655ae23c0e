"""The relevance round's human side: the post-edit review and the blind validation sample.

**Post-edit review** (``export_review`` / ``import_review``, CSV ``reteco-relevance-review/1``):
the reviewer sees the LLM's label and rationale and corrects it (every row says so in
``review_kind``: TREC 2024 RAG found that such post-editing does not raise agreement with fully
manual judging, so it corrects labels; it does not validate them). Its rows: a uniform sample of
``boundary`` pairs labelled 1 or 2 (a change there moves a pair across the augmented qrels'
threshold; the organizers choose the size, default ``BOUNDARY_SAMPLE``), a stratified sample of
``per_label`` pairs of each label 0..3, and the pooled pairs whose answer failed (no label: the
reviewer gives one), all drawn with a fixed seed. The import appends a human override for every
change, all or nothing, refusing rows exported before a later change (``label_line``).

**Blind validation** (``export_validation`` / ``import_validation``, ``reteco label-export
--kind relevance --validation N`` and ``label-import --kind relevance --validation``): a uniform
random sample of ``N`` of the round's LLM-labelled pairs (``random.Random(seed)``, the seed and
the pairs recorded), with the round's known-relevant pairs (``relevance-pool --known-relevant``:
pairs the official qrels judge relevant, labelled by the LLM like any other) mixed in and the
rows shuffled, written for reviewers as a sheet that holds the question, its context and the
passage, and never the LLM's label, its rationale or whether a pair is known (``item`` is an
opaque number). The key (``ROUND/validation/key.json``: seed, size, the round's content hash,
item -> pair and whether it is known) stays with the organizers. The import writes the
reviewers' labels to their own file, ``ROUND/validation/human.jsonl`` (one row per item and
reviewer), beside the round's labels and never over them: the round's qrels are unchanged. The
figures (LLM-human weighted kappa on 0-3 and at the threshold, the LLM's recall on the known
pairs, Kendall's tau and tau_AP of the systems' rankings) are
``reteco.workbench.leaderboard.round_validation``'s.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from reteco.formats.jsonl_records import atomic_write, dumps, iter_jsonl
from reteco.formats.label_store import utc_now
from reteco.formats.relevance_labels import RelevanceLabels, RelevanceRow
from reteco.formats.relevance_round import MAX_LABEL
from reteco.problems import InputError, Problems
from reteco.workbench.labels.relevance import SAMPLE_SEED, read_pool_records
from reteco.workbench.labels.review import read_review_rows, stale_row

REVIEW_FORMAT = "reteco-relevance-review/1"
VALIDATION_FORMAT = "reteco-relevance-validation/1"
#: Labels whose change would move a pair across the augmented qrels' threshold (2).
BOUNDARY = (1, 2)
#: Pairs at the boundary in the post-edit review by default (all of them when fewer).
BOUNDARY_SAMPLE = 200
#: Pairs of each label in the review's stratified sample (all of them when fewer).
PER_LABEL = 25
VALIDATION_FOLDER = "validation"
VALIDATION_KEY = "key.json"
VALIDATION_HUMAN = "human.jsonl"
VALIDATION_COLUMNS = ("item", "conversation", "time_frame", "query_text", "passage", "relevance", "review_note")


COLUMNS = ("query", "doc_id", "relevance", "why_reviewed", "review_kind", "source", "labeller", "labelled_at",
           "prompt_version", "rationale", "label_line", "query_text", "passage", "review_note")
#: What the post-edit review is, written in its every row: the reviewer sees the LLM's label.
POST_EDIT = "post-edit (the LLM's label and rationale shown)"


def export_review(
    labels: RelevanceLabels, path: Path, pool: list[dict] | None = None, *, per_label: int = PER_LABEL,
    boundary: int | None = BOUNDARY_SAMPLE, seed: int = SAMPLE_SEED,
) -> dict:
    """Write the post-edit review CSV: a uniform sample of ``boundary`` pairs labelled at the
    threshold boundary (``BOUNDARY``; all of them when fewer, or ``boundary`` None), a stratified
    sample of ``per_label`` pairs per label, every pooled pair without a label (its answer
    failed). Returns the rows per reason."""
    pool = pool or []
    by_pair = {(r["query"], r["doc_id"]): r for r in pool}
    chosen: dict[tuple[str, str], str] = {}
    by_label: dict[int, list[tuple[str, str]]] = {level: [] for level in range(MAX_LABEL + 1)}
    for pair, row in sorted(labels.effective.items()):
        by_label[row.relevance].append(pair)
    generator = random.Random(seed)
    at_boundary = [pair for level in BOUNDARY for pair in by_label[level]]
    if boundary is not None and boundary < len(at_boundary):
        at_boundary = generator.sample(at_boundary, max(boundary, 0))
    for pair in at_boundary:
        chosen[pair] = f"boundary {BOUNDARY[0]}/{BOUNDARY[1]}"
    for level, pairs in by_label.items():
        for pair in sorted(generator.sample(pairs, min(per_label, len(pairs)))):
            chosen.setdefault(pair, f"sample of label {level}")
    for pair in sorted(by_pair):
        if pair not in labels.effective and pair[0] in labels.queries:
            chosen[pair] = "no label (the LLM's answer failed)"
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    counts: dict[str, int] = {}
    for (query, doc), why in sorted(chosen.items()):
        row = labels.label_of(query, doc)
        record = by_pair.get((query, doc), {})
        counts[why] = counts.get(why, 0) + 1
        writer.writerow([
            query, doc, "" if row is None else str(row.relevance), why, POST_EDIT,
            "" if row is None else row.source, "" if row is None else row.labeller,
            "" if row is None else row.labelled_at, "" if row is None else (row.prompt_version or ""),
            "" if row is None else row.rationale, "" if row is None else str(row.line),
            labels.queries[query].text, record.get("passage") or "", "",
        ])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(buffer.getvalue(), encoding="utf-8", newline="")
    return counts


def import_review(labels: RelevanceLabels, path: Path, reviewer: str) -> dict:
    """Append a human override for every changed label of a reviewed CSV (all or nothing)."""
    problems = Problems()
    new_rows: list[RelevanceRow] = []
    counts = {"rows": 0, "unchanged": 0, "overridden": 0, "added": 0}
    now = utc_now()
    for line, record, query, doc in read_review_rows(path, reviewer, ("relevance",), problems):
        counts["rows"] += 1
        if query is None:
            continue
        where = (str(path), line)
        if query not in labels.queries:
            problems.error(*where, "the topic is not in the round's queries.jsonl")
            continue
        current = labels.label_of(query, doc)
        if stale_row(current, record, where, problems):
            continue
        text = (record.get("relevance") or "").strip()
        if text == "" and current is None:
            counts["unchanged"] += 1  # a pair without a label that the reviewer left blank
            continue
        if text not in {str(level) for level in range(MAX_LABEL + 1)}:
            problems.error(*where, f"relevance must be one of 0 to {MAX_LABEL}")
            continue
        if current is not None and current.relevance == int(text):
            counts["unchanged"] += 1
            continue
        new_rows.append(RelevanceRow(
            query=query, doc_id=doc, relevance=int(text), source="human", labeller=reviewer.strip(),
            labelled_at=now, prompt_version=None, rationale=(record.get("review_note") or "").strip(),
            overrides_line=current.line if current is not None else None,
        ))
        counts["overridden" if current is not None else "added"] += 1
    if problems.has_errors:
        raise InputError(problems)
    labels.append(new_rows, f"label-import of {Path(path).name} by {reviewer.strip()}")
    return counts


# ----------------------------------------------------------------------------------------- blind validation


def llm_labels(labels: RelevanceLabels) -> dict[tuple[str, str], int]:
    """Each pair's LLM label (its LLM row; a later human override does not change it)."""
    return {(r.query, r.doc_id): r.relevance for r in labels.rows if r.source == "llm"}


def export_validation(
    labels: RelevanceLabels, pool: Sequence[dict] | Path, path: Path, size: int, *, seed: int = SAMPLE_SEED,
) -> dict:
    """Write the blind validation sheet to ``path`` and its key to ``ROUND/validation/key.json``
    (module docstring); returns the counts. Refuses a round that has a validation already (one
    sample per round: drawing again until the figures please is what the seed prevents)."""
    if size < 0:
        raise InputError(f"--validation must be 0 or more, got {size}", "command line")
    key_path = labels.root / VALIDATION_FOLDER / VALIDATION_KEY
    if key_path.exists():
        raise InputError("the round has a validation sample already (its key is here); one sample per round",
                         str(key_path))
    by_llm = llm_labels(labels)
    records: dict[tuple[str, str], dict] = {}
    known: set[tuple[str, str]] = set()
    for record in read_pool_records(pool):
        pair = (record["query"], record["doc_id"])
        if pair in by_llm and isinstance(record.get("passage"), str):
            records[pair] = {"passage": record["passage"], "context": record.get("context") or {},
                             "query_text": record.get("query_text") or ""}
            if record.get("known_relevant") is True:
                known.add(pair)
    frame = sorted(pair for pair in records if pair not in known)
    if not frame and not known:
        raise InputError("no pair of the pool has an LLM label in the round: label it first, and give the pool "
                         "that was labelled", str(labels.root))
    generator = random.Random(seed)
    sample = sorted(generator.sample(frame, min(size, len(frame))))
    items = [(pair, False) for pair in sample] + [(pair, True) for pair in sorted(known)]
    generator.shuffle(items)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(VALIDATION_COLUMNS)
    for number, (pair, _) in enumerate(items, 1):
        record = records[pair]
        topic = labels.queries.get(pair[0])
        context = (topic.context if topic is not None and topic.context is not None else record["context"])
        question = topic.text if topic is not None else record["query_text"]
        writer.writerow([str(number), context.get("conversation", ""), context.get("time_frame", ""), question,
                         record["passage"], "", ""])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(buffer.getvalue(), encoding="utf-8", newline="")
    key = {
        "format": VALIDATION_FORMAT, "seed": seed, "sample_size": len(sample), "asked_size": size,
        "sampling_frame": len(frame), "known_relevant": len(known), "round_content_hash": labels.content_hash,
        "created_at": utc_now(), "sheet": Path(path).name,
        "items": [{"item": n, "query": pair[0], "doc_id": pair[1], "known_relevant": is_known}
                  for n, (pair, is_known) in enumerate(items, 1)],
    }
    key_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(key_path, json.dumps(key, indent=2, sort_keys=True) + "\n")
    return {"items": len(items), "sample": len(sample), "known_relevant": len(known), "sampling_frame": len(frame)}


def read_validation(root: Path) -> tuple[dict, list[dict]] | None:
    """A round's validation: its key and the reviewers' rows (``human.jsonl``); None when the
    round has no validation sample."""
    folder = Path(root) / VALIDATION_FOLDER
    key_path = folder / VALIDATION_KEY
    if not key_path.is_file():
        return None
    try:
        key = json.loads(key_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InputError("not valid JSON", str(key_path)) from None
    if not isinstance(key, dict) or key.get("format") != VALIDATION_FORMAT or not isinstance(key.get("items"), list):
        raise InputError(f"not a validation key of format {VALIDATION_FORMAT!r}", str(key_path))
    human_path = folder / VALIDATION_HUMAN
    rows = [record for _, record in iter_jsonl(human_path)] if human_path.is_file() else []
    return key, rows


def import_validation(labels: RelevanceLabels, path: Path, reviewer: str) -> dict:
    """Record a reviewer's labels of the validation sheet in ``ROUND/validation/human.jsonl``
    (all or nothing; a blank ``relevance`` is an item not rated). The round's labels are not
    touched."""
    found = read_validation(labels.root)
    if found is None:
        raise InputError("the round has no validation sample: export one with `reteco label-export --kind relevance "
                         "--validation N`", str(labels.root))
    key, recorded = found
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise InputError("--reviewer must name the person who labelled the sample", str(path))
    items = {entry["item"]: entry for entry in key["items"]}
    done = {row["item"] for row in recorded if row.get("reviewer") == reviewer}
    problems = Problems()
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (UnicodeDecodeError, OSError):
        raise InputError("cannot be read as UTF-8 text", str(path)) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not {"item", "relevance"} <= set(reader.fieldnames or []):
        raise InputError("missing column item or relevance: not a validation sheet", str(path))
    new: list[dict] = []
    seen: set[int] = set()
    counts = {"rows": 0, "rated": 0, "blank": 0}
    now = utc_now()
    for line, record in enumerate(reader, 2):
        counts["rows"] += 1
        item_text = (record.get("item") or "").strip()
        item = int(item_text) if item_text.isdigit() else None
        if item not in items or item in seen:
            problems.error(str(path), line, "item is not one of the sheet's, or repeats")
            continue
        seen.add(item)
        value = (record.get("relevance") or "").strip()
        if value == "":
            counts["blank"] += 1
            continue
        if value not in {str(level) for level in range(MAX_LABEL + 1)}:
            problems.error(str(path), line, f"relevance must be one of 0 to {MAX_LABEL}, or blank")
            continue
        if item in done:
            problems.error(str(path), line, f"{reviewer} has labelled this item already")
            continue
        entry = items[item]
        new.append({"item": item, "query": entry["query"], "doc_id": entry["doc_id"], "relevance": int(value),
                    "reviewer": reviewer, "labelled_at": now, "note": (record.get("review_note") or "").strip()})
        counts["rated"] += 1
    if problems.has_errors:
        raise InputError(problems)
    human_path = labels.root / VALIDATION_FOLDER / VALIDATION_HUMAN
    atomic_write(human_path, "".join(dumps(row) + "\n" for row in [*recorded, *new]))
    return counts


def human_labels(rows: Iterable[dict]) -> dict[int, int]:
    """Each validation item's human label: one reviewer's, or the median of several rounded half up."""
    by_item: dict[int, list[int]] = {}
    for row in rows:
        by_item.setdefault(int(row["item"]), []).append(int(row["relevance"]))
    out = {}
    for item, values in by_item.items():
        values.sort()
        middle = len(values) // 2
        median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
        out[item] = int(median + 0.5)
    return out
