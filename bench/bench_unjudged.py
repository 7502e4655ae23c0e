"""What the unjudged diagnostics (``reteco.scoring.judged``) add to scoring one large run.

A 1a-sized case in memory, deterministic from --seed: --topics topics (default 10,000), each
ranking --depth documents (default 1,000, so 10M rows) drawn from a corpus of --corpus ids, 1-20
relevant documents per topic in the qrels, and a relevance round labelling --round-labels
documents of each topic's top 20 (default 10). Times ``judged_diagnostics`` without a round
(what every ``reteco score`` of a retrieval run now pays) and with one (the organizers'
``--round``), median of --rounds, and the peak of Python-tracked memory (tracemalloc: numpy's
buffers included, Arrow's not) during each.

    .venv/bin/python bench/bench_unjudged.py [--topics N] [--depth N] [--corpus N] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa

from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.relevance_round import RelevanceRound
from reteco.metrics.ranking import RankedRows
from reteco.scoring.judged import judged_diagnostics
from reteco.scoring.rules import RankedRun


def build(topics: int, depth: int, corpus: int, labels: int, seed: int, folder: Path):
    rng = np.random.default_rng(seed)
    vocabulary = pa.array([f"d/{i:08d}.txt" for i in range(corpus)])
    doc_position = np.concatenate([rng.choice(corpus, depth, replace=False) for _ in range(topics)]).astype(np.int32)
    topic = np.repeat(np.arange(topics, dtype=np.int32), depth)
    position = np.tile(np.arange(depth, dtype=np.int32), topics)
    keys = [f"d/q{t}" for t in range(topics)]
    judgments, lines = [], []
    ids = vocabulary.to_pylist()
    for t in range(topics):
        ranked = doc_position[t * depth:(t + 1) * depth]
        for doc in ranked[rng.choice(40, rng.integers(1, 21), replace=False)]:
            judgments.append(Judgment(keys[t], ids[doc], 1))
        for doc in ranked[:20][rng.choice(20, labels, replace=False)]:
            lines.append(f"{keys[t]} 0 {ids[doc]} {int(rng.integers(0, 4))}\n")
    manifest = {"subtrack": "1a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": ["d"]}
    reference = Reference(manifest, [Topic(k, "d", k[2:], k, "", None) for k in keys], judgments, None, None)
    reference.judgment_columns()  # built once per reference; the scorer's rules have built it before
    path = folder / "round.qrels"
    path.write_text("".join(lines))
    ranked = RankedRun(RankedRows(topic, position, np.zeros(len(topic)), topics), doc_position, vocabulary)
    return reference, ranked, RelevanceRound.read(path)


def measure(call, rounds: int) -> tuple[float, float]:
    times, peaks = [], []
    for _ in range(rounds):
        tracemalloc.start()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return statistics.median(times), max(peaks) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--corpus", type=int, default=1_200_000)
    parser.add_argument("--round-labels", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        reference, ranked, round_labels = build(args.topics, args.depth, args.corpus, args.round_labels, args.seed,
                                                Path(folder))
    print(f"{args.topics} topics x {args.depth} rows = {len(ranked.rows.topic):,} rows; "
          f"{len(reference.judgments):,} judgments; {len(round_labels.labels):,} round labels")
    print("| case | median s | peak MiB (tracemalloc) |\n|---|---|---|")
    for name, call in (("no round (every reteco score)", lambda: judged_diagnostics(reference, ranked)),
                       ("with a round (--round)", lambda: judged_diagnostics(reference, ranked, round_labels))):
        seconds, peak = measure(call, args.rounds)
        print(f"| {name} | {seconds:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
