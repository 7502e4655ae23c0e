"""The organizers' labelling commands, for both kinds of label of the label store: the temporal
labels (``pool``, ``label-temporal``) and the relevance round (``relevance-pool``,
``label-relevance``), reviewed through ``label-export`` / ``label-import`` (``--kind temporal``,
the default, or ``--kind relevance``). The workflows are ``reteco.workbench.labels``
and its ``relevance`` module.

``reteco.commands`` registers them with ``add_pool_parser(subparsers)`` and friends.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.formats.reference import Reference
from reteco.formats.relevance_labels import RelevanceLabels
from reteco.formats.temporal_labels import LABELS_MANIFEST, TemporalLabels
from reteco.judge import JudgeCacheError, load_judge_config
from reteco.llm.usage import this_run_line
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, InputError
from reteco.workbench.labels.calls import NotAvailable
from reteco.workbench.labels.label import label_pool, open_or_create_labels
from reteco.workbench.labels.pool import check_track1, labels_folder, pool_runs, read_pool, write_pool
from reteco.workbench.labels.relevance import label_round, open_or_create_round, phase_runs, pool_round
from reteco.workbench.labels.relevance_review import (
    BOUNDARY_SAMPLE,
    PER_LABEL,
    SAMPLE_SEED,
    export_review,
    export_validation,
    import_review,
    import_validation,
)
from reteco.workbench.labels.review import export_csv, import_csv
from reteco.workbench.leaderboard import standings as lb


def existing_labels(reference: Reference, labels: Path | None) -> TemporalLabels | None:
    folder = labels_folder(reference, labels)
    return TemporalLabels.read(folder) if (folder / LABELS_MANIFEST).is_file() else None


def add_pool_parser(subparsers):
    p = subparsers.add_parser(
        "pool",
        help="list the (query, document) pairs of some runs' top 10 that have no frozen temporal label yet",
        description="Pool the top-10 (query, document) pairs of the given runs that have no temporal label in the "
        "label folder, with the query text, its required periods and (with --release or --documents) the passage "
        "text needed to judge them. 1b step rankings pool under their parent query.",
    )
    p.add_argument("--ref", type=Path, required=True, help="reference folder of sub-track 1a or 1b")
    p.add_argument("--labels", type=Path, help="temporal label folder (default: REF/temporal_labels)")
    p.add_argument("--release", type=Path, help="release folder: passage texts from track1_tempo/<domain>/documents.jsonl")
    p.add_argument("--documents", type=Path, action="append", default=[], help="a documents.jsonl to take texts from (repeatable)")
    p.add_argument("--depth", type=int, default=10, help="pool depth (default 10, the diagnostics' cutoff)")
    p.add_argument("--out", type=Path, required=True, help="pool file to write (JSONL)")
    p.add_argument("runs", type=Path, nargs="+", help="runs: files, folders or zips, as submitted")
    p.set_defaults(func=cmd_pool)
    return p


def cmd_pool(args) -> int:
    reference = Reference.read(args.ref)
    check_track1(reference)
    labels = existing_labels(reference, args.labels)
    result = pool_runs(
        reference, args.runs, labels, depth=args.depth, release=args.release, documents=args.documents
    )
    write_pool(args.out, result.records)
    s = result.summary
    for run in s["runs"]:
        print(f"{run['run']}: {run['pairs']} pairs in the top {s['depth']}, {run['new']} without a label")
        for warning in run["warnings"]:
            print(f"  {warning}", file=sys.stderr)
    text = (
        f"{s['pairs']} distinct pairs, {s['already_labelled']} already labelled, {s['new']} new "
        f"({s['queries_with_new_pairs']} queries) -> {args.out}"
    )
    if s["passages_missing"] is not None:
        text += f"; passages found for {s['passages_found']}, missing for {s['passages_missing']}"
    else:
        text += "; no passage texts (give --release or --documents to label the pool)"
    print(text)
    return 0


def add_label_export_parser(subparsers):
    p = subparsers.add_parser(
        "label-export", help="write the frozen temporal labels as a CSV file for human review"
    )
    p.add_argument("--ref", type=Path, help="reference folder (its temporal_labels/ is exported)")
    p.add_argument("--labels", type=Path, help="temporal label folder (instead of --ref)")
    p.add_argument("--pool", type=Path, help="a pool file: its passage texts go into the CSV")
    p.add_argument("--out", type=Path, required=True, help="CSV file to write")
    _add_kind_option(p)
    p.add_argument("--per-label", type=int, default=None,
                   help=f"relevance: pairs of each label in the stratified sample (default {PER_LABEL})")
    p.add_argument("--boundary", type=int, default=None,
                   help=f"relevance: pairs labelled 1 or 2 in the post-edit review, a uniform sample (default "
                   f"{BOUNDARY_SAMPLE}; all of them when fewer)")
    p.add_argument("--validation", type=int, default=None, metavar="N",
                   help="relevance: write the blind validation sheet instead (a uniform sample of N labelled pairs "
                   "and the pool's known-relevant pairs, without the LLM's labels; needs --pool)")
    p.add_argument("--seed", type=int, default=SAMPLE_SEED, help=f"relevance: the samples' seed (default {SAMPLE_SEED})")
    p.set_defaults(func=cmd_label_export)
    return p


def cmd_label_export(args) -> int:
    if args.kind == RELEVANCE_KIND:
        return _round_export(args)
    labels = TemporalLabels.read(_label_root(args))
    passages = {}
    if args.pool:
        for record in read_pool(args.pool):
            if isinstance(record.get("passage"), str):
                passages[(record["query"], record["doc_id"])] = record["passage"]
    rows = export_csv(labels, args.out, passages)
    print(f"{rows} labelled pairs -> {args.out} (labels {labels.content_hash[:16]})")
    return 0


def add_label_import_parser(subparsers):
    p = subparsers.add_parser(
        "label-import",
        help="record a reviewed CSV: a human override for every changed temporal label",
    )
    p.add_argument("--ref", type=Path, help="reference folder (its temporal_labels/ is updated)")
    p.add_argument("--labels", type=Path, help="temporal label folder (instead of --ref)")
    p.add_argument("--csv", type=Path, required=True, help="the reviewed CSV (from label-export)")
    p.add_argument("--reviewer", required=True, help="who reviewed: recorded in every override")
    p.add_argument("--validation", action="store_true",
                   help="relevance: the CSV is the blind validation sheet; its labels go to ROUND/validation/human.jsonl")
    _add_kind_option(p)
    p.set_defaults(func=cmd_label_import)
    return p


def cmd_label_import(args) -> int:
    if args.kind == RELEVANCE_KIND:
        return _round_import(args)
    labels = TemporalLabels.read(_label_root(args))
    return _import_summary(import_csv(labels, args.csv, args.reviewer), labels, "verdicts", "labels")


def _label_root(args) -> Path:
    if args.labels:
        return Path(args.labels)
    if args.ref:
        return labels_folder(Reference.read(args.ref), None)
    raise InputError("give --ref REF/<1a or 1b> or --labels DIR", "command line")


def add_label_temporal_parser(subparsers):
    p = subparsers.add_parser(
        "label-temporal",
        help="judge a pool's unlabelled pairs with the LLM and append the verdicts to the frozen temporal labels",
        description="Ask the LLM, for every pair of the pool without a temporal label, whether the passage is "
        "temporally relevant and which required periods it covers; append the verdicts, with provenance, to the "
        "label folder. Labelled pairs are never asked again.",
    )
    p.add_argument("--ref", type=Path, required=True, help="reference folder of sub-track 1a or 1b")
    p.add_argument("--pool", type=Path, required=True, help="pool file from `reteco pool` (with passage texts)")
    p.add_argument("--labels", type=Path, help="temporal label folder (default: REF/temporal_labels)")
    add_judge_config_option(p, help_text="LLM configuration (default: the generation judge's judge.yaml)")
    add_judge_cache_option(p, used_for=", where the labeller's requests and replies go beside the generation judge's",
                           former="--cache-dir")
    p.add_argument("--retry-invalid", action="store_true", help="ask again where the stored replies were unusable")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_label_temporal)
    return p


def cmd_label_temporal(args) -> int:
    reference = Reference.read(args.ref)
    check_track1(reference)
    config = load_judge_config(args.judge_config)
    pool = read_pool(args.pool)
    labels = open_or_create_labels(reference, labels_folder(reference, args.labels))
    report = _labelling("label-temporal", lambda: label_pool(
        labels, pool, config, cache_dir=args.judge_cache, retry_invalid=args.retry_invalid,
        progress=not args.no_progress and sys.stderr.isatty(),
    ))
    if report.not_in_labels:
        print(f"warning: {report.not_in_labels} pairs name queries without periods in the label folder; skipped", file=sys.stderr)
    if report.no_passage:
        print(f"warning: {report.no_passage} pairs have no passage text; pool with --release to label them", file=sys.stderr)
    faults = [f"{f['query']} {f['doc_id']}: " + "; ".join(f"{task}: {text}" for task, text in f["problems"].items())
              for f in report.faults]
    print(f"labels: {labels.root} (content hash {report.content_hash})")
    return _labelling_outcome(report, faults, report.no_passage + report.not_in_labels, "label-temporal", "verdicts")


def _labelling(command: str, run):
    """``run()`` (a labelling), its report printed; the LLM or the cache unusable: an InputError."""
    try:
        report = run()
    except NotAvailable as exc:
        raise InputError(f"the LLM cannot run: {exc}", command) from None
    except JudgeCacheError as exc:
        raise InputError(f"the judge cache cannot be used: {exc}", "--judge-cache") from None
    print(
        f"{report.pool_pairs} pairs in the pool: {report.already_labelled} already labelled, {report.labelled} labelled "
        f"now, {len(report.faults)} left unlabelled after faults ({report.http_requests} HTTP requests, "
        f"{report.cached_answers} answers from the cache)"
    )
    print(f"{command}: {this_run_line(report.http_requests, report.usage)}")
    return report


def _labelling_outcome(report, faults: list[str], lacking: int, command: str, what: str) -> int:
    """List the pairs left unlabelled (the first 20) and the exit code. Non-zero whenever a pair
    of the pool is still without a label: a pool that is not fully labelled must not look done
    to a script. 1 when the pool itself lacks what is needed (``lacking``: texts, periods); 4
    (EXIT_INCOMPLETE) when only the model's answers failed."""
    for fault in faults[:20]:
        print(f"unlabelled: {fault}", file=sys.stderr)
    if len(faults) > 20:
        print(f"... and {len(faults) - 20} more unlabelled pairs", file=sys.stderr)
    left = len(faults) + lacking
    if not left:
        return 0
    print(
        f"error: {left} pairs of the pool are still unlabelled (see above); the other {what} are saved. "
        f"Fix the cause and run {command} again: labelled pairs are never asked twice.",
        file=sys.stderr,
    )
    return EXIT_INPUT if lacking else EXIT_INCOMPLETE


