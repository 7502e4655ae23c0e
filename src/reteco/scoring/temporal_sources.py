"""Where Track 1's temporal labels come from, in one shape (``TemporalSource``) whatever their
origin: the reference's frozen labels (``temporal_labels/``), else the organizers' offline oracle
from ``temporal_periods.jsonl``, else (a reference prepared before temporal data existed) an
oracle derived from its own qrels. The rule that picks one, and what each counts as temporally
relevant and as a required period, is the "Labels." paragraph of ``reteco.scoring.temporal``,
which computes the diagnostics on the source chosen here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reteco.formats.reference import Reference
from reteco.formats.temporal_labels import LABELS_DIR, LABELS_MANIFEST, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, read_periods
from reteco.problems import InputError


@dataclass
class TemporalSource:
    """Temporal labels in one shape, whatever their origin.

    ``periods``: query key -> the required period ids that count; ``relevant``: temporally
    relevant (query key, doc id) pairs; ``covers``: (query key, doc id) -> covered period ids;
    ``labelled``: pairs that have a label (frozen labels), None when every document is labelled
    by rule (oracle); ``step_period``: step key (``<domain>/<step id>``) -> the period id the
    step stands for, when the periods say so.
    """

    kind: str  # "frozen" or "oracle"
    description: str
    periods: dict[str, list[str]]
    relevant: set[tuple[str, str]]
    covers: dict[tuple[str, str], list[str]]
    labelled: set[tuple[str, str]] | None
    info: dict = field(default_factory=dict)
    step_period: dict[str, str] = field(default_factory=dict)  # 1b step key -> the period it stands for


def load_source(reference: Reference) -> TemporalSource:
    """Frozen labels if the reference folder has them, else the offline oracle (see the module doc)."""
    root = reference.root
    if root is not None and (Path(root) / LABELS_DIR / LABELS_MANIFEST).is_file():
        return _frozen_source(reference, TemporalLabels.read(Path(root) / LABELS_DIR))
    if root is not None and (Path(root) / PERIODS_FILE).is_file():
        return _oracle_from_file(Path(root) / PERIODS_FILE)
    return _oracle_from_qrels(reference)


def _frozen_source(reference: Reference, labels: TemporalLabels) -> TemporalSource:
    split = labels.manifest.get("split")
    if split is not None and reference.record.split not in (None, split):
        raise InputError(
            f"the reference's frozen temporal labels are of split {split!r}, the reference of split "
            f"{reference.record.split!r}; the organizers must fix the reference data",
            str(labels.root),
        )
    periods = {q: r.period_ids() for q, r in labels.periods.items()}
    relevant = {pair for pair, row in labels.effective.items() if row.temporally_relevant}
    covers = {pair: list(row.covers) for pair, row in labels.effective.items() if row.covers}
    info = {
        "format": labels.manifest.get("format"),
        "folder": LABELS_DIR,
        "split": split,
        "content_hash": labels.content_hash,
        "files": labels.manifest.get("files"),
        "created_at": labels.manifest.get("created_at"),
        "last_change": (labels.manifest.get("history") or [{}])[-1].get("at"),
        "counts": labels.counts(),
    }
    return TemporalSource(
        "frozen",
        "frozen temporal labels of the reference data (temporal_labels/): temporal relevance per (query, document) "
        "and the required periods each document covers; a document without a label is not temporally relevant",
        periods,
        relevant,
        covers,
        set(labels.effective),
        info,
        _step_periods(labels.periods),
    )


def _oracle_from_file(path: Path) -> TemporalSource:
    records = read_periods(path)
    periods: dict[str, list[str]] = {}
    covers: dict[tuple[str, str], list[str]] = {}
    relevant: set[tuple[str, str]] = set()
    uncounted = 0
    for query, record in records.items():
        relevant.update((query, d) for d in record.oracle_relevant)
        periods[query] = []
        for period in record.periods:
            if not period.oracle_docs:
                uncounted += 1
                continue
            periods[query].append(period.period)
            for doc in period.oracle_docs:
                covers.setdefault((query, doc), []).append(period.period)
    return TemporalSource(
        "oracle",
        "organizers' offline oracle (no frozen labels for this split): the query's gold documents are temporally "
        "relevant; each step of the query is one required period, covered by that step's gold documents",
        periods,
        relevant,
        covers,
        None,
        {"periods_file": PERIODS_FILE, "steps_without_gold_not_counted": uncounted},
        _step_periods(records),
    )


def _step_periods(records: dict) -> dict[str, str]:
    out = {}
    for query, record in records.items():
        domain = query.split("/", 1)[0]
        for period in record.periods:
            if period.step_id:
                out[f"{domain}/{period.step_id}"] = period.period
    return out


def _oracle_from_qrels(reference: Reference) -> TemporalSource:
    unit_of = {t.key: t.unit for t in reference.topics}
    relevant: set[tuple[str, str]] = set()
    by_topic: dict[str, list[str]] = {}
    for j in reference.judgments:
        if j.relevance > 0 and j.key in unit_of:
            relevant.add((unit_of[j.key], j.doc_id))
            by_topic.setdefault(j.key, []).append(j.doc_id)
    periods: dict[str, list[str]] = {}
    covers: dict[tuple[str, str], list[str]] = {}
    step_period: dict[str, str] = {}
    if reference.row is not None and reference.row.step_topics:
        for topic in reference.topics:
            docs = by_topic.get(topic.key)
            if not docs:
                continue
            ids = periods.setdefault(topic.unit, [])
            ids.append(f"p{len(ids) + 1}")
            step_period[topic.key] = ids[-1]
            for doc in docs:
                covers.setdefault((topic.unit, doc), []).append(ids[-1])
        text = "each step is one required period, covered by its qrels"
    else:
        text = "no required period is known (the reference has no temporal_periods.jsonl)"
    return TemporalSource(
        "oracle",
        "organizers' offline oracle derived from the reference's qrels (the reference predates temporal data): "
        f"relevant documents are temporally relevant; {text}",
        periods,
        relevant,
        covers,
        None,
        {"periods_file": None},
        step_period,
    )
