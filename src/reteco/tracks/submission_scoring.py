"""A submission (zip, folder, file) against a sub-track's reference: the one scoring entry point.

The CLI, the Codabench scoring program and the starting kit all call ``score_submission`` or
``validate_submission``, so a participant's local result is the platform's result.
"""

from __future__ import annotations

from pathlib import Path

from reteco.formats.reference import Reference
from reteco.formats.submission import DEFAULT_MAX_BYTES, open_submission
from reteco.formats.trec_run import read_trec_run
from reteco.problems import InputError, Problems
from reteco.tracks.retrieval import apply_rules
from reteco.tracks.scoring import ScoreResult, score_run

RUN_SUBTRACKS = ("1a", "1b", "2a", "2c")


def _needs_run(reference: Reference) -> bool:
    return reference.subtrack in RUN_SUBTRACKS or reference.manifest.get("benchmark", "reteco") != "reteco"


def score_submission(
    reference: Reference,
    submission: Path,
    *,
    engine: str = "numpy",
    per_topic: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ScoreResult:
    """Score a submission for the reference's sub-track; InputError if it cannot be scored."""
    if not _needs_run(reference):
        raise InputError(
            f"sub-track {reference.subtrack} is scored by the generation judge, which this version of reteco "
            "does not include yet",
            str(submission),
        )
    opened = open_submission(Path(submission), max_bytes=max_bytes)
    name = opened.find("run")
    result = score_run(reference, opened.read_bytes(name), opened.display_name(name), engine=engine, per_topic=per_topic)
    result.details["submission"] = {"run_file": opened.display_name(name), "ignored": list(opened.ignored)}
    return result


def validate_submission(
    reference: Reference, submission: Path, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[Problems, str]:
    """Check a submission with the scoring code's own rules, computing no score.

    Returns the warnings and a one-paragraph summary; raises InputError on errors.
    """
    if not _needs_run(reference):
        raise InputError(f"validation of sub-track {reference.subtrack} answers is not available yet", str(submission))
    problems = Problems()
    opened = open_submission(Path(submission), max_bytes=max_bytes)
    name = opened.find("run")
    run = read_trec_run(opened.read_bytes(name), opened.display_name(name))
    ranked = apply_rules(reference, run, problems)
    c = ranked.counts
    summary = (
        f"{opened.display_name(name)}: valid for sub-track {reference.subtrack}: {c['lines_read']} lines, "
        f"{c['topics_in_run'] - c['topics_ignored']} of {len(reference.topics)} reference topics ranked, "
        f"{c['topics_ignored']} topics ignored, {c['unknown_doc_ids']} unknown doc ids, "
        f"{c['duplicate_doc_ids']} duplicates, {c['doc_ids_remapped']} v1.0 ids remapped"
    )
    return problems, summary
