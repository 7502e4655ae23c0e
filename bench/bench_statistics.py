"""What the organizers' statistics cost: the leaderboard's significance tests and the judge's agreement.

    .venv/bin/python bench/bench_statistics.py [--systems 50] [--units 350] [--resamples 10000]
        [--items 1000] [--raters 3] [--agreement-resamples 2000] [--agreement-systems 0]
        [--rounds 3] [--seed 7]

1. ``reteco.metrics.significance.compare_systems`` (what ``reteco leaderboard`` runs per
   sub-track): bootstrap intervals for every system and paired randomization tests of every
   pair with Holm's correction, on SYSTEMS x UNITS per-topic scores (seeded uniform figures
   with a per-system offset, so some pairs differ and some do not), RESAMPLES each.
2. ``reteco.metrics.agreement.agreement`` (what ``reteco agreement`` runs): ITEMS items x 5
   dimensions, one judge and RATERS humans (seeded 1..5 grades near a shared truth),
   AGREEMENT_RESAMPLES conversation-level bootstrap resamples; with AGREEMENT_SYSTEMS, item i is
   of system i mod AGREEMENT_SYSTEMS, so the system-level Kendall tau (every pair of systems in
   every resample) is computed too, and the agreement's peak traced memory (``tracemalloc``,
   which numpy reports its arrays to; one more call, untimed) is printed as well.

Each is timed ROUNDS times in this process (wall time, median reported) after one warm-up
call; the figures are printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc

import numpy as np

from reteco.formats.ratings import Rating, Ratings
from reteco.metrics.agreement import agreement
from reteco.metrics.significance import compare_systems
from reteco.subtracks import DIMENSIONS


def significance_input(systems: int, units: int, seed: int) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    offsets = np.linspace(0.0, 0.1, systems)[:, None]
    scores = np.clip(rng.uniform(0.0, 0.8, (systems, units)) + offsets, 0.0, 1.0)
    order = np.argsort(-scores.mean(axis=1), kind="stable")  # best first, as compare_systems wants
    return scores[order], [f"system_{i}" for i in order]


def agreement_input(items: int, raters: int, seed: int, systems: int = 0) -> tuple[Ratings, Ratings]:
    rng = np.random.default_rng(seed)
    judge, humans = [], []
    for i in range(items):
        conversation = f"c{i // 4}"
        system = f"s{i % systems}" if systems else None
        for dimension in DIMENSIONS:
            truth = int(rng.integers(1, 6))
            grade = lambda: int(np.clip(truth + rng.integers(-1, 2), 1, 5))  # noqa: E731
            judge.append(Rating(f"i{i}", conversation, dimension, "judge", grade(), system, len(judge) + 2))
            humans += [Rating(f"i{i}", conversation, dimension, f"h{r}", grade(), system, len(humans) + r + 2)
                       for r in range(raters)]
    return Ratings("judge.csv", tuple(judge), bool(systems)), Ratings("humans.csv", tuple(humans), bool(systems))


def traced_peak(call) -> int:
    """The peak of memory traced by ``tracemalloc`` during ``call`` (numpy's arrays included), in bytes."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def timed(call, rounds: int) -> list[float]:
    call()
    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        walls.append(time.perf_counter() - started)
    return walls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--units", type=int, default=350)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--agreement-resamples", type=int, default=2000)
    parser.add_argument("--agreement-systems", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    scores, names = significance_input(args.systems, args.units, args.seed)
    # Holm, as the figures below were measured (the Tukey HSD default: bench_leaderboard_paper.py).
    sig = timed(lambda: compare_systems(scores, names, resamples=args.resamples, seed=args.seed, procedure="holm"),
                args.rounds)
    judge, humans = agreement_input(args.items, args.raters, args.seed, args.agreement_systems)
    run_agreement = lambda: agreement(judge, humans, resamples=args.agreement_resamples, seed=args.seed)  # noqa: E731
    agr = timed(run_agreement, args.rounds)
    systems = f", {args.agreement_systems} systems" if args.agreement_systems else ""
    pairs = args.systems * (args.systems - 1) // 2
    print("| job | size | rounds (s) | median (s) |")
    print("|---|---|---|---:|")
    print(f"| compare_systems (leaderboard) | {args.systems} systems x {args.units} units, {pairs} pairs, "
          f"{args.resamples} resamples | {' / '.join(f'{w:.2f}' for w in sig)} | {statistics.median(sig):.2f} |")
    print(f"| agreement | {args.items} items x {len(DIMENSIONS)} dimensions, judge + {args.raters} humans, "
          f"{args.agreement_resamples} resamples{systems} | {' / '.join(f'{w:.2f}' for w in agr)} | "
          f"{statistics.median(agr):.2f} |")
    if args.agreement_systems:
        print(f"\nagreement, peak traced memory: {traced_peak(run_agreement) / 1024**2:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
