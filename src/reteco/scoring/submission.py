"""A submission (zip, folder, file) against a sub-track's reference: the one scoring entry point.

The CLI, the Codabench scoring program and the starting kit all call ``score_submission`` or
``validate_submission``, so a participant's local result is the platform's result.

What a submission holds, per sub-track:

- 1a, 1b, 2a (and graded benchmarks): the run (``run.txt``; any single run file will do);
- 2b: the answers, one ``.jsonl`` file (``answers.jsonl``; alone, or in a zip or folder);
- 2c: both, in a zip or folder: the run ``run.txt`` and the answers ``answers.jsonl``. The run
  is found by ``Submission.find("run")`` (the one file that is not ``.jsonl``/``.json``/docs, or
  the one named ``run.txt``), the answers by ``Submission.find("answers")`` (the one ``.jsonl``).
  2c's scores are the retrieval scores exactly as in 2a plus the generation scores; the judge's
  evidence for a turn is the run's top 5 documents after the deterministic handling.
"""

from __future__ import annotations

from pathlib import Path

from reteco import __version__
from reteco.formats.answers import Answers, read_answers
from reteco.formats.reference import Reference
from reteco.formats.relevance_round import RelevanceRound
from reteco.formats.submission import DEFAULT_MAX_BYTES, Submission, open_submission
from reteco.formats.trec_run import read_trec_run
from reteco.metrics.measure_strings import Measure
from reteco.problems import InputError, Problems
from reteco.scoring.generation import score_generation
from reteco.scoring.judge_run import JudgeOptions
from reteco.scoring.retrieval import ScoreResult, score_run
from reteco.scoring.rules import RankedRun, apply_rules

RUN_FILE = "run.txt"
ANSWERS_FILE = "answers.jsonl"


def _needs_run(reference: Reference) -> bool:
    row = reference.row
    return row is None or row.takes_run  # a benchmark without sub-tracks (FactIR) scores a run


def _own_folder(reference: Reference) -> str | None:
    """The sub-track whose folder a multi-sub-track submission is read from (None: a benchmark
    without sub-tracks, whose submission is the run alone)."""
    return reference.subtrack if reference.benchmark.has_subtracks else None


def _needs_answers(reference: Reference) -> bool:
    row = reference.row
    return row is not None and row.takes_answers


def score_submission(
    reference: Reference,
    submission: Path | Submission,
    *,
    engine: str = "numpy",
    per_topic: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    judge_config=None,
    cache_dir: Path | None = None,
    run_judge_now: bool = True,
    progress: bool = False,
    judge_deadline: float | None = None,
    judge_max_calls: int | None = None,
    setup_advice: bool = True,
    measures: list[Measure] | None = None,
    relevance_round: RelevanceRound | None = None,
) -> ScoreResult:
    """Score a submission for the reference's sub-track; InputError if it cannot be scored.

    ``submission`` is a path, or a ``Submission`` already open (the Python API's files built in
    memory: ``reteco.formats.submission.in_memory_submission``). ``measures``: measures requested
    on the run (``reteco.scoring.measures``), in details.json only.

    2b and 2c also run the generation scoring (``reteco.scoring.generation.score_generation``):
    ``judge_config`` (None: the packaged default, endpoint and key from the environment),
    ``cache_dir`` (None: the judge's default cache), ``run_judge_now``, ``progress`` and the judge
    run's limits ``judge_deadline`` (a ``time.monotonic()`` value) and ``judge_max_calls`` are
    passed to it as one ``JudgeOptions``; ``setup_advice`` (False on the platform) too.
    A 2c submission whose run and answers both have errors reports the errors of both.
    ``relevance_round``: the organizers' round labels for the unjudged diagnostics of the run.
    """
    opened = _open(reference, submission, max_bytes)
    if not _needs_answers(reference):
        name = opened.find("run")
        # Parsed here, not in score_run, so that nothing but the RunTable holds the file's bytes
        # (or its memory map), which apply_rules then releases once topics are resolved.
        run = read_trec_run(opened.read_buffer(name), opened.display_name(name), reread=lambda: opened.read_buffer(name))
        result = score_run(
            reference, run, engine=engine, per_topic=per_topic, measures=measures, relevance_round=relevance_round
        )
        del run
        result.details["submission"] = {"run_file": opened.display_name(name), "ignored": list(opened.ignored)}
        for message in opened.unscored([name]):
            result.problems.warning(opened.label, None, message)
        result.details["warnings"] = [str(p) for p in result.problems.warnings()]
        return result

    judge = JudgeOptions(judge_config, cache_dir, run_judge_now, progress, judge_deadline, judge_max_calls)
    problems = Problems()
    result, ranked, answers, run_name = _read_both(
        reference, opened, problems, engine, per_topic, measures=measures, relevance_round=relevance_round
    )
    scores, generation, notes, absent = score_generation(
        reference, answers, ranked, judge=judge, per_topic=per_topic, setup_advice=setup_advice
    )
    problems.extend(notes)
    if result is None:  # 2b
        details = {
            "scorer": {"name": "reteco", "version": __version__},
            "reference": _reference_block(reference),
            "submission": {"answers_file": answers.name, "ignored": list(opened.ignored)},
        }
        result = ScoreResult({}, details, Problems())
    else:
        result.details["submission"] = {
            "run_file": run_name,
            "answers_file": answers.name,
            "ignored": list(opened.ignored),
        }
    used = [n for n in opened.files if opened.display_name(n) in (run_name, answers.name)]
    for message in opened.unscored(used):
        problems.warning(opened.label, None, message)
    result.problems.extend(problems)
    result.scores.update(scores)
    result.absent.update(absent)
    result.details["warnings"] = [str(p) for p in result.problems.warnings()]
    per_turn = generation.pop("per_turn", None)  # per topic: the result's own field, never in details
    result.details["generation"] = generation
    if per_turn is not None:
        result.per_topic["generation.per_turn"] = per_turn
    return result


