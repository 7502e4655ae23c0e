"""Readers for the organizers' data releases: the per-domain release layout and the flat sample.

Why one module: the readers of one format, the organizers' release, under its
specification below: layout discovery, one reader per file kind sharing the id and record
helpers, and the flat layout's domain rule, which ``reteco prepare`` and the starting kit's
baseline both import from here.

Release layout (the organizers' train/dev release, v1.1; pages/data.md)::

    track1_tempo/<domain>/documents.jsonl         {"id", "content"}
    track1_tempo/<domain>/examples_<split>.jsonl  {"id", "query", "gold_ids", ...}
    track1_tempo/<domain>/steps_<split>.jsonl     {"id", "query", "steps": [{"step_id", "gold_ids", ...}]}
    track1_tempo/<domain>/qrels_<split>.txt       qid 0 docid rel
    track1_tempo/<domain>/qrels_steps_<split>.txt step_id 0 docid rel
    track1_tempo/<domain>/guidance_<split>.jsonl  {"id", "query_guidance": {...}, "gold_passage_annotations": [...]}
    track1_tempo/temporal_labels_<split>/         optional frozen temporal labels (reteco.formats.temporal_labels)
    track1_tempo/<domain>/duplicate_map.json      {removed id: kept id}
    track2_recor/<domain>/documents.jsonl         {"doc_id", "content"}
    track2_recor/<domain>/benchmark_<split>.json  JSON array (or JSONL) of conversations
    track2_recor/<domain>/qrels_<split>.txt       <conv>_turn_<n> 0 docid rel

Flat layout (the organizers' public sample): the same files directly under ``track1_tempo/`` and
``track2_recor/``, without split suffix, one corpus and one qrels file for all domains. There a
Track-1 query's domain is the prefix of its gold doc ids before "/" (``prefix_domain``), a
Track-2 conversation's domain is its "task", and the documents' domains follow one rule
(``attribute_flat_corpus``) that ``reteco prepare`` and the starting kit's baseline share.

Tolerated variations, all seen in real files: tab- or space-separated qrels; ``<conv>#turn<n>``
turn ids; flattened steps records (no "steps" list: the record is one step whose id is the
record id); bare-integer conversation ids (stringified; domain qualification happens in
``reteco.release.prepare``); "Drones" for "drones"; documents keyed "id" or "doc_id"; a benchmark as a
JSON array or as JSONL, whatever its extension.

Every reader streams and yields plain records carrying the file and line they came from;
anything malformed raises ``InputError`` naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from reteco.formats.jsonl_records import ISO_DATE
from reteco.formats.topic_ids import canonical_domain, is_step_id, normalize_topic_id
from reteco.formats.turns import parse_key_points
from reteco.problems import InputError

TRACK1_DIR = "track1_tempo"
TRACK2_DIR = "track2_recor"

RELEASE = "release"
SAMPLE = "sample"
# track1_tempo/temporal_labels_<split>/: a split's frozen temporal labels, in either layout
TEMPORAL_LABELS_PREFIX = "temporal_labels_"

# Files whose presence directly under a track folder marks the flat (sample) layout.
_FLAT_MARKERS = ("documents.jsonl", "examples", "steps", "benchmark", "qrels")
_DATA_SUFFIXES = (".jsonl", ".json", ".txt")


@dataclass(frozen=True)
class Query:
    """A Track-1 query (examples file)."""

    query_id: str
    query: str
    gold_ids: list[str] | None  # None: the record has no gold ids (hidden split)
    file: str
    line: int


@dataclass(frozen=True)
class Step:
    """A Track-1b step. ``parent_id`` is the query it belongs to."""

    step_id: str
    parent_id: str
    gold_ids: list[str] | None
    file: str
    line: int
    parent_disagrees: bool = False  # nested step whose id does not rsplit to its record's id
    numbered: bool = False  # a flattened record without a step id: its query's one step, "<id>_step1"
    text: str = ""  # the step ("step"), its "step_instruction", and its query's text
    instruction: str = ""
    query_text: str = ""


@dataclass(frozen=True)
class Turn:
    """One turn of a Track-2 conversation."""

    turn: int  # 1-based
    query: str
    history: Any
    answer: str
    gold_doc_ids: list[str] | None
    key_points: tuple[tuple[str, str], ...] = ()  # the reference answer's, when written (formats.turns)


@dataclass(frozen=True)
class Conversation:
    """A Track-2 conversation. ``task`` is its canonical domain name, "" when it has none."""

    conversation_id: str
    task: str
    turns: list[Turn]
    file: str
    line: int


@dataclass(frozen=True)
class QrelsLine:
    topic_id: str  # normalised: "<conv>#turn<n>" is rewritten to "<conv>_turn_<n>"
    doc_id: str
    relevance: int
    file: str
    line: int


# ---------------------------------------------------------------------------------------------
# Layout discovery


def detect_layout(track_dir: Path) -> str | None:
    """``RELEASE`` (one folder per domain), ``SAMPLE`` (flat files) or None (nothing usable).

    A folder holding both flat data files and domain folders is an error: which of the two is
    the official data is not something to guess.
    """
    if not track_dir.is_dir():
        return None
    names = [p.name for p in track_dir.iterdir() if p.is_file()]
    flat = any(n.startswith(marker) for n in names for marker in _FLAT_MARKERS)
    nested = bool(domain_dirs(track_dir))
    if flat and nested:
        raise InputError("holds both flat data files and domain folders; expected one layout", str(track_dir))
    if flat:
        return SAMPLE
    if nested:
        return RELEASE
    return None


def domain_dirs(track_dir: Path) -> dict[str, Path]:
    """Domain folders of a release track, keyed by canonical domain name, sorted by name."""
    found: dict[str, Path] = {}
    for path in sorted(track_dir.iterdir()):
        if not path.is_dir() or path.name.startswith((".", "_", TEMPORAL_LABELS_PREFIX)):
            continue  # hidden, private, or the frozen temporal labels of a split (not a domain)
        if not any(f.suffix in _DATA_SUFFIXES for f in path.iterdir() if f.is_file()):
            continue  # not a domain: no data file in it
        domain = canonical_domain(path.name)
        if domain in found:
            # "Drones" and "drones" side by side: which one is official is not ours to guess.
            raise InputError(
                f"two folders for domain {domain!r}: {found[domain].name!r} and {path.name!r}", str(track_dir)
            )
        found[domain] = path
    return dict(sorted(found.items()))


def find_file(folder: Path, stem: str, split: str, extensions: tuple[str, ...], layout: str) -> Path | None:
    """The ``<stem>_<split><ext>`` file of a folder (the flat sample may also drop the suffix).

    In the release layout an unsuffixed file is never taken for a split: it could belong to any.
    Two candidates for the same role (``benchmark_dev.json`` and ``benchmark_dev.jsonl``) are an
    error rather than a guess.
    """
    names = [f"{stem}_{split}{ext}" for ext in extensions]
    if layout == SAMPLE:
        names += [f"{stem}{ext}" for ext in extensions]
    present = [folder / n for n in names if (folder / n).is_file()]
    if layout == SAMPLE and len(present) > 1:
        # The suffixed file is the more specific choice in a flat folder.
        suffixed = [p for p in present if p.name.startswith(f"{stem}_{split}")]
        present = suffixed or present
    if len(present) > 1:
        raise InputError(f"several {stem} files for split {split!r}: {', '.join(p.name for p in present)}", str(folder))
    return present[0] if present else None


# The file names that carry a split: ``examples_<split>.jsonl`` ... (``qrels_steps`` before
# ``qrels``, or ``qrels_steps_dev.txt`` would name a split "steps_dev").
_SPLIT_FILE = re.compile(
    r"^(?:(?:examples|steps)_(?P<a>.+)\.jsonl|benchmark_(?P<b>.+)\.jsonl?|qrels_steps_(?P<c>.+)\.txt|qrels_(?P<d>.+)\.txt)$"
)


def splits_in_release(release: Path) -> list[str]:
    """The splits the file names of a release folder give, sorted: from ``examples_<split>.jsonl``,
    ``steps_<split>.jsonl``, ``benchmark_<split>.json(l)`` and ``qrels[_steps]_<split>.txt``
    directly in a track folder (flat layout) or in its domain folders. The flat public sample's
    files carry no split: none is found there."""
    found: set[str] = set()
    for track in (TRACK1_DIR, TRACK2_DIR):
        folder = Path(release) / track
        if not folder.is_dir():
            continue
        folders = [folder] + [p for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith((".", "_"))]
        for directory in folders:
            for path in directory.iterdir():
                match = _SPLIT_FILE.match(path.name) if path.is_file() else None
                if match:
                    found.add(next(v for v in match.groups() if v is not None))
    return sorted(found)


def unsuffixed_files(folder: Path, stem: str, extensions: tuple[str, ...]) -> list[str]:
    """Names of ``<stem><ext>`` files present (in a release they are ignored; callers say so)."""
    return [f"{stem}{ext}" for ext in extensions if (folder / f"{stem}{ext}").is_file()]


# ---------------------------------------------------------------------------------------------
# Generic record readers


def iter_jsonl(path: Path, bytes_read: Callable[[int], object] | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSONL file, streamed.

    ``bytes_read`` (a progress bar's ``update``) is called with the size of each line read.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if bytes_read is not None:
                bytes_read(len(raw))
            if not raw.strip():
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark, as some editors write
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(f"not valid JSON: {_reason(exc)}", str(path), number) from None
            if not isinstance(record, dict):
                raise InputError(f"expected a JSON object, got {type(record).__name__}", str(path), number)
            yield number, record


def iter_json_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a file holding either a JSON array of objects or JSONL.

    Decided by content, not extension: the release's ``benchmark_<split>.json`` is an array,
    the sample's ``benchmark.jsonl`` is JSONL, and a mislabelled file should still read. The
    array is walked element by element so each record keeps the line it starts on.
    """
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    if not head.startswith(b"["):
        yield from iter_jsonl(path)
        return
    # Benchmarks are small (hundreds of conversations per domain): reading one whole is fine.
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc.reason}", str(path)) from None
    decoder = json.JSONDecoder()
    line, counted_to = 1, 0

    def line_at(position: int) -> int:
        nonlocal line, counted_to
        line += text.count("\n", counted_to, position)
        counted_to = position
        return line

    position = _skip_space(text, text.index("[") + 1)
    if position < len(text) and text[position] == "]":
        position += 1
    else:
        while True:
            start = line_at(position)
            try:
                record, position = decoder.raw_decode(text, position)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON: {exc.msg}", str(path), exc.lineno) from None
            if not isinstance(record, dict):
                raise InputError(f"expected a JSON object, got {type(record).__name__}", str(path), start)
            yield start, record
            position = _skip_space(text, position)
            if position >= len(text):
                raise InputError("JSON array is not closed", str(path), line_at(len(text)))
            if text[position] == ",":
                position = _skip_space(text, position + 1)
                continue
            if text[position] == "]":
                position += 1
                break
            found = text[position]
            raise InputError(f"expected ',' or ']' in the JSON array, found {found!r}", str(path), line_at(position))
    rest = _skip_space(text, position)
    if rest < len(text):
        raise InputError("unexpected content after the JSON array", str(path), line_at(rest))


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 ({exc.reason})"
    return str(exc)


