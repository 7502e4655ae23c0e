"""``reteco score`` and ``reteco validate``: submissions against one sub-track's reference data
(or a graded benchmark's qrels), by the one scoring code path (``reteco.scoring.submission``).

``reteco score`` follows the conventions of trec_eval, ir_measures and ranx:

- ``--out`` is optional: without it the scores are printed and nothing is written; with it the
  folder gets what the platform writes (scores.json, details.json, detailed_results.html).
- ``-q`` prints the per-topic figures on stdout as TSV, ``key<TAB>topic<TAB>value``, topic by
  topic, then the ``all`` rows (the scores.json figures), as ``trec_eval -q`` does. The topic is
  what the official figure averages over (a query for 1a and 1b, a turn for Track 2).
- Several submissions (``--res A --res B`` or positional) are scored one after the other and
  compared in one table on stdout: per submission its topic counts, the official figure and the
  other figures. With ``--out`` each gets its own folder, ``OUT/<its name>``.

A judge that could not run is exit 4 (EXIT_INCOMPLETE) here, with the engine's own reason on
stderr (``judge_failure``: e.g. the parameter a server rejected): a 2b or 2c submission whose
judge run was stopped (the preflight refused, the service failed, a limit reached), or, with
``--judge-config``, whose judge did not run at all (no key, no endpoint). The scores are still
printed and written, without the judge keys. Without ``--judge-config`` a judge that is not
configured (no key) is exit 0, as on the platform. The Codabench scoring program
(``reteco.codabench.program.scoring_program``) keeps its own rule: exit 0 with the judge keys absent
(and its refuse_unranked rule for 2b); only this command, on the user's machine, fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.commands.output_folder import check_output_folder
from reteco.formats.phase_record import PHASE_FILE, phase_rules
from reteco.formats.relevance_round import RelevanceRound
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, InputError, UsageError, printable
from reteco.subtracks import BENCHMARKS, KEYS, PLAIN_QRELS_BENCHMARK_IDS

# The --benchmark presets, from the table's rows: "factir: cutoffs 1, 5, 10, 100, nDCG@10 official".
_PRESETS = "; ".join(
    f"{b.id}: cutoffs {', '.join(map(str, b.cutoffs))}, {KEYS[b.official].title} official"
    for b in (BENCHMARKS[i] for i in PLAIN_QRELS_BENCHMARK_IDS)
)

# Sections of details.json holding one record per topic, and the field naming the topic.
_PER_TOPIC = (("per_unit", "unit"), ("per_turn", "turn"))


def add_parser(subparsers) -> None:
    for name, func, text in (
        ("score", cmd_score, "score submissions: print the scores, or write OUT/scores.json, details.json and the page"),
        ("validate", cmd_validate, "check a submission with the scoring rules, without scoring it"),
    ):
        p = subparsers.add_parser(name, help=text, description=text)
        p.add_argument("--ref", type=Path, help="reference folder of one sub-track (REF/1a, ...)")
        p.add_argument(
            "--benchmark", choices=list(PLAIN_QRELS_BENCHMARK_IDS),
            help=f"instead of --ref: {name} against a graded benchmark's plain qrels (--qrels), with its preset "
            f"({_PRESETS})",
        )
        p.add_argument("--qrels", type=Path, help="with --benchmark: TREC qrels or pytrec_eval JSON")
        p.add_argument("--stance", type=Path, help="with --benchmark: 'topic docid stance' lines")
        if name == "score":
            p.add_argument("submissions", type=Path, nargs="*", metavar="SUBMISSION",
                           help="submissions to score (as --res; several: a comparison table)")
            p.add_argument("--res", type=Path, action="append", default=[],
                           help="a submission: zip, folder, run file (.gz ok), - for stdin; repeat to compare")
            p.add_argument("--out", type=Path,
                           help="write scores.json, details.json and detailed_results.html here (OUT/<name> per "
                           "submission when several); without it the scores are only printed")
            p.add_argument("-q", dest="per_topic_tsv", action="store_true",
                           help="print the per-topic figures as TSV (key, topic, value; then the 'all' rows)")
            p.add_argument("-m", "--measures", dest="measures", type=measures_argument, action="append", default=[],
                           metavar="MEASURES",
                           help="diagnostics beyond the leaderboard's keys, e.g. 'nDCG@10 P@5 R@100 MRR RR@10 Judged@10' "
                           "(ir_measures' names; trec_eval's ndcg_cut.10 or ndcg_cut_10, P.5, recip_rank; ranx's "
                           "precision@5, mrr@10), computed on the decided rankings; printed after the official figure "
                           "and written to details.json 'measures', never to scores.json")
            p.add_argument("--trec-qrels", type=Path, metavar="OUT",
                           help="also write the reference's qrels to OUT, keyed <domain>/<id>, with the relevance "
                           "reteco scores with: for trec_eval, ir_measures or ranx (with --trec-run)")
            p.add_argument("--trec-run", type=Path, metavar="OUT",
                           help="also write the ranking reteco scored to OUT (unknown ids discarded, duplicates "
                           "removed, reteco's order, topics keyed as --trec-qrels keys them): trec_eval, "
                           "ir_measures and ranx on the two files give reteco's figures")
            p.add_argument("--engine", choices=["numpy", "pytrec_eval"], default="numpy")
            p.add_argument("--no-per-topic", action="store_true", help="leave per-topic figures out of details.json")
            p.add_argument("--round", dest="relevance_round", type=Path, metavar="LABELS",
                           help="organizers: a relevance round's labels (qrels, 0-3) for the unjudged diagnostics "
                           "(details.json 'unjudged': augmented and condensed nDCG@10); never changes the scores")
            add_judge_config_option(p, help_text="2b/2c: judge config YAML (default: the packaged judge.yaml)")
            add_judge_cache_option(p, used_for=" for 2b/2c")
        else:
            p.add_argument("submissions", type=Path, nargs="+", metavar="SUBMISSION",
                           help="zip, folder, run file (.gz ok), - for stdin; several: each checked, every one's "
                           "messages printed, exit 1 when any is invalid")
        p.set_defaults(func=func)


def measures_argument(text: str) -> list:
    """An argparse ``type``: measure strings (``reteco.metrics.measure_strings``); a mistake is
    reported by ``score``'s own parser (exit 2, its usage)."""
    from reteco.metrics.measure_strings import MeasureError, parse_measures

    try:
        return parse_measures(text)
    except MeasureError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _load_reference(args):
    from reteco.formats.qrels import benchmark_reference, read_qrels, read_stance
    from reteco.formats.reference import Reference

    if args.benchmark:
        if not args.qrels:
            raise UsageError("--benchmark needs --qrels")
        stance = read_stance(args.stance) if args.stance else None
        row = BENCHMARKS[args.benchmark]
        return benchmark_reference(
            read_qrels(args.qrels),
            benchmark=row.id,
            cutoffs=list(row.cutoffs),
            official=row.official,
            stance=stance,
            source={"qrels": args.qrels.name, "stance": args.stance.name if args.stance else None},
        )
    if not args.ref:
        raise UsageError("give --ref REF/<sub-track> (or --benchmark with --qrels)")
    return Reference.read(args.ref)


