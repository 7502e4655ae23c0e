"""Generation scoring for 2b (gold-passage generation) and 2c (full conversational RAG).

Per reference turn, the participant's answer is judged on five dimensions, each by its own
focused prompt on a 1-5 Likert scale (``reteco.judge``), and compared with the turn's
reference answer by ROUGE-L, METEOR and BERTScore (``reteco.metrics.text_overlap``).

What the judge sees as evidence (the "supplied or retrieved passages" of faithfulness):

- 2b: the turn's gold passages, the text of its ``gold_doc_ids`` in ``passages.sqlite``;
- 2c: the text of the run's top 5 documents for the turn after the deterministic handling
  (``RankedRun.top_documents``: v1.0 ids mapped, unknown ids discarded, duplicates removed,
  ordered by score), i.e. exactly the passages the answer had to be generated from.

Aggregation (evaluation plan: "each integer score is normalized as (score - 1) / 4 and
macro-averaged"), over ALL reference turns:

    value(turn, d) = (s - 1) / 4          s in 1..5, the judge's valid score
                   = 0                    the turn has no answer (it counts, as a missing run topic does)
                   = excluded             the judgment is invalid or failed (no valid score after retries)
    d (scores.json)  = mean of value(turn, d) over the turns not excluded
    judge_mean       = mean of the five dimension figures (only when all five are reported)

An invalid or failed judgment is never replaced by a number (neither 0 nor 0.5): it leaves that
turn out of that one dimension's average, and details.json counts such judgments per dimension.
A dimension with no valid judgment at all is left out of scores.json (and with it judge_mean).
The text metrics average over all reference turns the same way: an unanswered turn scores 0; a
turn whose reference answer is empty has nothing to compare with and is left out. A metric
whose resource is missing is left out of scores.json and reported unavailable with its reason.
When the judge does not run (no endpoint or key configured, or ``run_judge_now=False``), no
judge key appears in scores.json; details.json and the log say that it did not run and why.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reteco.formats.answers import Answers
from reteco.formats.reference import PASSAGES, TURNS, Reference
from reteco.formats.topic_ids import DEPTH_GROUPS, depth_group
from reteco.metrics.text_overlap import (
    TEXT_METRICS,
    BertScoreConfig,
    text_overlap_values,
)
from reteco.problems import InputError, Problems
from reteco.scoring.rules import RankedRun
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, SUBTRACKS

TOP_K_2C = 5

MISSING = "missing"  # the turn has no answer: scores 0 and counts
AGGREGATION_RULES = (
    "each dimension: the judge's 1-5 score s normalized as (s - 1) / 4, averaged over all reference turns",
    "a reference turn without an answer scores 0 on every dimension and text metric, and counts",
    (
        "an invalid or failed judgment is left out of that dimension's average (never scored 0 or 0.5); "
        "counted per dimension in judge.per_dimension"
    ),
    "a dimension without any valid judgment is left out of scores.json, and so is judge_mean",
    "judge_mean: the mean of the five dimension figures",
    (
        "text metrics (ROUGE-L F1, METEOR, BERTScore F1) against the turn's reference answer; a metric "
        "that cannot run here is left out of scores.json and reported unavailable with its reason"
    ),
)


@dataclass(frozen=True)
class TurnRecord:
    """One target turn of turns.jsonl."""

    key: str
    domain: str
    depth: int | None
    query: str
    history: str
    answer: str
    gold_doc_ids: tuple[str, ...]


def read_turns(reference: Reference) -> list[TurnRecord]:
    """turns.jsonl of a 2b/2c reference, in the reference's topic order."""
    if reference.root is None:
        raise ValueError("the reference has no folder: generation scoring needs turns.jsonl and passages.sqlite")
    path = reference.root / TURNS
    if not path.is_file():
        raise InputError(f"no {TURNS}: the reference of sub-track {reference.subtrack} is incomplete", str(reference.root))
    records: dict[str, dict] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                records[record["key"]] = record
    turns = []
    for topic in reference.topics:
        record = records.get(topic.key)
        if record is None:
            raise InputError(f"{TURNS} has no record for a reference turn; prepare the reference again", str(path))
        turns.append(
            TurnRecord(
                key=topic.key,
                domain=topic.domain,
                depth=topic.depth,
                query=record.get("query") or "",
                history=_history(record.get("history") or ""),
                answer=record.get("answer") or "",
                gold_doc_ids=tuple(record.get("gold_doc_ids") or ()),
            )
        )
    return turns


#: RECOR writes this sentence as the history of a conversation's first turn; the judge is given
#: an empty history instead, which its prompt renders as "the current turn opens the conversation".
NO_HISTORY = "No previous conversation."


def _history(text: str) -> str:
    return "" if text.strip() == NO_HISTORY else text


