"""Reference data of one sub-track: the folder ``reteco prepare`` writes and scoring reads.

Why one module: one format's reader under its specification below: the layout, the
manifest's checks and the readers of topics, qrels and stance, all verified together before
anything is scored (a data file missing from the manifest must never read as "accept every id").

Layout of ``REF/<sub-track>/`` (format ``reteco-reference/1``)::

    reference.json      manifest: sub-track, split, relevance mode, domains, counts, file hashes,
                        the share of each domain's corpus judged relevant (corpus_relevance)
    topics.tsv          key, domain, topic_id, unit, conversation, depth   (header line, tab-separated)
    qrels.txt           key <TAB> 0 <TAB> doc_id <TAB> relevance            (TREC qrels, keyed by topic key)
    doc_ids.arrow       valid document ids: Arrow IPC (uncompressed, memory-mapped), columns doc_id (sorted, unique)
                        and domains (uint64 bit mask over reference.json's "domains" order)
    duplicate_map.arrow optional: removed (v1.0 id) -> kept (v1.1 id), columns removed, kept
    stance.tsv          optional (graded benchmarks): key, doc_id, stance
    turns.jsonl         2b/2c only: one object per target turn (query, history, reference answer)
    passages.sqlite     2b/2c only: passage text by (domain, doc_id)
    temporal_periods.jsonl  1a/1b: required periods and the offline oracle (``temporal_labels``)
    temporal_labels/    1a/1b, optional: frozen temporal labels, verified by their own manifest

The topic key is ``<domain>/<topic id>`` (see ``topic_ids``). ``unit`` is what the official
figure averages over: the parent query's key for 1b steps, the topic's own key otherwise.
``depth`` is the 1-based turn number for Track 2 and empty elsewhere. A reference without
doc_ids.arrow in its manifest (FactIR-style benchmarks, whose corpus is not distributed)
accepts every document id.

Reading verifies before anything is scored (``Reference.read``): the manifest must be well
formed and match the sha256 it records of its own content (``manifest_sha256``); every file it
lists must exist and match its recorded sha256 (phase.json too, when listed); a data file
scoring reads that the manifest does not list is refused, so a deleted doc_ids.arrow can never
mean "accept every id". The files are hashed once per read, streamed, in two threads while
topics and qrels are parsed. A temporal_labels/ folder is verified by its own manifest when
temporal scoring reads it (``TemporalLabels.read``); here only its presence is checked. Every
refusal is a ``ReferenceDataError`` (an ``InputError``: exit 1) naming the file and never
quoting its content (gold ids).

The duplicate map is held with every chain resolved (a -> b -> c is stored as a -> c, b -> c),
however it was built, so one lookup maps a run's id the way ``reteco prepare`` mapped the qrels.
"""

from __future__ import annotations

import csv
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv

from reteco.formats.arrow_arrays import from_numpy
from reteco.formats.corpus_index import MAX_DOMAINS, DocIdIndex, DuplicateMap, ipc_bytes
from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest, sha256_file
from reteco.formats.temporal_labels import LABELS_DIR, LABELS_MANIFEST
from reteco.formats.temporal_periods import PERIODS_FILE
from reteco.problems import DAMAGED, PREPARE_AGAIN, InputError, Problems, ReferenceDataError, quoted
from reteco.subtracks import BENCHMARKS, DEFAULT_BENCHMARK, SUBTRACKS, Benchmark, SubTrack, benchmark

FORMAT = "reteco-reference/1"

MANIFEST = "reference.json"
TOPICS = "topics.tsv"
QRELS = "qrels.txt"
DOC_IDS = "doc_ids.arrow"
DUPLICATE_MAP = "duplicate_map.arrow"
STANCE = "stance.tsv"
TURNS = "turns.jsonl"
PASSAGES = "passages.sqlite"

TOPIC_COLUMNS = ("key", "domain", "topic_id", "unit", "conversation", "depth")

# Every file of the folder that scoring reads: the manifest must list each one present.
DATA_FILES = (TOPICS, QRELS, DOC_IDS, DUPLICATE_MAP, STANCE, TURNS, PASSAGES, PERIODS_FILE)
REQUIRED_FILES = (TOPICS, QRELS)

_HASH_THREADS = 2  # hashlib releases the GIL: two files hash while the main thread parses


