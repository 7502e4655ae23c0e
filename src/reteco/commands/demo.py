"""``make score``: the whole job on the built-in synthetic release, with no download.

Builds the synthetic release, prepares the dev reference data from it, and scores the starting
kit's sample submissions through the same code path as the Codabench scoring program, printing
each ``scores.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reteco.formats.reference import Reference
from reteco.outputs.scores import write_details, write_scores
from reteco.problems import InputError
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission
from reteco.subtracks import SUBTRACK_IDS

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "starting_kit" / "sample_submissions"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, default=Path("build"))
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    args = parser.parse_args(argv)

    release = write_synthetic_release(args.build / "synthetic_release")
    print(f"synthetic release: {release}")
    prepare_release(release, "dev", args.build / "reference")
    print(f"reference data (dev split): {args.build / 'reference'}")
    status = 0
    for subtrack in SUBTRACK_IDS:
        reference = Reference.read(args.build / "reference" / subtrack)
        submission = args.samples / subtrack
        print(f"\n== {subtrack}: {submission}")
        if not submission.exists():
            print(f"no sample submission for {subtrack}")
            continue
        try:
            result = score_submission(reference, submission)
        except InputError as exc:
            print("\n".join(exc.problems.lines()))
            status = 1
            continue
        said = result.problems.lines()
        for line in said:
            print(line)
        out = args.build / "scores" / subtrack
        write_scores(out, result.scores)
        write_details(out, result.details_json(per_topic=True))
        print(json.dumps(result.scores, indent=2))
        generation = result.details.get("generation")
        if generation is not None:
            print(_generation_summary(generation, "\n".join(said)))
        print(f"-> {out / 'scores.json'}, {out / 'details.json'}")
    return status


def _generation_summary(generation: dict, said: str = "") -> str:
    """Two lines on 2b/2c: whether the judge ran, which text metrics were computed; a reason is
    given only where no warning printed above (``said``) gave it already."""
    judge = generation["judge"]
    if judge["ran"]:
        calls = judge["calls"]
        line = (
            f"judge: ran ({judge.get('model', '?')}, prompts v{judge.get('prompt_version', '?')}): "
            f"{calls['judgments']} judgments, {calls['cached']} from the cache, {calls['new']} new"
        )
    else:
        line = "judge: did not run" + (" (the warning above says why)" if judge["reason"] in said else f": {judge['reason']}")
    metrics = generation["text_metrics"]
    computed = ", ".join(name for name, info in metrics.items() if info["available"]) or "none"
    missing = "; ".join(name if info["reason"] in said else f"{name} ({info['reason']})"
                        for name, info in metrics.items() if not info["available"])
    return f"{line}\ntext metrics computed: {computed}" + (f"\ntext metrics unavailable: {missing}" if missing else "")


if __name__ == "__main__":
    sys.exit(main())