def cmd_score(args) -> int:
    submissions = list(args.res) + list(args.submissions)
    if not submissions:
        raise UsageError("give the submission to score: --res SUBMISSION (or several, to compare them)")
    if sum(1 for s in submissions if str(s) == "-") > 1:
        raise UsageError("standard input (-) can be read once")
    several = len(submissions) > 1
    if args.per_topic_tsv and several:
        raise UsageError("-q prints one submission's per-topic figures; give one submission")
    if args.trec_run is not None and several:
        raise UsageError("--trec-run writes one run's scored ranking; give one submission")
    if args.per_topic_tsv and args.no_per_topic:
        raise UsageError("-q prints the per-topic figures that --no-per-topic leaves out; give one of them")
    outs = _output_folders(args.out, submissions) if args.out is not None else [None] * len(submissions)
    for out in outs:
        if out is not None:
            check_output_folder(out, "--out")  # before scoring: a wrong --out costs nothing
    args.measures = list(dict.fromkeys(m for group in args.measures for m in group))  # each once, in order
    reference = _load_reference(args)
    if args.measures and reference.row is not None and not reference.row.takes_run:
        raise UsageError(f"-m: sub-track {reference.subtrack} scores answers, not a run: there is no ranking to measure")
    if args.trec_run is not None and reference.row is not None and not reference.row.takes_run:
        raise UsageError(f"--trec-run: sub-track {reference.subtrack} scores answers, not a run: there is no ranking to write")
    phase = phase_rules(reference, no_per_topic=args.no_per_topic)
    args.round_labels = None
    if args.relevance_round is not None:
        if reference.row is not None and not reference.row.takes_run:
            raise UsageError(f"--round: sub-track {reference.subtrack} ranks no documents; a relevance round is for runs")
        args.round_labels = RelevanceRound.read(args.relevance_round)
    args.judge = None
    if args.judge_config is not None:
        from reteco.judge.config import load_judge_config

        args.judge = load_judge_config(args.judge_config)  # a bad config is refused before scoring
    if args.per_topic_tsv and not phase["per_topic"]:
        raise UsageError(f"-q: the reference's phase rules ({phase['name']}, its {PHASE_FILE}) withhold per-topic figures")

    progress = several and sys.stderr.isatty()
    rows = []
    failed = incomplete = False
    for submission, out in _with_progress(list(zip(submissions, outs)), progress):
        if several:
            print(f"== {printable(str(submission))}", file=sys.stderr)
        try:
            result = _score_one(reference, submission, out, args, phase, progress=sys.stderr.isatty() and not several)
        except InputError as exc:
            if not several:
                raise
            exc.problems.print(sys.stderr)
            rows.append((submission, None))
            failed = True
            continue
        if args.per_topic_tsv:
            sys.stdout.write(per_topic_tsv(result))
            if args.measures:
                sys.stdout.write(measures_tsv(reference, result, per_topic=True))
        elif args.measures and not several:
            sys.stdout.write(measures_tsv(reference, result, per_topic=False))
        elif not several:
            print(json.dumps(result.scores, indent=2))
        rows.append((submission, result))
        _write_trec_files(reference, args, result.ranked)
        failure = judge_failure(result.details, asked=args.judge is not None)
        if failure is not None:
            print(f"error: {failure}", file=sys.stderr)
            incomplete = True
    if several:
        sys.stdout.write(comparison_table(reference, rows))
    return EXIT_INPUT if failed else EXIT_INCOMPLETE if incomplete else 0


