"""The ``reteco`` command: synth, prepare, score, validate, factir-qrels.

Exit codes (``reteco.problems``; README, "Exit codes"): 0 done; 1 input that cannot be used (the
messages say what to fix, with file and line); 2 the command line is wrong (argparse); 3 an
internal error of reteco (``internal_error``: one line, the traceback only with RETECO_DEBUG=1);
4 work that could not be finished (the judge's commands).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.problems import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    MAX_FILE_NAME,
    InputError,
    Problems,
    UsageError,
    internal_error,
    printable,
)

# Commands defined here. The others' parsers live in their modules, which import asyncio,
# tqdm and the judge's configuration (0.12 s): a scoring run does not load them.
_OWN_COMMANDS = frozenset({"synth", "prepare", "score", "validate", "factir-qrels"})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(all_commands=command not in _OWN_COMMANDS)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed its message (or --help, --version)
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    try:
        use_scoring_memory_pool()
        return int(args.func(args) or 0)
    except InputError as exc:
        _print_problems(exc.problems)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"reteco {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        return 0
    except Exception as exc:  # noqa: BLE001 - an internal error: never a raw traceback by default
        return internal_error(exc)


def _parser(all_commands: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reteco", description="RETECO (SemEval-2027 Task 1) evaluation")
    parser.add_argument("--version", action="version", version=f"reteco {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("synth", help="write the built-in synthetic release (and sample submissions)")
    p.add_argument("--out", type=Path, required=True, help="folder for the release")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--samples", type=Path, help="also write sample runs and answers for the dev split here")
    p.set_defaults(func=cmd_synth)

    p = sub.add_parser("prepare", help="release folder -> reference data, one folder per sub-track")
    p.add_argument("--release", type=Path, required=True)
    p.add_argument("--split", required=True, help="train, dev or test")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--subtracks", default="1a,1b,2a,2b,2c", help="comma-separated (default: all)")
    p.set_defaults(func=cmd_prepare)

    for name, func, text in (
        ("score", cmd_score, "score a submission: writes OUT/scores.json and OUT/details.json"),
        ("validate", cmd_validate, "check a submission without scoring it"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--ref", type=Path, help="reference folder of one sub-track (REF/1a, ...)")
        p.add_argument("--benchmark", choices=["factir"], help="score against plain qrels with a benchmark preset")
        p.add_argument("--qrels", type=Path, help="with --benchmark: TREC qrels or pytrec_eval JSON")
        p.add_argument("--stance", type=Path, help="with --benchmark: 'topic docid stance' lines")
        if name == "score":
            p.add_argument("--res", type=Path, required=True, help="submission: zip, folder, run file (.gz ok)")
            p.add_argument("--out", type=Path, required=True)
            p.add_argument("--engine", choices=["numpy", "pytrec_eval"], default="numpy")
            p.add_argument("--no-per-topic", action="store_true", help="leave per-topic figures out of details.json")
            p.add_argument("--judge-config", type=Path, help="2b/2c: judge config YAML (default: the packaged judge.yaml)")
            p.add_argument("--judge-cache", type=Path, help="2b/2c: judge cache folder (default: $RETECO_CACHE_DIR, ...)")
        else:
            p.add_argument("submission", type=Path)
        p.set_defaults(func=func)

    if all_commands:
        from reteco.commands.agreement import add_agreement_parser
        from reteco.commands.human_sample import add_human_sample_parser
        from reteco.commands.judge_report import add_judge_report_parser
        from reteco.codabench.builder import add_bundle_parser
        from reteco.codabench.check_bundle import add_check_bundle_parser
        from reteco.commands.judge import add_judge_parser
        from reteco.commands.setup_wordnet import add_setup_wordnet_parser
        from reteco.commands.temporal_labels import (
            add_label_export_parser,
            add_label_import_parser,
            add_label_temporal_parser,
            add_pool_parser,
        )

        for add in (add_bundle_parser, add_check_bundle_parser, add_judge_parser, add_setup_wordnet_parser, add_pool_parser, add_label_temporal_parser, add_label_export_parser, add_label_import_parser):
            add(sub)
        for add in (add_agreement_parser, add_human_sample_parser, add_judge_report_parser):
            add(sub)

    p = sub.add_parser("factir-qrels", help="FactIR's evidence.csv + qrel_processed -> qrels.txt, stance.tsv")
    p.add_argument("--evidence", type=Path, required=True)
    p.add_argument("--qrels-json", type=Path, required=True)
    p.add_argument("--by", choices=["claim", "row"], default="claim")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_factir_qrels)
    return parser


def cmd_synth(args) -> int:
    from reteco.organizers.synthetic.release import write_synthetic_release
    from reteco.organizers.synthetic.sample_runs import write_sample_runs

    check_output_folder(args.out, "--out")
    if args.samples:
        check_output_folder(args.samples, "--samples")
    kwargs = {} if args.seed is None else {"seed": args.seed}
    release = write_synthetic_release(args.out, **kwargs)
    print(f"synthetic release written to {release}")
    if args.samples:
        from reteco.organizers.synthetic.sample_answers import write_sample_answers

        write_sample_runs(release, args.samples)
        write_sample_answers(release, args.samples)
        print(f"sample runs and answers (dev split) written to {args.samples}")
    return 0


def cmd_prepare(args) -> int:
    from reteco.organizers.prepare import format_summary, prepare_release

    check_output_folder(args.out, "--out")
    subtracks = tuple(s.strip() for s in args.subtracks.split(",") if s.strip())
    summary = prepare_release(args.release, args.split, args.out, subtracks=subtracks)
    print(format_summary(summary))
    return 0


def _load_reference(args):
    from reteco.formats.qrels import FACTIR_CUTOFFS, benchmark_reference, read_qrels, read_stance
    from reteco.formats.reference import Reference

    if args.benchmark:
        if not args.qrels:
            raise UsageError("--benchmark needs --qrels")
        stance = read_stance(args.stance) if args.stance else None
        return benchmark_reference(
            read_qrels(args.qrels),
            benchmark=args.benchmark,
            cutoffs=FACTIR_CUTOFFS,
            official="ndcg_10",
            stance=stance,
            source={"qrels": args.qrels.name, "stance": args.stance.name if args.stance else None},
        )
    if not args.ref:
        raise UsageError("give --ref REF/<sub-track> (or --benchmark with --qrels)")
    return Reference.read(args.ref)


def cmd_score(args) -> int:
    from reteco.scoring.submission import score_submission

    check_output_folder(args.out, "--out")  # before scoring: a wrong --out costs nothing
    reference = _load_reference(args)
    judge_config = None
    if args.judge_config is not None:
        from reteco.judge.config import load_judge_config

        judge_config = load_judge_config(args.judge_config)  # a bad config is refused before scoring
    result = score_submission(reference, args.res, engine=args.engine, per_topic=not args.no_per_topic,
                              judge_config=judge_config, cache_dir=args.judge_cache)
    _print_problems(result.problems)
    from reteco.outputs.scores import write_details, write_scores

    try:
        write_details(args.out, result.details)
        write_scores(args.out, result.scores)  # last: a scores.json is never left beside no details
    except OSError as exc:
        raise InputError(f"cannot write the results here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    print(json.dumps(result.scores, indent=2))
    return 0


def cmd_validate(args) -> int:
    from reteco.scoring.submission import validate_submission

    reference = _load_reference(args)
    problems, summary = validate_submission(reference, args.submission)
    _print_problems(problems)
    print(summary)
    return 0


def cmd_factir_qrels(args) -> int:
    from reteco.formats.factir import convert_factir, write_factir

    check_output_folder(args.out, "--out")
    judgments, stance, topics = convert_factir(args.evidence, args.qrels_json, args.by)
    try:
        write_factir(args.out, judgments, stance, topics)
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    relevant = sum(1 for j in judgments if j.relevance > 0)
    print(f"{len(topics)} topics (grouped by {args.by}), {len(judgments)} judgments, {relevant} relevant -> {args.out}")
    return 0


def check_output_folder(folder: Path, option: str) -> None:
    """Refuse an output folder that cannot be one, before any work: ``folder`` or one of its
    parents is an existing file (InputError naming the path). A folder that does not exist yet
    is fine: it is created when the results are written."""
    for here in (folder, *folder.parents):
        try:
            mode = os.stat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            if not os.path.islink(here):  # a dangling link is there, and is no folder
                continue  # not there yet (or below a file, found one level up)
            mode = 0
        except OSError as exc:  # a name too long, a link loop, no permission
            raise InputError(f"{option} cannot be used ({exc.strerror or exc})", str(folder)) from None
        if stat.S_ISDIR(mode):
            return
        if here == folder:
            message = f"{option} exists and is not a folder; give a folder (it is created if needed)"
        else:
            message = f"{option} cannot be created: {printable(str(here), MAX_FILE_NAME)} exists and is not a folder"
        raise InputError(message, str(folder))


def _print_problems(problems: Problems) -> None:
    for line in problems.lines():
        print(line, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
