"""FactIR's own files -> TREC qrels and a stance file that ``reteco score --benchmark factir`` reads.

FactIR (Venktesh et al. 2025, arXiv:2502.06006) ships ``evidence.csv`` (one judged
claim-snippet pair per row: claim, evidenceUrl, snippet, relevance 0/1, labelDescription
Supports/Refutes) and ``qrel_processed`` (pytrec_eval JSON keyed per *row*: qids "1".."1412",
one judged doc each, in the row order of evidence.csv; doc ids index FactIR's corpus).

Two groupings, and every output says which it used:

- ``claim`` (default): one topic per distinct claim text, ids ``claim_001``... in order of first
  appearance; repeated (claim, doc) pairs collapse, keeping the highest relevance. This is the
  evaluation the benchmark describes (100 claims).
- ``row``: FactIR's own code's topics, one per row with qid "1".."1412". 938 rows have no
  relevant document, which caps any system's mean nDCG near 0.34: use it only to reproduce
  figures computed that way.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from reteco.formats.reference import Judgment
from reteco.formats.text_file import read_text_file
from reteco.problems import InputError, printable

GROUPINGS = ("claim", "row")
EVIDENCE_COLUMNS = ("claim", "relevance", "labelDescription")


def _is_level(value) -> bool:
    """A relevance level as FactIR writes it: an integer (or its decimal text) of a few digits."""
    text = str(value).strip()
    return not isinstance(value, bool) and 0 < len(text) <= 6 and text.lstrip("-").isdigit() and text.isascii()


def convert_factir(evidence_csv: Path, qrels_json: Path, grouping: str = "claim") -> tuple[list[Judgment], dict, list[tuple[str, str]]]:
    """Judgments, stance labels {(topic, doc): stance} and topics [(topic id, claim text)]."""
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping must be one of {GROUPINGS}")
    rows = list(csv.DictReader(io.StringIO(read_text_file(evidence_csv, "FactIR evidence"))))
    try:
        per_row = json.loads(read_text_file(qrels_json, "FactIR qrels"))
    except ValueError as exc:  # json's errors, and Python's refusal of over-long integers
        raise InputError(f"not valid JSON ({printable(str(exc), 200)}); give FactIR's qrel_processed file", str(qrels_json)) from None
    if not isinstance(per_row, dict):
        raise InputError("not a JSON object of per-row qids; give FactIR's qrel_processed file", str(qrels_json))
    missing = [c for c in EVIDENCE_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise InputError(f"no column {', '.join(missing)}; give FactIR's evidence.csv", str(evidence_csv), 1)
    if len(per_row) != len(rows):
        raise InputError(
            f"{len(per_row)} qids in {Path(qrels_json).name} but {len(rows)} rows in {Path(evidence_csv).name}: "
            "they must be FactIR's matching files",
            str(qrels_json),
        )
    judgments: dict[tuple[str, str], int] = {}
    stance: dict[tuple[str, str], str] = {}
    claim_ids: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        qid = str(number)
        docs = per_row.get(qid)
        if not isinstance(docs, dict) or len(docs) != 1:
            raise InputError(f"qid '{qid}' must judge exactly one document", str(qrels_json))
        (doc, rel), = docs.items()
        if not _is_level(rel) or not _is_level(row["relevance"]):
            raise InputError("relevance must be a small integer", str(evidence_csv), number + 1)
        if int(rel) != int(row["relevance"]):
            raise InputError(f"row {number}: relevance differs between the two files", str(evidence_csv), number + 1)
        if grouping == "row":
            topic = qid
        else:
            topic = claim_ids.setdefault(row["claim"], f"claim_{len(claim_ids) + 1:03d}")
        judgments[(topic, str(doc))] = max(int(rel), judgments.get((topic, str(doc)), 0))
        stance[(topic, str(doc))] = row["labelDescription"].strip()
    topics = (
        [(str(i), r["claim"]) for i, r in enumerate(rows, start=1)]
        if grouping == "row"
        else [(cid, claim) for claim, cid in claim_ids.items()]
    )
    return [Judgment(t, d, r) for (t, d), r in judgments.items()], stance, topics


def write_factir(out: Path, judgments: list[Judgment], stance: dict, topics: list[tuple[str, str]]) -> None:
    """Write ``qrels.txt``, ``stance.tsv`` and ``topics.tsv`` (topic id, claim text)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "qrels.txt", "w", encoding="utf-8") as handle:
        for j in judgments:
            handle.write(f"{j.key}\t0\t{j.doc_id}\t{j.relevance}\n")
    with open(out / "stance.tsv", "w", encoding="utf-8") as handle:
        for (topic, doc), label in stance.items():
            handle.write(f"{topic}\t{doc}\t{label}\n")
    with open(out / "topics.tsv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(["topic", "claim"])
        writer.writerows(topics)
