"""Generation scoring for 2b (gold-passage generation) and 2c (full conversational RAG).

Why one module: the aggregation of 2b and 2c as one set of rules
(``AGGREGATION_RULES``, repeated in details.json) over the same reference turns: the judge's
dimensions with their bounded exclusion, judge_mean, the text metrics, the per-domain and
per-depth groups and the reason of every key left out. Running the judge is ``judge_run``'s.

Per reference turn, the participant's answer is judged on five dimensions, each by its own
focused prompt on a 1-5 Likert scale (``reteco.judge``), and compared with the turn's
reference answer by ROUGE-L, METEOR and BERTScore (``reteco.metrics.text_overlap``).

What the judge sees as evidence, per dimension (the prompt's ``inputs``; rubric version 2):

- faithfulness ("supported by supplied or retrieved passages"): the passages the system had:
  in 2b the turn's gold passages (the text of its ``gold_doc_ids`` in ``passages.sqlite``), in
  2c the text of the run's top 5 documents for the turn after the deterministic handling
  (``RankedRun.top_documents``: v1.0 ids mapped, unknown ids discarded, duplicates removed,
  ordered by score), i.e. exactly the passages the answer had to be generated from;
- correctness and completeness: the turn's reference answer and its gold passages, in 2b and
  2c alike, never the run's retrieved passages: a true answer is correct whether or not the
  run retrieved its support (a retrieval miss costs nDCG and faithfulness, not correctness);
- relevance and coherence: no passages (the query and the dialogue).

Abstentions (rubric v2): a turn is unanswerable when its reference answer says the information
is not available. There an abstention is correct and complete; on an answerable turn it is
incomplete (completeness 1) and graded 2 on correctness; it is never unfaithful.

Aggregation (evaluation plan: "each integer score is normalized as (score - 1) / 4 and
macro-averaged"), over ALL reference turns:

    value(turn, d) = (s - 1) / 4          s in 1..5, the judge's valid score
                   = 0                    the turn has no answer (it counts, as a missing run topic does)
                   = excluded             the judgment is invalid, refused or failed (no valid score)
    d (scores.json)  = mean of value(turn, d) over the turns not excluded,
                       unless more than MAX_UNSCORED_SHARE of the turns are excluded: withheld
    judge_mean       = mean of the five dimension figures (only when all five are reported)

An invalid or failed judgment is never replaced by a number (neither 0 nor 0.5): it leaves that
turn out of that one dimension's average, and details.json counts such judgments per dimension.
Exclusion is bounded. With a share p of the turns excluded, the average over all turns (had
they been judged) is (1 - p) * kept + p * excluded, so it differs from the reported average by
p * (excluded - kept): at most p on the 0..1 scale, whatever the excluded turns would have
scored. MAX_UNSCORED_SHARE = 2% keeps that worst case at 0.02, about the sampling noise of a
dimension figure itself (a standard error of 0.35 / sqrt(500) = 0.016 for 500 turns, with
per-turn values spread over 0..1): below the bound an exclusion cannot move a figure by more
than its own noise. Above it, answers that make the judge refuse or fail could move a team's
figure by more than that, so the figure is withheld for adjudication (the organizers re-judge
with ``--retry-invalid`` or by hand): absent from scores.json, with the reason and the counts in
details.json and the log; its per-domain and per-depth figures are withheld with it. A
dimension with no valid judgment at all is left out the same way (and with it judge_mean).

Injection attempts (rubric v2): the judge flags every answer that addresses the evaluator
instead of the user (asking for a score, imitating the organizers or a block boundary); such an
answer gets 1 on every dimension. details.json counts the flagged answers and judgments per
dimension and lists the flagged turns, for the organizers to review.

The text metrics average over all reference turns the same way: an unanswered turn scores 0; a
turn whose reference answer is empty has nothing to compare with and is left out. A metric
whose resource is missing is left out of scores.json and reported unavailable with its reason.
When the judge does not run (no endpoint or key configured, or ``run_judge_now=False``), no
judge key appears in scores.json; details.json and the log say that it did not run and why.

A judge run with limits (``judge_deadline``, ``judge_max_calls``: the Codabench scoring
program's time limit and call budget) or one the service stopped (the preflight refused or
unanswered, a 401, the run aborted after failures in a row) can end before every answer is
judged. Such a run is not finished and reports no judge key at all: a figure over the answers
judged before the stop would be a partial average, biased by which answers came first. The
reason says which limit or fault stopped it, in words for the participant (no address, no key,
no server text), and how many answered turns were judged on all five dimensions;
``details["judge"]["stopped"]`` keeps the technical detail for the organizers, who judge the
rest with the cache (``reteco judge-submissions``). Judgments that failed in a run that was not
stopped are the bounded exclusion above. The text metrics are computed before the judge runs:
their cost grows with the answers' length and cannot be cut, so a deadline set from the run's
start leaves to judging exactly what they did not use (``details["judge"]["window"]``, with a
deadline: the seconds they took and the window left; ``reteco.codabench.program.judge_plan``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from reteco.formats.answers import Answers
from reteco.formats.passages import PassageStore, PassageTexts
from reteco.formats.reference import PASSAGES, Reference
from reteco.formats.topic_ids import DEPTH_GROUPS, depth_group
from reteco.formats.turns import TurnRecord, read_turns
from reteco.metrics.text_overlap import TEXT_METRICS, BertScoreConfig, text_overlap_values
from reteco.problems import Problems
from reteco.scoring.judge_run import JudgeOptions, judge_dimensions, judge_not_run, run_judge_on_answers, with_config
from reteco.scoring.rules import RankedRun
from reteco.subtracks import DIMENSIONS, GOLD, JUDGE_MEAN, RUN

# Why the judge's columns are empty when the caller scores without the judge (the Codabench
# scoring program in a phase that does not judge; `reteco leaderboard --no-judge`): what a
# participant reads in the log and on the page.
JUDGE_NOT_CALLED = (
    "the LLM judge is not run when a submission is scored; the organizers judge the answers with the "
    "frozen judge after the phase and fill in these columns"
)

TOP_K_2C = 5
#: Above this share of a dimension's reference turns without a valid judgment (invalid, refused
#: or failed), the dimension's figure is withheld for adjudication (module docstring: why 2%).
MAX_UNSCORED_SHARE = 0.02

MISSING = "missing"  # the turn has no answer: scores 0 and counts
AGGREGATION_RULES = (
    "each dimension: the judge's 1-5 score s normalized as (s - 1) / 4, averaged over all reference turns",
    "a reference turn without an answer scores 0 on every dimension and text metric, and counts",
    (
        "an invalid, refused or failed judgment is left out of that dimension's average (never scored 0 or 0.5); "
        "counted per dimension in judge.per_dimension"
    ),
    (
        f"when more than {MAX_UNSCORED_SHARE:.0%} of a dimension's reference turns have no valid judgment, the "
        "dimension is withheld for adjudication: left out of scores.json (and so is judge_mean), the reason in "
        "judge.per_dimension"
    ),
    "a dimension without any valid judgment is left out of scores.json, and so is judge_mean",
    (
        "correctness and completeness are judged against the reference answer and the turn's gold passages, "
        "faithfulness against the passages the system had (2b: the gold passages; 2c: the run's top 5)"
    ),
    "an answer the judge flags as an attempt to influence it scores 1 on every dimension; flagged answers are counted in judge.injection",
    "judge_mean: the mean of the five dimension figures",
    (
        "text metrics (ROUGE-L F1, METEOR, BERTScore F1) against the turn's reference answer; a metric "
        "that cannot run here is left out of scores.json and reported unavailable with its reason"
    ),
)


def dimension_figure(statuses: list[str], scores: list[int | None], *, max_unscored_share: float = MAX_UNSCORED_SHARE) -> dict:
    """One dimension over all reference turns (see the module docstring).

    ``statuses[i]`` is "ok", "invalid", "error" or "missing" (no answer); ``scores[i]`` the
    1-5 score when ok. Returns the counts, ``unscored_share`` ((invalid + error) / turns) and
    ``mean``: None when no judgment is valid, or when ``unscored_share`` is above
    ``max_unscored_share`` (then ``withheld`` says why).
    """
    values = [_normalized(st, s) for st, s in zip(statuses, scores)]
    kept = [v for v in values if v is not None]
    ok = sum(1 for st in statuses if st == "ok")
    invalid = sum(1 for st in statuses if st == "invalid")
    error = sum(1 for st in statuses if st == "error")
    share = (invalid + error) / len(statuses) if statuses else 0.0
    figure = {
        "turns": len(statuses),
        "valid": ok,
        "invalid": invalid,
        "error": error,
        "missing_answer": sum(1 for st in statuses if st == MISSING),
        "turns_averaged": len(kept),
        "unscored_share": share,
        "mean": float(np.mean(kept)) if ok and kept else None,
    }
    if ok and share > max_unscored_share:
        figure["mean"] = None
        figure["withheld"] = (
            f"withheld for adjudication: {invalid + error} of {len(statuses)} reference turns ({share:.1%}) have no "
            f"valid judgment ({invalid} invalid or refused, {error} failed), more than the {max_unscored_share:.0%} "
            "that can be left out of an average without moving it by more than its own noise"
        )
    return figure


def _normalized(status: str, score: int | None) -> float | None:
    if status == MISSING:
        return 0.0
    if status == "ok" and score is not None:
        return (score - 1) / 4
    return None


def _mean_or_none(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(kept)) if kept else None


def score_generation(
    reference: Reference,
    answers: Answers,
    ranked_run: RankedRun | None = None,
    *,
    judge: JudgeOptions = JudgeOptions(),
    wordnet_path: Path | None = None,
    bertscore: BertScoreConfig | None = None,
    per_topic: bool = True,
    setup_advice: bool = True,
) -> tuple[dict[str, float], dict, Problems, dict[str, str]]:
    """Score answers of a judged sub-track: 2b (gold-passage evidence) or 2c (the run's top 5 as
    evidence), as the row's ``evidence`` says.

    ``judge``: how the judge runs (``JudgeOptions``: its configuration, cache, whether it runs
    now, and the run's limits ``deadline`` and ``max_calls``; a run they stop reports no judge
    key, module docstring). ``setup_advice``: whether the reason a text metric is unavailable
    goes on to say how to set it up (``MetricValues.advice``): yes where the organizers score on
    their machine, no on the platform, where a participant cannot act on it. Returns
    (scores, details, problems, absent): scores holds only finite numbers and only the figures
    that apply; problems holds the log's notes (judge not run, invalid judgments, unavailable
    metrics); absent the reason of every generation key left out.
    """
    row = reference.row
    if row is None or not row.judged:
        raise ValueError(f"generation scoring is for the judged sub-tracks, not {reference.subtrack}")
    from_run = row.evidence == RUN  # 2c: the run's top 5; 2b (GOLD): the turn's gold passages
    if from_run and ranked_run is None:
        raise ValueError(f"sub-track {row.id} needs the run (its top {TOP_K_2C} passages are the judge's evidence)")
    problems = Problems()
    turns = read_turns(reference)
    n = len(turns)
    answer_texts = [a.text if (a := answers.get(i)) is not None else None for i in range(n)]

    # Passages per turn: the gold ones (correctness, completeness; and faithfulness in 2b) and
    # the ones the system had (faithfulness: the gold ones in 2b, the run's top 5 in 2c).
    store = PassageStore(reference.root / PASSAGES)
    gold = PassageTexts(store)
    evidence: list[tuple[tuple[str, str], ...]] = []
    evidence_ids: list[list[str]] = []
    gold_evidence: list[tuple[tuple[str, str], ...]] = []
    run_passages = PassageTexts(store) if from_run else gold
    try:
        for i, turn in enumerate(turns):
            gold_evidence.append(gold.of(turn.domain, list(turn.gold_doc_ids)))
            doc_ids = ranked_run.top_documents(i, TOP_K_2C) if from_run else list(turn.gold_doc_ids)
            evidence.append(run_passages.of(turn.domain, doc_ids) if from_run else gold_evidence[i])
            evidence_ids.append(doc_ids)
    finally:
        store.close()
    answered = [i for i in range(n) if answer_texts[i] is not None]
    evidence_info = {
        "source": (
            "the turn's gold passages (passages.sqlite)"
            if row.evidence == GOLD
            else f"the run's top {TOP_K_2C} documents of the turn after the deterministic handling"
        ),
        "passages_given": sum(len(evidence[i]) for i in answered),
        "passages_without_text": run_passages.missing,
        "answered_turns_without_evidence": sum(1 for i in answered if not evidence[i]),
        "gold_source": "the turn's gold passages (passages.sqlite), whatever the run retrieved",
        "gold_passages_given": sum(len(gold_evidence[i]) for i in answered),
        "gold_passages_without_text": gold.missing,
    }
    if from_run:
        evidence_info["k"] = TOP_K_2C

    # The text metrics come before the judge: their cost grows with the answers' length (ROUGE-L's
    # LCS with the product of the two texts' tokens: a 4,000-word answer takes ~1 s) and cannot
    # be cut, while a judge run stops at its deadline. Computed first, they are inside the run's
    # limit whatever they cost, and the judging window is what is left (judge_plan).
    references = [t.answer for t in turns]
    comparable = [bool(r.strip()) for r in references]
    text_started = time.monotonic()
    metric_results = text_overlap_values(
        [a if c else None for a, c in zip(answer_texts, comparable)],
        references,
        wordnet_path=wordnet_path,
        bertscore=bertscore,
    )
    text_seconds = time.monotonic() - text_started

    # The dimensions judged are the prompt version's (its manifest's list); the row's when the judge is not run.
    judge = with_config(judge) if judge.run_now else judge
    dimensions = judge_dimensions(judge)
    if judge.run_now:
        judge_info, outcomes = run_judge_on_answers(turns, answer_texts, evidence, gold_evidence, judge, problems)
    else:
        judge_info, outcomes = judge_not_run({"ran": False, "reason": JUDGE_NOT_CALLED}, problems)
    if judge.deadline is not None and judge.run_now:
        # How the deadline was met, for the organizers (reteco.codabench.program.judge_plan): what the text
        # metrics took before judging, and what was left of the window when judging started.
        judge_info["window"] = {
            "text_metrics_s": round(text_seconds, 3),
            "judging_window_s": round(judge.deadline - text_started - text_seconds, 3),
        }

    # Per turn, per dimension: status and score.
    statuses = {d: [MISSING] * n for d in dimensions}
    scores_1to5: dict[str, list[int | None]] = {d: [None] * n for d in dimensions}
    by_turn: dict[int, dict[str, object]] = {}
    index_of = {t.key: i for i, t in enumerate(turns)}
    for outcome in outcomes:
        i = index_of[outcome.item.key]
        d = outcome.item.dimension
        statuses[d][i] = outcome.status
        scores_1to5[d][i] = outcome.score if outcome.status == "ok" else None
        by_turn.setdefault(i, {})[d] = outcome

    scores: dict[str, float] = {}
    overall: dict[str, float | None] = {}
    per_turn_values: dict[str, list[float | None]] = {}
    if judge_info["ran"]:
        per_dimension = {d: dimension_figure(statuses[d], scores_1to5[d]) for d in dimensions}
        judge_info["per_dimension"] = per_dimension
        for d in dimensions:
            # A withheld dimension is withheld in its group figures too (they would be biased alike).
            withheld = "withheld" in per_dimension[d]
            per_turn_values[d] = [None if withheld else _normalized(st, s) for st, s in zip(statuses[d], scores_1to5[d])]
            overall[d] = per_dimension[d]["mean"]
        _note_judge_problems(per_dimension, problems)
        judge_info["injection"] = _injection_counts(outcomes, judge_info.pop("asks_injection_flag"), dimensions, problems)
        if all(overall[d] is not None for d in dimensions):
            overall[JUDGE_MEAN] = float(np.mean([overall[d] for d in dimensions]))
        else:
            lacking = [
                f"{d} ({'withheld for adjudication' if 'withheld' in per_dimension[d] else 'no valid judgment'})"
                for d in dimensions if overall[d] is None
            ]
            judge_info["judge_mean_left_out"] = f"not every dimension is reported: {', '.join(lacking)}"
            overall[JUDGE_MEAN] = None
        for key in (*dimensions, JUDGE_MEAN):
            if overall[key] is not None:
                scores[key] = overall[key]

    # Text-overlap diagnostics against the reference answers (computed above).
    text_info: dict[str, dict] = {}
    for name in TEXT_METRICS:
        result = metric_results[name]
        if not result.available:
            reason = result.reason_with_advice(setup_advice)
            text_info[name] = {"available": False, "reason": reason}
            problems.warning("metrics", None, f"{name} is not reported: {reason}")
            continue
        values = [
            (None if not comparable[i] else (0.0 if answer_texts[i] is None else result.values[i])) for i in range(n)
        ]
        per_turn_values[name] = values
        overall[name] = _mean_or_none(values)
        text_info[name] = {
            "available": True,
            "settings": result.settings,
            "turns_averaged": sum(1 for v in values if v is not None),
        }
        if overall[name] is not None:
            scores[name] = overall[name]
    no_reference = sum(1 for c in comparable if not c)
    if no_reference:
        problems.warning(
            "metrics", None, f"{no_reference} reference turns have no reference answer and are left out of the text metrics"
        )

    groups = _group_figures(turns, per_turn_values, judge_info["ran"], dimensions)
    details = {
        "rules": list(AGGREGATION_RULES),
        "answers": {"file": answers.name, **answers.counts},
        "evidence": evidence_info,
        "judge": judge_info,
        "text_metrics": text_info,
        "turns": n,
        "overall": {k: v for k, v in overall.items()},
        **groups,
    }
    if per_topic:
        details["per_turn"] = _per_turn(reference, turns, answers, evidence, evidence_ids, by_turn, per_turn_values,
                                        dimensions)
    return scores, details, problems, _absent_reasons(scores, judge_info, text_info, dimensions)


def _absent_reasons(scores: dict[str, float], judge_info: dict, text_info: dict, dimensions=DIMENSIONS) -> dict[str, str]:
    """Why each generation key is absent from ``scores``: the judge did not run (one reason for
    all its keys), a dimension was withheld or had no valid judgment, judge_mean lacks a
    dimension, a text metric's resource is missing or no turn has a reference answer."""
    absent: dict[str, str] = {}
    for key in (*dimensions, JUDGE_MEAN):
        if key in scores:
            continue
        if judge_info.get("stopped"):
            absent[key] = f"the judge did not finish: {judge_info['reason']}"
        elif not judge_info["ran"]:
            absent[key] = f"the judge did not run: {judge_info.get('reason', 'not configured')}"
        elif key == JUDGE_MEAN:
            absent[key] = judge_info.get("judge_mean_left_out") or "not every dimension is reported"
        else:
            figure = judge_info["per_dimension"][key]
            absent[key] = figure.get("withheld") or (
                f"no valid judgment ({figure.get('invalid', 0)} invalid, {figure.get('error', 0)} failed)"
            )
    for name, info in text_info.items():
        if name not in scores:
            absent[name] = info.get("reason") or "no reference turn has a reference answer to compare with"
    return absent


