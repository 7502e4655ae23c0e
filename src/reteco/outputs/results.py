"""What one scoring run writes, the same for ``reteco score`` and the Codabench scoring program.

``write_results(output_dir, result, subtrack, phase)`` applies the phase's rules and writes
``details.json``, ``detailed_results.html`` (``reteco.outputs.detailed_results``) and, last,
``scores.json``: the worker takes a ``scores.json`` as success, so none is left behind a later
failure; with ``scores_txt`` (the CodaLab v1.5 bundle's scoring program) ``scores.txt`` holds the
same figures, written just before ``scores.json``. ``write_refusal_page`` writes the page of a submission that could not be scored (and
no ``scores.json``).

The phase's rules: where per-topic figures are not allowed (Evaluation, or no phase record),
``details.json`` and the page hold only aggregates: the scorer keeps the per-topic figures in
their own field (``ScoreResult.per_topic``), which such a phase never writes, whatever a
section is named (``ScoreResult.details_json``). Every leaderboard
key of the sub-track (``reteco.subtracks``) is written, except the keys allowed to be absent
(judge, ``tc_10``, ``ndcg_fc_10``, text metrics); for each absent key ``details.json
["absent_scores"]``, the page and the log say why (``absent_scores``). A required key missing
from the scorer's output is a bug: ``MissingScoreError``, never a silent empty column.
"""

from __future__ import annotations

from pathlib import Path

from reteco.outputs import detailed_results
from reteco.outputs.charts import is_finite
from reteco.outputs.scores import write_details, write_scores, write_scores_txt
from reteco.scoring.generation import JUDGE_NOT_CALLED
from reteco.subtracks import JUDGE, SUBTRACKS

DETAILED_RESULTS = "detailed_results.html"
# The judge keys' reason when the scoring program leaves the judge out: the very sentence of the
# scorer's own note, so the log and the page can say it once.
JUDGE_NOT_RUN = JUDGE_NOT_CALLED


class MissingScoreError(Exception):
    """A leaderboard key the scorer must always write is missing: a bug in reteco."""


def write_results(output_dir: Path, result, subtrack: str, phase: dict, *, judge_skipped: bool = False,
                  scores_txt: bool = False) -> dict[str, str]:
    """Write details.json, the page and scores.json (last) of a scored submission under the
    phase's rules; returns the reasons of the absent keys (also in details["absent_scores"]).
    ``result`` is a ``reteco.scoring.retrieval.ScoreResult``; with ``judge_skipped`` the judge
    keys' reason is ``JUDGE_NOT_RUN``; with ``scores_txt`` scores.txt is written too."""
    details = result.details_json(bool(phase["per_topic"]))
    if not phase["per_topic"]:
        details["per_topic_withheld"] = True
    reasons = dict(result.absent)
    if judge_skipped:  # not run here by design: say so rather than the scorer's "not asked to"
        reasons.update({key: JUDGE_NOT_RUN for key in JUDGE if key not in result.scores})
    absent = absent_scores(subtrack, result.scores, reasons)
    details["phase"] = {k: phase.get(k) for k in ("phase", "name", "split", "per_topic")}
    details["absent_scores"] = absent
    write_details(output_dir, details)
    page = detailed_results.render(
        subtrack=subtrack, phase=phase, scores=result.scores, details=details, absent=absent,
        messages=result.problems.lines(),
    )
    _write_page(output_dir, page)
    if scores_txt:
        write_scores_txt(output_dir, result.scores)
    write_scores(output_dir, result.scores)
    return absent


def write_refusal_page(output_dir: Path, subtrack: str | None, phase: dict, messages: list[str]) -> None:
    """The page of a submission that could not be scored: its errors and what to do."""
    _write_page(output_dir, detailed_results.render(subtrack=subtrack, phase=phase, messages=messages, failed=True))


def absent_scores(subtrack: str, scores: dict[str, float], reasons: dict[str, str]) -> dict[str, str]:
    """Why each leaderboard key of the sub-track is absent from ``scores``: the scorer's reasons
    (``ScoreResult.absent``).

    Raises MissingScoreError when a key that must always be written is absent or not finite. An
    optional key the scorer gave no reason for maps to an empty string, which `reteco
    check-bundle` rejects: a diagnostic that disappears without a word is a bug too.
    """
    if subtrack not in SUBTRACKS:
        return {}  # a graded benchmark (FactIR): its keys are its own, none may be absent
    row = SUBTRACKS[subtrack]
    missing = [k for k in row.required_keys() if not is_finite(scores.get(k))]
    if missing:
        raise MissingScoreError(f"sub-track {subtrack} scored without {', '.join(missing)}")
    return {key: reasons.get(key, "") for key in row.keys if key not in scores}


def absent_lines(absent: dict[str, str], said: list[str]) -> list[str]:
    """The log's lines on the absent keys, one per reason (``absent: judge_mean, correctness, ...:
    <reason>``), less the reasons a line of ``said`` (the scorer's warnings, already printed)
    states: each reason is said once."""
    grouped: dict[str, list[str]] = {}
    for key, reason in absent.items():
        grouped.setdefault(reason, []).append(key)
    return [
        f"absent: {', '.join(keys)}: {reason or 'no reason given'}"
        for reason, keys in grouped.items()
        if not (reason and any(reason in line for line in said))
    ]


def _write_page(output_dir: Path, page: str) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / DETAILED_RESULTS).write_text(page, encoding="utf-8")