def judge_failure(details: dict, *, asked: bool) -> str | None:
    """Why the judge of a scored 2b/2c submission could not run, in the engine's own words (the
    rejected parameter, the HTTP status: this is the user's own console), or None when it ran, or
    was not asked for (``asked``: ``--judge-config`` given) and is simply not configured."""
    judge = (details.get("generation") or {}).get("judge")
    if not judge or judge.get("ran"):
        return None
    stopped = judge.get("stopped")
    if stopped is not None:
        return (f"the judge could not run: {stopped.get('detail') or stopped.get('reason')}; "
                "its keys are absent (exit 4: run again once the judge can run; the cache keeps every verdict)")
    if asked:
        return f"the judge could not run: {judge.get('reason', 'not configured')}; its keys are absent (exit 4)"
    return None


def _score_one(reference, submission: Path, out: Path | None, args, phase: dict, *, progress: bool):
    """Score one submission (``reteco.scoring.submission.score_submission``), print its messages
    on stderr and, with ``out``, write what the platform writes there."""
    from reteco.outputs.results import absent_lines, absent_scores, write_results
    from reteco.scoring.submission import score_submission

    result = score_submission(reference, submission, engine=args.engine, per_topic=phase["per_topic"], progress=progress,
                              judge_config=args.judge, cache_dir=args.judge_cache, measures=args.measures or None,
                              relevance_round=args.round_labels)
    result.problems.print(sys.stderr)
    if out is None:
        absent = absent_scores(reference.subtrack, result.scores, result.absent)
    else:
        try:
            absent = write_results(out, result, reference.subtrack, phase)
        except OSError as exc:
            raise InputError(f"cannot write the results here ({exc.strerror or exc})", str(exc.filename or out)) from None
    for line in absent_lines(absent, result.problems.lines()):
        print(line, file=sys.stderr)
    if out is not None:
        shown = "written" if phase["per_topic"] else "withheld"
        print(f"phase rules: {phase['name']}: per-topic figures {shown}; {out / 'detailed_results.html'} "
              "is the page the platform shows", file=sys.stderr)
    return result