def _id(value: Any, what: str, path: Path, line: int) -> str:
    # Bare-integer ids ("2") arrive as JSON numbers in some files; the id is its decimal string.
    if isinstance(value, bool) or value is None:
        raise InputError(f"{what} is missing or not a string", str(path), line)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise InputError(f"{what} is missing or not a string", str(path), line)


def _id_list(value: Any, what: str, path: Path, line: int) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise InputError(f"{what} must be a list of document ids", str(path), line)
    return [str(v).strip() for v in value]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


# ---------------------------------------------------------------------------------------------
# Track 1


def read_examples(path: Path) -> Iterator[Query]:
    """Track-1 queries of an examples file: ``{"id", "query", "gold_ids", ...}``."""
    for line, record in iter_jsonl(path):
        query_id = _id(record.get("id"), '"id"', path, line)
        gold = _id_list(record.get("gold_ids"), '"gold_ids"', path, line)
        yield Query(query_id, _text(record.get("query")), gold, str(path), line)


def read_steps(path: Path) -> Iterator[Step]:
    """Track-1b steps of a steps file, nested (``"steps": [...]``) or flattened.

    A flattened record (no "steps" list) is one step whose id is the record's "step_id" or else
    its "id"; its parent is ``step_id.rsplit("_step", 1)[0]``. Step ids are
    ``<query id>_step<n>`` (the release's convention, which the kit and the messages teach): a
    flattened record whose id does not end so is a query's record without steps (the public
    sample's: its "id" is the query's, its gold the query's), taken as that query's one step
    ``<id>_step1`` (``Step.numbered``), so that the ids participants are told to write are the
    reference's. A nested step's parent is its record's id, which is what the id convention also
    says; a step id that does not follow the convention is flagged, not rejected.
    """
    for line, record in iter_jsonl(path):
        steps = record.get("steps")
        if steps is None:
            step_id = _id(record.get("step_id", record.get("id")), 'step id ("step_id" or "id")', path, line)
            gold = _id_list(record.get("gold_ids"), '"gold_ids"', path, line)
            numbered = "step_id" not in record and not is_step_id(step_id)
            yield Step(
                f"{step_id}_step1" if numbered else step_id, step_id.rsplit("_step", 1)[0], gold, str(path), line,
                numbered=numbered,
                text=_text(record.get("step")), instruction=_text(record.get("step_instruction")),
                query_text=_text(record.get("query")),
            )
            continue
        query_id = _id(record.get("id"), '"id"', path, line)
        if not isinstance(steps, list):
            raise InputError('"steps" must be a list', str(path), line)
        for number, step in enumerate(steps, 1):
            if not isinstance(step, dict):
                raise InputError(f"step {number} is not a JSON object", str(path), line)
            step_id = _id(step.get("step_id"), f'"step_id" of step {number}', path, line)
            gold = _id_list(step.get("gold_ids"), f'"gold_ids" of step {number}', path, line)
            disagrees = step_id.rsplit("_step", 1)[0] != query_id
            yield Step(
                step_id, query_id, gold, str(path), line, disagrees,
                text=_text(step.get("step")), instruction=_text(step.get("step_instruction")),
                query_text=_text(record.get("query")),
            )


