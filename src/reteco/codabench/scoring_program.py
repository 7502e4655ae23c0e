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

A submission to several tasks of a phase (one competition, five sub-tracks) holds one folder
per sub-track (``1a/``, ``2c/`` ...): this program scores the folder of its own sub-track, or
the whole submission when it has no sub-track folders.

Outputs: ``scores.json`` (finite numbers only), ``details.json`` and ``detailed_results.html``.
Every leaderboard key of the sub-track (``reteco.codabench.leaderboards``) is written, except the
keys allowed to be absent (judge, ``ndcg_fc_10``, text metrics); for each absent key the log,
``details.json["absent_scores"]`` and the page say why. The judge never runs here (the worker
has no network and no key): its keys are always absent, with that reason, and the organizers'
``reteco judge`` fills them in after the phase. Other reasons come from the scorer's details
(``"<key>_status"``, ``"<key>": {"reason": ...}``, or a section named like ``unavailable``).
A required key missing from the scorer's output is an internal error (exit 2), never a silent
empty column; so is any unexpected exception (its traceback only with ``RETECO_DEBUG=1``, since
an exception's text could quote reference data).
"""

from __future__ import annotations

import json
import math
import os
import sys
import traceback
from pathlib import Path

from reteco import __version__
from reteco.arrow_memory import use_scoring_memory_pool
from reteco.problems import InputError

EXIT_INPUT = 1
EXIT_INTERNAL = 2

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
_JUNK = frozenset({"__MACOSX", ".DS_Store", "Thumbs.db", "metadata"})


def main(argv: list[str]) -> int:
    """Score ``INPUT/res`` against ``INPUT/ref`` into ``OUTPUT``; exit 0, 1 (input) or 2 (internal)."""
    try:
        return _main(argv)
    except Exception:  # noqa: BLE001 - never a raw traceback in the log: it may quote reference data
        if os.environ.get("RETECO_DEBUG"):
            traceback.print_exc()
        kind = sys.exc_info()[0].__name__
        print(f"internal error in reteco {__version__} ({kind}); please report it to the organizers", file=sys.stderr)
        return EXIT_INTERNAL


def _main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: score.py INPUT_DIR OUTPUT_DIR (INPUT_DIR holds ref/ and res/)", file=sys.stderr)
        return 2
    input_dir, output_dir = Path(argv[0]), Path(argv[1])
    use_scoring_memory_pool()
    from reteco.outputs import detailed_results
    from reteco.formats.reference import Reference
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
        part = select_part(input_dir / "res", subtrack)
        # The judge never runs here (no network, no key on the worker): 2b/2c are scored on the
        # rest now and the organizers' `reteco judge` fills the judge columns after the phase.
        result = score_submission(reference, part, per_topic=bool(phase["per_topic"]), run_judge_now=False)
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
        print(f"internal error in reteco {__version__}: {exc}; please report it to the organizers", file=sys.stderr)
        return EXIT_INTERNAL
    details["phase"] = {k: phase.get(k) for k in ("phase", "name", "split", "per_topic")}
    details["absent_scores"] = absent
    warnings = result.problems.lines()
    for line in warnings:
        print(line)
    write_scores(output_dir, result.scores)
    write_details(output_dir, details)
    _write_page(
        output_dir,
        detailed_results.render(
            subtrack=subtrack, phase=phase, scores=result.scores, details=details, absent=absent, messages=warnings
        ),
    )
    print(json.dumps(result.scores, indent=2))
    for key, reason in absent.items():
        print(f"{key}: absent: {reason}")
    return 0


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


def select_part(res: Path, subtrack: str) -> Path:
    """The part of ``res`` this sub-track scores: its own folder in a multi-sub-track submission.

    The worker extracts the participant's zip as is, so one top-level folder may wrap
    everything; it is looked through. A submission with folders of other sub-tracks but none of
    this one is an error naming them, not an attempt to score the wrong files.
    """
    from reteco.subtracks import IDS as SUBTRACKS

    base = res
    while True:
        entries = _entries(base)
        if len(entries) == 1 and entries[0].is_dir() and entries[0].name.lower() not in SUBTRACKS:
            base = entries[0]
            continue
        break
    folders = {e.name.lower(): e for e in entries if e.is_dir() and e.name.lower() in SUBTRACKS}
    if subtrack in folders:
        return folders[subtrack]
    if folders:
        names = ", ".join(f"{name}/" for name in sorted(folders))
        raise InputError(
            f"the submission holds sub-track folders {names} but none named {subtrack}/; this task scores "
            f"sub-track {subtrack}: add a {subtrack}/ folder or do not select this task when submitting",
            "submission",
        )
    return res


def _entries(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name not in _JUNK and not p.name.startswith("."))


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
                figure.get("withheld")
                or f"no valid judgment ({figure.get('invalid', 0)} invalid, {figure.get('error', 0)} failed)",
            )


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _write_page(output_dir: Path, page: str) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / DETAILED_RESULTS).write_text(page, encoding="utf-8")