def _note_judge_problems(per_dimension: dict, problems: Problems) -> None:
    failed = {d: f["invalid"] + f["error"] for d, f in per_dimension.items() if f["invalid"] + f["error"]}
    if failed:
        invalid = sum(f["invalid"] for f in per_dimension.values())
        error = sum(f["error"] for f in per_dimension.values())
        problems.warning(
            "judge",
            None,
            f"{invalid + error} judgments gave no valid score ({invalid} invalid, {error} failed; "
            + ", ".join(f"{d} {k}" for d, k in failed.items())
            + "); each is left out of its dimension's average",
        )
    for d, f in per_dimension.items():
        if "withheld" in f:
            problems.warning("judge", None, f"{d} is {f['withheld']}: {d} and {JUDGE_MEAN} are left out of scores.json")
        elif f["mean"] is None:
            problems.warning("judge", None, f"no valid judgment for {d}: {d} and {JUDGE_MEAN} are left out of scores.json")


def _injection_counts(outcomes, asked: bool, dimensions, problems: Problems) -> dict:
    """The answers the judge flagged as attempts to influence it (rubric v2), for the organizers."""
    if not asked:
        return {"asked": False, "reason": "this prompt version does not ask the judge to flag attempts to influence it"}
    from reteco.judge.prompts import injection_flag

    per_dimension = dict.fromkeys(dimensions, 0)
    turns: list[str] = []
    for o in outcomes:
        if o.status == "ok" and injection_flag(o.rationale):
            per_dimension[o.item.dimension] += 1
            if o.item.key not in turns:
                turns.append(o.item.key)
    if turns:
        problems.warning(
            "judge", None,
            f"{len(turns)} answers were flagged by the judge as attempts to influence it (they score 1 where flagged; "
            f"the organizers review them): {', '.join(turns[:10])}" + (f" and {len(turns) - 10} more" if len(turns) > 10 else ""),
        )
    return {
        "asked": True,
        "answers_flagged": len(turns),
        "judgments_flagged": per_dimension,
        "flagged_turns": turns,
    }


