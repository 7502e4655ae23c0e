"""What a relevance round costs without the LLM's latency (issue 21, item 4): pooling --runs runs
of --topics topics (default 60 x 2,000, each run ranking --depth documents per topic, default
100) at depth 10, then labelling the pool through the fake OpenAI server answering at once
(HTTP, the judge cache, the label store: everything but the model), then the same labelling
again in a new round folder over the same cache (every reply replayed: the path of a rerun after
a kill). Deterministic from --seed: each topic's top 10 in every run is drawn from --candidates
documents of the topic (default 40), so the runs overlap as real runs do; the qrels judge 3
documents per topic among them.

Each phase runs in its own child process, which reports its wall time, its HTTP requests and
its peak resident memory (ru_maxrss): pooling's memory is the runs' reading, labelling's the
requests in flight, the rows not yet appended and the store's rows (the pool is streamed from its
file: ``label_round`` never holds it).

    .venv/bin/python bench/bench_relevance_round.py [--runs N] [--topics N] [--depth N] [--limit N]

``--limit N`` labels only the first N pooled pairs (a quick smoke run).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def build(folder: Path, runs: int, topics: int, depth: int, candidates: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = [f"d/q{t}" for t in range(topics)]
    (folder / "subs").mkdir(parents=True)
    pools = [rng.choice(1_000_000, candidates, replace=False) for _ in range(topics)]
    (folder / "qrels.txt").write_text("".join(f"{keys[t]} 0 d/{pools[t][i]:07d}.txt 1\n"
                                              for t in range(topics) for i in range(3)))
    for r in range(runs):
        lines = []
        for t in range(topics):
            top = rng.choice(pools[t], 10, replace=False)
            tail = rng.choice(1_000_000, depth - 10, replace=False)
            docs = [f"d/{d:07d}.txt" for d in top] + [f"d/{d:07d}.txt" for d in tail]
            lines.extend(f"{keys[t]} Q0 {doc} {i + 1} {1000 - i} run{r}\n" for i, doc in enumerate(docs))
        (folder / "subs" / f"team{r:02d}__run.txt").write_text("".join(lines))


def reference(folder: Path, topics: int):
    from reteco.formats.reference import Judgment, Reference, Topic

    manifest = {"subtrack": "1a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": ["d"]}
    judgments = [Judgment(k, d, 1) for k, _, d, _ in (line.split() for line in (folder / "qrels.txt").read_text().splitlines())]
    return Reference(manifest, [Topic(f"d/q{t}", "d", f"q{t}", f"d/q{t}", "", None) for t in range(topics)],
                     judgments, None, None)


def phase_pool(folder: Path, topics: int) -> dict:
    from reteco.workbench.labels.pool import write_pool
    from reteco.workbench.labels.relevance import pool_round

    ref = reference(folder, topics)
    start = time.perf_counter()
    result = pool_round([(ref, sorted((folder / "subs").iterdir()))], None)
    seconds = time.perf_counter() - start
    passage = "A passage of about a thousand characters. " * 24
    for record in result.records:  # texts as the release would give them
        record["query_text"], record["passage"] = f"What about {record['query']}?", passage
        record["context"] = {"time_frame": "Key time anchors: March 2019; 2020\np1: What held in March 2019 [2019-03 (month)]"}
    write_pool(folder / "pool.jsonl", result.records)
    part = result.summary["subtracks"]["1a"]
    return {"seconds": seconds, "pairs": part["pairs"], "judged_by_qrels": part["judged_by_qrels"],
            "to_label": part["new"]}


_SERVER = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); from support.fake_openai_server import FakeOpenAI; "
    "server = FakeOpenAI(); print(server.start(), flush=True); time.sleep(1e9)"
)


def phase_label(folder: Path, limit: int | None) -> dict:
    """Label the pool, then label it again in a new round folder over the same cache (the same
    server: the cache's request hash includes the endpoint). The fake server runs in its own
    process, so the peak memory measured is reteco's alone (the server keeps every request)."""
    import os

    from reteco.judge import load_judge_config
    from reteco.workbench.labels.relevance import label_round, open_or_create_round

    server = subprocess.Popen([sys.executable, "-c", _SERVER, str(ROOT / "tests")], stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        config_path = folder / "judge.yaml"
        config_path.write_text(f"prompt_version: 1\nmodel: fake-assessor\nbase_url: {base_url}\n"
                               "api_key_env: BENCH_KEY\nconcurrency: 8\n")
        os.environ["BENCH_KEY"] = "sk-bench"
        pool = folder / "pool.jsonl"  # streamed by label_round, never held
        if limit is not None:
            pool = folder / "pool_limited.jsonl"
            pool.write_text("".join(line for _, line in zip(range(limit), open(folder / "pool.jsonl"))))
        out = {"pairs": sum(1 for _ in open(pool))}
        for name in ("round", "round_from_cache"):
            labels = open_or_create_round(folder / name)
            start = time.perf_counter()
            report = label_round(labels, pool, load_judge_config(config_path), cache_dir=folder / "cache",
                                 progress=False)
            out[name] = {"seconds": time.perf_counter() - start, "labelled": report.labelled,
                         "http_requests": report.http_requests, "from_cache": report.cached_answers,
                         "peak_rss_mb_so_far": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    finally:
        server.kill()
        server.wait()
    return out


def child(args) -> None:
    folder = Path(args.folder)
    if args.phase == "pool":
        out = phase_pool(folder, args.topics)
    else:
        out = phase_label(folder, args.limit)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--topics", type=int, default=2_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        child(args)
        return
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        build(Path(folder), args.runs, args.topics, args.depth, args.candidates, args.seed)
        print(f"built {args.runs} runs x {args.topics} topics x {args.depth} in {time.perf_counter() - start:.1f} s")
        for phase in ("pool", "label"):
            argv = [sys.executable, __file__, "--phase", phase, "--folder", folder, "--topics", str(args.topics)]
            if args.limit:
                argv += ["--limit", str(args.limit)]
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            print(phase, done.stdout.strip())


if __name__ == "__main__":
    main()
