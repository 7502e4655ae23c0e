"""``reteco compare --ref REF RUN RUN ...``: the leaderboard's paired test and intervals between
two or more of a participant's runs (``reteco.scoring.comparison``; pages/evaluation.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reteco.metrics.significance import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_SEED, PROCEDURES
from reteco.problems import UsageError, printable


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="the leaderboard's intervals and paired test between two or more of your runs",
        description="Score each run against one reference and compare them as the organizers' ranked table "
        "does: a bootstrap interval of each run's official figure, a paired test of every pair, the groups.")
    p.add_argument("--ref", type=Path, required=True, help="reference folder of one sub-track (REF/1a, ...)")
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run files, folders or zips (two or more)")
    p.add_argument("--procedure", choices=PROCEDURES, default="tukey-hsd",
                   help="the pairwise test: tukey-hsd (the leaderboard's), holm or fdr")
    p.add_argument("--resamples", type=int, default=None, help="resamples (default: as many as the table needs)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE)
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    p.add_argument("--json", type=Path, metavar="OUT", help="also write the comparison as JSON to OUT")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from reteco.formats.phase_record import phase_rules
    from reteco.formats.reference import Reference
    from reteco.scoring.comparison import compare_results
    from reteco.scoring.retrieval import retrieval_score_keys
    from reteco.scoring.submission import score_submission

    if len(args.runs) < 2:
        raise UsageError("give two runs or more to compare")
    if len({str(r) for r in args.runs}) != len(args.runs):
        raise UsageError("a run is given twice")
    reference = Reference.read(args.ref)
    if reference.row is not None and not reference.row.takes_run:
        raise UsageError(f"sub-track {reference.subtrack} scores answers; compare ranks runs (1a, 1b, 2a, 2c's run)")
    official = reference.row.official if reference.row is not None and reference.row.official else retrieval_score_keys(reference)[0]
    per_topic = phase_rules(reference)["per_topic"]
    named = []
    for run in args.runs:
        result = score_submission(reference, run, per_topic=per_topic)
        for line in result.problems.lines():
            print(f"{printable(str(run))}: {line}", file=sys.stderr)
        named.append((str(run), result))
    found = compare_results(reference, official, named, procedure=args.procedure, resamples=args.resamples,
                            seed=args.seed, confidence=args.confidence, alpha=args.alpha)
    sys.stdout.write(comparison_text(found, args.procedure, args.confidence, args.alpha))
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return 0


def comparison_text(found: dict, procedure: str, confidence: float, alpha: float) -> str:
    """The comparison as a table of runs (best first) and a list of pairs."""
    width = max(len(printable(s["name"])) for s in found["systems"])
    key = found["official"]
    out = [f"{key} over {found['units']} units; {confidence:.0%} bootstrap intervals; {procedure} at alpha {alpha}",
           f"{'run':<{width}}  {key:>8}  {'interval':<17}  group"]
    for s in found["systems"]:
        out.append(f"{printable(s['name']):<{width}}  {s['mean']:8.4f}  [{s['ci_low']:.4f}, {s['ci_high']:.4f}]  {s['letters']}")
    out.append("pairs (the first run above the second):")
    for pair in found["pairs"]:
        verdict = "significant" if pair["significant"] else "not significant"
        out.append(f"  {printable(pair['a'])} - {printable(pair['b'])}: {pair['delta']:+.4f}, "
                   f"p adjusted {pair['p_adjusted']:.4f}: {verdict}")
    out += [f"warning: {w}" for w in found["warnings"]]
    return "\n".join(out) + "\n"
