"""One run of the LLM judge over a submission's answers, for generation scoring (2b, 2c).

``score_generation`` (``reteco.scoring.generation``) hands over the answered turns, the
passages each dimension is shown and the judge's options (``JudgeOptions``: configuration,
cache, whether to run now, the run's limits; the one object ``score_submission`` builds); this module builds the judge items
(``judge_items``: the one builder, shared with the human sample so that the same answer makes
the same requests), runs the judge (``reteco.judge.run_judge``) if its configuration can run,
records who answered (endpoint, models, fingerprints: never the key), and, when the run ends
before every judgment has a verdict, says why in the participant's words (``judge_stop``).
Aggregating the verdicts is ``generation``'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from reteco.formats.turns import TurnRecord
from reteco.problems import Problems
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN


@dataclass(frozen=True)
class JudgeOptions:
    """How generation scoring runs the LLM judge: one object from ``score_submission`` through
    ``score_generation`` to ``run_judge_on_answers``."""

    config: object | None = None  # a ``reteco.judge.JudgeConfig``; None: the packaged default, endpoint and key from the environment
    cache_dir: Path | None = None  # the judge's cache; None: its default (``reteco.judge.default_cache_dir``)
    run_now: bool = True  # False: the judge is not run (details.json and the log say so)
    progress: bool = False  # a progress line on stderr
    deadline: float | None = None  # a ``time.monotonic()`` value: the run stops there (``run_judge``'s deadline)
    max_calls: int | None = None  # the run's budget of requests (``run_judge``'s max_calls)


def with_config(options: JudgeOptions) -> JudgeOptions:
    """The options with their configuration loaded: the packaged default's when none is given."""
    if options.config is not None:
        return options
    from reteco.judge import load_judge_config

    return dataclasses.replace(options, config=load_judge_config())


def judge_dimensions(options: JudgeOptions) -> tuple[str, ...]:
    """The dimensions judged: those of the configuration's prompt version (its manifest's list,
    in order), or the sub-track rows' ``DIMENSIONS`` when no configuration is loaded (the judge
    does not run). They decide the items made, the per-dimension keys and the figures."""
    prompts = getattr(options.config, "prompts", None)
    return tuple(prompts.dimension_names) if prompts is not None else DIMENSIONS


_PASSAGES_SHOWN = {"evidence": "the passages the system had", "gold_evidence": "the turn's gold passages"}


def judge_items(turn: TurnRecord, answer: str, evidence, gold_evidence, dimensions=DIMENSIONS) -> list:
    """The judge's items of one answered turn, one per dimension: the one builder of generation
    scoring and of the human sample (``reteco.workbench.judge_audit.human_sample``), so the same answer
    makes the same requests and finds the same cache rows. ``evidence``: the passages the system
    had (2b: the gold ones; 2c: the run's top 5); ``gold_evidence``: the turn's gold passages."""
    from reteco.judge import JudgeItem

    return [
        JudgeItem(
            key=turn.key, dimension=d, query=turn.query, history=turn.history, answer=answer, evidence=evidence,
            reference_answer=turn.answer, gold_evidence=gold_evidence, key_points=turn.key_points,
        )
        for d in dimensions
    ]


def run_judge_on_answers(turns, answer_texts, evidence, gold_evidence, options: JudgeOptions, problems: Problems):
    """Build the judge items (answered turns x the version's dimensions) and run the judge if it can run,
    within the options' ``deadline`` and ``max_calls``; a run stopped before the end counts as not
    run (``judge_stop``). Returns (what details.json says of the run, the outcomes: none when it
    did not run or was stopped)."""
    from reteco import judge as judge_module

    info: dict = {"ran": False}
    config = options.config if options.config is not None else judge_module.load_judge_config()
    _describe_config(info, config)
    available, why = judge_module.judge_available(config)
    if not available:
        info["reason"] = why
        return judge_not_run(info, problems, judge_dimensions(options))
    dimensions = tuple(config.prompts.dimension_names)
    items = [
        item
        for i, turn in enumerate(turns)
        if answer_texts[i] is not None
        for item in judge_items(turn, answer_texts[i], evidence[i], gold_evidence[i], dimensions)
    ]
    directory = options.cache_dir if options.cache_dir is not None else judge_module.default_cache_dir()
    outcomes = judge_module.run_judge(items, config, cache_dir=directory, progress=options.progress,
                                      deadline=options.deadline, max_calls=options.max_calls)
    cached = sum(1 for o in outcomes if o.cached)
    # The run's requests: made, budget, preflight, why they stopped (the organizers' audit).
    info["run"] = outcomes.stats.as_dict()
    info["ran"] = True
    from reteco.judge.prompts import INJECTION, PASSAGE_INPUTS

    info["asks_injection_flag"] = INJECTION in config.prompts.json_schema["properties"]
    # Which passages each dimension was shown (its prompt's inputs): the task report's evidence.
    info["passages_shown"] = {
        d: [_PASSAGES_SHOWN[i] for i in config.prompts.dimensions[d].inputs if i in PASSAGE_INPUTS]
        for d in dimensions
    }
    info["calls"] = {
        "judgments": len(outcomes),
        "cached": cached,
        "new": len(outcomes) - cached,
    }
    from reteco.judge.provenance import judge_provenance, model_mismatch_warning

    # Who answered: endpoint, configured and reported models, fingerprints, with counts.
    info["provenance"] = judge_provenance(outcomes, config)
    info["system_fingerprints"] = sorted(info["provenance"]["system_fingerprints"])
    mismatch = model_mismatch_warning(info["provenance"])
    if mismatch:
        problems.warning("judge", None, mismatch)
    stop = judge_stop(outcomes.stats, outcomes, len(dimensions))
    if stop is None:
        return info, outcomes
    info.pop("asks_injection_flag")
    info.update(ran=False, reason=stop["reason"], stopped=stop)
    problems.warning(
        "judge", None,
        f"the judge did not finish: {stop['reason']}. Not reported: {', '.join(dimensions)}, {JUDGE_MEAN}",
    )
    return info, []


