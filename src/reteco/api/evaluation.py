"""``reteco.evaluate`` and ``reteco.evaluate_answers``: scoring from Python (pages/python_api.md).

One code path with ``reteco score``: a path goes to ``score_submission`` as the command gives it;
a dict or a DataFrame is first written as the file it stands for, in memory
(``reteco.api.in_memory``), and that file is scored by the same ``score_submission``. The phase
rules are the command's (``phase_rules``: per-topic figures unless the reference's phase.json
withholds them). So every figure equals the command's on the same run, to the last bit.

Errors: ``reteco.InputError`` (``reteco.problems.InputError``) for anything the command would
refuse with exit 1, its message the command's, with the file and line, or the DataFrame's row or
the dict's topic and document for a run built in memory; wrong measure strings and arguments of
the wrong type are ``InputError`` too, never a raw ``TypeError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reteco.api.in_memory import Lines, answers_from_object, qrels_from_dict, qrels_from_frame, run_from_dict, run_from_frame
from reteco.formats.phase_record import phase_rules
from reteco.formats.qrels import given_qrels_reference, read_qrels, trec_qrels_judgments
from reteco.formats.reference import Reference
from reteco.formats.submission import in_memory_submission, open_submission
from reteco.metrics.measure_strings import MeasureError, parse_measures
from reteco.outputs.trec_qrels import trec_qrels_lines, trec_run_lines, write_lines
from reteco.problems import InputError
from reteco.scoring.retrieval import retrieval_score_keys
from reteco.scoring.submission import score_submission
from reteco.subtracks import RETRIEVAL, SUBTRACKS, TEMPORAL

# What a reference of plain qrels (given qrels, FactIR's) cannot have of RETECO's retrieval
# figures, and why: ``Evaluation.absent`` says so rather than leave the reader to guess.
PLAIN_QRELS_ABSENT = {
    **{key: "plain qrels have no domains: their topics are one pool, whose mean is the figure itself"
       for key in RETRIEVAL if key.endswith("_domain_macro")},
    **{key: "plain qrels have no temporal labels or required periods (Track 1's)" for key in TEMPORAL},
}


@dataclass(frozen=True)
class Evaluation:
    """What ``reteco score`` reports for one submission.

    ``official``: the key of the sub-track's official figure (``ndcg_10``, ...), None where it has
    none; ``official_value`` its value (None when absent: see ``absent``). ``scores``: the
    scores.json figures (means over units). ``measures``: the requested measures' means
    (details.json's ``measures``). ``per_topic``: one row per unit (a query, a 1b query, a turn),
    every per-topic figure and requested measure as a column (a pandas DataFrame; empty when the
    phase withholds per-topic figures). ``warnings``: the log's warnings. ``absent``: each key
    left out, with the reason. ``details``: details.json, per-topic figures included.
    """

    official: str | None
    scores: dict[str, float]
    measures: dict[str, float]
    per_topic: object  # pandas.DataFrame
    warnings: list[str]
    absent: dict[str, str] = field(default_factory=dict)
    details: dict = field(default_factory=dict, repr=False)

    @property
    def official_value(self) -> float | None:
        return self.scores.get(self.official) if self.official else None

    def __str__(self) -> str:
        lines = [f"{key} (official)" if key == self.official else key for key in self.scores]
        width = max((len(line) for line in lines), default=0)
        out = [f"{line:<{width}}  {value:.4f}" for line, value in zip(lines, self.scores.values())]
        out += [f"{name:<{width}}  {value:.4f}" for name, value in self.measures.items()]
        return "\n".join(out)


def evaluate(run, reference, measures=None, *, engine: str = "numpy", trec_run=None, trec_qrels=None) -> Evaluation:
    """Score a run as ``reteco score`` does.

    ``run``: a path (a TREC run file, .gz, a folder or zip holding it), a ``{topic: {doc: score}}``
    dict, or a pandas DataFrame with PyTerrier's columns (``qid, docno, score``) or ir_measures'
    and ranx's (``query_id, doc_id, score``), an optional ``rank`` in both. ``reference``: a
    prepared reference folder (``reteco prepare``'s ``REF/<sub-track>``), a ``Reference``, or
    qrels (``as_reference``): scored with graded relevance, at k = 10, against no corpus.
    ``measures``: measure strings as ``reteco score -m`` takes them (``"nDCG@10 P@5 R@100 MRR"``,
    trec_eval's ``ndcg_cut.10`` too, or a list), computed beside the official figures.
    ``engine``: ``numpy`` (the official) or ``pytrec_eval`` (the cross-check), as ``--engine``.
    ``trec_run``, ``trec_qrels``: paths to write the ranking reteco scored and the judgments to,
    as ``reteco score --trec-run`` and ``--trec-qrels`` do (``reteco.outputs.trec_qrels``).
    """
    ref = as_reference(reference)
    if ref.row is not None and ref.row.takes_answers:
        also = ", run=..." if ref.row.takes_run else ""
        raise InputError(f"sub-track {ref.subtrack} scores answers: use reteco.evaluate_answers(answers, reference{also})",
                         "reference")
    wanted = _measures(measures)
    files = {} if _is_path(run) else {"run.txt": run_lines(run)}
    return _evaluation(ref, run, files, engine=engine, measures=wanted, trec_files=(trec_run, trec_qrels))


def evaluate_answers(answers, reference, *, run=None, judge_config=None, judge_cache=None) -> Evaluation:
    """Score 2b or 2c answers as ``reteco score`` does; the judge runs only with ``judge_config``.

    ``answers``: a path (an answers.jsonl, or a folder or zip holding the submission), a
    ``{turn_id: answer}`` dict, or a list of ``{"turn_id": ..., "answer": ...}`` records (or a
    DataFrame of them). ``run``: 2c's run (a path, dict or DataFrame, as ``evaluate`` takes it),
    unless ``answers`` is the path of a folder or zip that holds both. ``judge_config``: a judge
    configuration YAML path or a loaded ``JudgeConfig``; without it the judge's figures are
    absent (``absent`` says why) and nothing is sent anywhere. ``judge_cache``: its cache folder.
    """
    ref = as_reference(reference)
    if ref.row is None or not ref.row.takes_answers:
        what = f"sub-track {ref.subtrack}" if ref.row is not None else "plain qrels"
        raise InputError(f"{what} score a run: use reteco.evaluate", "reference")
    config = _judge_config(judge_config)
    if ref.row.takes_run and run is None and not (_is_path(answers) and Path(answers).suffix.lower() != ".jsonl"):
        raise InputError(f"sub-track {ref.subtrack} scores the run with the answers: give run=... (a path, dict or "
                         "DataFrame), or the path of a folder or zip holding both", "answers")
    if _is_path(answers) and run is None:
        return _evaluation(ref, answers, {}, judge=config, judge_cache=judge_cache)
    files = {"answers.jsonl": _member_lines(answers, "answers") if _is_path(answers) else answers_from_object(answers, "answers")}
    if run is not None:
        files["run.txt"] = _member_lines(run, "run") if _is_path(run) else run_lines(run)
    return _evaluation(ref, None, files, judge=config, judge_cache=judge_cache)


def _evaluation(ref: Reference, path, files: dict[str, Lines], *, engine="numpy", measures=None, judge=None,
                judge_cache=None, trec_files=(None, None)) -> Evaluation:
    phase = phase_rules(ref)
    result = score_object(ref, path, files, engine=engine, measures=measures, judge=judge, judge_cache=judge_cache,
                          per_topic=phase["per_topic"])
    _write_trec_files(ref, result.ranked, *trec_files)
    details = result.details_json(per_topic=phase["per_topic"])
    return Evaluation(
        official=official_key(ref),
        scores=dict(result.scores),
        measures=dict((result.details.get("measures") or {}).get("overall", {})),
        per_topic=_per_topic_frame(result),
        warnings=[str(p) for p in result.problems.warnings()],
        absent={**dict(result.absent), **(PLAIN_QRELS_ABSENT if ref.row is None else {})},
        details=details,
    )


def score_object(ref: Reference, path, files: dict[str, Lines], *, engine="numpy", measures=None, judge=None,
                 judge_cache=None, per_topic: bool | None = None):
    """``score_submission`` on a path, or on ``files`` built in memory, with the reference's phase
    rules (``per_topic``: ``phase_rules(ref)["per_topic"]``, read here unless the caller has it);
    an InputError names the object's rows."""
    if per_topic is None:
        per_topic = phase_rules(ref)["per_topic"]
    if files:
        submission = in_memory_submission({name: (lines.label, lines.data) for name, lines in files.items()}, "submission")
    else:
        submission = Path(path)
    try:
        result = score_submission(ref, submission, engine=engine, per_topic=per_topic, measures=measures,
                                  judge_config=judge, cache_dir=_path_or_none(judge_cache), run_judge_now=judge is not None)
    except InputError as exc:
        problems = exc.problems
        for lines in files.values():
            problems = lines.located(problems)
        raise InputError(problems) from None
    return result


def _write_trec_files(ref: Reference, ranked, trec_run, trec_qrels) -> None:
    for out, lines in ((trec_run, lambda: trec_run_lines(ref, ranked)), (trec_qrels, lambda: trec_qrels_lines(ref))):
        if out is None:
            continue
        try:
            write_lines(Path(out), lines())
        except OSError as exc:
            raise InputError(f"cannot be written ({exc.strerror or exc})", str(out)) from None


def _per_topic_frame(result):
    """One row per unit: the per-unit figures and measures, or the answers' per-turn figures."""
    import pandas as pd

    frames = []
    for section, key in (("per_unit", "unit"), ("measures.per_unit", "unit"), ("generation.per_turn", "turn")):
        records = result.per_topic.get(section)
        if records:
            frame = pd.DataFrame.from_records(records).set_index(key)
            frames.append(frame if not frames else frame.drop(columns=[c for c in frame.columns if c in frames[0].columns]))
    if not frames:
        return pd.DataFrame()
    return frames[0].join(frames[1:]) if len(frames) > 1 else frames[0]


def official_key(ref: Reference) -> str | None:
    row = SUBTRACKS.get(ref.subtrack)
    if row is not None:
        return row.official
    return retrieval_score_keys(ref)[0]


def as_reference(reference) -> Reference:
    """The reference a call scores against: a ``Reference``; a path, of a prepared reference
    folder or of a qrels file (TREC, or pytrec_eval's JSON: ``reteco.formats.qrels.read_qrels``);
    or qrels as an object (``qrels_lines``). Qrels make a plain-qrels reference
    (``given_qrels_reference``: graded, cutoff 10, every doc id accepted)."""
    if isinstance(reference, Reference):
        return reference
    if isinstance(reference, (str, Path)):
        if Path(reference).is_file():
            return given_qrels_reference(read_qrels(Path(reference)), {"qrels": Path(reference).name})
        return Reference.read(Path(reference))
    lines = qrels_lines(reference)
    try:
        judgments = trec_qrels_judgments(lines.data.decode("utf-8"), lines.label)
    except InputError as exc:
        raise InputError(lines.located(exc.problems)) from None
    return given_qrels_reference(judgments, {"qrels": lines.label})


def qrels_lines(qrels) -> Lines:
    """Qrels given as an object, as TREC qrels lines: a ``{topic: {doc: relevance}}`` dict, a
    ``ranx.Qrels`` (its ``to_dict()``), a DataFrame (``reteco.api.in_memory.qrels_from_frame``),
    or an iterable of ir_measures' ``Qrel`` (anything with ``query_id``, ``doc_id``, ``relevance``,
    read as a DataFrame of ir_measures' columns, one row per item in the order given)."""
    if isinstance(qrels, dict):
        return qrels_from_dict(qrels)
    if type(qrels).__name__ == "DataFrame" and hasattr(qrels, "columns"):
        return qrels_from_frame(qrels)
    if type(qrels).__module__.split(".")[0] == "ranx" and type(qrels).__name__ == "Qrels":
        return qrels_from_dict(qrels.to_dict(), "ranx Qrels")
    what = type(qrels).__name__
    if hasattr(qrels, "__iter__") and not isinstance(qrels, (str, bytes)) and type(qrels).__module__.split(".")[0] != "ranx":
        import pandas as pd

        items = list(qrels)
        if not items:
            raise InputError("the qrels are empty: the iterable yielded nothing", "reference")
        fields = ("query_id", "doc_id", "relevance")
        if all(hasattr(item, f) for item in items for f in fields):
            return qrels_from_frame(pd.DataFrame({f: [getattr(i, f) for i in items] for f in fields}), "ir_measures qrels")
        what += f" of {type(items[0]).__name__}"  # a run's ScoredDoc items, say: named as such
    raise InputError(
        "the reference must be a prepared reference folder, a Reference, or qrels: a qrels file's path, a "
        "{topic: {doc: relevance}} dict, a pandas DataFrame, a ranx Qrels or ir_measures' Qrel items, "
        f"not {what}", "reference")


def _is_path(value) -> bool:
    return isinstance(value, (str, Path))


def _path_or_none(value) -> Path | None:
    return None if value is None else Path(value)


def _measures(measures):
    if measures is None:
        return None
    if not isinstance(measures, (str, list, tuple)):
        raise InputError(f"measures must be a string or a list of strings, not {type(measures).__name__}", "measures")
    try:
        return parse_measures(measures)
    except MeasureError as exc:
        raise InputError(str(exc), "measures") from None


def run_lines(run) -> Lines:
    """A run object as TREC lines: a dict, a DataFrame, a ``ranx.Run`` (its ``to_dict()``), or an
    iterable of ir_measures' ``ScoredDoc`` (anything with ``query_id``, ``doc_id``, ``score``,
    read as a DataFrame of ir_measures' columns, one row per item in the order given)."""
    if isinstance(run, dict):
        return run_from_dict(run)
    if type(run).__name__ == "DataFrame" and hasattr(run, "columns"):
        return run_from_frame(run)
    if type(run).__module__.split(".")[0] == "ranx" and hasattr(run, "to_dict"):
        return run_from_dict(run.to_dict(), "ranx Run")
    if hasattr(run, "__iter__") and not isinstance(run, (str, bytes)):
        import pandas as pd

        items = list(run)
        if items and all(hasattr(item, f) for item in items for f in ("query_id", "doc_id", "score")):
            frame = pd.DataFrame({"query_id": [i.query_id for i in items], "doc_id": [i.doc_id for i in items],
                                  "score": [i.score for i in items]})
            return run_from_frame(frame, "ir_measures run")
        if not items:
            raise InputError("the run is empty: the iterable yielded nothing", "run")
    raise InputError(
        f"the run must be a path, a {{topic: {{doc: score}}}} dict, a pandas DataFrame, a ranx Run or ir_measures' "
        f"ScoredDoc items, not {type(run).__name__}", "run")


def _member_lines(path, kind: str) -> Lines:
    """The run or the answers of a path given beside an object (2c's run or answers): a file
    (gzipped or not), or the one ``kind`` file of a folder or zip, found and read as ``reteco
    score`` finds and reads it (``reteco.formats.submission``), its name kept for messages."""
    opened = open_submission(Path(path))
    name = opened.find(kind)
    return Lines.of_bytes(opened.display_name(name), opened.read_bytes(name))


def _judge_config(config):
    if config is None:
        return None
    if _is_path(config):
        from reteco.judge.config import load_judge_config

        return load_judge_config(Path(config))
    return config
