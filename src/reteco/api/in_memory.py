"""Runs, qrels and answers given as Python objects, written as the bytes of the files they stand for.

``reteco.evaluate`` takes a run as a ``{topic: {doc: score}}`` dict or a pandas DataFrame, and
``reteco.evaluate_answers`` answers as a ``{turn_id: answer}`` dict or a list of records. They are
turned into the lines of a TREC run or a JSONL answers file, in memory, and read by the scoring's
own readers (``reteco.formats.submission.in_memory_submission``): the same rules and the same
messages as a file. What a file cannot hold is refused here first, naming the row: an id that is
empty or has blanks inside (a TREC line splits on them), an id or score of the wrong type.

How the lines are written:

- a run line ``topic Q0 doc rank score reteco``: the score as Python's ``repr`` of the float
  (exact: it reads back to the same float64), so the ranking is the one the object holds;
- ``rank``: a DataFrame's ``rank`` column when it has one, as it is (PyTerrier's start at 0, which
  a run file may do too), otherwise each topic's rows numbered 1, 2, ... by score, highest
  first, rows of equal score in the order given (so ties keep that order, as a file's line
  order does, and no rank can disagree with the scores).

A DataFrame's columns are PyTerrier's (``qid``, ``docno``, ``score``) or ir_measures' and
ranx's (``query_id``, ``doc_id``, ``score``), each with an optional ``rank``.

``reteco.evaluate``'s reference may be qrels: a ``{topic: {doc: relevance}}`` dict or a
DataFrame with PyTerrier's (``qid``, ``docno``, ``label``) or ir_measures' (``query_id``,
``doc_id``, ``relevance``) columns, written as the lines ``topic 0 doc relevance`` of a TREC
qrels file and read by the qrels files' reader (``reteco.formats.qrels.trec_qrels_judgments``).
A relevance must be a number: an integer, or a float with a whole value (a pandas column holding
a NaN is float), written as the integer. Its level is checked here with the reader's own test and
message (``relevance '-1' is not an integer >= 0``, ``'2.5'``, ``'nan'``), with the ids and the
types, every row in order: all of an object's errors are listed at once, grouped and counted as a
file's, naming rows.
"""

from __future__ import annotations

import json
import math
import numbers
import re

from reteco.formats.qrels import not_a_level, relevance_level
from reteco.problems import InputError, Problem, Problems, quoted

COLUMN_SETS = (("qid", "docno", "score"), ("query_id", "doc_id", "score"))
QRELS_COLUMN_SETS = (("qid", "docno", "label"), ("query_id", "doc_id", "relevance"))
_BLANK = re.compile(r"\s")


class Lines:
    """The bytes of a file built from an object, and what each line came from (its row)."""

    def __init__(self, label: str):
        self.label = label
        self.rows: list[str] = []  # what line i + 1 came from, for messages
        self.text: list[str] = []
        self._bytes: bytes | None = None

    @classmethod
    def of_bytes(cls, label: str, data: bytes) -> "Lines":
        """A file's own bytes (its messages keep their line numbers)."""
        lines = cls(label)
        lines._bytes = data
        return lines

    def add(self, line: str, row: str) -> None:
        self.text.append(line)
        self.rows.append(row)

    @property
    def data(self) -> bytes:
        if self._bytes is not None:
            return self._bytes
        return "".join(line + "\n" for line in self.text).encode("utf-8")

    def located(self, problems: Problems) -> Problems:
        """``problems`` with each of this file's line numbers replaced by the row it came from."""
        out = Problems(suppressed_errors=problems.suppressed_errors, suppressed_by_kind=dict(problems.suppressed_by_kind),
                       suppressed_varied=set(problems.suppressed_varied))
        for p in problems:
            if p.file == self.label and p.line is not None and 0 < p.line <= len(self.rows):
                p = Problem(p.level, self.label, None, p.message, self.rows[p.line - 1])
            out.items.append(p)
        return out


def _id(value, what: str, where: str, label: str) -> str:
    """A topic, document or turn id as the text a file would hold, or InputError naming the row."""
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
        raise InputError(f"the {what} must be a string (or an integer), not {type(value).__name__}", f"{label} {where}")
    text = str(value)
    if not text or _BLANK.search(text):
        raise InputError(f"the {what} {quoted(text)} is empty or holds blanks, which a TREC line cannot hold",
                         f"{label} {where}")
    return text