def _with_progress(items: list, progress: bool):
    """``items``, with a bar on stderr over the submissions when there are several (a terminal)."""
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, unit="submission", desc="scoring", file=sys.stderr, dynamic_ncols=True)


def _output_folders(out: Path, submissions: list[Path]) -> list[Path]:
    """``out`` for one submission; ``out/<name>`` for each of several (the file or folder name
    without .gz/.zip/.txt, made unique with -2, -3 ...)."""
    if len(submissions) == 1:
        return [out]
    folders, seen = [], set()
    for submission in submissions:
        name = "stdin" if str(submission) == "-" else submission.name
        for suffix in (".gz", ".zip", ".txt", ".jsonl"):
            name = name.removesuffix(suffix)
        name = name or "submission"
        unique, n = name, 1
        while unique in seen:
            n += 1
            unique = f"{name}-{n}"
        seen.add(unique)
        folders.append(out / unique)
    return folders


def per_topic_tsv(result) -> str:
    """``key<TAB>topic<TAB>value`` lines, as ``trec_eval -q`` prints them: every figure of each
    topic (the records of details.json's ``per_unit``, and ``per_turn`` for answers), topic by
    topic, then ``key<TAB>all<TAB>value`` for every scores.json figure. Values in full precision;
    a figure a topic does not have is not printed."""
    per_topic: dict[str, dict[str, float]] = {}
    details = result.details_json(per_topic=True)
    sections = [details] + ([details["generation"]] if "generation" in details else [])
    for section in sections:
        for name, field in _PER_TOPIC:
            for record in section.get(name) or ():
                topic = per_topic.setdefault(str(record[field]), {})
                for key, value in record.items():
                    if _is_figure(value) and key not in topic:
                        topic[key] = value
    lines = [f"{key}\t{topic}\t{_value(value)}" for topic, values in per_topic.items() for key, value in values.items()]
    lines += [f"{key}\tall\t{_value(value)}" for key, value in result.scores.items()]
    return "".join(line + "\n" for line in lines)


def measures_tsv(reference, result, *, per_topic: bool) -> str:
    """The requested measures (details.json's ``measures``) as ``name<TAB>topic<TAB>value``
    lines: without ``per_topic``, first the official figure, marked ``KEY (official)``, then each
    measure's ``all`` line (and, for 1b, ``NAME (mean over steps)``: trec_eval's figure); with
    it, each unit's lines, then the ``all`` lines of the measures (-q has printed the official
    figure among the scores)."""
    section = result.details.get("measures") or {}
    lines = []
    if per_topic:
        for record in result.per_topic.get("measures.per_unit") or ():
            lines += [f"{name}\t{record['unit']}\t{_value(record[name])}" for name in section.get("requested", ())]
    else:
        official = _official_key(reference)
        if official in result.scores:
            lines.append(f"{official} (official)\tall\t{_value(result.scores[official])}")
    lines += [f"{name}\tall\t{_value(value)}" for name, value in section.get("overall", {}).items()]
    lines += [f"{name} (mean over steps)\tall\t{_value(value)}" for name, value in section.get("step_mean", {}).items()]
    return "".join(line + "\n" for line in lines)


def _official_key(reference) -> str:
    from reteco.scoring.retrieval import retrieval_score_keys
    from reteco.subtracks import SUBTRACKS

    row = SUBTRACKS.get(reference.subtrack)
    return row.official if row is not None and row.official else retrieval_score_keys(reference)[0]


