"""The relevance round (issue 21): pool the participants' unjudged top 10, grade it with the LLM on
0-3, review by hand. The same machinery as the temporal labels: the pool's run reading
(``pool.top_pairs``), the passages (``pool.fetch_passages``), the calls, cache and faults
(``calls.run_asks``, the judge's), the frozen label store (``formats.relevance_labels``, the
store's relevance kind) and the review CSV's rules (``review``).

    reteco relevance-pool --ref REF --submissions DIR --round ROUND --release RELEASE --out pool.jsonl
    reteco label-relevance --round ROUND --pool pool.jsonl [--judge-config judge.yaml]
    reteco label-export --kind relevance --labels ROUND --out review.csv [--pool pool.jsonl]
    reteco label-import --kind relevance --labels ROUND --csv review.csv --reviewer NAME
    reteco leaderboard --ref REF --submissions DIR --out OUT --round ROUND/round.qrels

**Pool** (``pool_round``): every run of a phase's bulk download (the layout ``reteco leaderboard
--submissions`` reads: REF one sub-track's reference and DIR its submissions, or REF a folder of
references and DIR/<sub-track>/ each one's), read as scoring reads it, cut at ``depth`` (10);
the (topic, document) pairs that the official qrels do not judge (at any level) and the round
has not labelled, keyed by the topic's reference key (a 1b step's own key, as the qrels). Each
record (``reteco-relevance-pool/1``) carries the topic's text and the passage::

    {"query": "<domain>/<topic id>", "doc_id": "...", "subtracks": ["2a", "2c"], "query_text": "...",
     "passage": "..." | null, "runs": ["2a/team__run.zip", "2c/team__run.zip"], "best_rank": 3}

A pair that several sub-tracks' runs retrieve (2a and 2c rank the same turns) is one record.

Topic texts come from the reference (Track 1: ``temporal_periods.jsonl``; 2b/2c:
``turns.jsonl``) or, for 2a, from the release's benchmark (``--release``); passages from the
release's ``documents.jsonl`` of the topic's track, or ``--documents``.

**Label** (``label_round``): one call per pair, the frozen prompt ``relevance_prompts/v<N>``
with a strict json_schema reply {"rationale", "relevance": 0..3}. A pair is paid once: a pair
with a label is never asked again, and a reply already in the judge cache is replayed without
an HTTP request (so a run killed midway, run again, pays only for the pairs it lacks). A pair
whose reply is an error or invalid gets no row (reported; the next run asks again, or
``--retry-invalid`` asks again where the stored reply was unusable). Every row records the
model as labeller, the prompt version, the time and the judge provenance (signature, model,
decoding, the server's fingerprints, the request hashes under which the raw replies sit).

**Review** (``export_review`` / ``import_review``, CSV ``reteco-relevance-review/1``): a
stratified sample, ``per_label`` pairs of each label 0..3 drawn with a fixed seed, plus every
disagreement-prone pair: labels at the threshold boundary (1 and 2: a change there changes the
augmented qrels) and pairs of the pool whose answer was invalid (no label: the reviewer gives
one). The reviewer edits ``relevance``; the import appends a human override for every change,
all or nothing, refusing rows exported before a later change (``label_line``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reteco.formats import release as rel
from reteco.formats.reference import TURNS, Reference
from reteco.formats.label_store import LABELS_MANIFEST, utc_now
from reteco.formats.relevance_labels import RelevanceLabels, RelevanceRow, RoundQuery
from reteco.formats.relevance_round import MAX_LABEL
from reteco.formats.temporal_periods import PERIODS_FILE, read_periods
from reteco.formats.topic_ids import topic_key, turn_topic_id
from reteco.judge import JudgeConfig
from reteco.llm.calls import CallStats
from reteco.llm.config import public_url
from reteco.workbench.labels.calls import OK, Answer, Ask, chat_body, run_asks
from reteco.workbench.labels.label import label_signature
from reteco.workbench.labels.pool import PoolResult, fetch_passages, top_pairs
from reteco.workbench.labels.relevance_prompts import (
    CURRENT_VERSION,
    GradeInput,
    RelevancePrompts,
    load_prompts,
)
from reteco.workbench.labels.review import read_review_rows, stale_row
from reteco.problems import InputError, Problems
from reteco.subtracks import RUN, SUBTRACKS

ROUND_POOL_FORMAT = "reteco-relevance-pool/1"
REVIEW_FORMAT = "reteco-relevance-review/1"
DEPTH = 10
#: Labels whose change would move a pair across the augmented qrels' threshold (2): reviewed in full.
BOUNDARY = (1, 2)
#: Pairs of each label in the review's stratified sample (all of them when fewer).
PER_LABEL = 25
SAMPLE_SEED = 2027


# ----------------------------------------------------------------------------------------- pool


def phase_runs(references: list[tuple[str, Path]], submissions: Path, runs_of) -> list[tuple[Reference, list[Path]]]:
    """(reference, run submissions) per sub-track whose submissions hold runs; ``runs_of(source,
    prefix, reference)`` lists the submissions of a folder (``leaderboard.discover_submissions``'
    paths) or of a bulk download (the selection's). With several sub-tracks, a sub-track's are
    ``<sub>/`` or ``<sub>.zip`` (its bulk download)."""
    several = len(references) > 1
    out = []
    for sub, ref_dir in references:
        if RUN not in SUBTRACKS[sub].submission:
            continue
        source = Path(submissions)
        if several:
            source = next((c for c in (source / sub, source / f"{sub}.zip") if c.exists()), None)
            if source is None:
                continue
        reference = Reference.read(ref_dir)
        out.append((reference, runs_of(source, f"{sub}/" if several else "", reference)))
    if not out:
        raise InputError("no sub-track with runs has submissions here", str(submissions))
    return out


def topic_texts(reference: Reference, release: Path | None) -> dict[str, str]:
    """The text the labeller reads for each topic key: Track 1 from ``temporal_periods.jsonl``
    (a 1b step's key gets its query's text), 2b/2c from ``turns.jsonl``, else from the release's
    Track-2 benchmark when ``release`` is given; {} when none is at hand."""
    root = Path(reference.root or ".")
    texts: dict[str, str] = {}
    if (root / PERIODS_FILE).is_file():
        by_query = {key: record.text for key, record in read_periods(root / PERIODS_FILE).items()}
        return {t.key: by_query.get(t.unit, "") for t in reference.topics if by_query.get(t.unit)}
    if (root / TURNS).is_file():
        for _, record in rel.iter_jsonl(root / TURNS):
            if isinstance(record.get("key"), str) and isinstance(record.get("query"), str):
                texts[record["key"]] = record["query"]
        return texts
    if release is not None and (reference.row is not None and reference.row.track == 2):
        folder = Path(release) / rel.TRACK2_DIR
        layout = rel.detect_layout(folder)
        if layout == rel.RELEASE:
            places = [(domain, path) for domain, path in rel.domain_dirs(folder).items()]
        else:
            places = [("", folder)]
        split = str(reference.manifest.get("split") or "")
        for domain, place in places:
            path = rel.find_file(place, "benchmark", split, (".json", ".jsonl"), layout or rel.SAMPLE)
            if path is None:
                continue
            for conversation in rel.read_benchmark(path):
                for turn in conversation.turns:
                    key = topic_key(domain or conversation.task, turn_topic_id(conversation.conversation_id, turn.turn))
                    texts[key] = turn.query
    return texts


def pool_round(
    phase: list[tuple[Reference, list[Path]]],
    labels: RelevanceLabels | None,
    *,
    depth: int = DEPTH,
    release: Path | None = None,
    documents: Iterable[Path] = (),
) -> PoolResult:
    """Pool the top ``depth`` of every run; keep the pairs neither the qrels nor the round judge."""
    if depth < 1:
        raise InputError(f"--depth must be at least 1, got {depth}")
    by_pair: dict[tuple[str, str], dict] = {}
    summary: dict = {"format": ROUND_POOL_FORMAT, "depth": depth, "subtracks": {}}
    for reference, runs in phase:
        judged = set(zip(reference.judgment_columns()["key"].to_pylist(),
                         reference.judgment_columns()["doc_id"].to_pylist()))
        done = set(labels.effective) if labels is not None else set()
        pairs, per_run = top_pairs(reference, runs, depth, judged | done, by_unit=False)
        new = {k: v for k, v in pairs.items() if k not in judged and k not in done}
        domain_of = {t.key: t.domain for t in reference.topics}
        wanted: dict[str, set[str]] = {}
        for query, doc in new:
            wanted.setdefault(domain_of[query], set()).add(doc)
        track_dir = rel.TRACK1_DIR if reference.row is not None and reference.row.track == 1 else rel.TRACK2_DIR
        texts, _ = (fetch_passages(wanted, release=release, documents=documents, track_dir=track_dir)
                    if new and (release or documents) else ({}, []))
        questions = topic_texts(reference, release)
        for (query, doc), entry in sorted(new.items(), key=lambda i: (i[0][0], i[1]["best_rank"], i[0][1])):
            earlier = by_pair.get((query, doc))
            if earlier is not None:  # 2a and 2c rank the same turns: one pair, one call
                earlier["subtracks"].append(reference.subtrack)
                earlier["runs"] += [f"{reference.subtrack}/{run}" for run in entry["runs"]]
                earlier["best_rank"] = min(earlier["best_rank"], entry["best_rank"])
                earlier["passage"] = earlier["passage"] or texts.get((domain_of[query], doc))
                earlier["query_text"] = earlier["query_text"] or questions.get(query)
                continue
            by_pair[(query, doc)] = {
                "query": query, "doc_id": doc, "subtracks": [reference.subtrack],
                "query_text": questions.get(query), "passage": texts.get((domain_of[query], doc)),
                "runs": [f"{reference.subtrack}/{run}" for run in entry["runs"]], "best_rank": entry["best_rank"],
            }
        summary["subtracks"][reference.subtrack] = {
            "runs": per_run,
            "pairs": len(pairs),
            "judged_by_qrels": sum(1 for k in pairs if k in judged),
            "already_labelled": sum(1 for k in pairs if k in done and k not in judged),
            "new": len(new),
        }
    records = list(by_pair.values())
    summary["new"] = len(records)
    summary["passages_missing"] = sum(1 for r in records if r["passage"] is None)
    summary["texts_missing"] = sum(1 for r in records if not r["query_text"])
    return PoolResult(records, summary)


# ----------------------------------------------------------------------------------------- label


@dataclass
class RoundReport:
    pool_pairs: int = 0
    already_labelled: int = 0
    labelled: int = 0
    no_text: int = 0  # no passage or no topic text in the pool record
    faults: list[dict] = field(default_factory=list)  # pairs left unlabelled, with why
    http_requests: int = 0
    usage: dict | None = None  # the server's usage of this run's requests, priced (TokenUsage.as_dict)
    cached_answers: int = 0
    content_hash: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def open_or_create_round(folder: Path) -> RelevanceLabels:
    if (Path(folder) / LABELS_MANIFEST).is_file():
        return RelevanceLabels.read(folder)
    return RelevanceLabels.create(folder, (), "created by label-relevance")


def label_round(
    labels: RelevanceLabels,
    pool: list[dict],
    config: JudgeConfig,
    *,
    prompts: RelevancePrompts | None = None,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
) -> RoundReport:
    """Grade the pool's unlabelled pairs (one call each) and append their rows."""
    prompts = prompts or load_prompts(CURRENT_VERSION)
    report = RoundReport(pool_pairs=len(pool))
    todo: list[GradeInput] = []
    seen: set[tuple[str, str]] = set()
    for record in pool:
        pair = (record["query"], record["doc_id"])
        if pair in seen:
            continue
        seen.add(pair)
        if labels.label_of(*pair) is not None:
            report.already_labelled += 1
            continue
        passage, question = record.get("passage"), record.get("query_text")
        if not isinstance(passage, str) or not isinstance(question, str) or not question.strip():
            report.no_text += 1
            continue
        todo.append(GradeInput(pair[0], question, pair[1], passage))
    if report.no_text and not todo:
        raise InputError(
            f"{report.no_text} pairs of the pool have no passage or topic text; pool again with --release or "
            "--documents",
        )
    labels.add_queries([RoundQuery(d.query, d.question) for d in todo], "label-relevance: topics of the pool")
    asks = [_ask(prompts, config, d) for d in todo]
    stats: list[CallStats] = []
    answers = run_asks(asks, config, cache_dir=cache_dir, retry_invalid=retry_invalid, progress=progress,
                       on_stats=stats.append) if asks else []
    report.http_requests = stats[0].http_requests if stats else 0  # the preflight included
    report.usage = stats[0].usage.as_dict(config.prices()) if stats else None
    signature = label_signature(prompts, config)
    rows = []
    for data, answer in zip(todo, answers):
        report.cached_answers += answer.cached
        if answer.status != OK:
            report.faults.append({"query": data.query, "doc_id": data.doc_id,
                                  "status": answer.status, "problem": answer.rationale})
            continue
        rows.append(RelevanceRow(
            query=data.query, doc_id=data.doc_id, relevance=int(answer.label), source="llm",
            labeller=config.model, labelled_at=utc_now(), prompt_version=prompts.name,
            rationale=answer.rationale, judge=_provenance(config, prompts, signature, answer),
        ))
    report.labelled = labels.append(rows, f"label-relevance: {len(rows)} labels by {config.model} ({prompts.name})")
    report.content_hash = labels.content_hash
    return report


def _ask(prompts: RelevancePrompts, config: JudgeConfig, data: GradeInput) -> Ask:
    body = chat_body(config, prompts.messages(data), prompts.response_format())
    return Ask(key=f"{data.query}\x1f{data.doc_id}\x1frelevance", body=body, parse=prompts.parse,
               reask=prompts.reask_message, cache_version=prompts.version)


def _provenance(config: JudgeConfig, prompts: RelevancePrompts, signature: str, answer: Answer) -> dict:
    return {
        "signature": signature,
        "prompts": {"version": prompts.name, "signature": prompts.signature},
        "model": config.model,
        "temperature": config.temperature,
        "seed": config.seed,
        "max_completion_tokens": config.max_completion_tokens,
        "endpoint": public_url(config.resolved_base_url()),
        "reported_model": answer.reported_model,
        "system_fingerprint": answer.system_fingerprint,
        "request_hashes": answer.request_hashes,
    }


# ----------------------------------------------------------------------------------------- review

COLUMNS = ("query", "doc_id", "relevance", "why_reviewed", "source", "labeller", "labelled_at", "prompt_version",
           "rationale", "label_line", "query_text", "passage", "review_note")


def export_review(
    labels: RelevanceLabels, path: Path, pool: list[dict] | None = None, *, per_label: int = PER_LABEL,
    seed: int = SAMPLE_SEED,
) -> dict:
    """Write the review CSV: a stratified sample of ``per_label`` pairs per label, every pair at the
    threshold boundary (``BOUNDARY``), every pooled pair without a label (its answer failed).
    Returns the rows per reason."""
    pool = pool or []
    by_pair = {(r["query"], r["doc_id"]): r for r in pool}
    chosen: dict[tuple[str, str], str] = {}
    by_label: dict[int, list[tuple[str, str]]] = {level: [] for level in range(MAX_LABEL + 1)}
    for pair, row in sorted(labels.effective.items()):
        by_label[row.relevance].append(pair)
    for level in BOUNDARY:
        for pair in by_label[level]:
            chosen[pair] = f"boundary {BOUNDARY[0]}/{BOUNDARY[1]}"
    generator = random.Random(seed)
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
            query, doc, "" if row is None else str(row.relevance), why,
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
