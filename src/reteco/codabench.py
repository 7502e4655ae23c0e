"""The Codabench scoring program's body: ``score.py INPUT OUTPUT``.

The compute worker mounts the reference data at ``INPUT/ref`` and the participant's submission
at ``INPUT/res``, and collects ``OUTPUT/scores.json``. The sub-track comes from the reference
data (``INPUT/ref/reference.json``), so one program serves every task. Its log is shown to the
participant: it prints warnings about their input and the scores, never reference data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reteco import __version__
from reteco.problems import InputError

EXIT_INPUT = 1


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: score.py INPUT_DIR OUTPUT_DIR (INPUT_DIR holds ref/ and res/)", file=sys.stderr)
        return 2
    input_dir, output_dir = Path(argv[0]), Path(argv[1])
    from reteco.formats.reference import Reference
    from reteco.outputs.scores import write_details, write_scores
    from reteco.tracks.submission_scoring import score_submission

    print(f"reteco {__version__}")
    try:
        reference = Reference.read(input_dir / "ref")
        print(f"sub-track {reference.subtrack}, reference {reference.fingerprint()}")
        result = score_submission(reference, input_dir / "res", per_topic=True)
    except InputError as exc:
        for line in exc.problems.lines():
            print(line, file=sys.stderr)
        print("the submission could not be scored: fix the errors above and submit again", file=sys.stderr)
        return EXIT_INPUT
    for line in result.problems.lines():
        print(line)
    write_scores(output_dir, result.scores)
    write_details(output_dir, result.details)
    print(json.dumps(result.scores, indent=2))
    return 0