@dataclass(frozen=True)
class TimeScope:
    """A passage's resolved time span (guidance ``time_scope_guess``): ISO dates, granularity."""

    start_iso: str
    end_iso: str
    granularity: str | None


@dataclass(frozen=True)
class Guidance:
    """The temporal guidance of one Track-1 query (``guidance_<split>.jsonl``).

    ``scopes`` maps a gold passage's doc id to its ``time_scope_guess``; ``unusable_scopes``
    counts annotations whose scope is missing or not an ISO date (TEMPO's guidance is
    LLM-written: such scopes are skipped, never guessed).
    """

    query_id: str
    is_temporal_query: bool | None
    key_time_anchors: tuple[str, ...]
    reasoning_class: str
    scopes: dict[str, TimeScope]
    unusable_scopes: int
    file: str
    line: int


_SCOPE_GRANULARITIES = ("decade", "year", "month", "date")


def read_guidance(path: Path) -> Iterator[Guidance]:
    """Track-1 guidance records ``{"id", "query_guidance": {...}, "gold_passage_annotations": [...]}``.

    Only "id" is required; the guidance's other fields are read when present and well-typed.
    """
    for line, record in iter_jsonl(path):
        query_id = _id(record.get("id"), '"id"', path, line)
        guidance = record.get("query_guidance")
        guidance = guidance if isinstance(guidance, dict) else {}
        temporal = guidance.get("is_temporal_query")
        anchors = guidance.get("key_time_anchors")
        anchors = tuple(str(a) for a in anchors if isinstance(a, (str, int))) if isinstance(anchors, list) else ()
        klass = guidance.get("temporal_reasoning_class_primary")
        scopes: dict[str, TimeScope] = {}
        unusable = 0
        annotations = record.get("gold_passage_annotations")
        for annotation in annotations if isinstance(annotations, list) else []:
            doc = annotation.get("doc_id") if isinstance(annotation, dict) else None
            scope = annotation.get("time_scope_guess") if isinstance(annotation, dict) else None
            if not isinstance(doc, str) or not isinstance(scope, dict):
                unusable += 1
                continue
            start, end = scope.get("start_iso"), scope.get("end_iso")
            if not isinstance(start, str) or not isinstance(end, str) or not (ISO_DATE.match(start) and ISO_DATE.match(end)):
                unusable += 1
                continue
            granularity = scope.get("granularity")
            scopes[doc.strip()] = TimeScope(start, end, granularity if granularity in _SCOPE_GRANULARITIES else None)
        yield Guidance(
            query_id,
            temporal if isinstance(temporal, bool) else None,
            anchors,
            klass if isinstance(klass, str) else "",
            scopes,
            unusable,
            str(path),
            line,
        )


