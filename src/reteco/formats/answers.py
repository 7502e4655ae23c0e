"""Reading generated answers (sub-tracks 2b and 2c): UTF-8 JSONL, one object per target turn.

Format (pages/submission_format.md, "Answers")::

    {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}

- ``turn_id`` is resolved exactly like a run's topic (``reteco.formats.topic_ids.TopicResolver``):
  ``<conv>_turn_<n>``, ``<conv>#turn<n>``, or qualified with its domain,
  ``<domain>/<conv>_turn_<n>``; a bare id that exists in several domains is an error naming the
  line (RECOR's BRIGHT-derived conversation ids are bare integers that recur across domains).
- ``answer`` is a non-empty string of at most ``MAX_ANSWER_CHARS`` characters and
  ``MAX_ANSWER_WORDS`` words (whitespace-separated). The limits are far above any useful answer
  to one conversational turn (RECOR's reference answers run to a few hundred words) and keep a
  judge prompt within every model's context window.
- A UTF-8 byte-order mark, CRLF line endings, blank lines and a missing final newline are fine.
  Fields other than ``turn_id`` and ``answer`` are ignored with one warning.

Errors (the file is not scored; every bad line is named, up to ``MAX_LISTED_ERRORS``, and the
errors of one kind read as one line, ``reteco.problems.Problems.lines``): a file in UTF-16 or
UTF-32 (said once, ``reteco.formats.text_file.wide_encoding``), invalid UTF-8, a carriage
return inside a line, invalid JSON, a JSON integer too long for Python to read (4,300 digits
and more, anywhere in the line), a line that is not a JSON object, a field given twice in one
object, a missing or non-string ``turn_id`` / ``answer`` (naming the field found in its place,
e.g. ``"response"``), text with an unpaired surrogate escape (it cannot be encoded as UTF-8), an empty answer, an answer over the
limits, an ambiguous bare turn id, a turn answered twice (both lines named), an empty file, a
whole file written as one JSON array, and a file none of whose turn ids is a reference turn.
Warnings (the file is scored): turn ids that are not reference turns (ignored), extra fields,
reference turns without an answer (they score 0 and count).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from reteco.formats.reference import Reference
from reteco.formats.text_file import wide_encoding, wide_text_error
from reteco.formats.topic_ids import AMBIGUOUS, NOT_FOUND, TopicResolver, normalize_topic_id
from reteco.problems import InputError, Problems, quoted

BOM = b"\xef\xbb\xbf"

#: Documented limits on one answer (pages/submission_format.md): longer answers are an error, never truncated.
MAX_ANSWER_CHARS = 32_000
MAX_ANSWER_WORDS = 4_000

FIELDS = ("turn_id", "answer")
FORMAT_HINT = 'each line must be one JSON object: {"turn_id": "<conversation id>_turn_<n>", "answer": "..."}'
EXAMPLES = 5  # how many of the participant's own ids a warning quotes

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Answer:
    """One accepted answer: the reference topic it answers, its text and its line."""

    topic: int  # index into reference.topics
    turn_id: str  # as the participant wrote it
    text: str
    line: int


@dataclass
class Answers:
    """The accepted answers of a file, by reference topic index, plus counts for details.json."""

    name: str
    by_topic: dict[int, Answer]
    counts: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.by_topic)

    def get(self, topic: int) -> Answer | None:
        return self.by_topic.get(topic)


class _DuplicateField(ValueError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class _NumberTooLong(ValueError):
    def __init__(self, digits: int):
        super().__init__(digits)
        self.digits = digits


def _read_int(text: str) -> int:
    """json's integer reader, refusing what int() refuses (over ``sys.get_int_max_str_digits()``
    digits, 4,300 by default) with its own exception, so the line can be named."""
    try:
        return int(text)
    except ValueError:
        raise _NumberTooLong(len(text.lstrip("-"))) from None


def _pairs_hook(pairs: list[tuple[str, object]]) -> dict:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateField(key)
        seen[key] = value
    return seen


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def _missing_field(key: str, missing: list[str], record: dict) -> str:
    """The message for a missing field, naming the field the line has in its place when that
    can be told: ``missing the field "answer"; found 'response' in its place: rename it "answer"``
    (one field missing, one other field), else the other fields found."""
    others = [k for k in record if k not in FIELDS]
    if len(missing) == 1 and len(others) == 1:
        return f'missing the field "{key}"; found {quoted(others[0])} in its place: rename it "{key}"'
    if others:
        found = ", ".join(quoted(k) for k in others[:EXAMPLES]) + (", ..." if len(others) > EXAMPLES else "")
        return f'missing the field "{key}" (the fields found: {found}); {FORMAT_HINT}'
    return f'missing the field "{key}"; {FORMAT_HINT}'


def read_answers(data: bytes, name: str, reference: Reference, problems: Problems | None = None) -> Answers:
    """Parse and validate an answers file against a 2b/2c reference's turns.

    Raises ``InputError`` listing every error with its line number; warnings are added to
    ``problems`` (if given). ``Answers.counts`` records ``lines_read`` (non-blank lines),
    ``answers`` (accepted), ``turns_ignored`` (unknown turn ids), ``lines_extra_fields`` and
    ``turns_missing`` (reference turns without an answer).
    """
    if problems is None:
        problems = Problems()
    errors = Problems()
    encoding = wide_encoding(data)
    if encoding is not None:
        raise wide_text_error(encoding, "answers", name)
    data = data.removeprefix(BOM)
    resolver = TopicResolver(reference)  # the one topic resolver of the scoring rules (rule 7), shared with runs
    accepted: dict[int, Answer] = {}
    unknown: list[tuple[str, int]] = []
    extra_fields: list[tuple[str, int]] = []
    lines_read = 0

    stripped = data.lstrip(b" \t\r\n")
    if not stripped:
        raise InputError(f"the answers file is empty; {FORMAT_HINT}", name)
    if stripped.startswith(b"["):
        raise InputError(
            f"the file starts with '[': it looks like one JSON array; write JSONL instead, {FORMAT_HINT} "
            "(one object per line, no enclosing brackets or commas between lines)",
            name,
        )

    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip(b" \t"):
            continue
        lines_read += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            errors.error(name, number, "the line is not valid UTF-8; save the answers as UTF-8 text")
            continue
        if "\r" in text:
            errors.error(name, number, "a carriage return inside the line; use LF or CRLF line endings")
            continue
        try:
            record = json.loads(text, object_pairs_hook=_pairs_hook, parse_int=_read_int)
        except _DuplicateField as exc:
            errors.error(name, number, f"the field {quoted(exc.name)} appears twice in the object; give it once")
            continue
        except _NumberTooLong as exc:
            errors.error(
                name, number, f"a JSON number of {exc.digits:,} digits, too long to read; {FORMAT_HINT}"
            )
            continue
        except json.JSONDecodeError as exc:
            errors.error(name, number, f"not valid JSON ({exc.msg} at column {exc.colno}); {FORMAT_HINT}")
            continue
        except RecursionError:
            errors.error(name, number, f"not valid JSON (nested too deeply); {FORMAT_HINT}")
            continue
        if not isinstance(record, dict):
            errors.error(name, number, f"expected a JSON object, found {_type_name(record)}; {FORMAT_HINT}")
            continue
        bad = False
        missing = [key for key in FIELDS if key not in record]
        for key in FIELDS:
            if key in missing:
                errors.error(name, number, _missing_field(key, missing, record))
                bad = True
            elif not isinstance(record[key], str):
                errors.error(name, number, f'"{key}" must be a string, found {_type_name(record[key])}')
                bad = True
            elif _SURROGATE.search(record[key]):
                errors.error(
                    name,
                    number,
                    f'"{key}" holds an unpaired surrogate escape (such as \\ud800), which is not valid Unicode text; '
                    "write the characters themselves or valid escape pairs",
                )
                bad = True
        if bad:
            continue
        others = sorted(set(record) - set(FIELDS))
        if others:
            extra_fields.append((others[0], number))
        turn_id = record["turn_id"].strip()
        answer = record["answer"]
        if not answer.strip():
            errors.error(name, number, f'"answer" is empty for turn {quoted(turn_id)}; every answer must hold text')
            continue
        if len(answer) > MAX_ANSWER_CHARS:
            errors.error(
                name,
                number,
                f'"answer" has {len(answer):,} characters, over the limit of {MAX_ANSWER_CHARS:,}; shorten it',
            )
            continue
        words = len(answer.split())
        if words > MAX_ANSWER_WORDS:
            errors.error(
                name, number, f'"answer" has {words:,} words, over the limit of {MAX_ANSWER_WORDS:,}; shorten it'
            )
            continue
        if not turn_id:
            errors.error(name, number, f'"turn_id" is empty; {FORMAT_HINT}')
            continue
        topic = resolver.resolve(turn_id)
        if topic == AMBIGUOUS:
            qualified = " or ".join(quoted(f"{d}/{normalize_topic_id(turn_id)}") for d in resolver.domains_of(turn_id))
            errors.error(name, number, f"turn {quoted(turn_id)} exists in several domains; write it as {qualified}")
            continue
        if topic == NOT_FOUND:
            unknown.append((turn_id, number))
            continue
        if topic in accepted:
            first = accepted[topic]
            errors.error(
                name,
                number,
                f"turn {quoted(turn_id)} is answered twice, on lines {first.line} and {number}; "
                "give exactly one answer per turn",
            )
            continue
        accepted[topic] = Answer(topic, turn_id, answer, number)

    if errors.has_errors:
        raise InputError(errors)
    if not accepted:
        if unknown:
            example = unknown[0][0]
            sample = reference.topics[0].topic_id if reference.topics else "?"
            raise InputError(
                f"none of the {len(unknown)} answers' turn ids is a turn of sub-track {reference.subtrack} "
                f"(for example {quoted(example)}); sub-track {reference.subtrack} expects turn ids "
                f"(<conversation id>_turn_<n>, or <domain>/<conversation id>_turn_<n>), e.g. '{sample}'",
                name,
            )
        raise InputError(f"the answers file holds no answer; {FORMAT_HINT}", name)

    if unknown:
        problems.warning(
            name,
            None,
            f"{len(unknown)} answers have a turn id that is not a turn of the reference and were ignored, e.g. "
            + ", ".join(f"{quoted(t)} (line {n})" for t, n in unknown[:EXAMPLES]),
        )
    if extra_fields:
        field_name, line = extra_fields[0]
        problems.warning(
            name,
            None,
            f'{len(extra_fields)} lines have fields other than "turn_id" and "answer" (e.g. {quoted(field_name)} '
            f"on line {line}); they were ignored",
        )
    missing = [i for i in range(len(reference.topics)) if i not in accepted]
    if missing:
        problems.warning(
            name,
            None,
            f"{len(missing)} reference turns have no answer and score 0 on every measure, e.g. "
            + ", ".join(f"'{reference.topics[i].key}'" for i in missing[:EXAMPLES]),
        )
    counts = {
        "lines_read": lines_read,
        "answers": len(accepted),
        "turns_ignored": len(unknown),
        "lines_extra_fields": len(extra_fields),
        "turns_missing": len(missing),
    }
    return Answers(name, dict(sorted(accepted.items())), counts)

