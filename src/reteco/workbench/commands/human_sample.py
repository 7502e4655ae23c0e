"""``reteco human-sample``: the seeded stratified sample of answers that humans rate, blind.

    reteco human-sample --ref REF/2b|2c (--submissions DIR | ANSWERS ...) (--n N | --design paired --turns K)
                        --seed S --out DIR
                        [--annotators N|NAME,NAME...] [--dimensions d1,d2] [--judge-out judge.csv
                        [--judge-config FILE] [--judge-cache DIR] [--cache-only]]

What is sampled, how, and what each file holds (``DIR/annotators/<name>/``: the blind sheet, the
context file, which holds reference data, and the guide, for that annotator only; ``DIR/key.csv``
and ``DIR/sample.json`` for the organizers): ``reteco.workbench.judge_audit.human_sample``. Exit 1 when an
input cannot be used (``--out`` not a folder too); 2 on a wrong command line (``--judge-out``
the same file as one of DIR's, through another spelling or a symbolic link too); 4 when
``--judge-out`` was asked and some judgments failed (the file holds the others; run again to
finish).

    reteco human-sample --plan --systems S --phase-turns T [--residual-sd SD] [--width W] ...

plans a paired sample instead (``reteco.workbench.judge_audit.sample_plan``): how many turns and
ratings a target interval width needs, and the annotator hours; nothing is read or written.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError


def add_human_sample_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``human-sample`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "human-sample",
        help="seeded stratified blind sample of 2b/2c answers for human rating: per annotator a sheet, context and "
        "guide; the organizers' key",
        description="Sample (system, turn) items stratified by domain, turn depth and system; write for each annotator "
        "a blind rating sheet (item codes only, in an order of their own), its context file and the guide, and for the "
        "organizers the key (item code -> system, submission) that `reteco agreement --key` joins through, and the "
        "sample record.",
    )
    p.add_argument("--ref", type=Path, help="reference folder of sub-track 2b or 2c (not with --plan)")
    p.add_argument("--submissions", type=Path, help="the phase's bulk download (bulk_submissions.zip or its files' "
                   "folder: the submissions the platform shows, named by owner), or a folder holding one submission "
                   "(file, zip or folder) per system")
    p.add_argument("--team-names", type=Path, metavar="CSV",
                   help="with a bulk download: owner,team CSV, the team name each owner's system carries")
    p.add_argument("answers", type=Path, nargs="*", help="more submissions (answers files, zips or folders)")
    p.add_argument("--n", type=count_argument(1), help="stratified design: items to sample (all when fewer are available)")
    p.add_argument("--design", choices=("stratified", "paired"), default="stratified",
                   help="stratified (default): --n items by domain x depth x system; paired: --turns turns, each rated "
                   "for every system that answered it (the corrected leaderboard's paired differences)")
    p.add_argument("--turns", type=count_argument(1), help="paired design: turns to sample")
    p.add_argument("--systems-per-turn", type=count_argument(1),
                   help="paired design on a budget: rate a uniform random M of the systems that answered each sampled "
                   "turn (default: all of them)")
    p.add_argument("--plan", action="store_true",
                   help="plan the sample instead of drawing it: how many turns and ratings a target interval width "
                   "needs, and the annotator hours (see --systems, --phase-turns, --residual-sd, --width)")
    add_plan_options(p)
    p.add_argument("--seed", type=int)
    p.add_argument("--out", type=Path,
                   help="folder for the annotators' files (annotators/<name>/), the key and the sample record")
    p.add_argument("--annotators", default="1",
                   help="the annotators: a count N (annotator-1 ... annotator-N) or comma-separated names (default: 1); "
                   "each gets the items in an order of their own")
    p.add_argument("--dimensions", help="comma-separated dimensions to rate (default: all five)")
    p.add_argument("--judge-out", type=Path, help="also write the judge's ratings of the same items (agreement format)")
    add_judge_config_option(p, help_text="judge config YAML for --judge-out (default: judge.yaml)")
    add_judge_cache_option(p, used_for=" for --judge-out")
    p.add_argument("--cache-only", action="store_true", help="--judge-out from the cache only: no HTTP request")
    p.set_defaults(func=cmd_human_sample)
    return p


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """The planner's options (``reteco.workbench.judge_audit.sample_plan``)."""
    g = p.add_argument_group("--plan")
    g.add_argument("--systems", type=count_argument(1), help="systems expected in the phase")
    g.add_argument("--phase-turns", type=count_argument(2), help="turns of the phase's reference")
    g.add_argument("--residual-sd", type=float,
                   help="judge-human disagreement seen so far: the standard deviation of human minus judge on the "
                   "(s-1)/4 scale (default 0.2; `leaderboard --human-ratings` reports it as residual_sd)")
    g.add_argument("--from-leaderboard", type=Path, metavar="LEADERBOARD_JSON",
                   help="take --residual-sd from an earlier `leaderboard --human-ratings` run: the root mean square of "
                   "its systems' judge_mean residual_sd")
    g.add_argument("--width", type=float, help="target full width of a system's 95%% interval (default 0.1)")
    g.add_argument("--dimensions-rated", type=count_argument(1), default=None,
                   help="dimensions each item is rated on (default 5)")
    g.add_argument("--minutes-per-item", type=float, default=None, help="annotator minutes per item (default 3)")
    g.add_argument("--annotators-per-item", type=count_argument(1), default=None, help="ratings per item (default 1)")
    g.add_argument("--hourly-rate", type=float, default=None, help="annotator pay per hour, for the cost line")


