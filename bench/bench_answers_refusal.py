"""Benchmark: what refusing an answers file costs, beside reading a valid one of the same length.

The errors of an answers file are all counted (``reteco.problems.Problems``: listed up to 20,
the rest counted by kind), so a mistake made on every line (``"response"`` for ``"answer"``,
broken JSON) costs one message per line before it is collapsed into one line. This measures
that cost against reading an accepted file of as many lines (one answer per reference turn, the
other lines' turn ids unknown to the reference: a warning, the file is accepted), in process,
best of ``--rounds``:

- ``valid``: accepted, ``--lines`` lines;
- ``response key``: every line ``{"turn_id": ..., "response": ...}``;
- ``bad JSON``: every line ``nope``;
- ``UTF-16``: the valid file saved as UTF-16 (Windows PowerShell's ``>``): refused at once.

    .venv/bin/python bench/bench_answers_refusal.py                 # 200,000 lines, 3 rounds
    .venv/bin/python bench/bench_answers_refusal.py --lines 20000 --rounds 1   # smoke test
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from reteco.formats.answers import read_answers
from reteco.formats.reference import Reference
from reteco.problems import InputError, Problems
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


def files(reference: Reference, lines: int) -> dict[str, bytes]:
    turns = [t.key for t in reference.topics]
    unknown = [f"nowhere/{i}_turn_1" for i in range(lines - len(turns))]
    text = "A generated answer of a few words about the question of the turn."
    valid = "".join(json.dumps({"turn_id": t, "answer": text}) + "\n" for t in turns + unknown).encode()
    return {
        "valid": valid,
        "response key": valid.replace(b'"answer"', b'"response"'),
        "bad JSON": b"nope\n" * lines,
        "UTF-16": valid.decode().encode("utf-16"),
    }


def timed(data: bytes, reference: Reference, rounds: int) -> tuple[float, list[str]]:
    best, said = float("inf"), []
    for _ in range(rounds):
        started = time.perf_counter()
        problems = Problems()
        try:
            read_answers(data, "answers.jsonl", reference, problems)
            said = problems.lines()
        except InputError as exc:
            said = exc.problems.lines()
        best = min(best, time.perf_counter() - started)
    return best, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref", subtracks=("2b",))
        reference = Reference.read(root / "ref" / "2b")
        timings = {name: timed(data, reference, args.rounds) for name, data in files(reference, args.lines).items()}
    base = timings["valid"][0]
    print(f"| answers file ({args.lines:,} lines) | best of {args.rounds} | / valid | lines said |")
    print("|---|---|---|---|")
    for name, (seconds, said) in timings.items():
        print(f"| {name} | {seconds:.3f} s | {seconds / base:.2f}x | {len(said)} |")
    for name, (_, said) in timings.items():
        print(f"{name}: {said[0][:160] if said else '(nothing)'}")


if __name__ == "__main__":
    main()
