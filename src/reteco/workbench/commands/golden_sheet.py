"""``reteco golden-sheet``: blind grading sheets of a golden set for human annotators.

    reteco golden-sheet --out DIR [--golden-version N] [--annotators N|NAME,NAME...] [--seed S]
                        [--prompt-version P] [--pairs-per-tag K]

Writes, for each annotator, ``DIR/annotators/<name>/sheet.csv`` (and ``sheet.jsonl``, the same
rows) with every case of golden set N (default: the latest) in an order of its own, without any
intended grade, case id, tag or purpose, and ``guide.md``, the rubric of prompt version P (default:
the one the golden set was graded for; golden v2: the packaged judge's); and, for the organizers,
``DIR/key.json`` (item id -> case id). ``--pairs-per-tag K``: only the cases of K minimal pairs
per contrast tag, drawn with the seed (golden v5 whole is 2,640 items an annotator; K = 3 is about
a fifth of it). What a row holds and why it is blind:
``reteco.workbench.judge_audit.golden_sheet``. The filled sheets are read back by
``reteco judge-meta --human-grades DIR/annotators/*/sheet.csv --golden-key DIR/key.json``.

Exit 1 when the golden set or the prompt version cannot be used, or DIR already holds a key (a
second run would draw another secret, and the first sheets, perhaps already handed out, could
no longer be read back).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reteco.problems import EXIT_OK, InputError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``golden-sheet`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "golden-sheet",
        help="blind grading sheets of a golden set for human annotators (no intended grade), and the organizers' key",
        description="Write, for each annotator, the golden set's cases as a blind grading sheet (one order per "
        "annotator) with the rubric as the guide, and for the organizers the key that `reteco judge-meta "
        "--human-grades` reads the filled sheets back with.",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for annotators/<name>/ and key.json")
    p.add_argument("--golden-version", type=int, default=None, help="golden set version, 2 on (default: the latest)")
    p.add_argument("--annotators", default="2",
                   help="a count N (annotator-1 ... annotator-N) or comma-separated names (default: 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the annotators' orders (default 0)")
    p.add_argument("--pairs-per-tag", type=int, default=None, metavar="K",
                   help="only the cases of K minimal pairs per contrast tag, drawn with the seed (default: every case)")
    p.add_argument("--prompt-version", type=int, default=None,
                   help="the rubric's prompt version (default: the one the golden set was graded for)")
    p.set_defaults(func=cmd_golden_sheet)
    return p


def cmd_golden_sheet(args) -> int:
    """Run the command (module docstring)."""
    from reteco.commands.output_folder import check_output_folder
    from reteco.judge.config import load_judge_config
    from reteco.judge.prompts import load_prompt_set
    from reteco.workbench.judge_audit import golden_sheet as gs
    from reteco.workbench.judge_audit.golden import LATEST_GOLDEN, golden_prompt_version, load_golden_set
    from reteco.workbench.judge_audit.human_sample import annotator_names

    check_output_folder(args.out, "--out")
    if (args.out / gs.KEY).exists():
        raise InputError(f"already holds {gs.KEY} (sheets written before, perhaps handed out): choose another --out, "
                         "or remove the folder if those sheets are not used", str(args.out))
    version = args.golden_version if args.golden_version is not None else LATEST_GOLDEN
    if version < 2:
        raise InputError("a golden set with intended grades is version 2 or later", "--golden-version")
    annotators = annotator_names(args.annotators)
    try:
        cases = load_golden_set(version)
    except ValueError as exc:
        raise InputError(str(exc), "golden set") from None
    prompt_version = args.prompt_version or golden_prompt_version(version) or load_judge_config().prompt_version
    try:
        prompts = load_prompt_set(prompt_version)
    except (ValueError, OSError) as exc:  # no such version, or one that fails its manifest (PromptIntegrityError)
        raise InputError(f"prompt version {prompt_version} cannot be used: {exc}", "--prompt-version") from None
    unknown = sorted({c.item.dimension for c in cases} - set(prompts.dimension_names))
    if unknown:
        raise InputError(f"prompt version {prompt_version} has no rubric for {', '.join(unknown)}, which golden set "
                         f"{version} grades", "--prompt-version")
    if args.pairs_per_tag is not None:
        if args.pairs_per_tag < 1:
            raise InputError("must be at least 1", "--pairs-per-tag")
        if not any(c.pairs for c in cases):
            raise InputError(f"golden set {version} has no tagged pairs to draw (version 3 on)", "--pairs-per-tag")
    try:
        key = gs.write_golden_sheets(args.out, cases, version, prompts, annotators, args.seed,
                                     pairs_per_tag=args.pairs_per_tag)
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    drawn = "" if args.pairs_per_tag is None else f" ({len(key.items)} of them: {args.pairs_per_tag} pairs per tag)"
    print(f"golden set {version}: {len(cases)} cases{drawn}, graded on the rubric of prompt version {prompt_version}")
    print(f"for each of {len(annotators)} annotator(s), a blind sheet in an order of its own (seed {args.seed}) and the "
          f"guide -> {args.out / gs.ANNOTATORS_FOLDER}/<name>/")
    print(f"the key (item id -> case id; organizers only, never hand it out) -> {args.out / gs.KEY}")
    return EXIT_OK
