"""Benchmark: what ``Reference.read`` costs, and how much of it is verifying the files' sha256.

Each round is a fresh child process that times one ``Reference.read(--ref)`` (wall and CPU
time of the process, ``time.process_time``), then hashes every file of the folder on its own
(``sha256_file``, one after the other) to give the verification's share. With ``--baseline-src``
(a ``src`` folder of another reteco version, e.g. from ``git archive <commit> src``) the rounds
alternate between that version and this one, so both read the folder from the page cache under
the same load.

    .venv/bin/python bench/bench_reference_read.py --ref bench/out/ref_1a --rounds 7
    git archive 54074fd src | tar -x -C /tmp/before
    .venv/bin/python bench/bench_reference_read.py --ref bench/out/ref_1a --baseline-src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

CHILD = r"""
import json, sys, time
from pathlib import Path
root = Path(sys.argv[1])
from reteco.formats.reference import Reference
from reteco.formats.file_digest import sha256_file
wall, cpu = time.perf_counter(), time.process_time()
Reference.read(root)
out = {"read_wall": time.perf_counter() - wall, "read_cpu": time.process_time() - cpu, "hash": {}}
for path in sorted(root.iterdir()):
    if path.is_file():
        started = time.perf_counter()
        sha256_file(path)
        out["hash"][path.name] = [path.stat().st_size, time.perf_counter() - started]
print(json.dumps(out))
"""


def one(src: Path, ref: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run([sys.executable, "-c", CHILD, str(ref)], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, default=HERE / "out" / "ref_1a")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline-src", type=Path, help="src folder of the version to compare with")
    args = parser.parse_args()
    sources = {"this": SRC} if args.baseline_src is None else {"baseline": args.baseline_src, "this": SRC}
    results: dict[str, list[dict]] = {name: [] for name in sources}
    for _ in range(args.rounds):
        for name, src in sources.items():
            results[name].append(one(src, args.ref))
    print(f"Reference.read({args.ref}), {args.rounds} rounds, each a fresh process")
    print("| version | median wall | min wall | median CPU |")
    print("|---|---|---|---|")
    for name, rounds in results.items():
        walls = [r["read_wall"] for r in rounds]
        cpus = [r["read_cpu"] for r in rounds]
        print(f"| {name} | {statistics.median(walls):.3f} s | {min(walls):.3f} s | {statistics.median(cpus):.3f} s |")
    print("\nsha256 of each file alone (this version's rounds):")
    for file, (size, _) in results["this"][0]["hash"].items():
        times = [r["hash"][file][1] for r in results["this"]]
        best = min(times)
        rate = size / best / 1e6 if best > 0 else float("inf")
        print(f"  {file}: {size / 1e6:.1f} MB, median {statistics.median(times):.3f} s, min {best:.3f} s ({rate:.0f} MB/s)")


if __name__ == "__main__":
    main()
