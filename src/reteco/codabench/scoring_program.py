"""The Codabench scoring program's body: ``score.py INPUT OUTPUT``.

The compute worker mounts the reference data at ``INPUT/ref`` and the participant's submission
at ``INPUT/res``, and collects ``OUTPUT/scores.json``. The sub-track comes from the reference
data (``INPUT/ref/reference.json``), so one program serves every task. Its log is shown to the
participant: it prints warnings about their input and the scores, never reference data.

The phase comes from ``INPUT/ref/phase.json``, written into each phase's reference data when
the bundle is built (``reteco.codabench.competition.phase_record``): the worker tells a scoring
program nothing about the phase. Its ``per_topic`` flag decides whether per-topic figures are
written (details.json, detailed_results.html); without a phase.json they are withheld, which
is the safe side on hidden labels.

A submission that holds one folder per sub-track (``1a/``, ``2c/`` ..., the starting kit's zip
of all of them) is read from the folder of this program's sub-track, by the same rule as
``reteco score`` (``reteco.formats.submission.Submission.for_subtrack``).

Outputs: ``scores.json`` (finite numbers only), ``details.json`` and ``detailed_results.html``.
Every leaderboard key of the sub-track (``reteco.codabench.leaderboards``) is written, except the
keys allowed to be absent (judge, ``ndcg_fc_10``, text metrics); for each absent key the log,
``details.json["absent_scores"]`` and the page say why. The judge never runs here (the worker
has no network and no key): its keys are always absent, with that reason, and the organizers'
``reteco judge`` fills them in after the phase. Other reasons come from the scorer's details
(``"<key>_status"``, ``"<key>": {"reason": ...}``, or a section named like ``unavailable``).
A required key missing from the scorer's output is an internal error, never a silent empty
column; so is any unexpected exception (its traceback only with ``RETECO_DEBUG=1``, since an
exception's text could quote reference data).

Exit codes (``reteco.problems``, as for the ``reteco`` command): 0 scored; 1 the submission
cannot be used (the log and ``detailed_results.html`` say why; no ``scores.json``); 2 the
program was called wrongly; 3 an internal error of reteco (``reteco.problems.internal_error``; no
``scores.json`` is written, as it is written last).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.problems import EXIT_INPUT, EXIT_OK, EXIT_USAGE, InputError, internal_error

PHASE_FILE = "phase.json"
DETAILED_RESULTS = "detailed_results.html"
JUDGE_NOT_RUN = (
    "the LLM judge does not run inside the scoring program; the organizers score the answers with "
    "`reteco judge` after the phase and fill in these columns"
)
NO_PHASE = {"phase": "unknown", "name": "unknown", "split": "?", "per_topic": False}

# Grouped figures kept in every phase; any other "per_*" section is per topic and is withheld
# when the phase does not allow per-topic figures.
_AGGREGATE_SECTIONS = frozenset({"per_domain", "per_depth", "per_dimension", "per_stance", "per_group"})
_TOPIC_FIELDS = frozenset({"unit", "step", "topic", "topic_id", "key", "query", "query_id", "step_id", "turn", "turn_id"})
_REASON_SECTIONS = ("absent_scores", "unavailable", "absent", "missing", "not_computed", "skipped", "reasons")


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
    from reteco.formats.reference import Reference
    from reteco.outputs import detailed_results
    from reteco.outputs.scores import write_details, write_scores
    from reteco.scoring.submission import score_submission

    print(f"reteco {__version__}")
    _use_vendored_wordnet()
    phase = read_phase(input_dir / "ref")
    subtrack = None
    try:
        reference = Reference.read(input_dir / "ref")
        subtrack = reference.subtrack
        print(f"sub-track {subtrack}, phase {phase['name']}, reference {reference.fingerprint()}")
        if phase is NO_PHASE:
            print(f"note: no {PHASE_FILE} in the reference data; per-topic figures are withheld")
        elif not phase["per_topic"]:
            print("per-topic figures are withheld in this phase (hidden labels)")
        # The judge never runs here (no network, no key on the worker): 2b/2c are scored on the
        # rest now and the organizers' `reteco judge` fills the judge columns after the phase.
        result = score_submission(reference, input_dir / "res", per_topic=bool(phase["per_topic"]), run_judge_now=False)
    except InputError as exc:
        lines = exc.problems.lines()
        for line in lines:
            print(line, file=sys.stderr)
        print("the submission could not be scored: fix the errors above and submit again", file=sys.stderr)
        _write_page(output_dir, detailed_results.render(subtrack=subtrack, phase=phase, messages=lines, failed=True))
        return EXIT_INPUT

    details = result.details
    if not phase["per_topic"]:
        details = withhold_per_topic(details)
    try:
        absent = absent_scores(subtrack, result.scores, details, judge_skipped=True)
    except MissingScoreError as exc:
        print(f"reteco: {exc}", file=sys.stderr)  # leaderboard keys only: no reference data
        raise
    details["phase"] = {k: phase.get(k) for k in ("phase", "name", "split", "per_topic")}
    details["absent_scores"] = absent
    warnings = result.problems.lines()
    for line in warnings:
        print(line)
    write_details(output_dir, details)
    _write_page(
        output_dir,
        detailed_results.render(
            subtrack=subtrack, phase=phase, scores=result.scores, details=details, absent=absent, messages=warnings
        ),
    )
    # Last: the worker takes a scores.json as success, so none is left behind a later failure.
    write_scores(output_dir, result.scores)
    print(json.dumps(result.scores, indent=2))
    for key, reason in absent.items():
        print(f"{key}: absent: {reason}")
    return EXIT_OK


class MissingScoreError(Exception):
    """A leaderboard key the scorer must always write is missing: a bug in reteco."""


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


def read_phase(ref: Path) -> dict:
    """The phase record of the reference data, or ``NO_PHASE`` (per-topic withheld)."""
    path = ref / PHASE_FILE
    if not path.is_file():
        return NO_PHASE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        print(f"note: {PHASE_FILE} is unreadable; per-topic figures are withheld")
        return NO_PHASE
    if not isinstance(record, dict) or not isinstance(record.get("per_topic"), bool):
        print(f"note: {PHASE_FILE} has no per_topic flag; per-topic figures are withheld")
        return NO_PHASE
    return {**NO_PHASE, **record}


def withhold_per_topic(details: dict) -> dict:
    """``details`` without per-topic figures: ``per_*`` sections other than grouped aggregates,
    and lists of records that name a topic."""

    def scrub(value):
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if isinstance(key, str) and key.startswith("per_") and key not in _AGGREGATE_SECTIONS:
                    continue
                if _names_topics(item):
                    continue
                out[key] = scrub(item)
            return out
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    cleaned = scrub(details)
    cleaned["per_topic_withheld"] = True
    return cleaned


def _names_topics(value) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) for v in value)
        and any(_TOPIC_FIELDS & set(v) for v in value)
    )


def absent_scores(
    subtrack: str, scores: dict[str, float], details: dict, *, judge_skipped: bool = False
) -> dict[str, str]:
    """Why each leaderboard key of the sub-track is absent from ``scores``.

    Raises MissingScoreError when a key that must always be written is absent or not finite.
    An optional key without a reason maps to an empty string, which `reteco check-bundle`
    rejects: a diagnostic that disappears without a word is a bug too.
    """
    from reteco.subtracks import JUDGE, SUBTRACKS

    row = SUBTRACKS[subtrack]
    missing = [k for k in row.required_keys() if not _finite(scores.get(k))]
    if missing:
        raise MissingScoreError(f"sub-track {subtrack} scored without {', '.join(missing)}")
    reasons = _reasons(details, set(row.keys), JUDGE)
    absent = {}
    for key in row.keys:
        if key not in scores:
            # The judge is not run here by design: say so rather than the scorer's "not requested".
            absent[key] = JUDGE_NOT_RUN if key in JUDGE and judge_skipped else reasons.get(key, "")
    return absent


def _reasons(details: dict, keys: set[str], judge_keys: tuple[str, ...]) -> dict[str, str]:
    """Reasons the scorer gave for figures it left out, wherever its details hold them.

    Recognised shapes (the scorers' conventions): ``"<key>_status": "undefined: ..."`` (temporal);
    ``"<key>": {"reason": ...}`` (text metrics); a section named like ``unavailable`` mapping
    keys to reasons; a ``"judge"`` section with ``"ran": false`` and a ``"reason"`` (every judge
    key), or, when the judge ran, ``"judge_mean_left_out"`` and per-dimension counts.
    """
    found: dict[str, str] = {}

    def note(key: str, reason) -> None:
        if key in keys and isinstance(reason, str) and reason and key not in found:
            found[key] = reason

    def walk(value) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
            return
        if not isinstance(value, dict):
            return
        for name, item in value.items():
            if not isinstance(name, str):
                continue
            if name.endswith("_status"):
                note(name.removesuffix("_status"), item)
            if isinstance(item, dict) and name in keys:
                note(name, item.get("reason"))
            if name in _REASON_SECTIONS and isinstance(item, dict):
                for key, reason in item.items():
                    note(key, reason.get("reason") if isinstance(reason, dict) else reason)
            if name == "judge" and isinstance(item, dict):
                _judge_reasons(item, judge_keys, note)
            walk(item)

    walk(details)
    return found


def _judge_reasons(judge: dict, judge_keys: tuple[str, ...], note) -> None:
    if judge.get("ran") is False or ("ran" not in judge and "reason" in judge):
        reason = judge.get("reason") or JUDGE_NOT_RUN
        for key in judge_keys:
            note(key, f"the judge did not run: {reason}")
        return
    note("judge_mean", judge.get("judge_mean_left_out"))
    for dimension, figure in (judge.get("per_dimension") or {}).items():
        if isinstance(figure, dict) and figure.get("mean") is None:
            note(
                dimension,
                f"no valid judgment ({figure.get('invalid', 0)} invalid, {figure.get('error', 0)} failed)",
            )


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _write_page(output_dir: Path, page: str) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / DETAILED_RESULTS).write_text(page, encoding="utf-8")