def _group_figures(turns: list[TurnRecord], values: dict[str, list[float | None]], judge_ran: bool,
                   dimensions=DIMENSIONS) -> dict:
    """Per-domain, domain-macro and turn-depth (T1..T5+) figures, each a mean over the group's
    turns that are not excluded; a figure with nothing to average is None (JSON null)."""

    def figures(selected: list[int]) -> dict:
        out: dict = {"turns": len(selected)}
        for name, per_turn in values.items():
            out[name] = _mean_or_none([per_turn[i] for i in selected])
        if judge_ran:
            dims = [out.get(d) for d in dimensions]
            out[JUDGE_MEAN] = float(np.mean(dims)) if all(v is not None for v in dims) else None
        return out

    domains = sorted({t.domain for t in turns})
    per_domain = {d: figures([i for i, t in enumerate(turns) if t.domain == d]) for d in domains}
    names = list(values) + ([JUDGE_MEAN] if judge_ran else [])
    domain_macro = {}
    for name in names:
        parts = [per_domain[d][name] for d in domains]
        domain_macro[name] = float(np.mean(parts)) if parts and all(p is not None for p in parts) else None
    result = {"per_domain": per_domain, "domain_macro": domain_macro}
    depths = [depth_group(t.depth) if t.depth is not None else None for t in turns]
    if any(g is not None for g in depths):
        result["per_depth"] = {
            g: figures([i for i, x in enumerate(depths) if x == g]) for g in DEPTH_GROUPS if g in depths
        }
    return result