# ----------------------------------------------------------------------------- the relevance round

TEMPORAL_KIND = "temporal"
RELEVANCE_KIND = "relevance"


def _add_kind_option(p) -> None:
    p.add_argument("--kind", choices=(TEMPORAL_KIND, RELEVANCE_KIND), default=TEMPORAL_KIND,
                   help="which labels: temporal (default; --ref or --labels) or a relevance round (--labels ROUND)")


def _round_folder(args) -> Path:
    if not args.labels:
        raise InputError("--kind relevance needs --labels ROUND (the round's folder)", "command line")
    return Path(args.labels)


def _round_export(args) -> int:
    labels = RelevanceLabels.read(_round_folder(args))
    if args.validation is not None:
        if not args.pool:
            raise InputError("--validation needs --pool (the labelled pool: its passages and known-relevant pairs)",
                             "command line")
        counts = export_validation(labels, args.pool, args.out, args.validation, seed=args.seed)
        print(f"{counts['items']} pairs to label blind -> {args.out} (a uniform sample of {counts['sample']} of "
              f"{counts['sampling_frame']} labelled pairs, seed {args.seed}, and {counts['known_relevant']} "
              f"known-relevant pairs, shuffled; no LLM label; the key: {labels.root / 'validation' / 'key.json'})")
        return 0
    pool = read_pool(args.pool) if args.pool else None
    counts = export_review(labels, args.out, pool, per_label=PER_LABEL if args.per_label is None else args.per_label,
                           boundary=BOUNDARY_SAMPLE if args.boundary is None else args.boundary, seed=args.seed)
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(counts.items())) or "none"
    print(f"{sum(counts.values())} pairs to post-edit (the LLM's labels shown) -> {args.out} ({reasons}; "
          f"round {labels.content_hash[:16]})")
    return 0


