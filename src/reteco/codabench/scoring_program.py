"""The Codabench scoring program's body: ``score.py INPUT OUTPUT``.

The compute worker mounts the reference data at ``INPUT/ref`` and the participant's submission
at ``INPUT/res``, and collects ``OUTPUT/scores.json``. The sub-track comes from the reference
data (``INPUT/ref/reference.json``), so one program serves every task. Its log is shown to the
participant: it prints warnings about their input and the scores, never reference data.

The phase comes from ``INPUT/ref/phase.json``, written into each phase's reference data when
the bundle is built (``reteco.formats.phase_record``): the worker tells a scoring program nothing
about the phase. Its ``per_topic`` flag decides whether per-topic figures are written
(details.json, detailed_results.html); without a phase.json they are withheld, which is the safe
side on hidden labels.

A submission that holds one folder per sub-track (``1a/``, ``2c/`` ..., the starting kit's zip
of all of them) is read from the folder of this program's sub-track, by the same rule as
``reteco score`` (``reteco.formats.submission.Submission.for_subtrack``).

Outputs (``reteco.outputs.results``, the same as ``reteco score``): ``details.json``,
``detailed_results.html`` and, last, ``scores.json`` (finite numbers only), with every absent
key's reason in the log, ``details.json["absent_scores"]`` and the page. The judge never runs
here: its keys are absent with that reason, and the organizers' ``reteco judge`` fills them in
after the phase. A required key missing from the scorer's output is an internal error, never a
silent empty column; so is any unexpected exception (its traceback only with ``RETECO_DEBUG=1``,
since an exception's text could quote reference data).

Exit codes (``reteco.problems``, as for the ``reteco`` command): 0 scored; 1 the submission
cannot be used (the log and ``detailed_results.html`` say why; no ``scores.json``); 2 the
program was called wrongly; 3 an internal error of reteco (``reteco.problems.internal_error``; no
``scores.json`` is written, as it is written last).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.problems import EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError, internal_error


def main(argv: list[str]) -> int:
    """Score ``INPUT/res`` against ``INPUT/ref`` into ``OUTPUT``; exit 0, 1 (input), 2 (usage) or
    3 (internal)."""
    if len(argv) != 2:
        print("usage: score.py INPUT_DIR OUTPUT_DIR (INPUT_DIR holds ref/ and res/)", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _main(Path(argv[0]), Path(argv[1]))
    except Exception as exc:  # noqa: BLE001 - never a raw traceback in the log: it may quote reference data
        return internal_error(exc)


def _main(input_dir: Path, output_dir: Path) -> int:
    use_scoring_memory_pool()
    from reteco.formats.phase_record import read_phase
    from reteco.formats.reference import Reference, ReferenceDataError
    from reteco.outputs.results import MissingScoreError, absent_lines, write_refusal_page, write_results
    from reteco.scoring.submission import score_submission

    print(f"reteco {__version__}")
    _use_vendored_wordnet()
    phase, note = read_phase(input_dir / "ref")
    subtrack = None
    try:
        reference = Reference.read(input_dir / "ref")
        subtrack = reference.subtrack
        print(f"sub-track {subtrack}, phase {phase['name']}, reference {reference.fingerprint()}")
        if note:
            print(f"note: {note}")
        elif not phase["per_topic"]:
            print("per-topic figures are withheld in this phase (hidden labels)")
        # The judge never runs here (no network, no key on the worker): 2b/2c are scored on the
        # rest now and the organizers' `reteco judge` fills the judge columns after the phase.
        result = score_submission(reference, input_dir / "res", per_topic=bool(phase["per_topic"]), run_judge_now=False)
    except InputError as exc:
        lines = exc.problems.lines()
        if isinstance(exc, ReferenceDataError):
            # The organizers' files, not the participant's: say so, and whom to tell.
            lines.append("the task's reference data cannot be used; this is not a problem of your submission: "
                         "please tell the organizers")
        for line in lines:
            print(line, file=sys.stderr)
        if not isinstance(exc, ReferenceDataError):
            print("the submission could not be scored: fix the errors above and submit again", file=sys.stderr)
        write_refusal_page(output_dir, subtrack, phase, lines)
        return EXIT_INPUT

    for line in result.problems.lines():
        print(line)
    try:
        absent = write_results(output_dir, result, subtrack, phase, judge_skipped=True)
    except MissingScoreError as exc:
        print(f"reteco: {exc}", file=sys.stderr)  # leaderboard keys only: no reference data
        raise
    print(json.dumps(result.scores, indent=2))
    for line in absent_lines(absent, result.problems.lines()):
        print(line)
    return EXIT_OK


def _use_vendored_wordnet() -> None:
    """Point METEOR at the WordNet the bundle carries (``vendor/nltk_data/corpora/wordnet``).

    Both variables are needed: nltk reads corpora only below a folder of its data path
    (``NLTK_DATA``), and reteco checks the exact folder (``RETECO_WORDNET``). Set before nltk is
    imported; a value already configured is kept.
    """
    from reteco.formats.wordnet import ENV_VAR

    data = Path(__file__).resolve().parents[2] / "nltk_data"
    wordnet = data / "corpora" / "wordnet"
    if wordnet.is_dir():
        os.environ.setdefault("NLTK_DATA", str(data))
        os.environ.setdefault(ENV_VAR, str(wordnet))


