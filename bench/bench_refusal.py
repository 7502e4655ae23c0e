"""Benchmark: what refusing a bad run costs, beside scoring a valid run of the same size.

The project's target: **refusing a run (``reteco validate`` or ``reteco score``, exit code 1)
takes at most twice the wall time of scoring the valid run, and stays under 2 GB peak memory.**

1. Generates, next to ``bench_score.py``'s data (its generator, same flags and defaults, reused
   when its ``params.json`` matches), from the valid 10M-line ``run.txt``:

   - ``refusal/one_bad_line.txt``: the same run with one rank made ``x`` on a line near the end
     (99.9 % of the way), so everything before it is read and found right;
   - ``refusal/one_percent_bad.txt``: every 100th line broken (same length), seven kinds in turn:
     rank not an integer, score not a number, five columns, not UTF-8, seven columns, rank 0,
     score ``nan`` (padded with blanks);
   - ``refusal/bomb.txt.gz``: a gzip of short bad lines (``q Q0 d 1 1``, five columns) that
     decompresses to ``--bomb-bytes`` (default: just under the 2 GiB cap);
   - ``refusal/huge_line.txt.gz``: ten good lines, then one line of ``--huge-bytes`` (default
     128 MiB) of ``x x x ...``, in a gzip of ~130 KB.

2. Runs, alternating, ``--rounds`` times: ``reteco score`` on the valid run, then ``reteco
   validate`` and ``reteco score`` on each bad file; each as a child process whose wall time,
   peak RSS (``os.wait4``'s ``ru_maxrss``) and exit code are recorded, and whose first message
   is kept (this process stays small: a child's ``ru_maxrss`` includes its parent's high-water
   mark, so the data are made in a child of their own). Prints a markdown table with the medians and each one's ratio to the valid run's
   score time; also written to ``refusal/results.md`` and ``results.json``.

    .venv/bin/python bench/bench_refusal.py                    # default size, 3 rounds
    .venv/bin/python bench/bench_refusal.py --topics 500 --docs-per-topic 100 --corpus 50000 \\
        --bomb-bytes 20000000 --huge-bytes 2000000 --out /tmp/brsmoke   # smoke test, seconds
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from bench_score import HERE, generate, run_child, versions

CAP = 2 * 1024**3  # the documented size limit once decompressed (reteco.formats.submission)
BOMB_LINE = b"q Q0 d 1 1\n"
KINDS = ["rank not an integer", "score not a number", "five columns", "not UTF-8", "seven columns", "rank 0", "score nan"]


def valid_data(args) -> tuple[Path, Path, dict]:
    """bench_score.py's reference and valid run, generated unless its params.json matches."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    params = {"topics": args.topics, "docs_per_topic": args.docs_per_topic, "corpus": args.corpus, "seed": args.seed, "topic_order": "reference"}
    params_path, ref_dir, run_path = out / "params.json", out / "ref_1a", out / "run.txt"
    current = json.loads(params_path.read_text()) if params_path.exists() else {}
    if current.get("params") != params or not run_path.exists() or not ref_dir.exists():
        params_path.unlink(missing_ok=True)
        print(f"generating {args.topics} x {args.docs_per_topic} lines into {out} ...", flush=True)
        generated = generate(out, args.topics, args.docs_per_topic, args.corpus, args.seed)
        params_path.write_text(json.dumps({"params": params, "generated": generated}, indent=1) + "\n")
        current = {"params": params, "generated": generated}
    return ref_dir, run_path, current


def _line_starts(data: bytearray) -> np.ndarray:
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    return np.r_[0, ends[:-1] + 1]


def _fields(data: bytearray, start: int) -> list[tuple[int, int]]:
    """(start, stop) of the six space-separated fields of the generated line at ``start``."""
    end = data.index(b"\n", start)
    bounds, at = [], start
    for _ in range(5):
        space = data.index(b" ", at, end)
        bounds.append((at, space))
        at = space + 1
    return bounds + [(at, end)]


