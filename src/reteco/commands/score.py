"""``reteco score`` and ``reteco validate``: a submission against one sub-track's reference data
(or a graded benchmark's qrels), by the one scoring code path (``reteco.scoring.submission``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reteco.commands.output_folder import check_output_folder
from reteco.formats.phase_record import PHASE_FILE, local_phase, read_phase
from reteco.problems import InputError, UsageError


def add_parser(subparsers) -> None:
    for name, func, text in (
        ("score", cmd_score, "score a submission: writes OUT/scores.json and OUT/details.json"),
        ("validate", cmd_validate, "check a submission with the scoring rules, without scoring it"),
    ):
        p = subparsers.add_parser(name, help=text)
        p.add_argument("--ref", type=Path, help="reference folder of one sub-track (REF/1a, ...)")
        p.add_argument("--benchmark", choices=["factir"], help=f"{name} against plain qrels with a benchmark preset")
        p.add_argument("--qrels", type=Path, help="with --benchmark: TREC qrels or pytrec_eval JSON")
        p.add_argument("--stance", type=Path, help="with --benchmark: 'topic docid stance' lines")
        if name == "score":
            p.add_argument("--res", type=Path, required=True, help="submission: zip, folder, run file (.gz ok), - for stdin")
            p.add_argument("--out", type=Path, required=True)
            p.add_argument("--engine", choices=["numpy", "pytrec_eval"], default="numpy")
            p.add_argument("--no-per-topic", action="store_true", help="leave per-topic figures out of details.json")
            p.add_argument("--judge-config", type=Path, help="2b/2c: judge config YAML (default: the packaged judge.yaml)")
            p.add_argument("--judge-cache", type=Path, help="2b/2c: judge cache folder (default: $RETECO_CACHE_DIR, ...)")
        else:
            p.add_argument("submission", type=Path, help="zip, folder, run file (.gz ok), - for stdin")
        p.set_defaults(func=func)


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
    from reteco.outputs.results import write_results
    from reteco.scoring.submission import score_submission

    check_output_folder(args.out, "--out")  # before scoring: a wrong --out costs nothing
    reference = _load_reference(args)
    phase = _phase(reference, args)
    judge_config = None
    if args.judge_config is not None:
        from reteco.judge.config import load_judge_config

        judge_config = load_judge_config(args.judge_config)  # a bad config is refused before scoring
    result = score_submission(reference, args.res, engine=args.engine, per_topic=phase["per_topic"],
                              judge_config=judge_config, cache_dir=args.judge_cache)
    result.problems.print(sys.stderr)
    try:
        absent = write_results(args.out, result, reference.subtrack, phase)
    except OSError as exc:
        raise InputError(f"cannot write the results here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    print(json.dumps(result.scores, indent=2))
    for reason, keys in _by_reason(absent).items():
        print(f"absent: {', '.join(keys)}: {reason}", file=sys.stderr)
    shown = "written" if phase["per_topic"] else "withheld"
    print(f"phase rules: {phase['name']}: per-topic figures {shown}; {args.out / 'detailed_results.html'} "
          "is the page the platform shows", file=sys.stderr)
    return 0


def _phase(reference, args) -> dict:
    """The phase rules this scoring applies: the reference's phase.json (as the platform reads
    it) when it has one, else local scoring (per-topic figures written); ``--no-per-topic``
    withholds them either way."""
    has_record = reference.root is not None and (reference.root / PHASE_FILE).is_file()
    phase = read_phase(reference.root)[0] if has_record else local_phase(reference.manifest.get("split"))
    if args.no_per_topic:
        phase = {**phase, "per_topic": False}
    return phase


def _by_reason(absent: dict[str, str]) -> dict[str, list[str]]:
    """Absent keys grouped by their reason: each reason said once."""
    grouped: dict[str, list[str]] = {}
    for key, reason in absent.items():
        grouped.setdefault(reason, []).append(key)
    return grouped


def cmd_validate(args) -> int:
    from reteco.scoring.submission import validate_submission

    reference = _load_reference(args)
    problems, summary = validate_submission(reference, args.submission)
    problems.print(sys.stderr)
    print(summary)
    return 0