def cmd_human_sample(args) -> int:
    """Run the command (module docstring)."""
    from reteco.problems import UsageError

    if args.plan:
        from reteco.workbench.judge_audit.sample_plan import plan_from_args

        return plan_from_args(args)
    if args.seed is None or args.out is None or args.ref is None:
        raise UsageError("human-sample needs --ref, --seed and --out (or --plan)")
    if args.design == "paired" and (args.turns is None or args.n is not None):
        raise UsageError("--design paired takes --turns K (every sampled turn is rated for every system), not --n")
    if args.design == "stratified" and (args.n is None or args.turns is not None or args.systems_per_turn is not None):
        raise UsageError("the stratified design takes --n N items (--turns and --systems-per-turn are for --design "
                         "paired)")
    import contextlib

    with contextlib.ExitStack() as stack:  # a bulk download is read into a folder that lives while we sample
        return _human_sample(args, stack)


def _human_sample(args, stack) -> int:
    from reteco.commands.output_folder import check_distinct_outputs, check_output_folder
    from reteco.formats.reference import Reference
    from reteco.judge.config import judge_available, load_judge_config
    from reteco.llm.usage import this_run_line
    from reteco.problems import UsageError
    from reteco.workbench.judge_audit import human_sample as hs
    from reteco.workbench.judge_audit.annotator_guide import annotator_guide
    from reteco.workbench.leaderboard import bulk_download

    check_output_folder(args.out, "--out")
    annotators = hs.annotator_names(args.annotators)
    outputs = {f"--out's {hs.KEY}": args.out / hs.KEY, f"--out's {hs.RECORD}": args.out / hs.RECORD}
    for name in annotators:
        outputs.update({f"{name}'s {file}": args.out / hs.ANNOTATORS_FOLDER / name / file
                        for file in (hs.SHEET, hs.CONTEXT, hs.GUIDE)})
    check_distinct_outputs({**outputs, "--judge-out": args.judge_out})
    reference = Reference.read(args.ref)
    dimensions = hs.check_dimensions([d.strip() for d in args.dimensions.split(",") if d.strip()]) \
        if args.dimensions else list(hs.DIMENSIONS)
    config = load_judge_config(args.judge_config)  # its prompts say what each dimension shows, and the rubric
    selection = None
    if args.submissions is not None and bulk_download.is_bulk_download(args.submissions):
        # A phase's bulk download: the submissions the platform shows, named by owner (bulk_download).
        if args.answers:
            raise UsageError("a bulk download is the whole phase: give no answers files beside it")
        work = stack.enter_context(tempfile.TemporaryDirectory(prefix="reteco-bulk-"))
        teams = bulk_download.read_team_names(args.team_names) if args.team_names else None
        selection = bulk_download.select_download(args.submissions, reference, Path(work), teams=teams)
        print(selection.summary(), file=sys.stderr)
        for s, why in selection.failed:
            print(f"{s.name}: failed the input checks, not selected: {why}", file=sys.stderr)
        for s in selection.kept:
            if s.problem is not None:
                print(f"{s.name}: not sampled: {s.problem}", file=sys.stderr)
        readable = [s for s in selection.kept if s.problem is None]
        systems, problems = hs.read_systems(reference, [s.path for s in readable],
                                            [selection.team(s.owner) for s in readable])
    else:
        systems, problems = hs.read_systems(reference, hs.submission_paths(args.submissions, args.answers))
    for line in problems.lines():
        print(line, file=sys.stderr)
    items, record = hs.sample(reference, systems, args.n if args.design == "stratified" else args.turns, args.seed,
                              args.design, args.systems_per_turn)
    if selection is not None:
        record["selection"] = selection.record()
    inputs = {d: config.prompts.dimensions[d].inputs for d in dimensions}
    record["dimensions"] = dimensions
    record["annotators"] = annotators
    record["prompt_version"] = config.prompts.version
    guide = annotator_guide(config.prompts, dimensions)
    try:
        for name in annotators:
            folder = args.out / hs.ANNOTATORS_FOLDER / name
            folder.mkdir(parents=True, exist_ok=True)
            ordered = hs.annotator_order(items, args.seed, name)
            rows = hs.write_sheet(folder / hs.SHEET, ordered, dimensions, name)
            hs.write_context(folder / hs.CONTEXT, ordered, reference, dimensions, inputs)
            (folder / hs.GUIDE).write_text(guide, encoding="utf-8")
        hs.write_key(args.out / hs.KEY, items)
        (args.out / hs.RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    if args.design == "paired":
        print(f"{record['sampled_turns']} of {record['eligible_turns']} turns (inclusion probability "
              f"{record['inclusion_probability']:.4g}), each for "
              + ("every system that answered it" if args.systems_per_turn is None else
                 f"at most {args.systems_per_turn} of the systems that answered it")
              + f": {record['sampled']} "
              f"(system, turn) items of {len(systems)} systems (seed {args.seed}): {rows} rows per sheet")
    else:
        print(f"{record['sampled']} of {record['candidates']} answered (system, turn) items of {len(systems)} systems "
              f"in {len(record['strata'])} strata (seed {args.seed}): {rows} rows per sheet")
    print(f"for each of {len(annotators)} annotator(s), a sheet, its context (holds reference data: do not publish) and "
          f"the guide (prompt version {config.prompts.version}) -> {args.out / hs.ANNOTATORS_FOLDER}/<name>/")
    print(f"the key (item code -> system, submission; organizers only) -> {args.out / hs.KEY}")
    print(f"sample record -> {args.out / hs.RECORD}")
    if args.judge_out is None:
        return EXIT_OK
    ok, why = judge_available(config)
    if not ok:
        raise InputError(f"the judge cannot run: {why}; the judge's ratings were not written", "--judge-out")
    from reteco.llm.cache import JudgeCacheError

    try:
        ratings, counts, stats = hs.judge_ratings(reference, items, dimensions, config, args.judge_cache,
                                                  0 if args.cache_only else None)
    except JudgeCacheError as exc:
        raise InputError(str(exc), "--judge-cache") from None
    if stats.calls.preflight == "failed":
        raise InputError(f"the judge did not run: {stats.calls.preflight_detail}", "--judge-out")
    hs.write_ratings(args.judge_out, ratings)
    print(f"judge {config.signature}: {len(ratings)} ratings -> {args.judge_out} ({stats.from_cache} from the cache, "
          f"{stats.http_requests} HTTP requests; {counts['invalid']} invalid and {counts['error']} failed judgments "
          "have no row)")
    print(f"judge, {this_run_line(stats.http_requests, stats.calls.usage.as_dict(config.prices()))}")
    if counts["error"]:
        print(f"error: {counts['error']} judgments failed; run again to finish them"
              + (" (without --cache-only to ask the judge)" if args.cache_only else ""), file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK
