"""A public human-rated set: MTRAG's human evaluations, read as published, judged, and the judge's
agreement with the people beside the people's agreement with each other (issue 33, point 3).

Why one module of over 450 lines: the reader, the judge items, the ratings and the table all
follow one published layout and one dimension map (``DIMENSION_MAP``, ``JUDGE_TO_HUMAN``); split,
every part would import the map and the layout's names from the others, and a change of the map
would be spread over several files. The figures themselves are ``reteco.metrics.agreement``'s.

Source: Katsis et al. (2025), "MTRAG: A Multi-Turn Conversational Benchmark for Evaluating
Retrieval-Augmented Generation Systems" (IBM), file
``mtrag-human/evaluations/reference_subset_with_human_evaluations.json`` of its public repository,
Apache License 2.0 (its notice goes with any part shipped; this module ships none of the data).
Real answers of three systems (``reference``, the human-written target itself;
``llama-3.1-405b-instruct``; ``gpt-4o``) to multi-turn questions with given passages, each rated
by two or three of seven annotators on four metrics, on a 4-point scale: "1" No, "2" Mostly No,
"3" Mostly Yes, "4" Yes.

Reading (``read_mtrag``): the JSON object as published (``name``, ``models``, ``metrics``,
``documents``, ``tasks``, ``evaluations``; other keys are ignored), the whole file or any cut of
it. A malformed file is an ``InputError`` naming the file, the line of the offending object and
what is wrong (``FILE:LINE: error: ...``), never a traceback.

One ``JudgeItem`` per evaluation and mapped dimension (``judge_items``), as a 2b item would be:

- ``history``: the task's ``input`` but its last turn, ``User: ...`` / ``Assistant: ...`` lines
  (the speakers ``user`` and ``agent``); ``query``: the last turn (a user turn);
- ``evidence`` and ``gold_evidence``: the task's ``contexts``, the passages the system had
  (``title`` and ``text`` of the ``documents`` entry, as MTRAG's annotators saw them); in 2b the
  gold passages are the ones supplied, so the two are the same;
- ``reference_answer``: the task's ``targets`` text (``reference_answer=False`` withholds it: the
  system ``reference`` answers with that very text, so a judge shown it compares that system's
  answer with itself on completeness); ``key_points``: none (MTRAG writes none);
- not used: the task's labels (``Answerability``, ``Question Type``, ...), the per-passage
  ``context_relevance``, the algorithmic metrics (RougeL, Bert-Rec, Bert-KPrec, rb_*, rl_f,
  conditional_idk) and the ``win-rate`` preference.

The dimensions (``DIMENSION_MAP``, explicit): faithfulness -> faithfulness and completeness ->
completeness (the same question: MTRAG's completeness is judged against the passages, RETECO's
against the reference answer and the gold passages); appropriateness ~ relevance ("an
appropriate amount of useful information": RETECO's relevance also counts padding against an
answer); naturalness ~ coherence ("coherent, natural, and not dismissive": RETECO's conversational
coherence). ``correctness`` has no human counterpart here (``UNMATCHED``): it is not judged.

The scales: the judge's 1-5 grade is put on MTRAG's 1-4 scale by ``JUDGE_TO_HUMAN`` before any
figure: 5 -> 4 (every claim / point: "Yes"), 4 -> 3 (a minor slip: "Mostly Yes"), 3 -> 2 and 2 -> 2
(partly, and mostly not: "Mostly No"; the judge's "partly" sits below a minor slip), 1 -> 1 ("No").

The figures (``human_set_agreement``) are ``reteco.metrics.agreement.agreement``'s, the ones of the
organizers' own human sample, on the mapped grades: per dimension the judge against the
annotators' median (quadratic-weighted kappa, exact, Spearman, Kendall, bias) and Krippendorff's
ordinal alpha over the annotators (``alpha_ordinal_humans``) and with the judge as one more rater
(``alpha_ordinal_with_judge``); the human ceiling, each annotator against the median of the others
on the same answer (leave-one-out, Agirre et al. 2012), with the same figures. So the judge's
kappa stands beside the ceiling's kappa, and alpha with the judge beside alpha without it. Intervals:
95% cluster bootstrap, resampling conversations (default: the turns of one conversation share
their topic, passages and annotators, so they are not independent; the half holds only 10
conversations, so the interval is coarse) or tasks (``cluster="task"``: 73 clusters in the half,
narrower but optimistic, as it treats turns of one conversation as independent). System level:
the three systems ordered by the annotators' mean and by the judge's mean (``SYSTEM_NOTE`` says
what three systems can and cannot show).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import json.decoder
import json.scanner
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reteco.formats.ratings import Rating, Ratings
from reteco.judge.items import JudgeItem, JudgeOutcome, summarize_outcomes
from reteco.metrics.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, agreement
from reteco.problems import InputError, Problems, printable, quoted
from reteco.workbench.judge_audit.meta_evaluation import format_interval

NAME = "mtrag"
SOURCE = ("Katsis et al. (2025), MTRAG: A Multi-Turn Conversational Benchmark for Evaluating Retrieval-Augmented "
          "Generation Systems; mtrag-human/evaluations/reference_subset_with_human_evaluations.json")
LICENSE = "Apache License 2.0 (IBM's MTRAG repository): keep its notice with any part of the data shipped"
#: MTRAG's human metric -> (RETECO's dimension, "same" or "approximate", why).
DIMENSION_MAP = {
    "faithfulness": ("faithfulness", "same",
                     "grounded in the passages given (MTRAG) / supported by the passages the system had (RETECO)"),
    "completeness": ("completeness", "same",
                     "all information relevant to the question found in the context (MTRAG) / covers the reference's "
                     "points, read with the gold passages (RETECO)"),
    "appropriateness": ("relevance", "approximate",
                        "an appropriate amount of useful information (MTRAG) / addresses the current need without "
                        "padding (RETECO)"),
    "naturalness": ("coherence", "approximate",
                    "coherent, natural, not dismissive (MTRAG) / fits the dialogue as its next turn (RETECO)"),
}
HUMAN_METRICS = tuple(DIMENSION_MAP)
UNMATCHED = {"correctness": "MTRAG's annotators did not rate correctness (truth against the reference): not judged"}
#: The judge's 1-5 grade on MTRAG's 1-4 scale (module docstring).
JUDGE_TO_HUMAN = {1: 1, 2: 2, 3: 2, 4: 3, 5: 4}
HUMAN_VALUES = {"1": 1, "2": 2, "3": 3, "4": 4}
TURN_SEPARATOR = "<::>"
SPEAKERS = {"user": "User", "agent": "Assistant"}
CLUSTERS = ("conversation", "task")
SYSTEM_NOTE = (
    "Three systems allow 3! = 6 orders: two rankings agree on the whole order by chance one time in six, and "
    "without ties Kendall's tau-b takes only the values -1, -1/3, 1/3 and 1. The order shows a gross disagreement (the judge "
    "ranking first what people rank last); it cannot show that the judge ranks systems as people do, nor "
    "resolve close systems. Here one system is the human-written reference answer itself."
)
ITEM_MAPPING = (
    "one judge item per evaluation and mapped dimension, as a 2b item: history = the task's input but its last "
    "turn (User/Assistant lines), query = its last user turn, evidence = gold evidence = the task's contexts "
    "(title and text), reference answer = the task's target; no key points; the task's labels, the algorithmic "
    "metrics and win-rate are not used"
)


@dataclass(frozen=True)
class MtragTask:
    """One turn to answer: its conversation, the dialogue so far, the passages given, the target."""

    task_id: str
    conversation: str
    history: str
    query: str
    passages: tuple[tuple[str, str], ...]
    reference_answer: str
    line: int


@dataclass(frozen=True)
class MtragEvaluation:
    """One system's answer to one task and its human grades: metric -> annotator -> 1..4."""

    task_id: str
    system: str
    response: str
    grades: dict[str, dict[str, int]]
    line: int

    @property
    def key(self) -> str:
        return f"{NAME}/{self.task_id}/{self.system}"


@dataclass(frozen=True)
class MtragSet:
    """A read MTRAG human-evaluation file."""

    file: str
    sha256: str
    name: str
    tasks: dict[str, MtragTask]
    evaluations: tuple[MtragEvaluation, ...]
    systems: tuple[str, ...]
    n_documents: int

    def counts(self) -> dict[str, int]:
        annotators = {a for e in self.evaluations for grades in e.grades.values() for a in grades}
        return {"tasks": len(self.tasks), "conversations": len({t.conversation for t in self.tasks.values()}),
                "evaluations": len(self.evaluations), "systems": len(self.systems), "annotators": len(annotators),
                "passages": self.n_documents,
                "ratings": sum(len(g) for e in self.evaluations for g in e.grades.values())}


# ---------------------------------------------------------------------------------------------
# Reading


class _LocatedDecoder(json.JSONDecoder):
    """``json.JSONDecoder`` that records where each object starts (the pure-Python scanner: the
    C one calls no Python hook per object), so that an error can name the object's line."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: dict[int, int] = {}
        self.objects: list[Any] = []  # kept alive: the ids above stay theirs

        def parse_object(s_and_end, *args):
            obj, end = json.decoder.JSONObject(s_and_end, *args)
            self.starts[id(obj)] = s_and_end[1] - 1
            self.objects.append(obj)
            return obj, end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)


def read_mtrag(path: Path | str) -> MtragSet:
    """Read an MTRAG human-evaluation JSON file as published (module docstring); InputError with
    every problem found, each at its object's line."""
    path = Path(path)
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the MTRAG file: {exc.strerror or exc}", name) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", name) from None
    decoder = _LocatedDecoder()
    try:
        doc, end = decoder.raw_decode(text, _skip_space(text, 0))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", name, exc.lineno) from None
    if text[end:].strip():
        raise InputError("text after the JSON object", name, text.count("\n", 0, end) + 1)
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]

    def line_of(obj: Any) -> int | None:
        start = decoder.starts.get(id(obj))
        return None if start is None else bisect.bisect_left(newlines, start) + 1

    return _build(doc, name, hashlib.sha256(raw).hexdigest(), line_of)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _build(doc: Any, name: str, digest: str, line_of) -> MtragSet:
    problems = Problems()
    if not isinstance(doc, dict):
        raise InputError("an MTRAG human-evaluation file is a JSON object (name, models, metrics, documents, tasks, "
                         "evaluations)", name, 1)
    for key in ("documents", "tasks", "evaluations"):
        if not isinstance(doc.get(key), list):
            problems.error(name, line_of(doc), f"the top-level object has no list {quoted(key)}")
    if problems.has_errors:
        raise InputError(problems)
    _check_scale(doc, name, line_of, problems)
    documents: dict[str, tuple[str, str]] = {}
    for n, d in enumerate(doc["documents"]):
        where = f"documents[{n}]"
        if not (isinstance(d, dict) and isinstance(d.get("document_id"), str) and isinstance(d.get("text"), str)):
            problems.error(name, line_of(d), f"{where}: a document needs a string document_id and text")
            continue
        title = d.get("title") if isinstance(d.get("title"), str) else ""
        # MTRAG's passages begin with their title line: it is added only to a text that lacks it.
        documents[d["document_id"]] = (d["document_id"], f"{title}\n{d['text']}" if title and
                                       not d["text"].startswith(title + "\n") else d["text"])
    tasks: dict[str, MtragTask] = {}
    for n, t in enumerate(doc["tasks"]):
        task = _task(t, n, documents, name, line_of, problems)
        if task is None:
            continue
        if task.task_id in tasks:
            problems.error(name, task.line, f"task {quoted(task.task_id)} is listed twice (first on line "
                           f"{tasks[task.task_id].line})")
            continue
        tasks[task.task_id] = task
    evaluations: list[MtragEvaluation] = []
    seen: dict[tuple[str, str], int] = {}
    for n, e in enumerate(doc["evaluations"]):
        ev = _evaluation(e, n, tasks, name, line_of, problems)
        if ev is None:
            continue
        pair = (ev.task_id, ev.system)
        if pair in seen:
            problems.error(name, ev.line, f"task {quoted(ev.task_id)} has a second evaluation of system "
                           f"{quoted(ev.system)} (first on line {seen[pair]})")
            continue
        seen[pair] = ev.line
        evaluations.append(ev)
    if not problems.has_errors and not evaluations:
        problems.error(name, line_of(doc), "the file holds no evaluation")
    if problems.has_errors:
        raise InputError(problems)
    systems = tuple(sorted({e.system for e in evaluations}))
    return MtragSet(file=name, sha256=digest, name=str(doc.get("name") or ""), tasks=tasks,
                    evaluations=tuple(evaluations), systems=systems, n_documents=len(documents))


def _check_scale(doc: dict, name: str, line_of, problems: Problems) -> None:
    """When the file lists its metrics, each human metric used must be the 4-point scale read here."""
    metrics = doc.get("metrics")
    if not isinstance(metrics, list):
        return
    for m in metrics:
        if not (isinstance(m, dict) and m.get("name") in HUMAN_METRICS):
            continue
        values = m.get("values")
        found = ({str(v.get("value")): v.get("numeric_value") for v in values if isinstance(v, dict)}
                 if isinstance(values, list) else None)
        if found != HUMAN_VALUES:
            problems.error(name, line_of(m), f"metric {quoted(m['name'])} is not on the 4-point scale this reader "
                           "knows (values \"1\"..\"4\" with numeric_value 1..4)")


def _task(t: Any, n: int, documents: dict, name: str, line_of, problems: Problems) -> MtragTask | None:
    where = f"tasks[{n}]"
    line = line_of(t)
    if not isinstance(t, dict) or not isinstance(t.get("task_id"), str):
        problems.error(name, line, f"{where}: a task is an object with a string task_id")
        return None
    task_id = t["task_id"]
    label = f"task {quoted(task_id)}"
    if TURN_SEPARATOR not in task_id:
        problems.error(name, line, f"{label}: a task_id is <conversation>{TURN_SEPARATOR}<turn>")
        return None
    turns = t.get("input")
    if not (isinstance(turns, list) and turns and all(
            isinstance(x, dict) and x.get("speaker") in SPEAKERS and isinstance(x.get("text"), str) for x in turns)):
        problems.error(name, line, f"{label}: input must be a non-empty list of turns, each with a speaker "
                       f"({' or '.join(SPEAKERS)}) and a text")
        return None
    if turns[-1]["speaker"] != "user":
        problems.error(name, line_of(turns[-1]), f"{label}: the last turn of input must be the user's (the question)")
        return None
    contexts = t.get("contexts", [])
    if not (isinstance(contexts, list) and all(isinstance(c, dict) and isinstance(c.get("document_id"), str)
                                               for c in contexts)):
        problems.error(name, line, f"{label}: contexts must be a list of objects with a document_id")
        return None
    missing = [c["document_id"] for c in contexts if c["document_id"] not in documents]
    if missing:
        problems.error(name, line, f"{label}: context {quoted(missing[0])} is not among the documents"
                       + (f" ({len(missing)} such)" if len(missing) > 1 else ""))
        return None
    targets = t.get("targets")
    if not (isinstance(targets, list) and targets and all(isinstance(x, dict) and isinstance(x.get("text"), str)
                                                          for x in targets)):
        problems.error(name, line, f"{label}: targets must be a non-empty list of objects with a text")
        return None
    history = "\n".join(f"{SPEAKERS[x['speaker']]}: {x['text']}" for x in turns[:-1])
    return MtragTask(task_id=task_id, conversation=task_id.split(TURN_SEPARATOR)[0], history=history,
                     query=turns[-1]["text"], passages=tuple(documents[c["document_id"]] for c in contexts),
                     reference_answer="\n".join(x["text"] for x in targets), line=line)


def _evaluation(e: Any, n: int, tasks: dict, name: str, line_of, problems: Problems) -> MtragEvaluation | None:
    line = line_of(e)
    if not (isinstance(e, dict) and isinstance(e.get("task_id"), str) and isinstance(e.get("model_id"), str)
            and isinstance(e.get("model_response"), str) and isinstance(e.get("annotations"), dict)):
        problems.error(name, line, f"evaluations[{n}]: an evaluation needs a string task_id, model_id and "
                       "model_response, and an annotations object")
        return None
    label = f"evaluation of task {quoted(e['task_id'])} by {quoted(e['model_id'])}"
    if e["task_id"] not in tasks:
        problems.error(name, line, f"{label}: the task is not among the tasks")
        return None
    grades: dict[str, dict[str, int]] = {}
    for metric in HUMAN_METRICS:
        given = e["annotations"].get(metric)
        if not isinstance(given, dict) or not given:
            problems.error(name, line, f"{label}: no annotations of the human metric {quoted(metric)} "
                           "(annotator id -> {\"value\": \"1\"..\"4\"})")
            return None
        grades[metric] = {}
        for annotator, rating in given.items():
            value = rating.get("value") if isinstance(rating, dict) else None
            if not isinstance(value, str) or value not in HUMAN_VALUES:
                problems.error(name, line_of(rating) or line, f"{label}: the {metric} of annotator "
                               f"{quoted(annotator)} is {quoted(str(value))}, not one of \"1\", \"2\", \"3\", \"4\"")
                return None
            grades[metric][annotator] = HUMAN_VALUES[value]
    return MtragEvaluation(task_id=e["task_id"], system=e["model_id"], response=e["model_response"], grades=grades,
                           line=line)


# ---------------------------------------------------------------------------------------------
# Judging and agreement


def mapped_dimensions(judge_dimensions: tuple[str, ...]) -> list[tuple[str, str]]:
    """(MTRAG metric, RETECO dimension) pairs of ``DIMENSION_MAP`` the judge's prompt version has."""
    return [(metric, dim) for metric, (dim, _, _) in DIMENSION_MAP.items() if dim in judge_dimensions]


def judge_items(hset: MtragSet, judge_dimensions: tuple[str, ...], *, reference_answer: bool = True) -> list[JudgeItem]:
    """One JudgeItem per evaluation and mapped dimension (module docstring), in file order."""
    items = []
    for e in hset.evaluations:
        task = hset.tasks[e.task_id]
        for _, dimension in mapped_dimensions(judge_dimensions):
            items.append(JudgeItem(key=e.key, dimension=dimension, query=task.query, history=task.history,
                                   answer=e.response, evidence=task.passages, gold_evidence=task.passages,
                                   reference_answer=task.reference_answer if reference_answer else ""))
    return items


def _cluster_of(hset: MtragSet, e: MtragEvaluation, cluster: str) -> str:
    return hset.tasks[e.task_id].conversation if cluster == "conversation" else e.task_id


def human_ratings(hset: MtragSet, cluster: str = "conversation") -> Ratings:
    """The annotators' grades as ``Ratings`` under RETECO's dimension names (``DIMENSION_MAP``),
    each item's ``conversation_id`` its bootstrap cluster and its ``system`` the MTRAG model."""
    rows = [Rating(item_id=e.key, conversation_id=_cluster_of(hset, e, cluster), dimension=DIMENSION_MAP[metric][0],
                   rater=annotator, score=value, system=e.system, line=e.line)
            for e in hset.evaluations for metric in HUMAN_METRICS for annotator, value in e.grades[metric].items()]
    return Ratings(file=hset.file, rows=tuple(rows), has_system=True)


def judge_ratings(hset: MtragSet, outcomes: list[JudgeOutcome], rater: str, cluster: str = "conversation") -> Ratings:
    """The judge's verdicts with a score (status ok) on MTRAG's scale (``JUDGE_TO_HUMAN``)."""
    by_key = {e.key: e for e in hset.evaluations}
    rows = []
    for o in outcomes:
        if o.score is None:
            continue
        e = by_key[o.item.key]
        rows.append(Rating(item_id=e.key, conversation_id=_cluster_of(hset, e, cluster), dimension=o.item.dimension,
                           rater=rater, score=JUDGE_TO_HUMAN[o.score], system=e.system, line=e.line))
    return Ratings(file="the judge's verdicts", rows=tuple(rows), has_system=True)


def human_set_agreement(hset: MtragSet, outcomes: list[JudgeOutcome], rater: str, judge_dimensions: tuple[str, ...],
                        *, cluster: str = "conversation", seed: int = DEFAULT_SEED,
                        resamples: int = DEFAULT_RESAMPLES, reference_answer: bool = True) -> dict:
    """The human-set document: the set, the mapping, the judge's agreement and the ceiling per
    dimension (``reteco.metrics.agreement``), the systems' order (module docstring)."""
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster must be one of {CLUSTERS}, not {cluster!r}")
    pairs = mapped_dimensions(judge_dimensions)
    judged = judge_ratings(hset, outcomes, rater, cluster)
    if not judged.rows:
        raise InputError("the judge gave no usable verdict on the human set: there is no figure to compute",
                         hset.file)
    full = agreement(judged, human_ratings(hset, cluster), seed=seed, resamples=resamples)
    dimensions = {}
    for metric, dimension in pairs:
        block, ceiling = full["dimensions"][dimension], full["ceiling"]["dimensions"][dimension]
        system = full["system_level"]["dimensions"][dimension]
        dimensions[dimension] = {
            "human_metric": metric, "match": DIMENSION_MAP[metric][1],
            "n_items": block["n_items"], "n_conversations": block["n_conversations"],
            "judge": {k: block[k] for k in ("kappa_quadratic", "spearman", "kendall_tau_b", "exact", "within_1",
                                            "bias", "alpha_ordinal_with_judge")},
            "ceiling": {"alpha_ordinal_humans": block["alpha_ordinal_humans"],
                        **{k: ceiling[k] for k in ("kappa_quadratic", "spearman", "kendall_tau_b", "exact",
                                                   "within_1")},
                        "n_pairs": ceiling["n_pairs"], "n_items": ceiling["n_items"], "n_raters": ceiling["n_raters"]},
            "system_order": _system_order(system),
        }
    return {
        "human_set": NAME, "file": Path(hset.file).name, "sha256": hset.sha256, "set_name": hset.name,
        "source": SOURCE, "license": LICENSE, "counts": hset.counts(), "systems": list(hset.systems),
        "mapping": [{"human_metric": m, "dimension": d, "match": how, "why": why}
                    for m, (d, how, why) in DIMENSION_MAP.items()],
        "unmatched": [{"dimension": d, "why": why} for d, why in UNMATCHED.items()],
        "not_judged": [d for m, (d, _, _) in DIMENSION_MAP.items() if d not in judge_dimensions],
        "items": ITEM_MAPPING, "reference_answer_shown": reference_answer,
        "judge_to_human_scale": {str(k): v for k, v in JUDGE_TO_HUMAN.items()},
        "judge_rater": rater, "cluster": cluster,
        "judgments": summarize_outcomes(outcomes, tuple(d for _, d in pairs)),
        "dimensions": dimensions,
        "system_note": SYSTEM_NOTE,
        "agreement": full,
    }


def _system_order(system: dict) -> dict:
    """The systems by the annotators' mean and by the judge's (mapped) mean, best first."""
    means = system["systems"]
    by_humans = sorted(means, key=lambda s: (-round(means[s]["human_mean"], 9), s))
    by_judge = sorted(means, key=lambda s: (-round(means[s]["judge_mean"], 9), s))
    return {"humans": by_humans, "judge": by_judge, "same_order": by_humans == by_judge,
            "means": means, "kendall_tau_b": system["kendall_tau_b"], "interval_note": system.get("interval_note")}


# ---------------------------------------------------------------------------------------------
# Markdown


def _figure(f: dict | None) -> str:
    return format_interval(f, "undefined")