# ---------------------------------------------------------------------------------------------
# Track 2


def read_benchmark(path: Path) -> Iterator[Conversation]:
    """Track-2 conversations of a benchmark file (JSON array or JSONL)."""
    for line, record in iter_json_records(path):
        conversation_id = _id(record.get("id"), '"id"', path, line)
        task = record.get("task")
        task = canonical_domain(task) if isinstance(task, str) and task.strip() else ""
        raw_turns = record.get("turns")
        if not isinstance(raw_turns, list):
            raise InputError(f'conversation {conversation_id!r}: "turns" must be a list', str(path), line)
        turns: list[Turn] = []
        seen: set[int] = set()
        for position, raw in enumerate(raw_turns, 1):
            if not isinstance(raw, dict):
                message = f"conversation {conversation_id!r}: turn {position} is not a JSON object"
                raise InputError(message, str(path), line)
            number = raw.get("turn_id", position)
            if isinstance(number, str) and number.strip().isdigit():
                number = int(number)
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InputError(
                    f"conversation {conversation_id!r}: turn {position} has turn_id {number!r}, not a positive integer",
                    str(path),
                    line,
                )
            if number in seen:
                raise InputError(f"conversation {conversation_id!r}: turn_id {number} repeats", str(path), line)
            seen.add(number)
            gold = _id_list(raw.get("gold_doc_ids"), f'"gold_doc_ids" of turn {number}', path, line)
            try:
                key_points = parse_key_points(raw.get("key_points"))
            except ValueError as exc:
                raise InputError(f"conversation {conversation_id!r}: turn {number}: {exc}", str(path), line) from None
            turns.append(Turn(number, _text(raw.get("query")), raw.get("conversation_history"), _text(raw.get("answer")),
                              gold, key_points))
        yield Conversation(conversation_id, task, turns, str(path), line)