class PassageStore:
    """Passage text by (domain, doc_id) from a reference's passages.sqlite, opened read-only."""

    def __init__(self, path: Path):
        if not Path(path).is_file():
            raise InputError(f"no {PASSAGES}: the reference is incomplete", str(Path(path).parent))
        self._conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)

    def text(self, domain: str, doc_id: str) -> str | None:
        row = self._conn.execute("SELECT text FROM passages WHERE domain = ? AND doc_id = ?", (domain, doc_id)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        self._conn.close()


def dimension_figure(statuses: list[str], scores: list[int | None]) -> dict:
    """One dimension over all reference turns (see the module docstring).

    ``statuses[i]`` is "ok", "invalid", "error" or "missing" (no answer); ``scores[i]`` the
    1-5 score when ok. Returns the counts and ``mean`` (None when no judgment is valid).
    """
    values = [_normalized(st, s) for st, s in zip(statuses, scores)]
    kept = [v for v in values if v is not None]
    ok = sum(1 for st in statuses if st == "ok")
    return {
        "turns": len(statuses),
        "valid": ok,
        "invalid": sum(1 for st in statuses if st == "invalid"),
        "error": sum(1 for st in statuses if st == "error"),
        "missing_answer": sum(1 for st in statuses if st == MISSING),
        "turns_averaged": len(kept),
        "mean": float(np.mean(kept)) if ok and kept else None,
    }


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
    judge_config=None,
    cache_dir: Path | None = None,
    run_judge_now: bool = True,
    progress: bool = False,
    wordnet_path: Path | None = None,
    bertscore: BertScoreConfig | None = None,
    per_topic: bool = True,
) -> tuple[dict[str, float], dict, Problems]:
    """Score answers of sub-track 2b (gold-passage evidence) or 2c (the run's top 5 as evidence).

    ``judge_config``: a judge configuration (``reteco.judge.load_judge_config``); None
    loads the packaged default (endpoint and key from the environment). ``cache_dir``: the
    judge's cache (None: its default). ``run_judge_now=False`` skips the judge (said in
    details.json and the log). Returns (scores, details, problems): scores holds only finite
    numbers and only the figures that apply; problems holds the log's notes (judge not run,
    invalid judgments, unavailable metrics).
    """
    if not (reference.subtrack in SUBTRACKS and SUBTRACKS[reference.subtrack].judged):
        raise ValueError(f"generation scoring is for sub-tracks 2b and 2c, not {reference.subtrack}")
    if reference.subtrack == "2c" and ranked_run is None:
        raise ValueError("sub-track 2c needs the run (its top 5 passages are the judge's evidence)")
    problems = Problems()
    turns = read_turns(reference)
    n = len(turns)
    answer_texts = [a.text if (a := answers.get(i)) is not None else None for i in range(n)]

    # Evidence per turn: gold passages (2b) or the run's top 5 (2c).
    store = PassageStore(reference.root / PASSAGES)
    evidence: list[tuple[tuple[str, str], ...]] = []
    evidence_ids: list[list[str]] = []
    without_text = 0
    try:
        for i, turn in enumerate(turns):
            doc_ids = list(turn.gold_doc_ids) if reference.subtrack == "2b" else ranked_run.top_documents(i, TOP_K_2C)
            pairs = []
            for doc_id in doc_ids:
                text = store.text(turn.domain, doc_id)
                if text is None:
                    without_text += 1
                    continue
                pairs.append((doc_id, text))
            evidence.append(tuple(pairs))
            evidence_ids.append(doc_ids)
    finally:
        store.close()
    answered = [i for i in range(n) if answer_texts[i] is not None]
    evidence_info = {
        "source": (
            "the turn's gold passages (passages.sqlite)"
            if reference.subtrack == "2b"
            else f"the run's top {TOP_K_2C} documents of the turn after the deterministic handling"
        ),
        "passages_given": sum(len(evidence[i]) for i in answered),
        "passages_without_text": without_text,
        "answered_turns_without_evidence": sum(1 for i in answered if not evidence[i]),
    }
    if reference.subtrack == "2c":
        evidence_info["k"] = TOP_K_2C

    judge_info, outcomes = _run_judge(
        reference, turns, answer_texts, evidence, judge_config, cache_dir, run_judge_now, progress, problems
    )

    # Per turn, per dimension: status and score.
    statuses = {d: [MISSING] * n for d in DIMENSIONS}
    scores_1to5: dict[str, list[int | None]] = {d: [None] * n for d in DIMENSIONS}
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
        per_dimension = {d: dimension_figure(statuses[d], scores_1to5[d]) for d in DIMENSIONS}
        judge_info["per_dimension"] = per_dimension
        for d in DIMENSIONS:
            per_turn_values[d] = [_normalized(st, s) for st, s in zip(statuses[d], scores_1to5[d])]
            overall[d] = per_dimension[d]["mean"]
        _note_judge_problems(per_dimension, problems)
        if all(overall[d] is not None for d in DIMENSIONS):
            overall[JUDGE_MEAN] = float(np.mean([overall[d] for d in DIMENSIONS]))
        else:
            lacking = [d for d in DIMENSIONS if overall[d] is None]
            judge_info["judge_mean_left_out"] = f"no valid judgment for {', '.join(lacking)}"
            overall[JUDGE_MEAN] = None
        for key in (*DIMENSIONS, JUDGE_MEAN):
            if overall[key] is not None:
                scores[key] = overall[key]

    # Text-overlap diagnostics against the reference answers.
    references = [t.answer for t in turns]
    comparable = [bool(r.strip()) for r in references]
    metric_results = text_overlap_values(
        [a if c else None for a, c in zip(answer_texts, comparable)],
        references,
        wordnet_path=wordnet_path,
        bertscore=bertscore,
    )
    text_info: dict[str, dict] = {}
    for name in TEXT_METRICS:
        result = metric_results[name]
        if not result.available:
            text_info[name] = {"available": False, "reason": result.reason}
            problems.warning("metrics", None, f"{name} is not reported: {result.reason}")
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

    groups = _group_figures(turns, per_turn_values, judge_info["ran"])
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
        details["per_turn"] = _per_turn(reference, turns, answers, evidence, evidence_ids, by_turn, per_turn_values)
    return scores, details, problems


