"""The baseline of bench_score.py: the usual "plain pytrec_eval" scoring pipeline.

What a participant or an organizer typically writes: parse the run and the qrels line by line
in Python into ``{topic: {doc: float(score)}}`` and ``{topic: {doc: int(rel)}}``, hand them to
``pytrec_eval.RelevanceEvaluator`` and average the per-topic values. None of the official rules
(unknown ids discarded, duplicates removed after their first occurrence, missing topics scored
0, ties) is applied: that is the point of the comparison.

    python bench/plain_pytrec_eval.py --qrels REF/qrels.txt --run RUN [--per-topic-out FILE]

Prints one JSON object: the means and the time spent parsing and evaluating.
"""

from __future__ import annotations

import argparse
import json
import time

import pytrec_eval

MEASURES = {"ndcg_cut.10", "map_cut.10", "recall.10", "P.10", "recip_rank"}
KEYS = ("ndcg_cut_10", "map_cut_10", "recall_10", "P_10", "recip_rank")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--per-topic-out", help="write {topic: ndcg_cut_10} here (JSON)")
    args = parser.parse_args()

    start = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    with open(args.qrels, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if parts:
                qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    run: dict[str, dict[str, float]] = {}
    with open(args.run, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if parts:
                topic = run.get(parts[0])
                if topic is None:
                    topic = run[parts[0]] = {}
                topic[parts[2]] = float(parts[4])
    parsed = time.perf_counter()

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    results = evaluator.evaluate(run)
    means = {key: sum(r[key] for r in results.values()) / len(results) for key in KEYS}
    done = time.perf_counter()

    if args.per_topic_out:
        with open(args.per_topic_out, "w", encoding="utf-8") as handle:
            json.dump({topic: values["ndcg_cut_10"] for topic, values in results.items()}, handle)
    print(
        json.dumps(
            {
                "means": means,
                "topics_evaluated": len(results),
                "parse_seconds": round(parsed - start, 3),
                "evaluate_seconds": round(done - parsed, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
