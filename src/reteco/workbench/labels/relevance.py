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
     "context": {"conversation": "..."} | {"time_frame": "..."} | null,
     "passage": "..." | null, "runs": ["2a/team__run.zip", "2c/team__run.zip"], "best_rank": 3}

A pair that several sub-tracks' runs retrieve (2a and 2c rank the same turns) is one record.
``known_relevant`` K adds K pairs per sub-track that the qrels judge relevant, with ``"runs": []``,
``"best_rank": null`` and ``"known_relevant": true`` (the pool file's mark; the labeller is asked
about them as about any pair): the blind validation's recall check.

Topic texts and their context (``topic_records``) come from the reference (Track 1:
``temporal_periods.jsonl``, the context its time frame; 2b/2c: ``turns.jsonl``, the context the
conversation before the turn) or, for 2a, from the release's benchmark (``--release``); passages
from the release's ``documents.jsonl`` of the topic's track, or ``--documents``.

**Label** (``label_round``): one call per pair, the frozen prompt ``relevance_prompts/v<N>``
(version 2: the question with its context, then the passage) with a strict json_schema reply
{"rationale", "relevance": 0..3}; a round is labelled by one version (``check_one_version``). The
pool is streamed from its file and the labels appended as they arrive (every ``FLUSH_EVERY``). A pair is paid once: a pair
with a label is never asked again, and a reply already in the judge cache is replayed without
an HTTP request (so a run killed midway, run again, pays only for the pairs it lacks). A pair
whose reply is an error or invalid gets no row (reported; the next run asks again, or
``--retry-invalid`` asks again where the stored reply was unusable). Every row records the
model as labeller, the prompt version, the time and the judge provenance (signature, model,
decoding, the server's fingerprints, the request hashes under which the raw replies sit).

**Review and validation**: ``relevance_review`` (the post-edit review's CSV, the blind validation
sample).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reteco.formats import release as rel
from reteco.formats.label_store import LABELS_MANIFEST, utc_now
from reteco.formats.reference import TURNS, Reference
from reteco.formats.relevance_labels import RelevanceLabels, RelevanceRow, RoundQuery
from reteco.formats.temporal_periods import PERIODS_FILE, QueryPeriods, read_periods
from reteco.formats.topic_ids import topic_key, turn_topic_id
from reteco.formats.turns import NO_HISTORY
from reteco.judge import JudgeConfig
from reteco.llm.calls import CallStats
from reteco.llm.config import public_url
from reteco.problems import InputError
from reteco.subtracks import RUN, SUBTRACKS
from reteco.workbench.labels.calls import OK, Answer, Ask, chat_body, stream_asks
from reteco.workbench.labels.label import label_signature
from reteco.workbench.labels.pool import PoolResult, fetch_passages, iter_pool, top_pairs
from reteco.workbench.labels.relevance_prompts import CONTEXT_BLOCKS, CURRENT_VERSION, GradeInput, RelevancePrompts, load_prompts

ROUND_POOL_FORMAT = "reteco-relevance-pool/1"
DEPTH = 10
#: The seed of the round's draws: the known-relevant pairs (``relevance-pool --known-relevant``)
#: and the review's samples (``relevance_review``).
SAMPLE_SEED = 2027
#: Labels appended to the round's store at a time while a labelling run streams.
FLUSH_EVERY = 1000


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
    """The text the labeller reads for each topic key (``topic_records``' texts)."""
    return {key: text for key, (text, _) in topic_records(reference, release).items()}


def topic_records(reference: Reference, release: Path | None) -> dict[str, tuple[str, dict[str, str]]]:
    """(text, context) the labeller reads for each topic key: Track 1 from ``temporal_periods.jsonl``
    (a 1b step's key gets its query's text) with ``{"time_frame": ...}`` (``time_frame_text``),
    2b/2c from ``turns.jsonl``, else from the release's Track-2 benchmark when ``release`` is
    given, with ``{"conversation": ...}``, the turns before the turn as the benchmark writes them
    ("" for a first turn; RECOR gives no rewrite of a turn); {} when none is at hand."""
    root = Path(reference.root or ".")
    out: dict[str, tuple[str, dict[str, str]]] = {}
    if (root / PERIODS_FILE).is_file():
        by_query = read_periods(root / PERIODS_FILE)
        for t in reference.topics:
            record = by_query.get(t.unit)
            if record is not None and record.text:
                out[t.key] = (record.text, {"time_frame": time_frame_text(record, t.key, t.domain)})
        return out
    if (root / TURNS).is_file():
        for _, record in rel.iter_jsonl(root / TURNS):
            if isinstance(record.get("key"), str) and isinstance(record.get("query"), str):
                out[record["key"]] = (record["query"], {"conversation": history_text(record.get("history"))})
        return out
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
                    out[key] = (turn.query, {"conversation": history_text(turn.history)})
    return out


def history_text(history) -> str:
    """A turn's conversation before it, as text: RECOR's ``conversation_history`` string ("" for
    its "No previous conversation."), or a list of turns joined by lines."""
    if isinstance(history, list):
        history = "\n".join(str(part) for part in history)
    text = history if isinstance(history, str) else ""
    return "" if text.strip() == NO_HISTORY else text.strip()


def time_frame_text(record: QueryPeriods, key: str, domain: str) -> str:
    """The time a Track-1 topic asks about, from its query's periods record: the key time anchors,
    then each required period (its step and time scope; a 1b step's key its own step's period
    alone). "" when the record has neither anchors nor periods."""
    periods = [p for p in record.periods if p.step_id and topic_key(domain, p.step_id) == key] or list(record.periods)
    lines = []
    if record.key_time_anchors:
        lines.append("Key time anchors: " + "; ".join(record.key_time_anchors))
    for p in periods:
        scope = p.scope_text()
        lines.append(f"{p.period}: {p.description or '(no description)'}" + (f" [{scope}]" if scope else ""))
    return "\n".join(lines)


def pool_round(
    phase: list[tuple[Reference, list[Path]]],
    labels: RelevanceLabels | None,
    *,
    depth: int = DEPTH,
    release: Path | None = None,
    documents: Iterable[Path] = (),
    known_relevant: int = 0,
    seed: int = SAMPLE_SEED,
) -> PoolResult:
    """Pool the top ``depth`` of every run; keep the pairs neither the qrels nor the round judge.
    With ``known_relevant`` K, add per sub-track K pairs the official qrels judge relevant
    (drawn uniformly with ``random.Random(seed)`` among the pooled topics' relevant pairs the
    round has not labelled), marked ``"known_relevant": true`` in the pool only: labelled like
    any other pair, they measure the LLM's recall in the blind validation."""
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
        pooled_topics = {query for query, _ in new}
        relevant = sorted({(j.key, j.doc_id) for j in reference.judgments if j.relevance > 0
                           and j.key in pooled_topics and (j.key, j.doc_id) not in done
                           and (j.key, j.doc_id) not in by_pair})
        known = random.Random(seed).sample(relevant, min(known_relevant, len(relevant))) if known_relevant > 0 else []
        wanted: dict[str, set[str]] = {}
        for query, doc in [*new, *known]:
            wanted.setdefault(domain_of[query], set()).add(doc)
        track_dir = rel.TRACK1_DIR if reference.row is not None and reference.row.track == 1 else rel.TRACK2_DIR
        texts, _ = (fetch_passages(wanted, release=release, documents=documents, track_dir=track_dir)
                    if new and (release or documents) else ({}, []))
        questions = topic_records(reference, release)
        for (query, doc), entry in sorted(new.items(), key=lambda i: (i[0][0], i[1]["best_rank"], i[0][1])):
            earlier = by_pair.get((query, doc))
            if earlier is not None:  # 2a and 2c rank the same turns: one pair, one call
                earlier["subtracks"].append(reference.subtrack)
                earlier["runs"] += [f"{reference.subtrack}/{run}" for run in entry["runs"]]
                earlier["best_rank"] = min(earlier["best_rank"], entry["best_rank"])
                earlier["passage"] = earlier["passage"] or texts.get((domain_of[query], doc))
                if not earlier["query_text"] and query in questions:
                    earlier["query_text"], earlier["context"] = questions[query]
                continue
            text, context = questions.get(query, (None, None))
            by_pair[(query, doc)] = {
                "query": query, "doc_id": doc, "subtracks": [reference.subtrack],
                "query_text": text, "context": context, "passage": texts.get((domain_of[query], doc)),
                "runs": [f"{reference.subtrack}/{run}" for run in entry["runs"]], "best_rank": entry["best_rank"],
            }
        for query, doc in sorted(known):
            text, context = questions.get(query, (None, None))
            by_pair[(query, doc)] = {
                "query": query, "doc_id": doc, "subtracks": [reference.subtrack], "query_text": text,
                "context": context, "passage": texts.get((domain_of[query], doc)), "runs": [], "best_rank": None,
                "known_relevant": True,
            }
        summary["subtracks"][reference.subtrack] = {
            "runs": per_run,
            "pairs": len(pairs),
            "judged_by_qrels": sum(1 for k in pairs if k in judged),
            "already_labelled": sum(1 for k in pairs if k in done and k not in judged),
            "new": len(new),
            "known_relevant": len(known),
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
    no_context: int = 0  # labelled without a context block: the pool record had none (an older pool)
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
    pool: Sequence[dict] | Path,
    config: JudgeConfig,
    *,
    prompts: RelevancePrompts | None = None,
    cache_dir: Path | None = None,
    retry_invalid: bool = False,
    progress: bool = True,
    flush_every: int = FLUSH_EVERY,
) -> RoundReport:
    """Grade the pool's unlabelled pairs (one call each) and append their rows as they arrive.

    ``pool`` is the pool's records or its file (``relevance-pool``'s JSONL, read twice, never
    held: a first pass records the topics, a second streams the requests). The answers go to the
    store every ``flush_every`` labels (and at the end), so memory holds the requests in flight
    and the rows not yet written, whatever the pool's size; a run killed midway keeps what was
    written, and its next run replays the cache for what was answered after."""
    prompts = prompts or load_prompts(CURRENT_VERSION)
    check_one_version(labels, prompts)
    report = RoundReport()
    topics: dict[str, RoundQuery] = {}
    todo = 0
    for data in _pending(labels, pool, report):
        todo += 1
        topics.setdefault(data.query, RoundQuery(data.query, data.question, _context(prompts, data)))
    if report.no_text and not todo:
        raise InputError(
            f"{report.no_text} pairs of the pool have no passage or topic text; pool again with --release or "
            "--documents",
        )
    labels.add_queries(topics.values(), "label-relevance: topics of the pool")
    del topics
    signature = label_signature(prompts, config)
    stats: list[CallStats] = []
    rows: list[RelevanceRow] = []

    def flush() -> None:
        report.labelled += labels.append(
            rows, f"label-relevance: {len(rows)} labels by {config.model} ({prompts.name})")
        rows.clear()

    def answered(data: GradeInput, answer: Answer) -> None:
        report.cached_answers += answer.cached
        if answer.status != OK:
            report.faults.append({"query": data.query, "doc_id": data.doc_id,
                                  "status": answer.status, "problem": answer.rationale})
            return
        rows.append(RelevanceRow(
            query=data.query, doc_id=data.doc_id, relevance=int(answer.label), source="llm",
            labeller=config.model, labelled_at=utc_now(), prompt_version=prompts.name,
            rationale=answer.rationale, judge=_provenance(config, prompts, signature, answer, data),
        ))
        if len(rows) >= flush_every:
            flush()

    if todo:
        check_pool = RoundReport()  # the second pass counts again: its figures are the first's
        try:
            stream_asks(((d, _ask(prompts, config, d)) for d in _pending(labels, pool, check_pool)), config, answered,
                        total=todo, cache_dir=cache_dir, retry_invalid=retry_invalid, progress=progress,
                        on_stats=stats.append)
        finally:
            flush()  # what was answered is kept, even when the run stops
    report.http_requests = stats[0].http_requests if stats else 0  # the preflight included
    report.usage = stats[0].usage.as_dict(config.prices()) if stats else None
    report.content_hash = labels.content_hash
    return report


def check_one_version(labels: RelevanceLabels, prompts: RelevancePrompts) -> None:
    """A round is labelled by one prompt version: another version's labels make another round
    (another signature, its pairs asked again), in a folder of its own."""
    other = sorted({r.prompt_version for r in labels.effective.values()
                    if r.source == "llm" and r.prompt_version != prompts.name})
    if other:
        raise InputError(
            f"the round holds labels of {', '.join(other)}; {prompts.name} labels a new round: give label-relevance "
            "a new --round folder (its pairs are asked again, once)", str(labels.root))


def read_pool_records(pool: Sequence[dict] | Path) -> Iterable[dict]:
    """The pool's records from a list, or streamed from its JSONL file."""
    if isinstance(pool, (str, Path)):
        return iter_pool(Path(pool))
    return pool


def _pending(labels: RelevanceLabels, pool: Sequence[dict] | Path, report: RoundReport):
    """The pool's pairs to grade, once each, in the pool's order; counts the others in ``report``."""
    seen: set[tuple[str, str]] = set()
    for record in read_pool_records(pool):
        pair = (record["query"], record["doc_id"])
        if pair in seen:
            continue
        seen.add(pair)
        report.pool_pairs += 1
        if labels.label_of(*pair) is not None:
            report.already_labelled += 1
            continue
        passage, question = record.get("passage"), record.get("query_text")
        if not isinstance(passage, str) or not isinstance(question, str) or not question.strip():
            report.no_text += 1
            continue
        context = record.get("context") or {}
        report.no_context += not context
        recorded = labels.queries.get(pair[0])
        if recorded is not None and recorded.context is not None:
            context = recorded.context  # a topic keeps the text and context it was first shown with
            question = recorded.text
        yield GradeInput(pair[0], question, pair[1], passage,
                         conversation=context.get("conversation"), time_frame=context.get("time_frame"))


def _context(prompts: RelevancePrompts, data: GradeInput) -> dict[str, str] | None:
    """The context a topic is shown with under ``prompts`` (None when the version shows none)."""
    shown = {name: getattr(data, name) for name in prompts.shown(data) if name in CONTEXT_BLOCKS}
    return shown or None


def _ask(prompts: RelevancePrompts, config: JudgeConfig, data: GradeInput) -> Ask:
    body = chat_body(config, prompts.messages(data), prompts.response_format())
    return Ask(key=f"{data.query}\x1f{data.doc_id}\x1frelevance", body=body, parse=prompts.parse,
               reask=prompts.reask_message, cache_version=prompts.version)


def _provenance(config: JudgeConfig, prompts: RelevancePrompts, signature: str, answer: Answer,
                data: GradeInput) -> dict:
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
        "shown": prompts.shown(data),
    }
