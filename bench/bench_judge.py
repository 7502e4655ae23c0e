"""Judge throughput against the local fake OpenAI server with an injected latency.

    .venv/bin/python bench/bench_judge.py [--turns 200] [--latency 0.5] [--concurrency 16,32,64] [--json OUT]

Judges TURNS turns x 5 dimensions (one call each) through ``run_judge`` against
tests/support/fake_openai_server.py (in its own process) answering every chat request after LATENCY
seconds, once per concurrency level, each time with a fresh cache; then re-scores the same
items from the cache. Reports wall time against the ideal calls x latency / concurrency, the
efficiency (ideal / wall), the most requests the server saw in flight, the judge process's
CPU time, and the cached re-run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

# tests/support holds the oracles the tests use, the fake OpenAI server among them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.fake_openai_server import FakeOpenAI

from reteco.judge import DIMENSIONS, JudgeItem, load_judge_config, run_judge


def bench_items(turns: int) -> list[JudgeItem]:
    """TURNS realistic-sized items (5 passages of ~1,200 characters) on every dimension."""
    passage = "The motor's bearings are sealed and pre-greased at the factory; " * 20
    return [
        JudgeItem(
            key=f"drones/{t // 4}_turn_{t % 4 + 1}",
            dimension=d,
            query=f"Question {t}: why is lubrication only used inside the bearings?",
            history="" if t % 4 == 0 else "Q: earlier question\nA: earlier answer, a few sentences long. " * 3,
            answer=f"Answer {t}: because the bearings are the only parts that rub. " * 4,
            evidence=tuple((f"drones_doc_{t}_{k}", passage) for k in range(5)),
            reference_answer="Only the bearings have surfaces in sliding contact; the rest never touch.",
        )
        for t in range(turns)
        for d in DIMENSIONS
    ]


def _serve(latency: float, conn) -> None:
    """The fake server in its own process, so its threads do not share the judge's GIL."""
    server = FakeOpenAI(latency_s=latency)
    conn.send(server.start())
    while (command := conn.recv()) != "stop":
        if command == "reset":
            server.max_in_flight = 0
        conn.send((server.chat_calls, server.max_in_flight))
    server.stop()


class _ServerProcess:
    def __init__(self, latency: float):
        self._conn, child = multiprocessing.Pipe()
        self._proc = multiprocessing.Process(target=_serve, args=(latency, child), daemon=True)
        self._proc.start()
        self.base_url = self._conn.recv()

    def stats(self, reset: bool = False) -> tuple[int, int]:
        """(chat calls so far, most requests in flight since the last reset)."""
        self._conn.send("reset" if reset else "stats")
        return self._conn.recv()

    def stop(self) -> None:
        self._conn.send("stop")
        self._proc.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per chat call at the server")
    parser.add_argument("--concurrency", default="16,32,64")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
    items = bench_items(args.turns)
    calls = len(items)
    rows = []
    server = _ServerProcess(args.latency)
    try:
        base = dataclasses.replace(load_judge_config(), base_url=server.base_url, timeout_s=60.0)
        for c in (int(x) for x in args.concurrency.split(",")):
            config = dataclasses.replace(base, concurrency=c)
            with tempfile.TemporaryDirectory(prefix="reteco-bench-judge-") as cache:
                before, _ = server.stats(reset=True)
                start, cpu = time.perf_counter(), time.process_time()
                outcomes = run_judge(items, config, cache_dir=Path(cache), progress=False)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                made, in_flight = server.stats()
                assert made - before == calls and all(o.status == "ok" for o in outcomes), "every item judged once"
                start = time.perf_counter()
                again = run_judge(items, config, cache_dir=Path(cache), progress=False)
                rerun = time.perf_counter() - start
                assert server.stats()[0] == made and all(o.cached for o in again), "the re-run made calls"
            ideal = calls * args.latency / c
            rows.append({
                "concurrency": c, "calls": calls, "latency_s": args.latency, "wall_s": round(wall, 2),
                "ideal_s": round(ideal, 2), "efficiency": round(ideal / wall, 3),
                "max_in_flight": in_flight, "judge_cpu_s": round(cpu, 2), "cached_rerun_s": round(rerun, 2), "cached_rerun_calls": 0,
            })
    finally:
        server.stop()

    print(f"judge throughput: {args.turns} turns x {len(DIMENSIONS)} dimensions = {calls} calls, "
          f"{args.latency:g} s per call at the server")
    print("| concurrency | wall (s) | ideal = calls x latency / concurrency (s) | efficiency | max in flight "
          "| judge CPU (s) | cached re-run (s), calls |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['wall_s']:.2f} | {r['ideal_s']:.2f} | {r['efficiency']:.0%} | "
              f"{r['max_in_flight']} | {r['judge_cpu_s']:.2f} | {r['cached_rerun_s']:.2f}, 0 |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
