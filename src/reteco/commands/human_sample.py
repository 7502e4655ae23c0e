"""``reteco human-sample``: the seeded stratified sample of answers that humans rate, and its sheet.

    reteco human-sample --ref REF/2b|2c (--submissions DIR | ANSWERS ...) --n N --seed S --out sheet.csv
                        [--context ctx.jsonl] [--dimensions d1,d2] [--judge-out judge.csv
                        [--judge-config FILE] [--judge-cache DIR] [--cache-only]]

What is sampled, how, and what each file holds (the sheet holds no reference data; the context
file does and goes to the annotators only): ``reteco.organizers.human_sample``. Exit 1 when an
input cannot be used; 2 on a wrong command line (two outputs that are one file, through
another spelling or a symbolic link too); 4 when ``--judge-out`` was asked and some judgments failed (the file holds
the others; run again to finish).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError


def add_human_sample_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``human-sample`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "human-sample",
        help="seeded stratified sample of 2b/2c answers for human rating: the rating sheet and its context file",
        description="Sample (system, turn) items stratified by domain, turn depth and system; write the rating sheet "
        "that `reteco agreement --human` reads, the annotators' context file and the sample record.",
    )
    p.add_argument("--ref", type=Path, required=True, help="reference folder of sub-track 2b or 2c")
    p.add_argument("--submissions", type=Path, help="folder holding one submission (file, zip or folder) per system")
    p.add_argument("answers", type=Path, nargs="*", help="more submissions (answers files, zips or folders)")
    p.add_argument("--n", type=count_argument(1), required=True, help="items to sample (all when fewer are available)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", type=Path, required=True, help="the rating sheet (CSV) to write")
    p.add_argument("--context", type=Path, help="the annotators' context file (default: SHEET with .context.jsonl)")
    p.add_argument("--dimensions", help="comma-separated dimensions to rate (default: all five)")
    p.add_argument("--judge-out", type=Path, help="also write the judge's ratings of the same items (agreement format)")
    add_judge_config_option(p, help_text="judge config YAML for --judge-out (default: judge.yaml)")
    add_judge_cache_option(p, used_for=" for --judge-out")
    p.add_argument("--cache-only", action="store_true", help="--judge-out from the cache only: no HTTP request")
    p.set_defaults(func=cmd_human_sample)
    return p


def cmd_human_sample(args) -> int:
    """Run the command (module docstring)."""
    from reteco.commands.output_folder import check_distinct_outputs
    from reteco.formats.reference import Reference
    from reteco.judge.config import judge_available, load_judge_config
    from reteco.organizers import human_sample as hs

    context = args.context or args.out.with_name(args.out.stem + ".context.jsonl")
    record_path = args.out.with_name(args.out.stem + ".sample.json")
    check_distinct_outputs({"--out": args.out, "--context": context, "the sample record (SHEET.sample.json)": record_path,
                            "--judge-out": args.judge_out})
    reference = Reference.read(args.ref)
    dimensions = hs.check_dimensions([d.strip() for d in args.dimensions.split(",") if d.strip()]) \
        if args.dimensions else list(hs.DIMENSIONS)
    config = load_judge_config(args.judge_config)  # its prompts say what each dimension shows
    systems, problems = hs.read_systems(reference, hs.submission_paths(args.submissions, args.answers))
    for line in problems.lines():
        print(line, file=sys.stderr)
    items, record = hs.sample(reference, systems, args.n, args.seed)
    inputs = {d: config.prompts.dimensions[d].inputs for d in dimensions}
    record["dimensions"] = dimensions
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        rows = hs.write_sheet(args.out, items, dimensions)
        hs.write_context(context, items, reference, dimensions, inputs)
        record_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    print(f"{record['sampled']} of {record['candidates']} answered (system, turn) items of {len(systems)} systems in "
          f"{len(record['strata'])} strata (seed {args.seed}): {rows} rows -> {args.out}")
    print(f"context for the annotators (holds reference data: do not publish) -> {context}")
    print(f"sample record -> {record_path}")
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
    if counts["error"]:
        print(f"error: {counts['error']} judgments failed; run again to finish them"
              + (" (without --cache-only to ask the judge)" if args.cache_only else ""), file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK
