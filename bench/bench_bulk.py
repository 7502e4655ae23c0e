"""Benchmark: a rehearsal at the test set's size (issue 37): ``reteco synth --scale``, then a
Codabench-shaped bulk download of a 2a phase read with the platform's selection.

Steps, each in a child process timed for wall time and peak memory (``resource``'s
``ru_maxrss`` of the children):

1. ``reteco synth --scale S``: the release;
2. ``reteco prepare --split dev --subtracks 2a``;
3. a bulk download, written here: ``--owners`` owners with ``--per-owner`` submissions each, 2a
   runs of 100 documents a turn drawn from the turn's domain (each gold document placed in the
   top 10 with the submission's own probability, seeded), every third owner's last submission
   broken (one bad line at the end: the platform would have failed it). The kit's BM25 sample
   runs (``--samples``) are not used: pure-Python BM25 over a corpus 52 times the default takes
   many minutes, which is not what is measured here;
4. ``reteco leaderboard`` on the download (the selection, then the scoring of the kept runs);
5. ``reteco leaderboard`` on a plain folder holding the same kept runs, for the selection's cost.

    .venv/bin/python bench/bench_bulk.py --scale 52 --owners 60 --per-owner 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RETECO = [sys.executable, "-m", "reteco"]


def timed(command: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"wall_s": round(wall, 2), "peak_mb_so_far": round(max(peak, before) / 1024), "stdout": done.stdout,
            "stderr": done.stderr}


def _turns(release: Path) -> tuple[list[tuple[str, str, list[str]]], dict[str, list[str]]]:
    """The dev split's 2a turns (topic id qualified by its domain, domain, gold ids) and each
    domain's document ids."""
    turns, corpora = [], {}
    for domain in sorted(p for p in (release / "track2_recor").iterdir() if p.is_dir()):
        corpora[domain.name] = [json.loads(line)["doc_id"] for line in (domain / "documents.jsonl").open()]
        for conversation in json.loads((domain / "benchmark_dev.json").read_text()):
            for turn in conversation["turns"]:
                turns.append((f"{domain.name}/{conversation['id']}_turn_{turn['turn_id']}", domain.name,
                              turn["gold_doc_ids"]))
    return turns, corpora


def _run(turns, corpora, *, quality: float, rng: random.Random) -> list[str]:
    lines = []
    for topic, domain, gold in turns:
        top = [d for d in gold if rng.random() < quality]
        chosen = list(dict.fromkeys(top + rng.sample(corpora[domain], 110)))[:100]
        lines += [f"{topic} Q0 {doc} {rank} {100 - rank}.5 bench\n" for rank, doc in enumerate(chosen, 1)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=52)
    parser.add_argument("--owners", type=int, default=60)
    parser.add_argument("--per-owner", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results: dict = {"args": vars(args) | {"json": str(args.json) if args.json else None}}
    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as tmp:
        root = Path(tmp)
        step = timed([*RETECO, "synth", "--out", str(root / "release"), "--scale", str(args.scale)])
        results["synth"] = {k: v for k, v in step.items() if k != "stderr"}
        step = timed([*RETECO, "prepare", "--release", str(root / "release"), "--split", "dev", "--out",
                      str(root / "ref"), "--subtracks", "2a"])
        results["prepare"] = {k: v for k, v in step.items() if k not in ("stderr",)}
        turns, corpora = _turns(root / "release")
        bulk, kept = root / "bulk", root / "kept"
        bulk.mkdir()
        kept.mkdir()
        n = 100
        lines = []
        for owner in range(args.owners):
            for k in range(args.per_owner):
                n += 1
                lines = _run(turns, corpora, quality=rng.uniform(0.1, 0.9), rng=rng)
                broken = k == args.per_owner - 1 and owner % 3 == 0
                name = f"{n}_team{owner:02d}_PhaseId5_2027-01-2{k}_0{k}-00_run.txt"
                (bulk / name).write_text("".join(lines) + ("not a run line\n" if broken else ""))
                last_valid = k == args.per_owner - 1 - (owner % 3 == 0)
                if last_valid:
                    shutil.copy(bulk / name, kept / f"team{owner:02d}.txt")
        results["run_lines"] = len(lines)
        results["bulk_files"] = n - 100
        results["bulk_mb"] = round(sum(p.stat().st_size for p in bulk.iterdir()) / 1e6, 1)
        for name, source in (("leaderboard_bulk", bulk), ("leaderboard_plain_folder", kept)):
            step = timed([*RETECO, "leaderboard", "--ref", str(root / "ref" / "2a"), "--submissions", str(source),
                          "--out", str(root / name), "--jobs", str(args.jobs)])
            results[name] = {"wall_s": step["wall_s"], "peak_mb_so_far": step["peak_mb_so_far"],
                             "summary": [line for line in step["stderr"].splitlines() if "bulk download" in line]
                             + step["stdout"].splitlines()[-1:]}
            board = json.loads((root / name / "leaderboard.json").read_text())
            results[name]["systems"] = sorted(s["name"] for s in board["systems"])
        same = [s.removeprefix("team") for s in results["leaderboard_bulk"]["systems"]] == [
            s.removeprefix("team") for s in results["leaderboard_plain_folder"]["systems"]]
        results["same_systems"] = same
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