def _round_import(args) -> int:
    labels = RelevanceLabels.read(_round_folder(args))
    if args.validation:
        counts = import_validation(labels, args.csv, args.reviewer)
        print(f"{counts['rows']} rows: {counts['rated']} labels by {args.reviewer.strip()} recorded in "
              f"{labels.root / 'validation' / 'human.jsonl'}, {counts['blank']} blank; the round's labels unchanged")
        return 0
    return _import_summary(import_review(labels, args.csv, args.reviewer), labels, "labels", "round")


def _import_summary(counts: dict, labels, overridden: str, store: str) -> int:
    """What label-import did, either kind: the counts, then the store's own."""
    print(
        f"{counts['rows']} rows: {counts['overridden']} {overridden} overridden, {counts['added']} pairs labelled by hand, "
        f"{counts['unchanged']} unchanged ({store} {labels.content_hash[:16]})"
    )
    print(json.dumps(labels.counts(), sort_keys=True))
    return 0


def add_relevance_pool_parser(subparsers):
    p = subparsers.add_parser(
        "relevance-pool",
        help="list the (topic, document) pairs of a phase's runs' top 10 that neither the qrels nor the round judge",
        description="Pool the top-10 (topic, document) pairs of every run of a phase's bulk download (the layout "
        "`reteco leaderboard --submissions` reads) that the official qrels do not judge and the relevance round has "
        "not labelled, with the topic's text and (with --release or --documents) the passage.",
    )
    p.add_argument("--ref", type=Path, required=True, help="a sub-track's reference folder, or a folder of them")
    p.add_argument("--submissions", type=Path, required=True,
                   help="the phase's bulk download (bulk_submissions.zip or its files' folder: the runs the platform "
                   "shows), or a folder of submissions (DIR/<sub-track>/ or DIR/<sub-track>.zip when --ref holds several)")
    p.add_argument("--round", dest="round_folder", type=Path, required=True,
                   help="the relevance round's folder (its labelled pairs are left out; it need not exist yet)")
    p.add_argument("--release", type=Path, help="release folder: passages from <track>/<domain>/documents.jsonl")
    p.add_argument("--documents", type=Path, action="append", default=[], help="a documents.jsonl to take texts from (repeatable)")
    p.add_argument("--depth", type=int, default=10, help="pool depth (default 10, the diagnostics' cutoff)")
    p.add_argument("--known-relevant", type=int, default=0, metavar="K",
                   help="add K pairs per sub-track that the official qrels judge relevant, drawn with --seed, to be "
                   "labelled like the others (the blind validation's recall check; default 0)")
    p.add_argument("--seed", type=int, default=SAMPLE_SEED, help=f"the known-relevant pairs' seed (default {SAMPLE_SEED})")
    p.add_argument("--out", type=Path, required=True, help="pool file to write (JSONL)")
    p.set_defaults(func=cmd_relevance_pool)
    return p


