"""What the ranking-stability figures cost: topic-set stability and the tau intervals.

    .venv/bin/python bench/bench_stability.py [--systems 60] [--topics 2000] [--splits 1000]
        [--conversations 500] [--turns 4] [--resamples 10000] [--rounds 3] [--seed 7]

1. ``reteco.metrics.topic_stability.topic_set_stability`` (``reteco leaderboard
   --topic-stability``): SYSTEMS x TOPICS per-topic figures (seeded, a per-system offset plus
   noise, clipped to 0..1) for one metric, SPLITS random splits (the command's default), every
   size of the ladder up to the half-splits.
2. ``reteco.metrics.rank_agreement.system_rank_agreement`` (the system level of ``reteco
   agreement``, the re-judging and the second judge): SYSTEMS systems, each answering every turn
   of CONVERSATIONS x TURNS, two noisy scores per item, Kendall's tau-b and tau_AP with RESAMPLES
   bootstrap resamples over conversations.

Each is timed ROUNDS times in this process (wall time, median) after one warm-up call; the peak
traced memory (``tracemalloc``, which numpy reports its arrays to) of one more call is printed
too, as a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from bench_statistics import timed, traced_peak

from reteco.metrics.rank_agreement import system_rank_agreement
from reteco.metrics.topic_stability import DEFAULT_SPLITS, topic_set_stability


def measured(function, rounds: int) -> tuple[float, float]:
    """(median seconds over ``rounds`` after a warm-up, peak traced MB of one more call), by
    ``bench_statistics``'s helpers."""
    return statistics.median(timed(function, rounds)), traced_peak(function) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=60)
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--splits", type=int, default=DEFAULT_SPLITS)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    offsets = np.linspace(0.3, 0.5, args.systems)[:, None]
    figures = np.clip(offsets + rng.normal(0, 0.25, (args.systems, args.topics)), 0, 1)
    stability_s, stability_mb = measured(lambda: topic_set_stability({"ndcg_10": figures}, seed=1, splits=args.splits),
                                      args.rounds)
    items = args.conversations * args.turns * args.systems
    conversation = np.repeat(np.arange(args.conversations), args.turns * args.systems)
    system = np.tile(np.arange(args.systems), args.conversations * args.turns)
    quality = np.linspace(0, 1, args.systems)[system]
    reference = quality + rng.normal(0, 1, items)
    other = quality + rng.normal(0.2, 1, items)
    names = [f"s{k}" for k in range(args.systems)]
    tau_s, tau_mb = measured(lambda: system_rank_agreement(conversation, system, reference, other, names, seed=1,
                                                        resamples=args.resamples), args.rounds)
    print("| what | size | median wall time | peak traced memory |")
    print("|---|---|---|---|")
    print(f"| topic_set_stability | {args.systems} systems x {args.topics} topics x {args.splits} splits | "
          f"{stability_s:.2f} s | {stability_mb:.0f} MB |")
    print(f"| system_rank_agreement (tau-b, tau_AP) | {args.systems} systems, {items} items, "
          f"{args.conversations} conversations, {args.resamples} resamples | {tau_s:.2f} s | {tau_mb:.0f} MB |")


if __name__ == "__main__":
    main()
