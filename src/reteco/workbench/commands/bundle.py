"""``reteco bundle`` (``make bundle``): build the Codabench competition bundle(s), or with ``--platform
codalab`` the CodaLab Competitions v1.5 ones (``reteco.workbench.codabench.bundle.codalab``), then check them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reteco.codabench.program import image
from reteco.commands.judge_options import add_judge_config_option
from reteco.problems import InputError
from reteco.subtracks import SUBTRACK_IDS
from reteco.workbench.codabench.bundle import codalab, vendor
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle.builder import BuildOptions, build, write_reference_data
from reteco.workbench.codabench.check.check_bundle import add_time_limit_argument, check_bundle, print_report
from reteco.workbench.codabench.check.upload_storage import megabytes


def add_parser(subparsers) -> None:
    """Register ``reteco bundle`` on the CLI's subparsers."""
    p = subparsers.add_parser("bundle", help="build the Codabench competition bundle(s) and check them")
    p.add_argument("--release", type=Path, help="organizers' release folder (default: the synthetic release)")
    p.add_argument("--test-release", type=Path, help="release folder with the hidden test labels (default: --release)")
    p.add_argument("--dev-split", default="dev", help="split of the Development phase (default: dev)")
    p.add_argument("--test-split", default="test", help="split of the Evaluation and Post-evaluation phases")
    p.add_argument("--layout", choices=definition.LAYOUTS, default=definition.DEFAULT_LAYOUT,
                   help="one competition per sub-track (default), or one with five tasks per phase (loses entries: "
                   "check-bundle refuses it)")
    p.add_argument("--platform", choices=codalab.PLATFORMS, default=codalab.DEFAULT_PLATFORM,
                   help="codabench (default), or codalab: CodaLab Competitions v1.5 bundles, one per sub-track "
                   "(docs/codalab.md)")
    p.add_argument("--subtracks", default=",".join(SUBTRACK_IDS), help="comma-separated (default: all five)")
    p.add_argument("--code-submission", action="store_true",
                   help="add the ingestion program and input data (code submissions); off by default")
    p.add_argument("--python", default=image.PYTHON,
                   help=f"Python version the vendored wheels target (default: the image's, {image.PYTHON})")
    p.add_argument("--wheels", choices=vendor.SOURCES, default="pip",
                   help="pip: download for --python (cached); environment: copy this interpreter's packages")
    p.add_argument("--out", type=Path, default=Path("dist"))
    p.add_argument("--build-dir", type=Path, default=Path("build/bundle"))
    p.add_argument("--cache", type=Path, default=Path("build/wheels"), help="downloaded wheels, reused offline")
    p.add_argument("--external", action="append", default=[], metavar="PATH=KEY",
                   help="leave bundle file PATH out and name the Codabench dataset KEY instead (repeatable)")
    p.add_argument("--no-check", action="store_true", help="do not run check-bundle on the result")
    p.add_argument("--python-exe", type=Path, help="interpreter for the check's simulated worker")
    add_judge_config_option(p, help_text="judge 2b/2c on the platform: this judge config (the one `reteco judge "
                            "--judge-config` reads) and its key, read now, go into the reference data of the "
                            "--judge-phases' 2b and 2c tasks only (docs/codabench_judge.md)")
    judge_phases = ",".join(BuildOptions.judge_phases)  # the build's default
    p.add_argument("--judge-phases", default=judge_phases, metavar="PHASES",
                   help=f"comma-separated phase keys that judge with --judge-config (default: {judge_phases})")
    p.add_argument("--write-yaml", type=Path, metavar="FILE",
                   help="only write the layout's competitions to FILE, one YAML document each (the committed copy)")
    p.add_argument("--reference-data", type=Path, metavar="DIR",
                   help="only write the public phases' reference data to DIR, the zips the bundles carry "
                   "(make reference-data: reference_data/README.md)")
    add_time_limit_argument(p)
    p.set_defaults(func=cmd_bundle)


def cmd_bundle(args) -> int:
    subtracks = tuple(s.strip() for s in args.subtracks.split(",") if s.strip())
    if args.write_yaml:
        text = (codalab.render_all(subtracks) if args.platform == "codalab"
                else definition.render_all(args.layout, subtracks))
        args.write_yaml.write_text(text, encoding="utf-8")
        print(f"wrote {args.write_yaml}")
        return 0
    external = {}
    for item in args.external:
        path, sep, key = item.partition("=")
        if not sep or not path or not key:
            raise InputError(f"--external expects PATH=KEY, got {item!r}", "command line")
        external[path] = key
    options = BuildOptions(
        release=args.release,
        test_release=args.test_release,
        dev_split=args.dev_split,
        test_split=args.test_split,
        layout=args.layout,
        subtracks=subtracks,
        code_submission=args.code_submission,
        python=args.python,
        wheels=args.wheels,
        out=args.out,
        build_dir=args.build_dir,
        cache=args.cache,
        external=external,
        judge_config=args.judge_config,
        judge_phases=tuple(k.strip() for k in args.judge_phases.split(",") if k.strip()),
        time_limit=args.time_limit,
    )
    if args.reference_data:
        written = write_reference_data(dataclasses.replace(options, build_dir=options.build_dir / "reference_data"),
                                       args.reference_data)
        release = args.release or "the synthetic release"
        print(f"wrote {len(written)} reference data zips of the public phases from {release} ({args.dev_split}) "
              f"into {args.reference_data}")
        return 0
    built = codalab.build_codalab(options) if args.platform == "codalab" else build(options)
    status = 0
    for bundle in built:
        print(f"built {bundle.path} ({megabytes(bundle.sizes['(bundle)'])})")
        if bundle.judged:
            # Where the key went, never the key: the build's log may be shared.
            print(f"  judge and its key in: {', '.join(bundle.judged)}")
        for member, size in sorted(bundle.sizes.items()):
            if member != "(bundle)" and size > 1 << 20:
                print(f"  {member}: {megabytes(size)}")
    if args.no_check:
        return 0
    for bundle in built:
        report = check_bundle(
            bundle.path, datasets=bundle.external, cache=options.cache, python_exe=args.python_exe,
            wheels=options.wheels, time_limit=args.time_limit,
        )
        print_report(report)
        status = status or (1 if report.errors else 0)
    return status
