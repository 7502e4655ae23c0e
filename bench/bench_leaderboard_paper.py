"""What the overview paper's tables and plots cost at a real participant count, and what they look like.

    PYTHONPATH=src .venv/bin/python bench/bench_leaderboard_paper.py [--teams 60] [--runs 3]
        [--units 18] [--subtracks 1a,2c] [--procedures tukey-hsd,holm] [--out bench/out/paper]
        [--screenshots]

For each sub-track and procedure: TEAMS x RUNS synthetic scored submissions
(``reteco.workbench.leaderboard.synthetic_outcomes``, UNITS units each), then
``build_leaderboard`` (bootstrap, rank intervals, the pairwise test, letters; resamples as the
table needs them), ``write_plots`` and ``write_tables`` into OUT/<teams x runs>/<sub-track>-<procedure>/.
Each step is timed once in a child process of its own (wall time) whose peak RSS (``ru_maxrss``)
is reported. With --screenshots, the HTML page is photographed at 1280 and 390 px in headless
Chromium (``reteco.workbench.codabench.chromium``) next to it. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path


def build_and_write(subtrack: str, teams: int, runs: int, units: int, procedure: str, out: str, queue) -> None:
    from reteco.workbench.leaderboard.plots import write_plots
    from reteco.workbench.leaderboard.standings import build_leaderboard
    from reteco.workbench.leaderboard.synthetic_outcomes import synthetic_outcomes
    from reteco.workbench.leaderboard.tables import write_tables

    entries, outcomes, unit_keys = synthetic_outcomes(subtrack, teams, runs, units=units)
    start = time.perf_counter()
    board = build_leaderboard(subtrack, entries, outcomes, unit_keys=unit_keys, procedure=procedure)
    statistics = time.perf_counter() - start
    start = time.perf_counter()
    board["plots"] = write_plots(board, Path(out))
    write_tables(board, Path(out), top=20)
    files = time.perf_counter() - start
    significant = sum(p["p_adjusted"] <= board["method"]["alpha"] for p in board["pairs"])
    queue.put({"statistics": statistics, "files": files, "significant": significant, "pairs": len(board["pairs"]),
               "resamples": board["method"]["resamples"], "warnings": len(board["warnings"]),
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "html_kb": (Path(out) / "leaderboard.html").stat().st_size / 1024})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--units", type=int, default=18)
    parser.add_argument("--subtracks", default="1a,2c")
    parser.add_argument("--procedures", default="tukey-hsd,holm")
    parser.add_argument("--out", type=Path, default=Path("bench/out/paper"))
    parser.add_argument("--screenshots", action="store_true")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    rows = []
    for subtrack in args.subtracks.split(","):
        for procedure in args.procedures.split(","):
            out = args.out / f"{args.teams}x{args.runs}" / f"{subtrack}-{procedure}"
            queue = context.Queue()
            child = context.Process(target=build_and_write,
                                    args=(subtrack, args.teams, args.runs, args.units, procedure, str(out), queue))
            child.start()
            child.join()
            if child.exitcode != 0 or queue.empty():
                print(f"{subtrack} {procedure}: the measuring process failed (exit {child.exitcode})", file=sys.stderr)
                return 1
            result = queue.get()
            rows.append((subtrack, procedure, result))
            if args.screenshots:
                from reteco.workbench.codabench.chromium import WIDTHS, Chromium

                with Chromium() as browser:
                    for width in WIDTHS:
                        report = browser.open(out / "leaderboard.html", width)
                        browser.screenshot(out / f"leaderboard-{width}px.png")
                        print(f"{subtrack} {procedure} {width} px: page {report.scroll_width} px wide", file=sys.stderr)
    systems = args.teams * args.runs
    print("| sub-track | procedure | systems | units | resamples | statistics (s) | files (s) | peak RSS (MB) "
          "| significant pairs | warnings | HTML (KB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for subtrack, procedure, r in rows:
        print(f"| {subtrack} | {procedure} | {systems} | {args.units} | {r['resamples']} | {r['statistics']:.1f} "
              f"| {r['files']:.1f} | {r['peak_mb']:.0f} | {r['significant']} of {r['pairs']} | {r['warnings']} "
              f"| {r['html_kb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