def _write_trec_files(reference, args, ranked) -> None:
    """``--trec-qrels OUT`` and ``--trec-run OUT``: the judgments and the ranking reteco scored,
    as TREC files for other tools (``reteco.outputs.trec_qrels``)."""
    from reteco.outputs.trec_qrels import trec_qrels_lines, trec_run_lines, write_lines

    wanted = [(args.trec_qrels, "qrels", lambda: trec_qrels_lines(reference))]
    wanted.append((args.trec_run, "run", lambda: trec_run_lines(reference, ranked)))
    for out, what, lines in wanted:
        if out is None:
            continue
        try:
            count = write_lines(out, lines())
        except OSError as exc:
            raise InputError(f"cannot write the {what} here ({exc.strerror or exc})", str(out)) from None
        if what == "qrels":
            told = f"{count} judgments of {len(reference.topics)} topics, keyed <domain>/<id>"
        else:
            told = f"{count} lines: the ranking reteco scored, keyed as the qrels"
        print(f"{printable(str(out))}: {told} (for trec_eval, ir_measures, ranx)", file=sys.stderr)


def _is_figure(value) -> bool:
    # Per-topic records also hold ids, flags (answered, fully_covered) and counts of periods or
    # passages: only the figures between 0 and 1 are printed, as trec_eval prints measures.
    return isinstance(value, float) and math.isfinite(value)


def _value(value: float) -> str:
    return repr(float(value))


def comparison_table(reference, rows: list) -> str:
    """One line per submission: its name, reference topics it ranks or answers, the official
    figure, the other figures of the sub-track and the handling counts (unknown ids, repeats,
    topics ignored); "-" where a figure is absent, "not scored" for a submission with errors."""
    from reteco.scoring.retrieval import retrieval_score_keys
    from reteco.subtracks import SUBTRACKS

    row = SUBTRACKS.get(reference.subtrack)
    keys = list(row.keys) if row is not None else retrieval_score_keys(reference)
    official = row.official if row is not None else keys[0]
    seen = [k for k in keys if any(r is not None and k in r.scores for _, r in rows)]
    extra = sorted({k for _, r in rows if r is not None for k in r.scores} - set(keys))
    measured = list(dict.fromkeys(m for _, r in rows if r is not None for m in (r.details.get("measures") or {}).get("overall", {})))
    figures = seen + extra
    counts = ("unknown_doc_ids", "duplicate_doc_ids", "topics_ignored")
    header = (["submission", "topics"] + [f"{k} (official)" if k == official else k for k in figures] + measured
              + list(counts))
    table = [header]
    total = len(reference.topics)
    for submission, result in rows:
        name = printable(str(submission))
        if result is None:
            table.append([name, "not scored"] + [""] * (len(header) - 2))
            continue
        line = [name, f"{_topics_covered(result, total)}/{total}"]
        line += [f"{result.scores[k]:.4f}" if k in result.scores else "-" for k in figures]
        overall = (result.details.get("measures") or {}).get("overall", {})
        line += [f"{overall[m]:.4f}" if m in overall else "-" for m in measured]
        found = result.details.get("counts", {})
        line += [str(found[c]) if c in found else "-" for c in counts]
        table.append(line)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() + "\n" for r in table)


def _topics_covered(result, total: int) -> int:
    """Reference topics the submission ranks (a run) or answers (answers alone, 2b), counted as
    ``reteco validate`` counts them."""
    from reteco.scoring.submission import topics_covered

    return topics_covered(result.details, total)


def cmd_validate(args) -> int:
    from reteco.scoring.submission import validate_submission

    reference = _load_reference(args)
    if len(args.submissions) == 1:
        problems, summary = validate_submission(reference, args.submissions[0])
        problems.print(sys.stderr)
        print(summary)
        return 0
    invalid = 0
    for submission in args.submissions:  # each checked as alone; the others are checked even after a bad one
        try:
            problems, summary = validate_submission(reference, submission)
        except InputError as exc:
            invalid += 1
            exc.problems.print(sys.stderr)
            continue
        problems.print(sys.stderr)
        print(summary)
    if invalid:
        print(f"error: {invalid} of {len(args.submissions)} submissions are invalid (their messages above)",
              file=sys.stderr)
        return EXIT_INPUT
    return 0