def _score(value, where: str, label: str) -> str:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"the score must be a number, not {type(value).__name__} {quoted(str(value))}", f"{label} {where}")
    return repr(float(value))  # 'nan' and 'inf' are written as such: the reader refuses them, naming the row


def run_from_dict(run: dict, label: str = "run dict") -> Lines:
    """``{topic: {doc: score}}`` as TREC lines (module docstring)."""
    lines = Lines(label)
    collected = Problems()
    for topic, docs in run.items():
        where = f"topic {quoted(str(topic))}"
        try:
            topic_text = _id(topic, "topic id", where, label)
            if not isinstance(docs, dict):
                raise InputError(f"expected a {{doc: score}} dict, not {type(docs).__name__}", f"{label} {where}")
        except InputError as exc:
            collected.error(label, None, exc.problems.items[0].message, where)
            continue
        written = []
        for doc, score in docs.items():
            where = f"topic {quoted(topic_text)}, document {quoted(str(doc))}"
            try:
                written.append((_id(doc, "document id", where, label), _score(score, where, label), where))
            except InputError as exc:
                collected.error(label, None, exc.problems.items[0].message, where)
        for rank, position in enumerate(_by_score([float(score) for _, score, _ in written]), start=1):
            doc_text, score_text, where = written[position]
            lines.add(f"{topic_text} Q0 {doc_text} {rank} {score_text} reteco", where)
    if collected.has_errors:
        raise InputError(collected)
    if not lines.text:
        raise InputError("the run is empty: no topic ranks a document", label)
    return lines


def _columns(frame, sets: tuple[tuple[str, ...], ...], what: str, label: str, optional: str = "") -> tuple[str, ...]:
    """The first of ``sets`` whose columns the DataFrame has, or InputError naming its columns."""
    columns = [str(c) for c in frame.columns]
    chosen = next((names for names in sets if all(c in columns for c in names)), None)
    if chosen is None:
        wanted = " or ".join("(" + ", ".join(names) + ")" for names in sets)
        raise InputError(
            f"the {what} columns are {', '.join(map(quoted, columns[:12])) or 'none'}; expected {wanted}{optional}",
            label)
    return chosen


def run_from_frame(frame, label: str = "DataFrame") -> Lines:
    """A DataFrame with PyTerrier's or ir_measures' columns as TREC lines (module docstring)."""
    columns = [str(c) for c in frame.columns]
    chosen = _columns(frame, COLUMN_SETS, "run's", label, ", with an optional rank")
    if frame.empty:
        raise InputError("the run is empty: the DataFrame has no row", label)
    topic_col, doc_col, score_col = chosen
    topics, docs, scores = (frame[c].tolist() for c in chosen)
    rows = frame.index.tolist()
    collected = Problems()
    given_ranks = frame["rank"].tolist() if "rank" in columns else []
    if "rank" in columns:
        ranks = []
        for rank in given_ranks:
            if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
                if not (isinstance(rank, float) and rank.is_integer()):
                    ranks.append(None)
                    continue
            ranks.append(int(rank))
    else:
        ranks = [0] * len(topics)
        by_topic: dict[str, list[int]] = {}
        for i, topic in enumerate(topics):
            by_topic.setdefault(str(topic), []).append(i)
        for members in by_topic.values():
            values = [_score_value(scores[i]) for i in members]
            for rank, position in enumerate(_by_score(values), start=1):
                ranks[members[position]] = rank
    lines = Lines(label)
    for i, (row, topic, doc, rank, score) in enumerate(zip(rows, topics, docs, ranks, scores)):
        where = f"row {row}"
        try:  # every row is checked, in order: the errors read as a file's, grouped and counted
            line = (f"{_id(topic, f'{topic_col} (topic id)', where, label)} Q0 "
                    f"{_id(doc, f'{doc_col} (document id)', where, label)} ")
            if rank is None:
                raise InputError(f"rank {quoted(str(given_ranks[i]))} is not a whole number", f"{label} {where}")
            line += f"{rank} {_score(score, where, label)} reteco"
        except InputError as exc:
            collected.error(label, None, exc.problems.items[0].message, where)
            continue
        lines.add(line, where)
    if collected.has_errors:
        raise InputError(collected)
    return lines


