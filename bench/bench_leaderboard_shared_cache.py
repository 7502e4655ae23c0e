"""A judged leaderboard at ``--jobs 1`` and ``--jobs N`` on one judge cache: requests and wall time.

    PYTHONPATH=src .venv/bin/python bench/bench_leaderboard_shared_cache.py [--submissions 20] [--distinct 10]
        [--latency 0.2] [--jobs 4] [--json OUT]

Builds the tiny 2b reference of tests/support/tiny_track2.py (3 turns, 5 judged dimensions each)
and SUBMISSIONS submissions of it, of which only DISTINCT differ (neighbours in the scoring
order answer alike, so identical ones are scored at the same time: teams that submit the same
answers, as a baseline does), then runs
``reteco leaderboard`` once with ``--jobs 1`` and once with ``--jobs JOBS``, each on a fresh
cache shared by every worker, against the fake OpenAI server (in its own process) answering
each chat request after LATENCY seconds. The judge cache's claims make every judgment paid for
once however many workers want it at once: the request counts of both runs must be equal
(DISTINCT x 15 judgments + the preflight of each process that sent one); the wall times show
what the workers buy.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_judge import _serve  # the fake server in its own process (counts its chat requests)
from support.fake_openai_server import TEST_KEY
from support.shared_cache import judge_config
from support.tiny_track2 import TINY_TURNS, write_tiny_reference


def write_submissions(folder: Path, count: int, distinct: int) -> None:
    folder.mkdir(parents=True)
    alike = -(-count // distinct)  # submissions per answer set, neighbours in the (alphabetical) scoring order
    for i in range(count):
        lines = "".join(json.dumps({"turn_id": t["key"], "answer": f"{t['key']}: answer set {i // alike}"}) + "\n"
                        for t in TINY_TURNS)
        (folder / f"team{i:02d}.jsonl").write_text(lines, encoding="utf-8")


def leaderboard(work: Path, ref: Path, subs: Path, config: Path, jobs: int, pipe) -> dict:
    pipe.send("count")
    before = pipe.recv()[0]
    env = {**os.environ, "RETECO_TEST_KEY": TEST_KEY, "RETECO_CACHE_DIR": str(work / "default-cache")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "reteco", "leaderboard", "--ref", str(ref), "--submissions", str(subs),
                           "--out", str(work / f"out-jobs{jobs}"), "--jobs", str(jobs), "--resamples", "100",
                           "--judge-config", str(config), "--judge-cache", str(work / f"cache-jobs{jobs}")],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"leaderboard --jobs {jobs} failed ({done.returncode}):\n{done.stderr}")
    pipe.send("count")
    after = pipe.recv()[0]
    return {"jobs": jobs, "wall_s": round(wall, 2), "judgment_requests": after - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pipe, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=_serve, args=(args.latency, child), daemon=True)
    server.start()
    base_url = pipe.recv()
    try:
        with tempfile.TemporaryDirectory(prefix="reteco-bench-shared-") as tmp:
            work = Path(tmp)
            ref = write_tiny_reference(work / "ref" / "2b", "2b").root
            write_submissions(work / "subs", args.submissions, args.distinct)
            config = judge_config(work, base_url, concurrency=8)
            runs = [leaderboard(work, ref, work / "subs", config, jobs, pipe) for jobs in (1, args.jobs)]
    finally:
        pipe.send("stop")
        server.join(10)
    expected = args.distinct * len(TINY_TURNS) * 5
    result = {"submissions": args.submissions, "distinct": args.distinct, "latency_s": args.latency,
              "judgments_distinct": expected, "runs": runs}
    for run in runs:
        print(f"--jobs {run['jobs']}: {run['wall_s']:.2f} s wall, {run['judgment_requests']} judgment requests "
              f"({expected} distinct judgments)")
    if len({r["judgment_requests"] for r in runs}) != 1:
        print("MISMATCH: the request counts differ", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
