"""``reteco check-bundle BUNDLE.zip``: validate a bundle offline, as Codabench would unpack and run it.

Two passes; every problem is reported at once, each prefixed with the rule it breaks.

1. Static rules, read from Codabench's source: the unpacker's rules on the bundle's files
   (``unpacker_rules``: zip, yaml, required keys, files, logo, programs, reference data, tasks,
   solutions, fact sheet) and on its phases and leaderboard (``competition_rules``: dates, the
   effective time limit, who sees what, the submission rule, entries a layout would lose,
   columns and keys), and on the judge's setup where a task judges (``judge_rules``: its key in
   no other file, its phase's scoring output hidden, its model's shutdown date), and on what
   participants can reach of the reference data (``exposure_rules``). Then what one upload stores
   (``upload_storage``), reported, not judged.
2. The simulated compute worker (``scoring_check``, on ``worker_simulation``): every solution of
   every task, and the checks of each run's output (a judged task's key in no log or output).

A CodaLab Competitions v1.5 bundle (``reteco bundle --platform codalab``: html pages, numbered
phases) is checked by ``codalab_rules`` instead: v1.5's unpacker rules and its simulated worker.

The command is ``reteco.workbench.commands.check_bundle``; ``check_bundle``, ``print_report``,
``find_python``, ``scoring_output_errors`` and ``Report`` are importable from here.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from reteco.workbench.codabench.check import (
    codalab_rules,
    competition_rules,
    exposure_rules,
    judge_rules,
    scoring_check,
    unpacker_rules,
)
from reteco.workbench.codabench.check.check_report import Report
from reteco.workbench.codabench.check.competition_rules import PLATFORM_TIME_LIMIT
from reteco.workbench.codabench.check.scoring_check import find_python, scoring_output_errors
from reteco.workbench.codabench.check.upload_storage import upload_storage

__all__ = [
    "Report", "add_time_limit_argument", "check_bundle", "find_python", "print_report",
    "scoring_output_errors",
]


def check_bundle(
    bundle: Path,
    *,
    datasets: dict[str, Path] | None = None,
    simulate: bool = True,
    cache: Path = Path("build/wheels"),
    python_exe: Path | None = None,
    wheels: str | None = None,
    time_limit: int = PLATFORM_TIME_LIMIT,
    network: str = "none",
    allow_judge_shutdown: str | None = None,
) -> Report:
    """Check ``bundle`` (a zip); ``datasets`` maps Codabench dataset keys to local files.

    ``time_limit`` is the most a run gets on the worker: Codabench's default queue's 600 s
    (``MAX_EXECUTION_TIME_LIMIT``), or a custom queue's limit. ``network``: what the simulated
    runs may reach (``worker_simulation.NETWORKS``: nothing, or loopback only for a local judge
    endpoint). ``allow_judge_shutdown``: why a judge model announced to leave before a judged
    phase ends is kept (the refusal becomes a note with the reason; ``judge_rules``).
    """
    report = Report(Path(bundle), judge_shutdown_allowed=allow_judge_shutdown)
    datasets = datasets or {}
    with tempfile.TemporaryDirectory(prefix="reteco-check-") as tmp:
        root = Path(tmp) / "bundle"
        content = unpacker_rules.unpack(Path(bundle), root, report)
        if content is None:
            return report
        if codalab_rules.is_codalab(content):  # a CodaLab Competitions v1.5 bundle: its own rules
            codalab_rules.check(Path(bundle), content, root, report, simulate=simulate, cache=cache,
                                python_exe=python_exe, wheels=wheels, tmp=Path(tmp))
            return report
        unpacker_rules.check_top_level(content, root, report)
        tasks = unpacker_rules.check_tasks(content, root, datasets, report)
        unpacker_rules.check_solutions(content, root, tasks, datasets, report)
        competition_rules.check_phases(content, root, tasks, report, time_limit=time_limit)
        competition_rules.check_leaderboards(content, tasks, report)
        judge_rules.check_judged_tasks(root, tasks, report)
        exposure_rules.check_exposure(content, root, tasks, report)
        unpacker_rules.check_fact_sheet(content.get("fact_sheet"), report)
        report.storage = upload_storage(content, root, Path(bundle))
        if simulate and not report.errors:
            scoring_check.simulate(content, root, tasks, datasets, report, cache=cache, python_exe=python_exe,
                                   wheels=wheels, tmp=Path(tmp), time_limit=time_limit, network=network)
        elif simulate:
            report.note("the compute worker was not simulated: fix the errors above first")
    return report


def print_report(report: Report) -> None:
    """Runs, notes and storage on stdout, errors on stderr, then the verdict."""
    for run in report.runs:
        print(f"  ran {run['solution']} on {run['task']}: exit {run['returncode']} in {run['seconds']} s")
    for note in report.notes:
        print(f"  note: {note}")
    if report.storage is not None:
        for line in report.storage.lines():
            print(f"  storage: {line}")
    for error in report.errors:
        print(f"  error: {error}", file=sys.stderr)
    verdict = "FAILED" if report.errors else "passed"
    print(f"check-bundle {report.bundle}: {verdict} ({len(report.errors)} errors, {len(report.runs)} simulated runs)")


def positive_seconds(text: str) -> int:
    """An argparse type: a positive whole number of seconds."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def add_time_limit_argument(parser: argparse.ArgumentParser) -> None:
    """``--time-limit SECONDS``, shared by ``check-bundle`` and ``bundle``."""
    parser.add_argument(
        "--time-limit", type=positive_seconds, default=PLATFORM_TIME_LIMIT, metavar="SECONDS",
        help=f"the most a run gets on the worker (default {PLATFORM_TIME_LIMIT}: Codabench's default queue sends "
        "min(MAX_EXECUTION_TIME_LIMIT, phase limit)); a custom queue's limit",
    )