def markdown(doc: dict, judge: dict | None = None) -> str:
    """The human-set document as Markdown: the set, the mapping, the table, the systems' order."""
    c = doc["counts"]
    method = doc["agreement"]["method"]
    out = [f"# Judge against people: the MTRAG human-rated set ({printable(doc['file'])})", "",
           f"{c['tasks']} tasks (turns) of {c['conversations']} conversations, {c['evaluations']} answers of "
           f"{c['systems']} systems ({', '.join(printable(s) for s in doc['systems'])}), {c['ratings']} ratings by "
           f"{c['annotators']} annotators on a 4-point scale (1 No, 2 Mostly No, 3 Mostly Yes, 4 Yes). "
           f"Source: {doc['source']}. License: {doc['license']}. sha256 `{doc['sha256']}`.", ""]
    if judge is not None:
        out += [f"Judge `{judge.get('signature')}`: `{printable(str(judge.get('model')))}`, prompt version "
                f"{judge.get('prompt_version')} (rater `{printable(doc['judge_rater'])}`).", ""]
    out += ["## Mapping", "", "| MTRAG (human) | RETECO (judge) | match | why |", "|---|---|---|---|"]
    out += [f"| {m['human_metric']} | {m['dimension']} | {m['match']} | {m['why']} |" for m in doc["mapping"]]
    out += [f"| (none) | {u['dimension']} | no counterpart | {u['why']} |" for u in doc["unmatched"]]
    out += ["", f"Items: {doc['items']}." + ("" if doc["reference_answer_shown"] else
                                             " The reference answer was withheld from the judge."),
            "The judge's 1-5 grade on the 4-point scale: " + ", ".join(
                f"{k} -> {v}" for k, v in doc["judge_to_human_scale"].items()) + ".", ""]
    if doc["not_judged"]:
        out += [f"Not judged (the judge's prompt version has no such dimension): {', '.join(doc['not_judged'])}.", ""]
    out += ["## Agreement beside the human ceiling", "",
            "Judge: the judge against the annotators' median (kappa: quadratic weights; Spearman; exact share), and "
            "Krippendorff's ordinal alpha with the judge as one more annotator. Ceiling: each annotator against the "
            "median of the others on the same answer (leave-one-out), the same figures; alpha over the annotators "
            f"alone. {method['interval']}, clusters: {doc['cluster']}s; {method['resamples']} resamples, seed "
            f"{method['seed']}.", "",
            "| dimension (MTRAG) | answers | kappa judge | kappa ceiling | alpha with judge | alpha annotators | "
            "Spearman judge | Spearman ceiling | exact judge | exact ceiling | bias |",
            "|---|---:|---|---|---|---|---|---|---|---|---|"]
    for d, b in doc["dimensions"].items():
        j, h = b["judge"], b["ceiling"]
        out.append(f"| {d} ({b['human_metric']}) | {b['n_items']} | {_figure(j['kappa_quadratic'])} | "
                   f"{_figure(h['kappa_quadratic'])} | {_figure(j['alpha_ordinal_with_judge'])} | "
                   f"{_figure(h['alpha_ordinal_humans'])} | {_figure(j['spearman'])} | {_figure(h['spearman'])} | "
                   f"{_figure(j['exact'])} | {_figure(h['exact'])} | {_figure(j['bias'])} |")
    out += ["", "## The systems' order", "", "| dimension | by the annotators | by the judge | same order | "
            "Kendall tau-b |", "|---|---|---|---|---|"]
    for d, b in doc["dimensions"].items():
        s = b["system_order"]
        out.append(f"| {d} | {' > '.join(printable(x) for x in s['humans'])} | "
                   f"{' > '.join(printable(x) for x in s['judge'])} | {'yes' if s['same_order'] else 'no'} | "
                   f"{_figure(s['kendall_tau_b'])} |")
    notes = sorted({b["system_order"]["interval_note"] for b in doc["dimensions"].values()
                    if b["system_order"].get("interval_note")})
    out += ["", doc["system_note"], *[f"Intervals: {n}" for n in notes], "", "## Judgments", "", "| dimension | ok | invalid | error | from the cache |",
            "|---|---:|---:|---:|---:|"]
    out += [f"| {d} | {n['ok']} | {n['invalid']} | {n['error']} | {n['cached']} |" for d, n in doc["judgments"].items()]
    return "\n".join(out) + "\n"


def headline(doc: dict) -> dict[str, dict[str, Any]]:
    """Per dimension the judge's kappa beside the ceiling's (value and interval): what
    ``judge-compare`` and the judge report quote."""
    keep = ("value", "ci_low", "ci_high", "reason")
    return {d: {"human_metric": b["human_metric"],
                "judge_kappa": {k: v for k, v in b["judge"]["kappa_quadratic"].items() if k in keep},
                "ceiling_kappa": {k: v for k, v in b["ceiling"]["kappa_quadratic"].items() if k in keep},
                "alpha_with_judge": {k: v for k, v in b["judge"]["alpha_ordinal_with_judge"].items() if k in keep},
                "alpha_annotators": {k: v for k, v in b["ceiling"]["alpha_ordinal_humans"].items() if k in keep}}
            for d, b in doc["dimensions"].items()}

