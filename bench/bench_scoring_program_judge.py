"""The Codabench scoring program judging a test-set-sized 2b submission within the phase's limit.

    .venv/bin/python bench/bench_scoring_program_judge.py [--turns 200] [--latency 0.5,1.5]
        [--concurrency 16] [--limit 600] [--seed 7] [--long] [--stall-after N] [--load K]
        [--repeat R] [--out DIR] [--json FILE]

Builds a 2b reference of TURNS turns (3 domains, 2 gold passages of ~1,200 characters per turn,
a history, a reference answer) and an answer to every turn, writes the judge's setup into the
reference data as ``reteco bundle --judge-config`` does (the packaged judge.yaml's settings,
the endpoint the fake OpenAI server, ``concurrency`` as given, default the config's 16) and a
phase.json with ``time_limit_s`` LIMIT, then runs ``scoring_program/score.py INPUT OUTPUT`` as
the worker does (a child process), once per concurrency level, against
tests/support/fake_openai_server.py in its own process, which holds every chat reply for a latency
drawn uniformly from the LATENCY range (seeded). Reports the run's wall time against the
limit, the judging window the program planned (details.json, ``generation.judge.plan``:
``reteco.codabench.program.judge_plan``, from its own start time), the HTTP
requests, whether all five dimensions were written, and the same run without the judge (what
the rest of the scoring costs). ``--long`` makes every answer as long as the format accepts in
words (4,000 English words, under 32,000 characters: ROUGE-L's and METEOR's costliest answer),
and the table then also gives what the text metrics took before judging (details.json,
``generation.judge.window``) beside what the plan keeps back after judging (``plan.reserve.finish_s``:
``FINISH_S`` + 10 ms a turn, scaled by the start's slowdown).

The reserve after judging (``judge_plan``): ``--stall-after N`` makes the server answer N
judgments and then hold every reply for a minute (the judge must stop at the deadline),
``--load K`` runs K busy loops (``while 1: pass``) during the judged runs, ``--repeat R`` runs
each level R times. The table then gives the plan the program made (details.json,
``generation.judge.plan``: the startup it measured, the slowdown, the reserve, when judging
ended) and what the run took after the deadline (its wall time minus the startup and the
judging window), against what the plan kept back for it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

# tests/support holds the oracles the tests use, the fake OpenAI server among them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.fake_openai_server import FakeOpenAI, Reply, fake_judge  # noqa: E402
from support.paths import REPO_ROOT  # noqa: E402

from reteco.codabench.program.judge_plan import CONTAINER_S  # noqa: E402
from reteco.codabench.program.judge_setup import JUDGE_DIR, load_for_bundle, write_judge_setup  # noqa: E402
from reteco.formats.answers import MAX_ANSWER_CHARS, MAX_ANSWER_WORDS  # noqa: E402
from reteco.formats.passages import create_passages  # noqa: E402
from reteco.formats.reference import PASSAGES, TURNS, DocIdIndex, Judgment, Reference, Topic  # noqa: E402
from reteco.subtracks import DIMENSIONS, JUDGE  # noqa: E402
from reteco.workbench.codabench.bundle import competition as definition  # noqa: E402

DOMAINS = ("biology", "drones", "earth_science")
SENTENCE = "The motor's bearings are sealed and pre-greased at the factory, so no oil reaches the housing. "


def write_reference(folder: Path, turns: int) -> list[str]:
    """A 2b reference folder of ``turns`` turns; returns the turn keys."""
    folder.mkdir(parents=True)
    records, topics, judgments, pairs = [], [], [], []
    for t in range(turns):
        domain = DOMAINS[t % len(DOMAINS)]
        conversation, depth = t // 4, t % 4 + 1
        key = f"{domain}/{conversation}_turn_{depth}"
        gold = [f"{domain}_doc_{t}_{k}" for k in range(2)]
        records.append({
            "key": key, "domain": domain, "conversation": f"{domain}/{conversation}", "turn": depth,
            "query": f"Question {t}: why is lubrication only used inside the bearings of the motor?",
            "history": "No previous conversation." if depth == 1 else "Q: an earlier question\nA: an earlier answer. " * 3,
            "answer": "Only the bearings have surfaces in sliding contact; the rest of the motor never touches.",
            "gold_doc_ids": gold,
        })
        topics.append(Topic(key, domain, key.split("/", 1)[1], key, f"{domain}/{conversation}", depth))
        judgments += [Judgment(key, d, 1) for d in gold]
        pairs += [(domain, d) for d in gold]
    with open(folder / TURNS, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    conn = create_passages(folder / PASSAGES)
    conn.executemany("INSERT INTO passages VALUES (?, ?, ?)", [(d, i, SENTENCE * 13) for d, i in pairs])
    conn.commit()
    conn.close()
    manifest = {"subtrack": "2b", "split": "bench", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": list(DOMAINS), "unit": "turn"}
    Reference(manifest, topics, judgments, DocIdIndex.from_pairs(pairs, list(DOMAINS)), None).write(folder)
    return [r["key"] for r in records]


def longest_answer(i: int) -> str:
    """An answer at the format's word limit (4,000 words, under 32,000 characters)."""
    words = (f"Answer {i}: " + SENTENCE * (MAX_ANSWER_WORDS // len(SENTENCE.split()) + 1)).split()[:MAX_ANSWER_WORDS]
    text = " ".join(words)
    assert len(text) <= MAX_ANSWER_CHARS
    return text


STALL_S = 60  # how long a stalling server holds each reply after its first --stall-after judgments


def _serve(low: float, high: float, seed: int, stall_after: int | None, conn) -> None:
    """The fake server in its own process; every chat reply held for uniform(low, high) s, and
    after ``stall_after`` judgments (None: never) for STALL_S, counted afresh at each "reset"."""
    rng = random.Random(seed)
    server = FakeOpenAI(latency_s=low)
    answered = [0]

    def judge(body):
        answered[0] += 1
        if stall_after is not None and answered[0] > stall_after:
            return Reply(200, {}, delay_s=STALL_S)
        reply = fake_judge(body)
        reply.delay_s = rng.uniform(0.0, high - low)
        return reply

    server.judge = judge
    conn.send(server.start())
    while (message := conn.recv()) != "stop":
        if message == "reset":
            answered[0] = 0
        conn.send(server.all_chat_calls)
    server.stop()


def run_program(input_dir: Path, output: Path, limit: int) -> tuple[float, int, str]:
    """Run score.py; (wall s, exit code, log with each line's second after the start). A run is
    stopped a limit's worth past the limit (exit -9): an overrun is measured rather than cut."""
    if output.exists():
        shutil.rmtree(output)
    started = time.perf_counter()
    lines = []
    with subprocess.Popen([sys.executable, str(REPO_ROOT / "scoring_program" / "score.py"), str(input_dir), str(output)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as child:
        timer = threading.Timer(2 * limit + 60, child.kill)
        timer.start()
        for line in child.stdout:
            lines.append(f"{time.perf_counter() - started:7.2f} {line}")
        timer.cancel()
    return time.perf_counter() - started, child.returncode, "".join(lines)


@contextlib.contextmanager
def busy_loops(count: int):
    """``count`` processes spinning on the CPU while the block runs (the loaded machine)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency", default="0.5,1.5", help="LOW,HIGH seconds per chat reply (uniform)")
    parser.add_argument("--concurrency", default="16", help="comma-separated levels (default: the config's 16)")
    parser.add_argument("--limit", type=int, default=600, help="phase.json's time_limit_s")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--long", action="store_true", help="every answer 4,000 words (the format's limit)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "out" / "scoring_program_judge")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--stall-after", type=int, help=f"the server holds every reply after N judgments for {STALL_S} s")
    parser.add_argument("--load", type=int, default=0, help="busy loops running during the judged runs")
    parser.add_argument("--repeat", type=int, default=1, help="judged runs per concurrency level")
    args = parser.parse_args(argv)
    low, high = (float(x) for x in args.latency.split(","))

    if args.out.exists():
        shutil.rmtree(args.out)
    input_dir = args.out / "input"
    keys = write_reference(input_dir / "ref", args.turns)
    (input_dir / "res").mkdir(parents=True)
    (input_dir / "res" / "answers.jsonl").write_text("".join(
        json.dumps({"turn_id": k, "answer": longest_answer(i) if args.long else
                    f"Answer {i}: because the bearings are the only parts that rub. " * 4}) + "\n"
        for i, k in enumerate(keys)), encoding="utf-8")
    phase = next(p for p in definition.PHASES if p.key == "evaluation")
    (input_dir / "ref" / "phase.json").write_text(
        json.dumps(definition.phase_record(phase, "2b", platform_limit=args.limit)), encoding="utf-8")

    rows = []
    without, code, log = run_program(input_dir, args.out / "output-nojudge", args.limit)
    assert code == 0, log
    conn, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=_serve, args=(low, high, args.seed, args.stall_after, child), daemon=True)
    server.start()
    base_url = conn.recv()
    try:
        (args.out / "organizers").mkdir()
        (args.out / "organizers" / "key.txt").write_text("sk-bench-not-a-real-key-0123\n")
        levels = [int(c) for c in args.concurrency.split(",") for _ in range(args.repeat)]
        for run, level in enumerate(levels):
            config = args.out / "organizers" / "judge.yaml"
            config.write_text(f"prompt_version: 2\nmodel: fake-judge\nbase_url: {base_url}\napi_key_file: key.txt\n"
                              f"concurrency: {level}\n", encoding="utf-8")
            setup = load_for_bundle(config)
            write_judge_setup(input_dir / "ref", setup, max_calls=2 * len(DIMENSIONS) * args.turns + 1)
            conn.send("reset")
            before = conn.recv()
            output = args.out / f"output-c{level}-{run}"
            with busy_loops(args.load):
                wall, code, log = run_program(input_dir, output, args.limit)
            conn.send("calls")
            calls = conn.recv() - before
            (args.out / f"log-c{level}-{run}.txt").write_text(log, encoding="utf-8")
            scores = json.loads(next(output.glob("*scores.json")).read_text())  # unranked_scores.json: refused
            judge = json.loads((output / "details.json").read_text())["generation"]["judge"]
            plan = judge["plan"]
            judgments = len(DIMENSIONS) * args.turns
            startup = plan["reserve"]["startup_s"] or 0.0
            rows.append({
                "concurrency": level, "turns": args.turns, "judgments": judgments, "latency_s": [low, high],
                "http_requests": calls, "exit": code, "wall_s": round(wall, 1), "limit_s": args.limit,
                "judging_window_s": round(plan["judging_until_s"], 1), "rest_of_scoring_s": round(without, 1),
                "ideal_judging_s": round((judgments + 1) * (low + high) / 2 / level, 1),
                "five_dimensions": set(JUDGE) <= set(scores),
                "text_metrics_s": round(judge["window"]["text_metrics_s"], 1),
                "kept_after_judging_s": round(plan["reserve"]["finish_s"], 1),
                "load": args.load, "startup_s": startup, "slowdown": plan["reserve"]["slowdown"],
                "reserve_s": plan["reserve_s"],
                # After the deadline: the wall time less the measured startup and the judging window.
                "after_deadline_s": round(wall - startup - plan["judging_until_s"], 1),
            })
            shutil.rmtree(input_dir / "ref" / JUDGE_DIR)
    finally:
        conn.send("stop")
        server.join(10)

    print(f"scoring program, 2b, {args.turns} turns x {len(DIMENSIONS)} dimensions, "
          f"{'answers of 4,000 words, ' if args.long else ''}replies after uniform({low:g}, {high:g}) s, "
          f"limit {args.limit} s (rest of the scoring without the judge: {rows[0]['rest_of_scoring_s']} s)")
    print("| concurrency | judgments | HTTP requests | ideal judging = requests x mean latency / concurrency (s) "
          "| wall, whole run (s) | judging window (s) | limit (s) | five dimensions written "
          "| text metrics, before judging (s) | kept back after judging (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|:---|---:|---:|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['judgments']} | {r['http_requests']} | {r['ideal_judging_s']} | {r['wall_s']} "
              f"| {r['judging_window_s']} | {r['limit_s']} | {'yes' if r['five_dimensions'] else 'no'} "
              f"| {r['text_metrics_s']} | {r['kept_after_judging_s']} |")
    print(f"\nthe reserve: load {args.load} busy loops, the server {'stalling after ' + str(args.stall_after) + ' judgments' if args.stall_after is not None else 'answering'} "
          f"(container {CONTAINER_S} s kept back, not in the wall time)")
    print("| concurrency | exit | startup measured (s) | slowdown | reserve (s) | judging until (s) | text metrics (s) "
          "| after the deadline (s) | kept back for it (s) | wall (s) | limit (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['concurrency']} | {r['exit']} | {r['startup_s']} | {r['slowdown']} | {r['reserve_s']} "
              f"| {r['judging_window_s']} | {r['text_metrics_s']} | {r['after_deadline_s']} "
              f"| {r['kept_after_judging_s']} | {r['wall_s']} | {r['limit_s']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