@dataclass(frozen=True)
class Manifest:
    """The fields of ``reference.json`` that scoring reads, typed, with their defaults in this one
    place: a field a manifest leaves out reads as RETECO's preset (``BENCHMARKS``' default row;
    ``reteco prepare`` and ``benchmark_reference`` write every field). ``Reference.record`` builds
    it from the manifest as read (already checked by ``read_manifest``); the manifest itself stays
    the dict that is written and hashed."""

    subtrack: str
    benchmark: str = DEFAULT_BENCHMARK
    split: str | None = None
    relevance: str = BENCHMARKS[DEFAULT_BENCHMARK].relevance
    cutoffs: tuple[int, ...] = BENCHMARKS[DEFAULT_BENCHMARK].cutoffs
    official: str | None = None  # None: nDCG at the first cutoff (a benchmark's preset names it)
    unit: str = "query"
    domains: tuple[str, ...] = ()

    @classmethod
    def of(cls, manifest: dict) -> "Manifest":
        """The record of a manifest dict; absent fields take the defaults above."""
        names = ("subtrack", "benchmark", "split", "relevance", "cutoffs", "official", "unit", "domains")
        given = {name: manifest[name] for name in names if name in manifest}
        for name in ("cutoffs", "domains"):
            if name in given:
                given[name] = tuple(given[name])
        return cls(**given)


@dataclass(frozen=True)
class Topic:
    key: str
    domain: str
    topic_id: str
    unit: str
    conversation: str = ""
    depth: int | None = None


@dataclass(frozen=True)
class Judgment:
    key: str
    doc_id: str
    relevance: int


