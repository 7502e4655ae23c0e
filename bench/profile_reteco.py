"""Where ``reteco score`` spends its time and memory, line by line (a diagnostic for bench_score.py).

Runs ``reteco.commands.main(["score", ...])`` in this process under a line tracer limited to reteco's
own source files, and reports for each source line:

- time: wall time from the line's start to the next line of the same frame (inclusive of
  everything it calls, Arrow and numpy included); Python loops pay ~1 us per traced line, so
  lines inside loops over many items read high (compare with cProfile for those);
- peak: how much the process's high-water mark (VmHWM) rose while the line ran, not counting
  what lines of the functions it called already took (so the column sums to the process peak);
- RSS after: the resident size when the line finished (only for lines slower than 2 ms);
- Arrow after: bytes Arrow's memory pool had allocated then (the rest of RSS is numpy, Python
  objects, the run's ``bytes`` and memory the allocator has not yet returned).

    .venv/bin/python bench/profile_reteco.py --ref bench/out/ref_1a --res bench/out/run.txt [--top 40]
"""

from __future__ import annotations

import argparse
import linecache
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

import reteco
from reteco import commands as cli

ROOT = str(Path(reteco.__file__).resolve().parent)
SLOW = 0.002


def memory_kb() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in KiB."""
    rss = hwm = 0
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


class LineTracer:
    def __init__(self) -> None:
        # (file, line, function) -> [seconds, hits, HWM rise KiB, max RSS after KiB, max Arrow bytes after]
        self.stats: dict[tuple[str, int, str], list] = defaultdict(lambda: [0.0, 0, 0, 0, 0])
        self.current: dict[int, tuple[int, float]] = {}
        self.last_hwm = memory_kb()[1]

    def global_trace(self, frame, event, arg):
        if frame.f_code.co_filename.startswith(ROOT):
            return self.local_trace
        return None

    def _close(self, frame, now: float) -> None:
        opened = self.current.pop(id(frame), None)
        if opened is None:
            return
        line, started = opened
        elapsed = now - started
        entry = self.stats[(frame.f_code.co_filename, line, frame.f_code.co_name)]
        entry[0] += elapsed
        entry[1] += 1
        if elapsed > SLOW:
            rss, hwm = memory_kb()
            entry[2] += hwm - self.last_hwm
            entry[3] = max(entry[3], rss)
            entry[4] = max(entry[4], pa.total_allocated_bytes())
            self.last_hwm = hwm

    def local_trace(self, frame, event, arg):
        now = time.perf_counter()
        self._close(frame, now)
        if event == "line":
            self.current[id(frame)] = (frame.f_lineno, time.perf_counter())
        return self.local_trace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True)
    parser.add_argument("--res", required=True)
    parser.add_argument("--out", default="/tmp/reteco_profile_out")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    tracer = LineTracer()
    start_rss = memory_kb()[0]
    started = time.perf_counter()
    sys.settrace(tracer.global_trace)
    try:
        code = cli.main(["score", "--ref", args.ref, "--res", args.res, "--out", args.out])
    finally:
        sys.settrace(None)
    wall = time.perf_counter() - started
    end_hwm = memory_kb()[1]
    print(
        f"exit {code}; traced wall {wall:.2f} s; RSS at start {start_rss / 1024:.0f} MB "
        f"(after imports); process peak (VmHWM) {end_hwm / 1024:.0f} MB"
    )
    print()
    rows = sorted(tracer.stats.items(), key=lambda kv: -kv[1][0])
    print("| time s (incl.) | hits | peak rise MB | RSS after MB | Arrow after MB | where | line |")
    print("|---|---|---|---|---|---|---|")
    shown = 0
    for (filename, line, function), (seconds, hits, rise, rss, arrow) in rows:
        if shown >= args.top:
            break
        if seconds < 0.05 and rise < 20 * 1024:
            continue
        source = linecache.getline(filename, line).strip().replace("|", "\\|")
        where = f"{Path(filename).relative_to(ROOT).as_posix()}:{line} {function}"
        print(
            f"| {seconds:.2f} | {hits} | {rise / 1024:.0f} | {rss / 1024:.0f} | {arrow / 2**20:.0f} | {where} "
            f"| `{source[:90]}` |"
        )
        shown += 1
    risers = sorted(((v[2], k) for k, v in tracer.stats.items() if v[2] > 20 * 1024), reverse=True)
    print()
    print("lines that raised the high-water mark by more than 20 MB (exclusive of callees):")
    for rise, (filename, line, function) in risers:
        source = linecache.getline(filename, line).strip()
        print(
            f"  +{rise / 1024:5.0f} MB  {Path(filename).relative_to(ROOT).as_posix()}:{line} {function}: {source[:100]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
