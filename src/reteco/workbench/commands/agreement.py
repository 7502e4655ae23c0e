"""``reteco agreement``: how well the LLM judge agrees with human raters, per dimension.

    reteco agreement --judge JUDGE.csv --human HUMAN.csv [HUMAN.csv ...] [--key KEY.csv] --out DIR
                     [--seed S] [--resamples R]

Every file is a ratings CSV (``reteco.formats.ratings``: ``item_id,conversation_id,dimension,
rater,score[,system]``): ``--judge`` holds the judge's scores (one rater, the judge), ``--human``
the human raters' (one file, or one per annotator). ``reteco human-sample`` writes the blind
sheets the annotators fill and ``--judge-out`` the judge's file of the same items, all keyed by
item code only: ``--key`` (its ``key.csv``) joins each item to its conversation and system.
A judge's file names its judge by signature (rater ``<model>@<signature>``; exit 1 otherwise),
so that the figures are attributed to that judge (``method.judge_signature``, which
``reteco judge-report`` checks). ``--second-judge FILE`` instead of ``--human`` compares two
judges: nothing then calls the second one humans (``reteco.metrics.agreement``), and a
``--human`` file whose raters are all judges is refused with that advice. Writes ``DIR/agreement.json`` (``reteco.metrics.agreement``:
kappa, exact and within-1 agreement, Spearman, Kendall, ordinal alpha, bias, each with a
bootstrap interval over conversations; the human ceiling; the system-level correlation) and
``DIR/agreement.html`` (``reteco.workbench.judge_audit.agreement_page``), and prints a summary. Exit 1 when a
file cannot be used (the messages name the file and line) or no item is in both files, 2 on a
wrong command line (a negative ``--seed``, ``--resamples`` above ``MAX_RESAMPLES``, 20,000).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.formats.jsonl_records import atomic_write
from reteco.problems import InputError, UsageError


def add_agreement_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``agreement`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "agreement",
        help="judge-human agreement per dimension (kappa, alpha, Spearman, bias, bootstrap intervals)",
        description="Compare the judge's ratings with human ratings of the same items; write agreement.json and "
        "agreement.html.",
    )
    p.add_argument("--judge", type=Path, required=True, help="the judge's ratings CSV (one rater)")
    against = p.add_mutually_exclusive_group(required=True)
    against.add_argument("--human", type=Path, nargs="+",
                         help="the human ratings CSV (one or more raters per item), or one file per annotator")
    against.add_argument("--second-judge", type=Path,
                         help="instead of --human: a second judge's ratings CSV (one rater), to compare two judges")
    p.add_argument("--key", type=Path,
                   help="the key of a blind sample (reteco human-sample's key.csv): item code -> conversation, system")
    p.add_argument("--out", type=Path, required=True, help="folder for agreement.json and agreement.html")
    # Defaults are the library's (reteco.metrics.agreement), read when the command runs: importing
    # scipy to build the parser would slow every other command down.
    p.add_argument("--seed", type=count_argument(0),
                   help="bootstrap seed, 0 or more (default: reteco.metrics.agreement.DEFAULT_SEED)")
    p.add_argument("--resamples", type=count_argument(1),
                   help="bootstrap resamples (default: reteco.metrics.agreement.DEFAULT_RESAMPLES; at most "
                   "reteco.metrics.agreement.MAX_RESAMPLES, 20000: memory grows with them)")
    p.set_defaults(func=cmd_agreement)
    return p


def cmd_agreement(args) -> int:
    """Run the command (module docstring)."""
    from reteco.commands.output_folder import check_output_folder
    from reteco.formats.ratings import judge_signature, merge_ratings, read_item_key, read_ratings, require_judge_rater
    from reteco.metrics.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_RESAMPLES, agreement
    from reteco.workbench.judge_audit.agreement_page import render

    if args.resamples is not None and args.resamples > MAX_RESAMPLES:
        raise UsageError(f"argument --resamples: {args.resamples} is more than {MAX_RESAMPLES}: memory grows with the "
                         f"resamples (the default is {DEFAULT_RESAMPLES})")
    check_output_folder(args.out, "--out")
    key = read_item_key(args.key) if args.key is not None else None
    judge = read_ratings(args.judge, single_rater=True, key=key)
    signature = require_judge_rater(judge, "--judge")
    if args.second_judge is not None:
        reference = "judge"
        other = read_ratings(args.second_judge, single_rater=True, key=key)
        require_judge_rater(other, "--second-judge")
    else:
        reference = "humans"
        other = merge_ratings([read_ratings(path, key=key) for path in args.human])
        if all(judge_signature(r) for r in other.raters()):
            raise InputError(f"every rater of --human is a judge ({', '.join(other.raters())}): to compare two judges "
                             "give the second one as --second-judge", other.file)
    seed = DEFAULT_SEED if args.seed is None else args.seed
    resamples = DEFAULT_RESAMPLES if args.resamples is None else args.resamples
    result = agreement(judge, other, seed=seed, resamples=resamples, reference=reference)
    result["method"]["judge_signature"] = signature
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write(args.out / "agreement.json", json.dumps(result, indent=2, allow_nan=False) + "\n")
        atomic_write(args.out / "agreement.html", render(result))
    except OSError as exc:
        raise InputError(f"cannot write the results here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    sys.stdout.write(console_table(result))
    print(f"wrote {args.out / 'agreement.json'} and {args.out / 'agreement.html'}", file=sys.stderr)
    return 0




def console_table(result: dict) -> str:
    """One line per dimension, its columns named as in agreement.json (what each is: the
    ``--help``, the docs): items compared, the judge's kappa, the humans' own kappa ceiling and
    alpha, alpha with the judge, Spearman, and the bias with its sign spelled out. Two judges:
    no human column, and the bias is judge minus second judge."""
    humans = result["method"].get("reference", "humans") == "humans"
    ceiling = (result.get("ceiling") or {}).get("dimensions", {})
    columns = [("items", None), ("kappa_quadratic", "kappa_quadratic")]
    if humans:
        columns += [("ceiling.kappa_quadratic", None), ("alpha_ordinal_humans", "alpha_ordinal_humans")]
    columns += [("alpha_ordinal_with_judge" if humans else "alpha_ordinal_both_judges", "alpha_ordinal_with_judge"),
                ("spearman", "spearman"),
                ("bias (judge - humans)" if humans else "bias (judge - second judge)", "bias")]
    rows = [["dimension", *(name for name, _ in columns)]]
    for dimension, block in result["dimensions"].items():
        row = [dimension]
        for name, key in columns:
            if name == "items":
                row.append(str(block["n_items"]))
                continue
            figure = (ceiling.get(dimension) or {}).get("kappa_quadratic") if key is None else block.get(key)
            value = (figure or {}).get("value")
            row.append(f"{value:.3f}" if value is not None else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) + "\n"
                   for r in rows)
    return text + system_level_table(result)


def system_level_table(result: dict) -> str:
    """The system rankings' agreement, one line per dimension and judge_mean: Kendall's tau-b and
    tau_AP with their intervals, or the point alone and the interval's note in words
    (``reteco.metrics.rank_agreement``)."""
    from reteco.metrics.rank_agreement import figure_text

    level = result.get("system_level")
    if not level:
        return ""
    blocks = {**level["dimensions"], **({"judge_mean": level["judge_mean"]} if "judge_mean" in level else {})}
    lines = [f"system rankings (tau_AP's reference: {level.get('tau_ap_reference', '?')})"]
    for name, block in blocks.items():
        note = block.get("interval_note")
        lines.append(f"  {name:<14} systems {block['n_systems']:>3}  tau_b {figure_text(block['kendall_tau_b'], note)}"
                     f"  tau_AP {figure_text(block['tau_ap'], note)}" + (f"  ({note})" if note else ""))
    return "\n".join(lines) + "\n"