@dataclass
class Reference:
    """Everything scoring needs about one sub-track, loaded from ``REF/<sub-track>/``."""

    manifest: dict
    topics: list[Topic]
    judgments: list[Judgment]
    doc_index: DocIdIndex | None = None
    duplicate_map: DuplicateMap | None = None
    stance: dict[tuple[str, str], str] = field(default_factory=dict)
    root: Path | None = None

    @property
    def record(self) -> Manifest:
        """The manifest's fields as a typed record, defaults filled in (``Manifest``)."""
        return Manifest.of(self.manifest)

    @property
    def subtrack(self) -> str:
        return self.manifest["subtrack"]

    @property
    def benchmark(self) -> Benchmark:
        """The row of the reference's benchmark (``reteco.subtracks.BENCHMARKS``)."""
        return benchmark(self.record.benchmark)

    @property
    def row(self) -> SubTrack | None:
        """The row of the reference's sub-track (``reteco.subtracks.SUBTRACKS``); None for a
        benchmark without sub-tracks (FactIR's plain qrels) or a sub-track its benchmark lacks."""
        subtrack = self.subtrack
        return SUBTRACKS[subtrack] if subtrack in self.benchmark.subtracks else None

    @property
    def relevance(self) -> str:
        """"binary" (RETECO: rel > 0 is relevant, gain 1) or "graded" (gain = level)."""
        return self.record.relevance

    @property
    def cutoffs(self) -> list[int]:
        """The k of the @k figures; the largest is the depth a ranking is cut at."""
        return list(self.record.cutoffs)

    @property
    def domains(self) -> list[str]:
        return list(self.record.domains)

    def write(self, root: Path) -> None:
        """Write the folder; the manifest records a sha256 of every file, and of itself, which
        reading checks."""
        root.mkdir(parents=True, exist_ok=True)
        with open(root / TOPICS, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(TOPIC_COLUMNS)
            for t in self.topics:
                writer.writerow([t.key, t.domain, t.topic_id, t.unit, t.conversation, "" if t.depth is None else t.depth])
        with open(root / QRELS, "w", encoding="utf-8", newline="") as handle:
            for j in self.judgments:
                handle.write(f"{j.key}\t0\t{j.doc_id}\t{j.relevance}\n")
        if self.doc_index is not None:
            self.doc_index.write(root / DOC_IDS)
        if self.duplicate_map is not None and len(self.duplicate_map):
            self.duplicate_map.write(root / DUPLICATE_MAP)
        if self.stance:
            with open(root / STANCE, "w", encoding="utf-8", newline="") as handle:
                for (key, doc), stance in sorted(self.stance.items()):
                    handle.write(f"{key}\t{doc}\t{stance}\n")
        manifest = dict(self.manifest)
        manifest["format"] = FORMAT
        manifest["files"] = {
            p.name: sha256_file(p) for p in sorted(root.iterdir()) if p.is_file() and p.name != MANIFEST
        }
        manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
        (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        self.manifest = manifest
        self.root = root

    @classmethod
    def read(cls, root: Path) -> "Reference":
        """Load a reference folder, verified first (see the module docstring): a
        ``ReferenceDataError`` naming the file when the manifest or a file is missing, malformed
        or not the one the manifest recorded."""
        root = Path(root)
        manifest = read_manifest(root)
        files: dict[str, str] = manifest["files"]
        _check_listing(root, manifest)
        # Largest first, so the two hashing threads finish together.
        names = sorted(files, key=lambda name: -(root / name).stat().st_size)
        parse_error: ReferenceDataError | None = None
        with ThreadPoolExecutor(_HASH_THREADS) as pool:
            digests = {name: pool.submit(sha256_file, root / name) for name in names}
            try:
                topics = _read_topics(root / TOPICS)
                judgments, judgment_columns = _read_qrels_file(root / QRELS)
                stance = _read_stance(root / STANCE) if STANCE in files else {}
            except ReferenceDataError as exc:
                parse_error = exc  # a damaged file is reported as such, once its hash is known
            _check_digests(root, files, digests)
        if parse_error is not None:
            raise parse_error
        # The Arrow files are mapped only once verified: their offsets are trusted when read.
        doc_index = DocIdIndex.read(root / DOC_IDS, manifest["domains"]) if DOC_IDS in files else None
        dup = DuplicateMap.read(root / DUPLICATE_MAP) if DUPLICATE_MAP in files else None
        reference = cls(manifest, topics, judgments, doc_index, dup, stance, root)
        reference._judgment_columns = judgment_columns
        return reference

    def judgment_columns(self) -> pa.Table:
        """The judgments as Arrow columns key, doc_id, relevance (as read from qrels.txt, or built
        once from ``judgments`` for a reference made in memory)."""
        if getattr(self, "_judgment_columns", None) is None:
            self._judgment_columns = pa.table(
                {
                    "key": pa.array([j.key for j in self.judgments], pa.string()),
                    "doc_id": pa.array([j.doc_id for j in self.judgments], pa.string()),
                    "relevance": pa.array([j.relevance for j in self.judgments], pa.int64()),
                }
            )
        return self._judgment_columns

    def fingerprint(self) -> str:
        """A short hash of the reference data that produced a score.

        For a folder: its verified manifest's ``manifest_sha256``, which covers the sha256 of
        every file (each checked on reading) and every field of the manifest. For a reference
        built in memory (FactIR's ``benchmark_reference``): a sha256 of its content (manifest,
        topics, judgments, stance, corpus ids, duplicate map), so different qrels never share one.
        """
        recorded = self.manifest.get(MANIFEST_DIGEST) if self.root is not None else None
        return (recorded or self._content_digest())[:16]

    def _content_digest(self) -> str:
        digest = hashlib.sha256()

        def add(value) -> None:
            digest.update(json.dumps(value, sort_keys=True, ensure_ascii=True, default=str).encode("ascii") + b"\n")

        add({k: v for k, v in self.manifest.items() if k != MANIFEST_DIGEST})
        for t in self.topics:
            add([t.key, t.domain, t.topic_id, t.unit, t.conversation, t.depth])
        for j in self.judgments:
            add([j.key, j.doc_id, j.relevance])
        add(sorted([key, doc, stance] for (key, doc), stance in self.stance.items()))
        if self.doc_index is not None:
            digest.update(ipc_bytes(self.doc_index.doc_ids, from_numpy(self.doc_index.masks)))
        if self.duplicate_map is not None:
            digest.update(ipc_bytes(self.duplicate_map.removed, self.duplicate_map.kept))
        return digest.hexdigest()


def read_manifest(root: Path) -> dict:
    """``root/reference.json``, checked: JSON object, format, its own sha256, field types."""
    root = Path(root)
    path = root / MANIFEST
    if not path.is_file():
        if not root.is_dir():
            raise ReferenceDataError("reference folder not found", str(root))
        inside = sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())
        if inside:
            # `reteco prepare --out REF` writes REF/1a ... REF/2c: the parent was given.
            raise InputError(
                f"holds the reference folders {', '.join(inside)}, one per sub-track; give one of them, "
                f"e.g. --ref {root / inside[0]}",
                str(root),
            )
        raise ReferenceDataError(
            f"missing: this is not a reference folder written by `reteco prepare`, or it was damaged; {PREPARE_AGAIN}",
            str(path),
        )
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ReferenceDataError(f"not valid JSON {DAMAGED}", str(path)) from None
    if not isinstance(manifest, dict):
        raise ReferenceDataError(f"not a JSON object {DAMAGED}", str(path))
    found = manifest.get("format")
    if found != FORMAT:
        what = "has no format" if not isinstance(found, str) else f"is of format {quoted(found)}"
        raise ReferenceDataError(f"{what}, not {FORMAT!r} {DAMAGED}", str(path))
    recorded = manifest.get(MANIFEST_DIGEST)
    if not isinstance(recorded, str):
        raise ReferenceDataError(
            f"records no {MANIFEST_DIGEST} (written by an older reteco, or damaged); {PREPARE_AGAIN}", str(path)
        )
    if recorded != manifest_digest(manifest):
        raise ReferenceDataError(f"does not match the sha256 it records of itself ({MANIFEST_DIGEST}) {DAMAGED}", str(path))
    problem = _manifest_type_problem(manifest)
    if problem:
        raise ReferenceDataError(f"{problem} {DAMAGED}", str(path))
    return manifest


def _manifest_type_problem(manifest: dict) -> str | None:
    """What is wrong with the types of the manifest's fields that scoring reads, or None."""

    def text(value) -> bool:
        return isinstance(value, str) and value != ""

    def whole(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    files = manifest.get("files")
    domains = manifest.get("domains", [])
    relevance = manifest.get("corpus_relevance")  # written by `reteco prepare`; scoring warns from it
    checks = (
        ("subtrack", text(manifest.get("subtrack")), "a non-empty string"),
        (
            "files",
            isinstance(files, dict)
            and all(_plain_name(n) and isinstance(h, str) and _is_sha256(h) for n, h in files.items()),
            "an object mapping file names to sha256 hex digests",
        ),
        (
            "domains",
            isinstance(domains, list)
            and all(text(d) for d in domains)
            and len(set(domains)) == len(domains) <= MAX_DOMAINS,
            f"a list of at most {MAX_DOMAINS} distinct domain names",
        ),
        ("relevance", manifest.get("relevance", Manifest.relevance) in ("binary", "graded"), '"binary" or "graded"'),
        (
            "cutoffs",
            isinstance(cutoffs := manifest.get("cutoffs", list(Manifest.cutoffs)), list)
            and bool(cutoffs)
            and all(whole(k) and k > 0 for k in cutoffs),
            "a non-empty list of positive integers",
        ),
        ("split", manifest.get("split") is None or isinstance(manifest.get("split"), str), "a string or null"),
        ("benchmark", text(manifest.get("benchmark", Manifest.benchmark)), "a non-empty string"),
        ("official", "official" not in manifest or text(manifest["official"]), "a non-empty string"),
        ("unit", text(manifest.get("unit", Manifest.unit)), "a non-empty string"),
        ("counts", isinstance(manifest.get("counts", {}), dict), "an object"),
        ("temporal", manifest.get("temporal") is None or isinstance(manifest.get("temporal"), dict), "an object or null"),
        (
            "corpus_relevance",
            relevance is None
            or isinstance(relevance, dict)
            and isinstance(mostly := relevance.get("mostly_relevant", []), list)
            and all(text(d) for d in mostly),
            'an object whose "mostly_relevant" is a list of domain names',
        ),
    )
    for name, ok, expected in checks:
        if not ok:
            return f'"{name}" must be {expected}'
    return None


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..", MANIFEST) and "/" not in name and "\\" not in name


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _check_listing(root: Path, manifest: dict) -> None:
    """Every listed file present, every data file present listed, the labels folder whole."""
    files = manifest["files"]
    problems = Problems()
    for name in REQUIRED_FILES:
        if name not in files:
            problems.error(str(root / MANIFEST), None, f"lists no {name} {DAMAGED}")
    for name in sorted(files):
        if not (root / name).is_file():
            problems.error(str(root / name), None, f"missing, though {MANIFEST} lists it {DAMAGED}")
    for name in DATA_FILES:
        if name not in files and (root / name).exists():
            problems.error(
                str(root / name), None, f"not listed in {MANIFEST}, so it cannot be verified {DAMAGED}"
            )
    labels = root / LABELS_DIR
    recorded_labels = (manifest.get("temporal") or {}).get("frozen_labels")
    if labels.exists() and not (labels / LABELS_MANIFEST).is_file():
        problems.error(
            str(labels / LABELS_MANIFEST),
            None,
            "missing: the temporal label folder cannot be verified without it; restore the folder, "
            f"or {PREPARE_AGAIN}",
        )
    elif recorded_labels and not labels.exists():
        problems.error(
            str(labels), None, f"missing: {MANIFEST} records frozen temporal labels {DAMAGED}"
        )
    if problems.has_errors:
        raise ReferenceDataError(problems)


def _check_digests(root: Path, files: dict[str, str], digests: dict) -> None:
    problems = Problems()
    for name in sorted(digests):
        try:
            found = digests[name].result()
        except OSError:
            problems.error(str(root / name), None, f"cannot be read {DAMAGED}")
            continue
        if found != files[name]:
            problems.error(str(root / name), None, f"does not match the sha256 recorded in {MANIFEST} {DAMAGED}")
    if problems.has_errors:
        raise ReferenceDataError(problems)


def _read_topics(path: Path) -> list[Topic]:
    """topics.tsv as ``Reference.write`` wrote it. Messages name the line, never its content."""
    topics = []
    line = 1
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t")
            header = next(reader, None)
            if header is None or tuple(header) != TOPIC_COLUMNS:
                raise ReferenceDataError(f"does not start with the header reteco writes {DAMAGED}", str(path), 1)
            for row in reader:
                line = reader.line_num
                if len(row) != len(TOPIC_COLUMNS) or not row[0]:
                    raise ReferenceDataError(f"expected {len(TOPIC_COLUMNS)} tab-separated columns {DAMAGED}", str(path), line)
                key, domain, topic_id, unit, conversation, depth = row
                if depth and not (depth.isascii() and depth.isdigit()):
                    raise ReferenceDataError(f'"depth" must be a whole number or empty {DAMAGED}', str(path), line)
                topics.append(Topic(key, domain, topic_id, unit, conversation, int(depth) if depth else None))
    except UnicodeDecodeError:
        raise ReferenceDataError(f"not UTF-8 {DAMAGED}", str(path)) from None
    except csv.Error:
        raise ReferenceDataError(f"not a tab-separated file reteco wrote {DAMAGED}", str(path), line) from None
    return topics


def _read_qrels_file(path: Path) -> tuple[list[Judgment], pa.Table | None]:
    """The tab-separated qrels that ``Reference.write`` wrote, as Judgments and as the Arrow
    columns that scoring works on."""
    if path.stat().st_size == 0:
        return [], None
    try:
        table = pa_csv.read_csv(
            str(path),
            read_options=pa_csv.ReadOptions(column_names=["key", "iteration", "doc_id", "relevance"]),
            parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pa_csv.ConvertOptions(
                column_types={"key": pa.string(), "iteration": pa.string(), "doc_id": pa.string(), "relevance": pa.int64()},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowException, OSError):
        # Arrow's message quotes the offending line, a judgment: never shown.
        raise ReferenceDataError(f"not a qrels file reteco wrote {DAMAGED}", str(path)) from None
    table = table.select(["key", "doc_id", "relevance"])
    if table.column("relevance").null_count:
        raise ReferenceDataError(f"a judgment has no relevance level {DAMAGED}", str(path))
    judgments = list(
        map(Judgment, table.column("key").to_pylist(), table.column("doc_id").to_pylist(), table.column("relevance").to_pylist())
    )
    return judgments, table


def _read_stance(path: Path) -> dict[tuple[str, str], str]:
    stance = {}
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            for number, line in enumerate(handle, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3:
                    raise ReferenceDataError(f"expected 3 tab-separated columns {DAMAGED}", str(path), number)
                stance[(parts[0], parts[1])] = parts[2]
    except UnicodeDecodeError:
        raise ReferenceDataError(f"not UTF-8 {DAMAGED}", str(path)) from None
    return stance
