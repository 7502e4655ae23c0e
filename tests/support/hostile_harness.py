"""The machinery of the hostile-input suite: reference data with secret markers, a workspace
to build one case's input in, two ways to run a command (a child process, measured; or in
this process), and the checks every case must pass.

A case is one row of a family's table (``Case``): how to build its input, what must come
out (``Expect``), and the bounds it must stay under. ``run_case`` builds, runs and checks it,
and reports every failed check of the row in one message, starting with the exit code seen.

The reference data is the built-in synthetic release with markers written into everything a
participant must never see: every judged document id carries ``GOLDSECRET``, every reference
answer starts with ``ANSWERSECRET``, every passage text with ``PASSAGESECRET``. Whatever the
scorer prints or writes (log, details.json, detailed_results.html) is searched for them.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
import warnings
import zipfile
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

import pytest

from reteco.formats.reference import Reference, Topic
from support.paths import REPO_ROOT

SCORING_PROGRAM = REPO_ROOT / "scoring_program" / "score.py"

GOLD_MARK = "GOLDSECRET"
ANSWER_MARK = "ANSWERSECRET"
PASSAGE_MARK = "PASSAGESECRET"
MARKS = (GOLD_MARK, ANSWER_MARK, PASSAGE_MARK)

# Fields of the release whose text is reference data (answers) or passage text.
_ANSWER_FIELDS = frozenset({"answer", "original_answer", "gold_answers"})
_PASSAGE_FIELDS = frozenset({"content"})

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

#: Bounds every case stays under unless its row says otherwise.
DEFAULT_SECONDS = 30.0  # generous for a busy 2-core CI machine: the point is "never hangs"
DEFAULT_RSS = 512 * MiB  # the interpreter, numpy and pyarrow take ~150 MiB of it
DEFAULT_LOG = 64 * KiB  # whatever the input's size

# What the entry points print when an exception escaped: both are failures of a case.
_TRACEBACK = "Traceback (most recent call last)"
_INTERNAL = "internal error"
EXIT_INPUT, EXIT_USAGE, EXIT_INTERNAL = 1, 2, 3
# Control characters must never reach a terminal raw (an ESC starts a terminal sequence):
# C0 except tab and newline (a carriage return too: progress bars are not printed here), DEL,
# and the C1 range, which terminals also interpret.
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# ---------------------------------------------------------------------------------------------
# The reference data: synthetic release, marked, prepared once per session


def mark_release(release: Path) -> None:
    """Write the secret markers into the release at ``release``, consistently in every file.

    Every document id that appears in any qrels file or gold list gets ``GOLDSECRET`` after its
    last ``/`` (in the corpus, the qrels, the gold lists, the guidance and the duplicate map
    alike, so the release stays coherent); answers and passage texts get their marker in front.
    """
    judged: set[str] = set()
    for qrels in release.rglob("qrels*.txt"):
        for line in qrels.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 4:
                judged.add(parts[2])
    for path in release.rglob("*.json*"):
        for record in _json_records(path):
            _collect_gold(record, judged)

    def marked(value, key: str | None = None):
        if isinstance(value, dict):
            return {marked_id(k, judged): marked(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [marked(v, key) for v in value]
        if isinstance(value, str):
            if key in _ANSWER_FIELDS:
                return f"{ANSWER_MARK} {value}"
            if key in _PASSAGE_FIELDS:
                return f"{PASSAGE_MARK} {value}"
            return marked_id(value, judged)
        return value

    for path in sorted(release.rglob("*")):
        if not path.is_file():
            continue
        if path.name.endswith(".jsonl"):
            lines = path.read_text(encoding="utf-8").splitlines()
            path.write_text("".join(json.dumps(marked(json.loads(l))) + "\n" for l in lines if l.strip()), encoding="utf-8")
        elif path.name.endswith(".json"):
            path.write_text(json.dumps(marked(json.loads(path.read_text(encoding="utf-8"))), indent=1), encoding="utf-8")
        elif path.name.startswith("qrels") and path.name.endswith(".txt"):
            rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
            path.write_text(
                "".join("\t".join(r[:2] + [marked_id(r[2], judged)] + r[3:]) + "\n" for r in rows), encoding="utf-8"
            )


def marked_id(doc_id: str, judged: set[str]) -> str:
    if doc_id not in judged:
        return doc_id
    head, slash, tail = doc_id.rpartition("/")
    return f"{head}{slash}{GOLD_MARK}{tail}"


def _json_records(path: Path):
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


def _collect_gold(value, judged: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("gold_ids", "gold_doc_ids") and isinstance(item, list):
                judged.update(x for x in item if isinstance(x, str))
            else:
                _collect_gold(item, judged)
    elif isinstance(value, list):
        for item in value:
            _collect_gold(item, judged)


@dataclass
class Subtrack:
    """One prepared sub-track and the facts cases are built from (all public, except ``golds``)."""

    name: str
    root: Path
    reference: Reference
    topic: Topic  # a topic with 1 to 5 relevant documents and a topic id no other domain has
    golds: list[str]  # its relevant documents, in qrels order
    public: list[str]  # corpus ids of its domain that are judged for no topic
    ambiguous: str | None  # a bare topic id that exists in several domains, if any
    units: int

    def valid_run(self) -> str:
        """A run that ranks public documents only (no gold id in the participant's input)."""
        return "".join(f"{t.key} Q0 {self.public[i % len(self.public)]} 1 1.0 team\n" for i, t in enumerate(self.reference.topics))

    def valid_answers(self) -> str:
        """Answers to the first three turns (2b, 2c)."""
        turns = self.reference.topics[:3]
        return "".join(json.dumps({"turn_id": t.key, "answer": f"A short answer number {i}."}) + "\n" for i, t in enumerate(turns))


def describe_subtrack(name: str, root: Path, release: Path) -> Subtrack:
    """The facts of the prepared sub-track at ``root`` that cases are built from."""
    reference = Reference.read(root)
    relevant: dict[str, list[str]] = {}
    for j in reference.judgments:
        if j.relevance > 0:
            relevant.setdefault(j.key, []).append(j.doc_id)
    domains_of: dict[str, set[str]] = {}
    for t in reference.topics:
        domains_of.setdefault(t.topic_id, set()).add(t.domain)
    topic = next(t for t in reference.topics if 1 <= len(relevant.get(t.key, ())) <= 5 and len(domains_of[t.topic_id]) == 1)
    track = "track1_tempo" if name in ("1a", "1b") else "track2_recor"
    public = []
    for line in (release / track / topic.domain / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        doc_id = record.get("id", record.get("doc_id"))
        if GOLD_MARK not in doc_id:
            public.append(doc_id)
    ambiguous = next((tid for tid, ds in domains_of.items() if len(ds) > 1), None)
    units = len({t.unit for t in reference.topics})
    return Subtrack(name, root, reference, topic, relevant[topic.key], public[:50], ambiguous, units)


# ---------------------------------------------------------------------------------------------
# One case's workspace


@dataclass
class Invocation:
    """A command to run: ``reteco ARGV`` or the Codabench program ``score.py INPUT OUTPUT``."""

    argv: list[str]
    program: str  # "reteco" or "codabench"
    out: Path | None  # where scores.json would be written
    in_process: bool = True


class Workspace:
    """The folder one case builds its input in; remembers every byte of participant input it
    wrote (before compression), so the leak check knows what the participant themself sent."""

    def __init__(self, root: Path, subtracks: dict[str, Subtrack], release: Path):
        self.root = root
        self.subtracks = subtracks
        self.release = release
        self.out = root / "out"
        self.plain = bytearray()

    def sub(self, name: str) -> Subtrack:
        return self.subtracks[name]

    def _bytes(self, data: bytes | str) -> bytes:
        data = data.encode("utf-8") if isinstance(data, str) else data
        self.plain += data + b"\n"
        return data

    def file(self, name: str, data: bytes | str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._bytes(data))
        return path

    def gzip_file(self, name: str, data: bytes | str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(self._bytes(data), compresslevel=1, mtime=0))
        return path

    def zip_file(self, name: str, members: list[tuple[str, bytes | str]], compression: int = zipfile.ZIP_DEFLATED) -> Path:
        """A zip with ``members`` written under the names given (unsafe names stay unsafe)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", compression) as archive, warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # a duplicate is a case
            for member, data in members:
                archive.writestr(zipfile.ZipInfo(member, date_time=(2026, 1, 1, 0, 0, 0)), self._bytes(data), compress_type=compression)
        return path

    def folder(self, name: str, files: dict[str, bytes | str]) -> Path:
        root = self.root / name
        root.mkdir(parents=True, exist_ok=True)
        for rel, data in files.items():
            self.file(f"{name}/{rel}", data)
        return root

    def reference_copy(self, sub: str, name: str = "ref") -> Path:
        """A private copy of a prepared sub-track's reference folder, to damage."""
        target = self.root / name
        shutil.copytree(self.subtracks[sub].root, target)
        return target

    # Commands ---------------------------------------------------------------------------------

    def score(self, res: Path, sub: str = "1a", *extra: str, ref: Path | None = None, in_process: bool = True) -> Invocation:
        ref = self.subtracks[sub].root if ref is None else ref
        return Invocation(["score", "--ref", str(ref), "--res", str(res), "--out", str(self.out), *extra], "reteco", self.out, in_process)

    def validate(self, res: Path, sub: str = "1a") -> Invocation:
        return Invocation(["validate", "--ref", str(self.subtracks[sub].root), str(res)], "reteco", None)

    def reteco(self, *argv: str, out: Path | None = None, in_process: bool = False) -> Invocation:
        return Invocation([str(a) for a in argv], "reteco", out, in_process)

    def codabench_input(self, sub: str = "1a") -> tuple[Path, Path]:
        """INPUT/ref (a copy of the sub-track's reference, with the phase record the bundle adds,
        per-topic figures allowed so that details.json holds the most a leak could hide in) and
        an empty INPUT/res, as the compute worker mounts them."""
        ref = self.reference_copy(sub, "input/ref")
        (ref / "phase.json").write_text(json.dumps({"phase": "dev", "name": "Development", "split": "dev", "per_topic": True}))
        res = self.root / "input" / "res"
        res.mkdir(parents=True)
        return ref, res

    def codabench(self, *argv: str) -> Invocation:
        """``score.py INPUT OUTPUT`` in a child process, as the worker runs it."""
        output = self.root / "output"
        args = [str(a) for a in argv] if argv else [str(self.root / "input"), str(output)]
        return Invocation(args, "codabench", output, in_process=False)


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Outcome:
    code: int | None
    log: str  # stdout and stderr
    seconds: float
    rss: int | None  # peak resident set size of the child, in bytes (None in process)
    timed_out: bool = False
    escaped: str = ""  # an exception that came out of the entry point in process
    log_bytes: int = -1  # the log's whole size (``log`` may be cut); -1: ``len(log)`` in UTF-8

    def __post_init__(self):
        if self.log_bytes < 0:
            self.log_bytes = len(self.log.encode("utf-8"))


def run(invocation: Invocation, timeout: float) -> Outcome:
    if invocation.in_process:
        return _run_in_process(invocation)
    return _run_child(invocation, timeout)


# The `reteco` command is reached through its console-script entry point (pyproject.toml), in
# a child as in process: the suite tests the command participants run, wherever its module lives.
_RETECO_IN_A_CHILD = (
    "import sys\n"
    "from importlib.metadata import entry_points\n"
    "(command,) = entry_points(group='console_scripts', name='reteco')\n"
    "sys.exit(command.load()())\n"
)


def reteco_main() -> Callable[[list[str]], int]:
    """The function behind the `reteco` command."""
    (command,) = entry_points(group="console_scripts", name="reteco")
    return command.load()


def _child_command(invocation: Invocation) -> list[str]:
    if invocation.program == "codabench":
        return [sys.executable, str(SCORING_PROGRAM), *invocation.argv]
    return [sys.executable, "-c", _RETECO_IN_A_CHILD, *invocation.argv]


# Started as the child, this forks the command and reports the command's own peak RSS. Measured
# on the child directly, the peak would include the pytest process it was spawned from: Linux
# keeps the high-water mark of the spawning memory image across exec.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def _run_child(invocation: Invocation, timeout: float) -> Outcome:
    """A child process with stdout and stderr in one file (so a flood cannot block it), its
    peak RSS, and a hard timeout that kills its whole process group."""
    env = {k: v for k, v in os.environ.items() if k not in ("RETECO_DEBUG", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile-{os.getpid()}-{time.monotonic_ns()}"
    log_path, report_path = scratch.with_suffix(".log"), scratch.with_suffix(".rss")
    started = time.monotonic()
    with open(log_path, "w+b") as log:
        command = [sys.executable, "-S", "-c", _LAUNCHER, str(report_path), *_child_command(invocation)]
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=REPO_ROOT, start_new_session=True)
        try:
            child.wait(timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            timed_out = True
        seconds = time.monotonic() - started
        size = os.fstat(log.fileno()).st_size
        log.seek(0)
        text = log.read(4 * MiB).decode("utf-8", errors="replace")  # more than any bound: cut
    log_path.unlink()
    code, rss = None, None
    if report_path.exists():
        code_text, rss_text = report_path.read_text().split()
        code, rss = int(code_text), int(rss_text) * KiB
        report_path.unlink()
    return Outcome(None if timed_out else code, text, seconds, rss, timed_out, log_bytes=size)


def _run_in_process(invocation: Invocation) -> Outcome:
    """The `reteco` command called in this process, its output captured: the same code path as
    the child, without an interpreter start (for small inputs, where a process adds nothing).
    The Codabench program always runs as the worker runs it, in a child."""
    assert invocation.program == "reteco", "the scoring program runs in a child process"
    entry = reteco_main()
    captured = io.StringIO()
    escaped = ""
    previous = os.environ.pop("RETECO_DEBUG", None)
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            try:
                code = entry(list(invocation.argv))
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # noqa: BLE001 - recorded as the failure it is
                escaped = traceback.format_exc()
                code = None
    finally:
        if previous is not None:
            os.environ["RETECO_DEBUG"] = previous
    return Outcome(code, captured.getvalue() + escaped, time.monotonic() - started, None, escaped=escaped)


# ---------------------------------------------------------------------------------------------
# What must come out


@dataclass(frozen=True)
class Where:
    """A location an error message must start with: ``FILE:LINE: error:``.

    ``file`` is the name as the participant knows it (``run.txt``, ``sub.zip:run.txt``); a
    folder path before it is allowed. ``pattern`` instead: a regular expression for the
    location. ``line`` None: the message may or may not give a line.
    """

    file: str = ""
    line: int | None = None
    pattern: str = ""

    def regex(self) -> re.Pattern:
        where = self.pattern or r"(?:[^\n]*/)?" + re.escape(self.file)
        line = rf":{self.line}" if self.line is not None else r"(?::\d+)?"
        return re.compile(rf"^{where}{line}: error: ", re.MULTILINE)

    def __str__(self) -> str:
        return (self.pattern or self.file) + ("" if self.line is None else f":{self.line}")


@dataclass(frozen=True)
class Expect:
    """What a case must produce: its exit code, the error locations (each must be named) and
    a text the log must hold; for an accepted submission, exact scores."""

    code: int
    where: tuple[Where, ...] = ()
    says: str = ""  # a regular expression the log must match (case-insensitive)
    scores: Callable[[Workspace], dict[str, float]] | None = None  # accepted: the hand-computed scores
    # At most this many lines of the log say "error:" (None: any number): a mistake made on
    # every line of a file (a wrong key, a wide encoding) must read once, not once per line.
    error_lines: int | None = None

    @classmethod
    def refused(
        cls,
        file: str = "",
        line: int | None = None,
        says: str = "",
        *,
        pattern: str = "",
        also: tuple[Where, ...] = (),
        error_lines: int | None = None,
    ) -> "Expect":
        return cls(EXIT_INPUT, (Where(file, line, pattern), *also), says, error_lines=error_lines)

    @classmethod
    def usage(cls, says: str) -> "Expect":
        return cls(EXIT_USAGE, (), says)

    @classmethod
    def accepted(cls, scores: Callable[[Workspace], dict[str, float]] | None = None, says: str = "") -> "Expect":
        return cls(0, (), says, scores)


@dataclass(frozen=True)
class Case:
    """One hostile input: ``build`` writes it into the workspace and says what to run."""

    id: str
    build: Callable[[Workspace], Invocation]
    expect: Expect
    seconds: float = DEFAULT_SECONDS
    rss: int = DEFAULT_RSS
    log: int = DEFAULT_LOG
    participant_log: bool = True  # False: the log goes to the organizers only (prepare)

    def param(self):
        return pytest.param(self, id=self.id)


def run_case(case: Case, workspace: Workspace) -> None:
    invocation = case.build(workspace)
    outcome = run(invocation, case.seconds)
    failures = check(case, invocation, outcome, workspace)
    if os.environ.get("HOSTILE_SHOW_LOG"):  # to read the messages themselves: pytest -s
        rss = "" if outcome.rss is None else f", peak RSS {outcome.rss / MiB:.0f} MiB"
        print(f"\n[{case.id}] exit {outcome.code}, {outcome.seconds:.2f} s{rss}, log {outcome.log_bytes:,} bytes\n{outcome.log[:2000]}")
    if failures:
        seen = "timed out" if outcome.timed_out else f"exit {outcome.code}"
        report = f"[{case.id}] {seen}: " + "; ".join(failures)
        pytest.fail(report + "\n--- log (first 3000 characters) ---\n" + outcome.log[:3000], pytrace=False)


_ERROR_LINE = re.compile(r"^[^\n]*: error: ", re.MULTILINE)


def check(case: Case, invocation: Invocation, outcome: Outcome, workspace: Workspace) -> list[str]:
    """Every rule a case must keep; returns the broken ones, in words."""
    expect = case.expect
    failures: list[str] = []
    log = outcome.log
    if outcome.timed_out:
        failures.append(f"did not finish within {case.seconds:.0f} s")
    elif outcome.code == EXIT_INTERNAL or (_INTERNAL in log and outcome.code != 0) or outcome.escaped:
        failures.append("internal error instead of a refusal" if expect.code else "internal error")
    if not outcome.timed_out and outcome.code != expect.code:
        failures.append(f"exit code {outcome.code}, expected {expect.code}")
    if _TRACEBACK in log:
        failures.append("a Python traceback in the output")
    if outcome.log_bytes > case.log:
        failures.append(f"log of {outcome.log_bytes:,} bytes, over the bound of {case.log:,}")
    raw = _RAW_CONTROL.search(log)
    if raw:
        failures.append(f"a raw control character {raw.group()!r} in the log")
    if outcome.seconds > case.seconds and not outcome.timed_out:
        failures.append(f"took {outcome.seconds:.1f} s, over the bound of {case.seconds:.0f} s")
    if outcome.rss is not None and outcome.rss > case.rss:
        failures.append(f"peak RSS {outcome.rss / MiB:.0f} MiB, over the bound of {case.rss / MiB:.0f} MiB")
    for where in expect.where:
        if not where.regex().search(log):
            failures.append(f"no message located at '{where}: error:'")
    if expect.says and not re.search(expect.says, log, re.IGNORECASE):
        failures.append(f"the log does not say /{expect.says}/")
    if expect.error_lines is not None:
        said = len(_ERROR_LINE.findall(log))
        if said > expect.error_lines:
            failures.append(f"{said} error lines in the log, over the bound of {expect.error_lines}")
    outputs = _outputs(invocation.out)
    if case.participant_log:
        failures += _leaks({"log": log, **outputs}, workspace)
    scores_path = invocation.out / "scores.json" if invocation.out else None
    if expect.code != 0:
        if scores_path is not None and scores_path.exists():
            failures.append("scores.json written although the submission was refused")
    elif not outcome.timed_out and outcome.code == 0:
        failures += _check_scores(scores_path, expect, workspace)
    return failures


def _outputs(out: Path | None) -> dict[str, str]:
    found = {}
    if out is not None and out.is_dir():
        for name in ("scores.json", "details.json", "detailed_results.html"):
            if (out / name).is_file():
                found[name] = (out / name).read_text(encoding="utf-8", errors="replace")
    return found


def _leaks(texts: dict[str, str], workspace: Workspace) -> list[str]:
    """Reference data in anything shown to the participant. A gold id the participant wrote in
    their own run may come back (e.g. quoted in a warning); any other one is a leak."""
    plain = workspace.plain.decode("utf-8", errors="replace")
    failures = []
    for where, text in texts.items():
        for mark in (ANSWER_MARK, PASSAGE_MARK):
            if mark in text:
                failures.append(f"reference data ({mark}...) in {where}")
        if GOLD_MARK in text:
            if GOLD_MARK not in plain:
                failures.append(f"a gold document id ({GOLD_MARK}...) in {where}")
            else:
                own = set(re.findall(rf"\S*{GOLD_MARK}[^\s'\"]*", plain))
                other = [m for m in re.findall(rf"[^\s'\"]*{GOLD_MARK}[^\s'\"]*", text) if not any(m in o or o in m for o in own)]
                if other:
                    failures.append(f"a gold document id the run did not hold in {where}")
    return failures


def _check_scores(path: Path | None, expect: Expect, workspace: Workspace) -> list[str]:
    if path is None:
        return []
    if not path.is_file():
        return ["accepted, but no scores.json written"]
    scores = json.loads(path.read_text(encoding="utf-8"))
    failures = [
        f"score {k} = {v!r} is not a finite number"
        for k, v in scores.items()
        if not (isinstance(v, (int, float)) and math.isfinite(v))
    ]
    if expect.scores is not None:
        for key, value in expect.scores(workspace).items():
            if key not in scores:
                failures.append(f"no {key} in scores.json")
            elif not math.isclose(scores[key], value, rel_tol=0, abs_tol=1e-12):
                failures.append(f"{key} = {scores[key]!r}, expected {value!r}")
    return failures


# ---------------------------------------------------------------------------------------------
# Runs, and their figures computed by hand


def line(topic: str, doc: str, rank="1", score="1.0", q0="Q0", tag="team", sep: str = " ") -> bytes:
    return sep.join([topic, q0, doc, str(rank), str(score), tag]).encode("utf-8")


def good_lines(ws: Workspace, sep: str = " ") -> list[bytes]:
    """One public document at rank 1, then the topic's k relevant documents at ranks 2..k+1."""
    s = ws.sub("1a")
    docs = [s.public[0], *s.golds]
    return [line(s.topic.topic_id, d, r, 10 - r, sep=sep) for r, d in enumerate(docs, 1)]


def good_run(ws: Workspace) -> bytes:
    return b"\n".join(good_lines(ws)) + b"\n"


def good_scores(ws: Workspace) -> dict[str, float]:
    """The figures of ``good_lines`` by hand: nDCG@10 over relevant ranks 2..k+1, recall 1,
    reciprocal rank 1/2, P@10 k/10, each divided by the number of units (a topic the run does
    not rank scores 0 and counts)."""
    s = ws.sub("1a")
    k, n = len(s.golds), s.units
    return {
        "ndcg_10": ndcg_at_10(list(range(2, k + 2)), k) / n,
        "recall_10": 1 / n,
        "mrr": 0.5 / n,
        "p_10": k / 10 / n,
    }


def ndcg_at_10(relevant_ranks: list[int], relevant: int) -> float:
    """Binary nDCG@10 (Järvelin & Kekäläinen 2002): sum over relevant ranks r <= 10 of
    1/log2(r+1), over the same sum for ranks 1..min(relevant, 10)."""
    dcg = sum(1 / math.log2(r + 1) for r in relevant_ranks if r <= 10)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(relevant, 10) + 1))
    return dcg / ideal
