"""``reteco judge-probe``: the judge probe's bundle, and the model's shutdown date checked now.

    reteco judge-probe --judge-config C --out DIR [--judge-phases PHASES] [--no-local]

Writes ``DIR/reteco_judge_probe.zip`` (``reteco.codabench.program.judge_probe``: upload it to the queue
the competition will use, submit its solution, read the log and probe.json), then asks the
endpoint about the model from this machine (unless ``--no-local``) and prints a warning for each
judged phase that ends after the model's announced shutdown date (the endpoint's
``shutdown_date``, else ``reteco.llm.model_retirement.KNOWN_SHUTDOWN_DATES``). This machine
reaching the endpoint says nothing of the worker's network: only the uploaded probe does.

Exit codes: 0 written (warnings included); 1 the judge config cannot be used (no key) or a
phase is unknown; 2 the command line is wrong (no --judge-config).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reteco.commands.judge_options import add_judge_config_option
from reteco.problems import EXIT_OK, InputError, UsageError

DEFAULT_PHASES = "evaluation,post_evaluation"  # reteco.workbench.codabench.bundle.builder.BuildOptions.judge_phases


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``reteco judge-probe``."""
    p = subparsers.add_parser(
        "judge-probe",
        help="build the judge probe bundle: does the judge's endpoint answer from Codabench's worker?",
        description=__doc__.split("\n\n", 2)[2].split("\n\nExit codes")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_judge_config_option(p, help_text="the judge config the bundle will use (its endpoint, model and key)")
    p.add_argument("--out", type=Path, required=True, help="folder to write reteco_judge_probe.zip into")
    p.add_argument("--judge-phases", default=DEFAULT_PHASES, metavar="PHASES",
                   help=f"the phases that will judge, whose ends the model's shutdown date is checked against "
                   f"(default: {DEFAULT_PHASES})")
    p.add_argument("--no-local", action="store_true", help="do not ask the endpoint from this machine")
    p.set_defaults(func=cmd_judge_probe)
    return p


def cmd_judge_probe(args) -> int:
    from reteco.codabench.program.judge_probe import probe, report_lines
    from reteco.codabench.program.judge_setup import load_for_bundle
    from reteco.llm.model_retirement import SOURCE, known_shutdown, retirement_warning
    from reteco.workbench.codabench.bundle.competition import PHASES
    from reteco.workbench.codabench.bundle.judge_probe_bundle import build_probe_bundle, probe_record

    if args.judge_config is None:
        raise UsageError("--judge-config is required: the judge the competition will use")
    phases = tuple(k.strip() for k in args.judge_phases.split(",") if k.strip())
    unknown = [k for k in phases if k not in {p.key for p in PHASES}]
    if unknown or not phases:
        raise InputError(f"unknown phase(s) {', '.join(unknown) or '(none given)'}; the phases are "
                         f"{', '.join(p.key for p in PHASES)}", "--judge-phases")
    setup = load_for_bundle(args.judge_config)
    path = build_probe_bundle(setup, args.out, phases)
    print(f"built {path}: upload it to the queue the competition will use, submit its solution, and read the log "
          "and the scoring output's probe.json (docs/codabench_judge.md)")
    if args.no_local:
        model = setup.config.model
        for phase in (p for p in PHASES if p.key in phases):
            warning = retirement_warning(model, known_shutdown(model), phase.name, phase.end,
                                         f"reteco's table of announced dates: {SOURCE}")
            if warning:
                print(f"WARNING: {warning}", file=sys.stderr)
        return EXIT_OK
    print("from this machine (not the worker):")
    for line in report_lines(probe(probe_record(setup, phases), setup.key, timeout_s=10.0)):
        print(f"  {line}", file=sys.stderr if line.startswith("WARNING") else sys.stdout)
    return EXIT_OK
