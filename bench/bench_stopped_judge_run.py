"""Benchmark: what a judge run stopped at its preflight costs, on the scoring program's archive.

Each round is a fresh child process running ``run_judge`` over ``--turns`` x 5 judgments
against the fake OpenAI server (tests/support, on 127.0.0.1), whose preflight answers 401, into
a new one-file archive (``judge_archive.sqlite``: rollback journal, ``synchronous=FULL``, as the
Codabench scoring program judges): the run's wall time and the archive's write transactions
(SQLite's file change counter, header bytes 24-27). With ``--baseline-src`` (a ``src`` folder of
another reteco, e.g. ``git archive <commit> src``) the rounds alternate between it and this one.

    .venv/bin/python bench/bench_stopped_judge_run.py --rounds 5
    git archive b35e7ff src | tar -x -C /tmp/before
    .venv/bin/python bench/bench_stopped_judge_run.py --baseline-src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TESTS = HERE.parent / "tests"

CHILD = r"""
import dataclasses, json, os, sys, time
from pathlib import Path
from support.fake_openai_server import TEST_KEY, FakeOpenAI, http_error
from reteco.judge import DIMENSIONS, JudgeItem, load_judge_config, run_judge
from reteco.judge.prompts import load_prompt_set
turns, archive = int(sys.argv[1]), Path(sys.argv[2])
server = FakeOpenAI()
server.start()
server.preflight = lambda body: http_error(401, "Incorrect API key provided")
os.environ["OPENAI_API_KEY"] = TEST_KEY
config = dataclasses.replace(load_judge_config(), prompt_version=1, prompts=load_prompt_set(1), base_url=server.base_url)
items = [JudgeItem(key=f"biology/{i}_turn_1", dimension=d, query=f"question {i}", history="", answer=f"answer {i}",
                   evidence=((f"biology_doc_{i}", f"passage {i}"),), reference_answer=f"reference {i}")
         for i in range(turns) for d in DIMENSIONS]
began = time.perf_counter()
outcomes = run_judge(items, config, cache_dir=archive, progress=False)
wall = time.perf_counter() - began
server.stop()
with open(archive, "rb") as handle:
    handle.seek(24)
    counter = int.from_bytes(handle.read(4), "big")
print(json.dumps({"wall": wall, "transactions": counter, "judgments": len(outcomes),
                  "preflight": outcomes.stats.calls.preflight}))
"""


def one(src: Path, turns: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="reteco-stopped-") as tmp:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(TESTS)]))
        done = subprocess.run([sys.executable, "-c", CHILD, str(turns), str(Path(tmp) / "judge_archive.sqlite")],
                              env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=100, help="answered turns (x 5 judgments)")
    parser.add_argument("--baseline-src", type=Path)
    args = parser.parse_args()
    versions = {"this": SRC} | ({"baseline": args.baseline_src} if args.baseline_src else {})
    runs: dict[str, list[dict]] = {name: [] for name in versions}
    for n in range(args.rounds):
        for name in (list(versions) if n % 2 == 0 else list(reversed(versions))):
            runs[name].append(one(versions[name], args.turns))
    print(f"{args.turns * 5} judgments, the preflight refused (401); {args.rounds} rounds\n")
    print("| reteco | wall, median (min-max) | write transactions | preflight |")
    print("|---|---|---|---|")
    for name, rs in runs.items():
        walls = [r["wall"] for r in rs]
        print(f"| {name} | {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}) | "
              f"{sorted({r['transactions'] for r in rs})} | {sorted({r['preflight'] for r in rs})} |")


if __name__ == "__main__":
    main()