def _per_turn(reference, turns, answers, evidence, evidence_ids, by_turn, values, dimensions=DIMENSIONS) -> list[dict]:
    out = []
    run_evidence = reference.row.evidence == RUN  # the run's ids are the participant's; gold ids are reference data
    for i, turn in enumerate(turns):
        answer = answers.get(i)
        row: dict = {"turn": turn.key, "domain": turn.domain}
        if turn.depth is not None:
            row["depth"] = turn.depth
        row["answered"] = answer is not None
        if answer is not None:
            row["answer_line"] = answer.line
        # 2b's evidence is the gold passages: their ids are reference data, so only counted.
        row["evidence_passages"] = len(evidence[i])
        if run_evidence:
            row["evidence_doc_ids"] = evidence_ids[i]
        judgments = {}
        for d, outcome in sorted(by_turn.get(i, {}).items(), key=lambda kv: dimensions.index(kv[0])):
            judgments[d] = {
                "score": outcome.score,
                "normalized": outcome.normalized,
                "status": outcome.status,
                "rationale": outcome.rationale,
                "cached": outcome.cached,
                "attempts": outcome.attempts,
            }
        if judgments:
            row["judgments"] = judgments
        for name, per_turn in values.items():
            if name in dimensions:
                continue
            row[name] = per_turn[i]
        out.append(row)
    return out
