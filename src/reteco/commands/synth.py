"""``reteco synth``: the built-in synthetic release (and the starting kit's sample submissions)."""

from __future__ import annotations

from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.commands.output_folder import check_output_folder


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("synth", help="write the built-in synthetic release (and sample submissions)")
    p.add_argument("--out", type=Path, required=True, help="folder for the release")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--samples", type=Path, help="also write sample runs and answers for the dev split here")
    p.add_argument("--scale", type=count_argument(1), default=1,
                   help="N times the queries and conversations per domain and split (a rehearsal at the test set's "
                   "size: --scale 40 gives about 2,000 Track 2 turns per split); ids never collide (default 1)")
    p.set_defaults(func=cmd_synth)


def cmd_synth(args) -> int:
    from reteco.release.synthetic.release import release_sizes, write_synthetic_release
    from reteco.release.synthetic.sample_runs import write_sample_runs

    check_output_folder(args.out, "--out")
    if args.samples:
        check_output_folder(args.samples, "--samples")
    kwargs = {} if args.seed is None else {"seed": args.seed}
    release = write_synthetic_release(args.out, scale=args.scale, **kwargs)
    sizes = release_sizes(release)
    print(f"synthetic release written to {release}" + (f" (scale {args.scale})" if args.scale > 1 else ""))
    for split, (queries, turns) in sizes.items():
        print(f"  {split}: {queries:,} Track 1 queries, {turns:,} Track 2 turns")
    if args.samples:
        from reteco.release.synthetic.sample_answers import write_sample_answers

        write_sample_runs(release, args.samples)
        write_sample_answers(release, args.samples)
        print(f"sample runs and answers (dev split) written to {args.samples}")
    return 0