def _open(reference: Reference, submission: Path | Submission, max_bytes: int) -> Submission:
    if isinstance(submission, Submission):
        own = _own_folder(reference)
        return submission.for_subtrack(own) if own is not None else submission
    return open_submission(Path(submission), max_bytes=max_bytes, subtrack=_own_folder(reference))


def _reference_block(reference: Reference) -> dict:
    return {
        "subtrack": reference.subtrack,
        "benchmark": reference.record.benchmark,
        "split": reference.record.split,
        "fingerprint": reference.fingerprint(),
    }


def _read_both(
    reference: Reference,
    opened: Submission,
    problems: Problems,
    engine: str,
    per_topic: bool,
    measures: list[Measure] | None = None,
    relevance_round: RelevanceRound | None = None,
) -> tuple[ScoreResult | None, RankedRun | None, Answers, str | None]:
    """The run's retrieval result and decided rankings (2c only) and the answers, reading both
    before raising so a participant sees the errors of both files at once."""
    failures = Problems()
    result = ranked = answers = run_name = None
    if _needs_run(reference):
        try:
            name = opened.find("run")
            run_name = opened.display_name(name)
            run = read_trec_run(opened.read_buffer(name), run_name, reread=lambda: opened.read_buffer(name))
            result = score_run(
                reference, run, engine=engine, per_topic=per_topic, measures=measures, relevance_round=relevance_round
            )
            ranked = result.ranked
            del run
        except InputError as exc:
            failures.extend(exc.problems)
    try:
        name = opened.find("answers")
        answers = read_answers(opened.read_bytes(name), opened.display_name(name), reference, problems)
    except InputError as exc:
        failures.extend(exc.problems)
    if failures.has_errors:
        raise InputError(failures)
    return result, ranked, answers, run_name


def topics_covered(details: dict, total: int) -> int:
    """The reference topics a submission covers, the one count ``reteco validate`` ("12 of 18
    reference topics ranked") and ``reteco score``'s table ("12/18") both say: for a run, the
    reference topics left with a ranked document once the rules have been applied (``total``
    minus ``topics_missing``: a topic whose every line names an unknown document id is not
    ranked, and scores 0); for answers alone (2b), the reference turns answered. ``details``
    is a result's details.json (``counts``, ``generation.answers``)."""
    counts = details.get("counts")
    if counts is not None and "topics_missing" in counts:
        return total - counts["topics_missing"]
    answers = (details.get("generation") or {}).get("answers") or {}
    return int(answers.get("answers", 0))


def validate_submission(
    reference: Reference, submission: Path, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[Problems, str]:
    """Check a submission with the scoring code's own rules, computing no score.

    Returns the warnings and a one-paragraph summary; raises InputError on errors (for 2c, the
    errors of the run and of the answers together).
    """
    problems = Problems()
    opened = open_submission(Path(submission), max_bytes=max_bytes, subtrack=_own_folder(reference))
    failures = Problems()
    parts = []
    if _needs_run(reference):
        try:
            name = opened.find("run")
            run = read_trec_run(opened.read_buffer(name), opened.display_name(name), reread=lambda: opened.read_buffer(name))
            ranked = apply_rules(reference, run, problems)
            c = ranked.counts
            parts.append(
                f"{opened.display_name(name)}: valid for sub-track {reference.subtrack}: {c['lines_read']} lines, "
                f"{topics_covered({'counts': c}, len(reference.topics))} of {len(reference.topics)} reference topics ranked, "
                f"{c['topics_ignored']} topics ignored, {c['unknown_doc_ids']} unknown doc ids, "
                f"{c['duplicate_doc_ids']} duplicates, {c['doc_ids_remapped']} v1.0 ids remapped"
            )
        except InputError as exc:
            failures.extend(exc.problems)
    if _needs_answers(reference):
        try:
            name = opened.find("answers")
            answers = read_answers(opened.read_bytes(name), opened.display_name(name), reference, problems)
            c = answers.counts
            parts.append(
                f"{answers.name}: valid for sub-track {reference.subtrack}: {c['lines_read']} answers read, "
                f"{topics_covered({'generation': {'answers': c}}, len(reference.topics))} of {len(reference.topics)} "
                "reference turns answered, "
                f"{c['turns_ignored']} turn ids ignored"
            )
        except InputError as exc:
            failures.extend(exc.problems)
    if failures.has_errors:
        raise InputError(failures)
    used = [opened.find(kind) for kind, needed in (("run", _needs_run), ("answers", _needs_answers)) if needed(reference)]
    for message in opened.unscored(used):
        problems.warning(opened.label, None, message)
    return problems, "\n".join(parts)