# ---------------------------------------------------------------------------------------------
# Shared


def read_qrels(path: Path) -> Iterator[QrelsLine]:
    """TREC qrels lines ``topic 0 doc relevance``, tab- or space-separated."""
    with open(path, encoding="utf-8-sig") as handle:
        for number, text in enumerate(handle, 1):
            parts = text.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputError(
                    f"expected 4 columns (topic, 0, doc id, relevance), found {len(parts)}", str(path), number
                )
            try:
                relevance = int(parts[3])
            except ValueError:
                raise InputError(f"relevance {parts[3]!r} is not an integer", str(path), number) from None
            yield QrelsLine(normalize_topic_id(parts[0]), parts[2], relevance, str(path), number)


def iter_documents(
    path: Path, id_keys: tuple[str, ...], with_text: bool, bytes_read: Callable[[int], object] | None = None
) -> Iterator[tuple[int, str, str | None]]:
    """(line, doc id, text or None) of a documents.jsonl, streamed.

    ``id_keys`` in order of preference ("id" for TEMPO, "doc_id" for RECOR; either is taken).
    Texts are only decoded into the result when asked for: Track 1 needs the ids alone.
    ``bytes_read`` is called with the size of each line read (progress bars).
    """
    for line, record in iter_jsonl(path, bytes_read):
        for key in id_keys:
            if key in record:
                doc_id = _id(record[key], f'"{key}"', path, line)
                break
        else:
            raise InputError(f"document has no {' or '.join(repr(k) for k in id_keys)} field", str(path), line)
        if not with_text:
            yield line, doc_id, None
            continue
        text = record.get("content", record.get("text"))
        if text is not None and not isinstance(text, str):
            raise InputError('"content" must be a string', str(path), line)
        yield line, doc_id, text or ""