def qrels_from_dict(qrels: dict, label: str = "qrels dict") -> Lines:
    """``{topic: {doc: relevance}}`` as TREC qrels lines (module docstring)."""
    lines = Lines(label)
    collected = Problems()
    for topic, docs in qrels.items():
        where = f"topic {quoted(str(topic))}"
        try:
            topic_text = _id(topic, "topic id", where, label)
            if not isinstance(docs, dict):
                raise InputError(f"expected a {{doc: relevance}} dict, not {type(docs).__name__}", f"{label} {where}")
        except InputError as exc:
            collected.error(label, None, exc.problems.items[0].message, where)
            continue
        for doc, relevance in docs.items():
            where = f"topic {quoted(topic_text)}, document {quoted(str(doc))}"
            try:
                lines.add(f"{topic_text} 0 {_id(doc, 'document id', where, label)} {_relevance(relevance, where, label)}",
                          where)
            except InputError as exc:
                collected.error(label, None, exc.problems.items[0].message, where)
    if collected.has_errors:
        raise InputError(collected)
    if not lines.text:
        raise InputError("the qrels are empty: no topic judges a document", label)
    return lines


def qrels_from_frame(frame, label: str = "qrels DataFrame") -> Lines:
    """A DataFrame with PyTerrier's or ir_measures' qrels columns as TREC qrels lines (module
    docstring)."""
    chosen = _columns(frame, QRELS_COLUMN_SETS, "qrels'", label)
    if frame.empty:
        raise InputError("the qrels are empty: the DataFrame has no row", label)
    topic_col, doc_col, relevance_col = chosen
    lines = Lines(label)
    collected = Problems()
    for row, topic, doc, relevance in zip(frame.index.tolist(), *(frame[c].tolist() for c in chosen)):
        where = f"row {row}"
        try:  # every row is checked, in order: the errors read as a file's, grouped and counted
            lines.add(f"{_id(topic, f'{topic_col} (topic id)', where, label)} 0 "
                      f"{_id(doc, f'{doc_col} (document id)', where, label)} "
                      f"{_relevance(relevance, where, label, relevance_col)}", where)
        except InputError as exc:
            collected.error(label, None, exc.problems.items[0].message, where)
    if collected.has_errors:
        raise InputError(collected)
    return lines


def _relevance(value, where: str, label: str, name: str = "relevance") -> str:
    """A relevance level as a qrels line holds it (module docstring)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"the {name} must be an integer, not {type(value).__name__} {quoted(str(value))}",
                         f"{label} {where}")
    if isinstance(value, numbers.Integral):
        text = str(int(value))
    else:
        number = float(value)
        text = str(int(number)) if number.is_integer() else repr(number)
    if relevance_level(text) is None:  # -1, 2.5, nan: refused here, in row order with the rest, as the reader would
        raise InputError(not_a_level(text), f"{label} {where}")
    return text


def _score_value(value) -> float:
    """A score as a number to order by (a wrong type is refused, naming its row, when written)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _by_score(scores: list[float]) -> list[int]:
    """Positions in rank order: score descending, equal scores in the order given."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def answers_from_object(answers, label: str) -> Lines:
    """``{turn_id: answer}`` or a list of ``{"turn_id": ..., "answer": ...}`` records (or a
    DataFrame with those columns) as JSONL lines; each record goes to the reader as it is, so a
    record with other keys gets the reader's own message."""
    if isinstance(answers, dict):
        records = [({"turn_id": turn, "answer": text}, f"turn {quoted(str(turn))}") for turn, text in answers.items()]
    elif hasattr(answers, "to_dict") and hasattr(answers, "columns"):
        records = [(record, f"row {row}") for row, record in zip(answers.index.tolist(), answers.to_dict("records"))]
    elif isinstance(answers, (list, tuple)):
        records = [(record, f"record {i}") for i, record in enumerate(answers)]
    else:
        raise InputError(f"answers must be a path, a {{turn_id: answer}} dict or a list of records, not {type(answers).__name__}",
                         "answers")
    lines = Lines(label)
    for record, where in records:
        try:
            text = json.dumps(record, ensure_ascii=False, allow_nan=False, default=_not_json)
        except (TypeError, ValueError) as exc:
            raise InputError(f"cannot be written as JSON ({exc})", f"{label} {where}") from None
        lines.add(text, where)
    if not lines.text:
        raise InputError("no answer given", label)
    return lines


def _not_json(value):
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
