"""What ``reteco leaderboard --human-ratings`` adds at the overview paper's size: 60 systems x
2,000 turns of 2b, 10,000 resamples, and the planner's answer for that size (issue 32).

    PYTHONPATH=src .venv/bin/python bench/bench_human_corrected.py [--systems 60] [--units 2000]
        [--resamples 10000] [--turns K] [--out bench/out/human_corrected]

First the planner (``human-sample --plan``'s ``sample_plan.plan``: residual sd 0.2, width 0.1,
3 minutes per item); K defaults to its answer. Synthetic judged outcomes (what
``reteco.workbench.leaderboard.standings.score_one`` returns for 2b: per-turn judge scores 1..5 on
the five dimensions, 5% of turns unanswered) and a **paired** human sample: K turns, each rated
for every system that answered it, inclusion probability K / units, by two humans a point below
the judge now and then. Then, in one child process (wall time of each step; peak RSS,
``ru_maxrss``, of the process; and ``tracemalloc``'s traced peak of the human-corrected step
alone, which numpy's arrays report to): ``build_leaderboard`` (the judge's bootstrap, rank
intervals and Tukey HSD, as without ratings), ``human_corrected`` (the small-sample estimate per
system and figure, every pair's paired difference and t test, Holm, groups) and
``write_tables``. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
import tracemalloc
from pathlib import Path


def outcomes_and_ratings(systems: int, units: int, n_turns: int, seed: int = 11):
    import numpy as np

    from reteco.subtracks import DIMENSIONS, JUDGE_MEAN
    from reteco.workbench.leaderboard.human_corrected import HumanScores
    from reteco.workbench.leaderboard.standings import Entry

    rng = np.random.default_rng(seed)
    keys = [f"domain/{i // 5}_turn_{i % 5 + 1}" for i in range(units)]
    entries, outcomes, scores, where = [], [], {}, {}
    sampled = np.sort(rng.choice(units, size=n_turns, replace=False))
    for s in range(systems):
        quality = 4.2 - 2.0 * s / max(1, systems - 1)
        answered = rng.random(units) > 0.05
        raw = {d: np.clip(np.rint(quality + rng.normal(0, 0.9, units)), 1, 5) for d in DIMENSIONS}
        turns = {"keys": keys, "answered": [bool(a) for a in answered]}
        for d in DIMENSIONS:
            turns[d] = [float((v - 1) / 4) if a else 0.0 for v, a in zip(raw[d], answered)]
        turns[JUDGE_MEAN] = [sum(turns[d][i] for d in DIMENSIONS) / 5 for i in range(units)]
        file = f"team{s:02d}-run.jsonl"
        entries.append(Entry(Path(file), file, f"team{s:02d}", "run"))
        judge_scores = {d: float(np.mean(turns[d])) for d in (*DIMENSIONS, JUDGE_MEAN)}
        outcomes.append({"ok": True, "scores": judge_scores, "warnings": [], "unit_keys": keys,
                         "unit_values": turns[JUDGE_MEAN], "unit_values_absent": None, "per_domain": {},
                         "per_depth": {}, "judge_reason": None, "judge_turns": turns,
                         "judge_signature": "0123456789abcdef"})
        for k, i in enumerate(i for i in sampled if answered[i]):
            human = {d: float(np.mean([(max(1, raw[d][i] - rng.integers(0, 2)) - 1) / 4 for _ in range(2)]))
                     for d in DIMENSIONS}
            human[JUDGE_MEAN] = sum(human.values()) / 5
            scores[(file, keys[i])] = human
            where[(file, keys[i])] = (f"item-{s:02d}{k:03d}", 2 + len(where))
    ratings = HumanScores(("humans.csv",), "key.csv", 2, scores, where, tuple(DIMENSIONS),
                          {k: n_turns / units for k in scores})
    return entries, outcomes, keys, ratings


def run(systems: int, units: int, resamples: int, turns: int, out: str, queue) -> None:
    from reteco.workbench.leaderboard.human_corrected import human_corrected
    from reteco.workbench.leaderboard.standings import build_leaderboard
    from reteco.workbench.leaderboard.tables import write_tables

    entries, outcomes, keys, ratings = outcomes_and_ratings(systems, units, turns)
    start = time.perf_counter()
    board = build_leaderboard("2b", entries, outcomes, unit_keys=keys, resamples=resamples)
    judge = time.perf_counter() - start
    tracemalloc.start()
    start = time.perf_counter()
    board["human_corrected"] = human_corrected("2b", board, entries, outcomes, ratings, confidence=0.95, alpha=0.05)
    corrected = time.perf_counter() - start
    corrected_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    start = time.perf_counter()
    write_tables(board, Path(out))
    files = time.perf_counter() - start
    ranking = board["human_corrected"]["ranking"]
    queue.put({"judge": judge, "corrected": corrected, "files": files, "corrected_peak": corrected_peak,
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "order_differs": len(ranking["order_differs"]), "significant": ranking["significant_pairs"],
               "pairs": len(ranking["pairs"]), "items": len(ratings.scores),
               "design": board["human_corrected"]["ratings"]["design"]})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=60)
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=None, help="turns of the paired sample (default: the plan's)")
    parser.add_argument("--out", type=Path, default=Path("bench/out/human_corrected"))
    args = parser.parse_args()
    from reteco.workbench.judge_audit.sample_plan import plan, plan_text

    answer = plan(args.systems, args.units, hourly_rate=25.0)
    print("\n".join(plan_text(answer, 25.0)) + "\n")
    turns = args.turns or answer.turns
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=run, args=(args.systems, args.units, args.resamples, turns, str(args.out), queue))
    process.start()
    result = queue.get()
    process.join()
    print("| systems x turns | resamples | design, rated turns (items) | judge statistics (s) | human-corrected (s) "
          "| files (s) | human-corrected peak traced (MiB) | process peak RSS (MB) | significant pairs | order differs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.systems} x {args.units} | {args.resamples} | {result['design']}, {turns} ({result['items']}) | "
          f"{result['judge']:.1f} | {result['corrected']:.1f} | {result['files']:.1f} | {result['corrected_peak']:.0f} | "
          f"{result['peak_mb']:.0f} | {result['significant']} of {result['pairs']} | {result['order_differs']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