def cmd_relevance_pool(args) -> int:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="reteco-bulk-") as work:
        return _relevance_pool(args, Path(work))


def _relevance_pool(args, work: Path) -> int:
    from reteco.workbench.leaderboard import bulk_download

    labels = RelevanceLabels.read(args.round_folder) if (args.round_folder / LABELS_MANIFEST).is_file() else None
    selections = {}

    def runs_of(source: Path, prefix: str, reference) -> list[Path]:
        if not bulk_download.is_bulk_download(source):
            return [e.path for e in lb.discover_submissions(source, prefix=prefix)]
        # A phase's bulk download: the runs the platform shows (bulk_download's selection).
        selection = bulk_download.select_download(source, reference, work / reference.subtrack)
        selections[reference.subtrack] = selection.record()
        print(f"{reference.subtrack}: {selection.summary()}", file=sys.stderr)
        for s in selection.kept:
            if s.problem is not None:
                print(f"{reference.subtrack}: {s.name}: not pooled: {s.problem}", file=sys.stderr)
        return [s.path for s in selection.kept if s.problem is None]

    phase = phase_runs(lb.find_subtracks(args.ref), args.submissions, runs_of)
    result = pool_round(phase, labels, depth=args.depth, release=args.release, documents=args.documents,
                        known_relevant=args.known_relevant, seed=args.seed)
    write_pool(args.out, result.records)
    if selections:
        selection_file = args.out.with_name(args.out.name + ".selection.json")
        selection_file.write_text(json.dumps(selections, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"the runs selected from the bulk download -> {selection_file}", file=sys.stderr)
    s = result.summary
    for sub, part in s["subtracks"].items():
        for run in part["runs"]:
            for warning in run["warnings"]:
                print(f"  {sub} {run['run']}: {warning}", file=sys.stderr)
        print(
            f"{sub}: {len(part['runs'])} runs, {part['pairs']} distinct pairs in the top {s['depth']}: "
            f"{part['judged_by_qrels']} judged by the qrels, {part['already_labelled']} labelled by the round, "
            f"{part['new']} to label" + (f", and {part['known_relevant']} known-relevant pairs" if part["known_relevant"]
                                        else "")
        )
    text = f"{s['new']} pairs to label (one LLM call each) -> {args.out}"
    if s["new"] and not (args.release or args.documents):
        text += "; no passage texts (give --release or --documents to label the pool)"
    elif s["passages_missing"] or s["texts_missing"]:
        text += f"; passages missing for {s['passages_missing']}, topic texts missing for {s['texts_missing']}"
    print(text)
    return 0


def add_label_relevance_parser(subparsers):
    p = subparsers.add_parser(
        "label-relevance",
        help="grade a relevance pool's unlabelled pairs 0-3 with the LLM and append them to the round",
        description="Ask the LLM, once per pair of the pool without a label in the round, how relevant the passage "
        "is to the topic (0-3, the frozen relevance prompt); append the labels, with provenance, to the round's "
        "folder and rewrite its round.qrels. Labelled pairs are never asked again; cached replies are replayed.",
    )
    p.add_argument("--round", dest="round_folder", type=Path, required=True,
                   help="the relevance round's folder (created the first time)")
    p.add_argument("--pool", type=Path, required=True, help="pool file from `reteco relevance-pool` (with texts)")
    add_judge_config_option(p, help_text="LLM configuration (default: the generation judge's judge.yaml)")
    add_judge_cache_option(p, used_for=", where the labeller's requests and replies go beside the generation judge's")
    p.add_argument("--retry-invalid", action="store_true", help="ask again where the stored replies were unusable")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_label_relevance)
    return p


def cmd_label_relevance(args) -> int:
    config = load_judge_config(args.judge_config)
    labels = open_or_create_round(args.round_folder)
    report = _labelling("label-relevance", lambda: label_round(
        labels, args.pool, config, cache_dir=args.judge_cache, retry_invalid=args.retry_invalid,
        progress=not args.no_progress and sys.stderr.isatty(),
    ))
    if report.no_text:
        print(f"warning: {report.no_text} pairs have no passage or topic text; pool with --release to label them",
              file=sys.stderr)
    if report.no_context:
        print(f"warning: {report.no_context} pairs of the pool carry no context (conversation or time frame): a pool "
              "made before relevance prompt version 2? Pool again so that the labeller sees it", file=sys.stderr)
    faults = [f"{f['query']} {f['doc_id']}: {f['status']}: {f['problem']}" for f in report.faults]
    print(f"round: {labels.qrels_path} (content hash {report.content_hash}; counts {json.dumps(labels.counts(), sort_keys=True)})")
    return _labelling_outcome(report, faults, report.no_text, "label-relevance", "labels")