def judge_not_run(info: dict, problems: Problems, dimensions: tuple[str, ...] = DIMENSIONS) -> tuple[dict, list]:
    """The log's note that the judge did not run (``info["reason"]`` says why), and no outcome."""
    problems.warning(
        "judge",
        None,
        f"the judge did not run: {info['reason']}. Not reported: {', '.join(dimensions)}, {JUDGE_MEAN}",
    )
    return info, []


# What stopped a judge run, as the participant reads it (``judge_stop``): the call engine's
# messages (``reteco.llm.calls``) tested in order, first match wins. Never a URL, a key or the
# server's own text: the log and the page are the participant's.
_SERVICE_FAULTS = (
    ("insufficient_quota", "has no quota left for the organizers' account"),
    ("HTTP 401", "refused the organizers' credentials"),
    ("HTTP 403", "refused the organizers' credentials"),
    ("HTTP 404", "does not offer the judge's model at its address"),
    ("HTTP 429", "kept answering that too many requests were sent (rate limit)"),
    ("the server rejected `", "refused a parameter of the judge's requests"),
    ("connection failed", "could not be reached"),
    ("no response within", "did not answer in time"),
    ("HTTP 5", "kept failing (server errors)"),
)


def judge_stop(stats, outcomes, dimension_count: int = len(DIMENSIONS)) -> dict | None:
    """Why a judge run ended before every judgment had a verdict, or None when it was not stopped.

    Stopped: the deadline, the call budget or the token budget was reached (``CallStats.stopped``), the preflight
    failed, or the run was aborted (a 401, failures in a row). Returns ``{"kind": "deadline" |
    "budget" | "service", "reason": the participant's words, "answered_turns", "judged_turns":
    answered turns with a verdict on all ``dimension_count`` dimensions, "judgments", "judged", "unfinished",
    "http_requests", "max_calls", "detail": the engine's own message, for the organizers}``.
    A run that was not stopped but left judgments failed returns None: those are the bounded
    exclusion of the module docstring.
    """
    calls = stats.calls
    if not stats.unfinished or not (calls.stopped or calls.preflight == "failed"):
        return None
    detail = calls.preflight_detail if calls.preflight == "failed" else calls.stopped
    verdicts: dict[str, int] = {}
    for o in outcomes:
        verdicts.setdefault(o.item.key, 0)
        if o.status != "error":
            verdicts[o.item.key] += 1
    answered = len(verdicts)
    judged = sum(1 for n in verdicts.values() if n == dimension_count)
    progress = f"{judged} of {answered} answered turns were judged on all {_COUNT.get(dimension_count, dimension_count)} dimensions"
    if calls.preflight != "failed" and detail.startswith("deadline reached"):
        kind, reason = "deadline", f"judging reached this run's time limit before every answer was judged ({progress})"
    elif calls.preflight != "failed" and detail.startswith("call budget reached"):
        kind, reason = "budget", (f"the judge's budget of {calls.max_calls} requests for one submission was used up "
                                  f"before every answer was judged ({progress})")
    elif calls.preflight != "failed" and detail.startswith("token budget reached"):
        kind, reason = "budget", (f"the judge's budget of {calls.max_tokens} tokens for one submission was used up "
                                  f"before every answer was judged ({progress})")
    else:
        texts = [detail] + [o.rationale for o in outcomes if o.status == "error"]
        what = next((w for pattern, w in _SERVICE_FAULTS if any(pattern in t for t in texts)), "could not be used")
        kind, reason = "service", f"the judge's service {what} ({progress})"
    return {
        "kind": kind, "reason": f"{reason}; a partial average is not a figure, so no judge figure is reported",
        "answered_turns": answered, "judged_turns": judged, "judgments": stats.judgments, "judged": stats.judged,
        "unfinished": stats.unfinished, "http_requests": stats.http_requests, "max_calls": calls.max_calls,
        "max_tokens": calls.max_tokens, "tokens": calls.tokens,
        "detail": detail,
    }


_COUNT = {n: word for n, word in enumerate(("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"))}


def _describe_config(info: dict, config) -> None:
    """Who judges (signature, model, prompt version, decoding, public endpoint): never the key."""
    described = config.describe() if hasattr(config, "describe") else {}
    for name in ("signature", "model", "prompt_version"):
        value = described.get(name, getattr(config, name, None))
        if value is not None:
            info[name] = value
    if described:
        info["config"] = {k: v for k, v in described.items() if k not in info}