def read_duplicate_map(path: Path) -> dict[str, str]:
    """A ``duplicate_map.json``: one JSON object, removed (v1.0) id -> kept (v1.1) id."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", str(path), exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc.reason}", str(path)) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise InputError("expected one JSON object mapping removed document ids to kept ids (strings)", str(path))
    return {k.strip(): v.strip() for k, v in data.items()}


# ---------------------------------------------------------------------------------------------
# The flat layout's domains
#
# The flat sample has one corpus and one qrels file per track, for every domain. Which domain a
# topic and a document belong to is decided here, once: `reteco prepare` builds the reference's
# per-domain corpora with it and the starting kit's baseline ranks each topic against the same
# documents, so no line of the baseline's runs names a document the scorer discards.


def id_domain(doc_id: str) -> str | None:
    """The canonical domain a Track-1 document id starts with (``"bitcoin/25785deb_4434.txt"`` ->
    ``"bitcoin"``); None for an id without "/"."""
    return canonical_domain(doc_id.split("/", 1)[0]) if "/" in doc_id else None


def prefix_domain(doc_ids: Iterable[str]) -> tuple[str | None, bool]:
    """The domain of a flat-layout Track-1 topic: the domain most of its gold ids are prefixed
    with (ties: the first by name), and whether its ids name several domains. (None, False) when
    no id has a prefix."""
    counts = Counter(d for d in map(id_domain, doc_ids) if d is not None)
    if not counts:
        return None, False
    best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return best, len(counts) > 1


@dataclass(frozen=True)
class FlatAttribution:
    """The domains of a flat corpus's documents (``attribute_flat_corpus``).

    ``domains``: every domain of the track, sorted; ``owners``: document id -> its domains,
    sorted; ``unattributed``: how many corpus lines nothing attributes (their documents belong to
    every domain).
    """

    domains: list[str]
    owners: dict[str, tuple[str, ...]]
    unattributed: int


def attribute_flat_corpus(
    doc_ids: Iterable[str],
    citations: Iterable[tuple[str, Iterable[str]]],
    topic_domains: Iterable[str],
    *,
    by_prefix: bool,
) -> FlatAttribution:
    """Give each document of a flat (domain-less) corpus its domains: the official rule.

    ``doc_ids``: the corpus's ids, in file order (an id may repeat); ``citations``: (a topic's
    domain, the documents relevant to it: its gold ids and qrels, v1.1 ids) for every topic;
    ``topic_domains``: the domains the topics belong to; ``by_prefix``: Track 1's ids name their
    domain.

    - Track 1 (``by_prefix``): a document belongs to the domain its id is prefixed with
      (``"bitcoin/..."``); an id without prefix, to the domains of the topics citing it.
    - Track 2: a document belongs to the domains of the topics citing it.
    - A document nothing attributes belongs to every domain: the topics' domains and (Track 1)
      those the corpus's id prefixes name.
    """
    cited: dict[str, set[str]] = {}
    for domain, docs in citations:
        for doc in docs:
            cited.setdefault(doc, set()).add(domain)
    owners: dict[str, tuple[str, ...]] = {}
    orphans: list[str] = []
    unattributed = 0
    for doc_id in doc_ids:
        if doc_id in owners:
            unattributed += not owners[doc_id]
            continue
        prefix = id_domain(doc_id) if by_prefix else None
        found = (prefix,) if prefix is not None else tuple(sorted(cited.get(doc_id, ())))
        owners[doc_id] = found
        if not found:
            orphans.append(doc_id)
            unattributed += 1
    domains = sorted(set(topic_domains) | {d for found in owners.values() for d in found})
    for doc_id in orphans:
        owners[doc_id] = tuple(domains)
    return FlatAttribution(domains, owners, unattributed)