def break_line(data: bytearray, start: int, kind: str) -> None:
    """Break the line at ``start`` in place, keeping its length."""
    topic, _q0, doc, rank, score, tag = _fields(data, start)
    if kind == "rank not an integer":
        data[rank[0]] = ord("x")
    elif kind == "score not a number":
        data[score[0]] = ord("x")
    elif kind == "five columns":
        data[tag[0] - 1] = ord("_")
    elif kind == "not UTF-8":
        data[doc[0]] = 0xFF
    elif kind == "seven columns":
        data[(doc[0] + doc[1]) // 2] = ord(" ")
    elif kind == "rank 0":
        data[rank[0] : rank[1]] = b"0" * (rank[1] - rank[0])
    elif kind == "score nan":
        data[score[0] : score[1]] = b"nan".ljust(score[1] - score[0])
    else:
        raise ValueError(kind)


def bad_files(out: Path, run_path: Path, bomb_bytes: int, huge_bytes: int) -> dict[str, Path]:
    """The four bad submissions, made once per valid run and sizes (``refusal/params.json``)."""
    folder = out / "refusal"
    folder.mkdir(exist_ok=True)
    files = {
        "one bad line near the end": folder / "one_bad_line.txt",
        "1% bad lines, mixed kinds": folder / "one_percent_bad.txt",
        "gzip bomb of short bad lines": folder / "bomb.txt.gz",
        "one huge line": folder / "huge_line.txt.gz",
    }
    stamp = {"run_bytes": run_path.stat().st_size, "run_mtime": run_path.stat().st_mtime, "bomb_bytes": bomb_bytes, "huge_bytes": huge_bytes}
    stamp_path = folder / "params.json"
    if stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp and all(p.exists() for p in files.values()):
        return files
    stamp_path.unlink(missing_ok=True)
    started = time.perf_counter()
    data = bytearray(run_path.read_bytes())
    starts = _line_starts(data)
    at = int(starts[int(len(starts) * 0.999)])
    rank = _fields(data, at)[3]
    saved = bytes(data[rank[0] : rank[1]])
    data[rank[0]] = ord("x")
    files["one bad line near the end"].write_bytes(data)
    data[rank[0] : rank[1]] = saved
    for n, line in enumerate(range(99, len(starts), 100)):
        break_line(data, int(starts[line]), KINDS[n % len(KINDS)])
    files["1% bad lines, mixed kinds"].write_bytes(data)
    del data, starts
    per_block = (1 << 20) // len(BOMB_LINE)
    blocks, rest = divmod(bomb_bytes // len(BOMB_LINE), per_block)
    with gzip.open(files["gzip bomb of short bad lines"], "wb", compresslevel=9) as sink:
        for _ in range(blocks):
            sink.write(BOMB_LINE * per_block)
        sink.write(BOMB_LINE * rest)
    good = b"q Q0 d 1 1 t\n" * 10
    with gzip.open(files["one huge line"], "wb", compresslevel=9) as sink:
        sink.write(good)
        piece = b"x " * (1 << 19)  # 1 MiB: the line is --huge-bytes rounded down to MiB
        for _ in range(huge_bytes // len(piece)):
            sink.write(piece)
        sink.write(b"x\n")
    stamp_path.write_text(json.dumps(stamp) + "\n")
    print(f"made the bad files in {time.perf_counter() - started:.1f} s", flush=True)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description="what refusing a bad run costs, beside scoring a valid one")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="scratch folder (default bench/out, shared with bench_score.py)")
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--docs-per-topic", type=int, default=1_000)
    parser.add_argument("--corpus", type=int, default=1_200_000)
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bomb-bytes", type=int, default=CAP - 64, help="decompressed size of the gzip bomb")
    parser.add_argument("--huge-bytes", type=int, default=128 << 20, help="length of the huge line")
    parser.add_argument("--reteco", default=str(Path(sys.executable).parent / "reteco"), help="console script")
    parser.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.prepare_only:
        valid_data(args)
        bad_files(args.out, args.out / "run.txt", args.bomb_bytes, args.huge_bytes)
        return 0
    # A child's ru_maxrss starts from its parent's high-water mark (vfork, then exec), so the
    # data are made in a child of their own and this process never holds a file's bytes.
    subprocess.run([sys.executable, __file__, "--prepare-only", *sys.argv[1:]], check=True)
    ref_dir, run_path, current = valid_data(args)
    files = bad_files(args.out, run_path, args.bomb_bytes, args.huge_bytes)
    for path in (run_path, *files.values()):  # every command then reads them from the page cache
        with open(path, "rb") as handle:
            while handle.read(1 << 24):
                pass
    machine = versions()
    print("machine:", json.dumps(machine), flush=True)
    scratch = args.out / "refusal"

    jobs = {("valid run", "score"): [args.reteco, "score", "--ref", str(ref_dir), "--res", str(run_path), "--out", str(scratch / "scored")]}
    for case, path in files.items():
        jobs[(case, "validate")] = [args.reteco, "validate", "--ref", str(ref_dir), str(path)]
        jobs[(case, "score")] = [args.reteco, "score", "--ref", str(ref_dir), "--res", str(path), "--out", str(scratch / "refused")]
    measured: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in jobs}
    first_message: dict[tuple[str, str], str] = {}
    for r in range(1, args.rounds + 1):
        for key, command in jobs.items():
            stdout = scratch / f"{key[0].split()[0]}_{key[1]}.stdout"
            wall, rss, code = run_child(command, stdout)
            expected = 0 if key[0] == "valid run" else 1
            if code != expected:
                sys.stderr.write(stdout.with_suffix(".stderr").read_text()[-3000:])
                raise SystemExit(f"{key}: exit code {code}, expected {expected}")
            measured[key].append((wall, rss))
            errors = stdout.with_suffix(".stderr").read_text().splitlines()
            first_message[key] = f"{errors[0][:110]} [{len(errors)} lines]" if errors else ""
            print(f"round {r}: {key[0]}: {key[1]}: {wall:.2f} s, {rss:.0f} MB", flush=True)

    median = {key: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v)) for key, v in measured.items()}
    base = median[("valid run", "score")][0]
    sizes = {"valid run": run_path.stat().st_size, **{case: path.stat().st_size for case, path in files.items()}}
    decompressed = {"gzip bomb of short bad lines": args.bomb_bytes // len(BOMB_LINE) * len(BOMB_LINE), "one huge line": args.huge_bytes // (1 << 20) * (1 << 20) + 132}
    lines = [
        f"valid run: {current['generated']['run_bytes'] / 1e6:.0f} MB, {args.topics * args.docs_per_topic:,} lines; "
        f"{args.rounds} rounds, medians; ratio = wall / the valid run's `reteco score` wall",
        "",
        "| submission | file | command | " + " | ".join(f"round {r}" for r in range(1, args.rounds + 1)) + " | median wall | median peak RSS | ratio | target |",
        "|---|---|---|" + "---|" * args.rounds + "---|---|---|---|",
    ]
    for key, values in measured.items():
        case, command = key
        size = f"{sizes[case] / 1e6:,.1f} MB" + (f" ({decompressed[case] / 1e6:,.0f} MB unzipped)" if case in decompressed else "")
        cells = " | ".join(f"{w:.2f} s / {m:,.0f} MB" for w, m in values)
        wall, rss = median[key]
        verdict = "-" if case == "valid run" else ("met" if wall <= 2 * base and rss < 2048 else "MISSED")
        lines.append(f"| {case} | {size} | {command} | {cells} | {wall:.2f} s | {rss:,.0f} MB | {wall / base:.2f}x | {verdict} |")
    lines += ["", "First message of each refusal (the last round):", ""]
    lines += [f"- {case}, {command}: `{first_message[(case, command)]}`" for case, command in jobs if case != "valid run"]
    table = "\n".join(lines)
    print()
    print(table)
    (scratch / "results.md").write_text(table + "\n\nmachine: " + json.dumps(machine) + "\n")
    (scratch / "results.json").write_text(
        json.dumps({"machine": machine, "measured": {" / ".join(k): v for k, v in measured.items()}, "messages": {" / ".join(k): v for k, v in first_message.items()}}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