def _run_judge(reference, turns, answer_texts, evidence, judge_config, cache_dir, run_judge_now, progress, problems):
    """Build the judge items (answered turns x five dimensions) and run the judge if it can run."""
    info: dict = {"ran": False}
    if not run_judge_now:
        info["reason"] = "this scoring was asked not to call the judge (the judge runs separately, with `reteco judge`)"
    else:
        from reteco import judge as judge_module

        if tuple(judge_module.DIMENSIONS) != DIMENSIONS:  # the aggregation's keys are the judge's
            raise RuntimeError(f"judge dimensions {judge_module.DIMENSIONS} differ from {DIMENSIONS}")
        config = judge_config if judge_config is not None else judge_module.load_judge_config()
        _describe_config(info, config)
        available, why = judge_module.judge_available(config)
        if not available:
            info["reason"] = why
        else:
            items = [
                judge_module.JudgeItem(
                    key=turn.key,
                    dimension=d,
                    query=turn.query,
                    history=turn.history,
                    answer=answer_texts[i],
                    evidence=evidence[i],
                    reference_answer=turn.answer,
                )
                for i, turn in enumerate(turns)
                if answer_texts[i] is not None
                for d in judge_module.DIMENSIONS
            ]
            directory = cache_dir if cache_dir is not None else judge_module.default_cache_dir()
            outcomes = judge_module.run_judge(items, config, cache_dir=directory, progress=progress)
            cached = sum(1 for o in outcomes if o.cached)
            info["ran"] = True
            info["calls"] = {
                "judgments": len(outcomes),
                "cached": cached,
                "new": len(outcomes) - cached,
            }
            info["system_fingerprints"] = sorted({o.system_fingerprint for o in outcomes if o.system_fingerprint})
            return info, outcomes
    problems.warning(
        "judge",
        None,
        f"the judge did not run: {info['reason']}. Not reported: {', '.join(DIMENSIONS)}, {JUDGE_MEAN}",
    )
    return info, []


def _describe_config(info: dict, config) -> None:
    """Who judges (signature, model, prompt version, decoding, public endpoint): never the key."""
    described = config.describe() if hasattr(config, "describe") else {}
    for name in ("signature", "model", "prompt_version"):
        value = described.get(name, getattr(config, name, None))
        if value is not None:
            info[name] = value
    if described:
        info["config"] = {k: v for k, v in described.items() if k not in info}


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
        if f["mean"] is None:
            problems.warning("judge", None, f"no valid judgment for {d}: {d} and {JUDGE_MEAN} are left out of scores.json")


def _group_figures(turns: list[TurnRecord], values: dict[str, list[float | None]], judge_ran: bool) -> dict:
    """Per-domain, domain-macro and turn-depth (T1..T5+) figures, each a mean over the group's
    turns that are not excluded; a figure with nothing to average is None (JSON null)."""

    def figures(selected: list[int]) -> dict:
        out: dict = {"turns": len(selected)}
        for name, per_turn in values.items():
            out[name] = _mean_or_none([per_turn[i] for i in selected])
        if judge_ran:
            dims = [out.get(d) for d in DIMENSIONS]
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


def _per_turn(reference, turns, answers, evidence, evidence_ids, by_turn, values) -> list[dict]:
    out = []
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
        if reference.subtrack == "2c":
            row["evidence_doc_ids"] = evidence_ids[i]
        judgments = {}
        for d, outcome in sorted(by_turn.get(i, {}).items(), key=lambda kv: DIMENSIONS.index(kv[0])):
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
            if name in DIMENSIONS:
                continue
            row[name] = per_turn[i]
        out.append(row)
    return out
