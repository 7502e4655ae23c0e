"""``reteco check-bundle BUNDLE.zip``: a bundle checked as Codabench (or CodaLab Competitions v1.5)
would unpack and run it."""

from __future__ import annotations

from pathlib import Path

from reteco.problems import InputError
from reteco.workbench.codabench.check.check_bundle import add_time_limit_argument, check_bundle, print_report


def add_parser(subparsers) -> None:
    """Register ``reteco check-bundle`` on the CLI's subparsers."""
    p = subparsers.add_parser("check-bundle", help="validate a Codabench (or CodaLab v1.5) bundle offline and simulate the worker")
    p.add_argument("bundle", type=Path)
    p.add_argument("--dataset", action="append", default=[], metavar="KEY=FILE",
                   help="a Codabench dataset key named by the bundle, and the local file it holds (repeatable)")
    p.add_argument("--no-simulate", action="store_true", help="check the unpacker's rules only")
    p.add_argument("--cache", type=Path, default=Path("build/wheels"), help="where image wheels are cached")
    p.add_argument("--python-exe", type=Path, help="interpreter of the bundle's target Python (default: found here)")
    p.add_argument("--allow-judge-shutdown", metavar="REASON",
                   help="keep a judge model announced to shut down before a judged phase ends (refused otherwise); "
                   "the reason is written into the report")
    add_time_limit_argument(p)
    p.set_defaults(func=cmd_check_bundle)


def cmd_check_bundle(args) -> int:
    """Run ``reteco check-bundle``: exit 1 when the bundle breaks a rule."""
    datasets = {}
    for item in args.dataset:
        key, sep, path = item.partition("=")
        if not sep:
            raise InputError(f"--dataset expects KEY=FILE, got {item!r}", "command line")
        datasets[key] = Path(path)
    if not args.bundle.is_file():
        raise InputError("no such file", str(args.bundle))
    report = check_bundle(
        args.bundle, datasets=datasets, simulate=not args.no_simulate, cache=args.cache, python_exe=args.python_exe,
        time_limit=args.time_limit, allow_judge_shutdown=args.allow_judge_shutdown,
    )
    print_report(report)
    return 1 if report.errors else 0
