"""The organizers' ranked tables: many submissions of a sub-track scored, ranked and compared.

Why one module: one command's pipeline, the four steps below, each short: finding
the references, naming the submissions, scoring them in worker processes and ranking them. The
steps pass one another the same records (``Entry``, ``score_one``'s outcome), and ``reteco
leaderboard`` and ``judge-submissions`` call them step by step.

``reteco leaderboard`` (``reteco.workbench.commands.leaderboard``) calls, per sub-track:

1. ``find_subtracks``: the reference folders (REF is one sub-track's folder, or a folder of them);
2. ``discover_submissions``: the submissions of the folder, with team and run names;
3. ``score_entries``: every submission through ``score_submission`` (the one code path to a
   score: the figures are those ``reteco score`` writes), in parallel worker processes;
4. ``build_leaderboard``: the ranking, a bootstrap interval per system and a paired
   randomization test for every pair (``reteco.metrics.significance``), as the plain dict that
   ``leaderboard.json`` holds and the table and plot writers (``reteco.outputs``) render.

Team and run names. A manifest CSV (``--manifest``) with the header ``file,team,run`` names the
submissions it lists (``file`` relative to the submissions folder, e.g. ``teamA-run1.zip``, or
``2a/teamA-run1.zip`` when REF holds several sub-tracks); every other submission is named from
its file name, less ``.zip``, ``.gz`` and one of ``.txt .run .trec .tsv .jsonl``:
``<team>__<run>`` (split at the first double underscore), else ``<team>-<run>`` (split at the
first hyphen), else ``<team>`` alone (the run is ``""``). A split that would leave the team or
the run empty is not made. A team whose name holds a hyphen needs the manifest (or ``__``).

Ranking. Systems are ordered by the ranking figure, best first: the sub-track's official figure
(nDCG@10 for 1a, 1b, 2a, 2c); 2b has none and is ranked by ``judge_mean`` (the sub-track
table's ``ranked`` key); without the judge's figures its submissions are unranked and the tables
say so. Ties share a rank, standard competition ranking
("1224"): a system whose figure is within ``TIE_TOLERANCE`` (1e-12, far below any difference
that matters, above the rounding of a mean) of the one above it takes that system's rank, and
the next rank skips. Within a tie, and among unranked systems, the order is by team, then run.

Statistics. The unit figures are the per-unit values of the ranking figure that ``reteco score``
writes in details.json (``per_unit``: per query for 1a, per query after averaging its steps for
1b, per target turn for 2a and 2c), aligned across systems (the same reference units in the
same order; a unit a system did not answer is already 0 there, per the rules). For 2b's
``judge_mean`` a turn's figure is the mean of its five normalized judge dimensions (0 for an
unanswered turn); a system with an invalid or failed judgment has no such figure for that turn,
its per-turn figures no longer average to its judge_mean, and it gets no interval and no test
(said with the reason). Over those (``reteco.metrics.significance.compare_systems``): a 95%
percentile bootstrap interval of each system's figure and of its rank, every pair of systems
tested by the randomised Tukey HSD (default; or a paired randomization test with Holm's or
Benjamini-Hochberg's correction over all pairs), significance groups as letters, resamples and
seed stated in the method block, and a warning in ``warnings`` when no pair can be significant.

The paper's main table: ``best_per_team`` keeps each team's best run; the command builds a
second leaderboard of those (its own statistics: the family is the teams) beside the full one.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import multiprocessing
import os
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from statistics import NormalDist

import numpy as np

from reteco import __version__
from reteco.formats.reference import MANIFEST, Reference
from reteco.formats.topic_ids import DEPTH_GROUPS
from reteco.llm.cache import JudgeCacheError
from reteco.metrics.significance import (
    DEFAULT_ALPHA,
    DEFAULT_CONFIDENCE,
    DEFAULT_PROCEDURE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    compare_systems,
)
from reteco.metrics.text_overlap import TEXT_METRICS
from reteco.problems import InputError, Problems, ReferenceDataError, quoted
from reteco.scoring.aggregate import Units
from reteco.subtracks import (
    DEFAULT_BENCHMARK,
    DIMENSIONS,
    JUDGE,
    JUDGE_MEAN,
    KEYS,
    SUBTRACK_IDS,
    SUBTRACKS,
    benchmark,
    judged_dimensions,
)
from reteco.workbench.leaderboard.round_report import unjudged_figures

TIE_TOLERANCE = 1e-12
TIES = (
    "standard competition ranking ('1224'): a system whose figure is within 1e-12 of the one above "
    "it shares that system's rank and the next rank skips; within a tie, order by team, then run"
)
MANIFEST_COLUMNS = ("file", "team", "run")
# Extensions a submission's file name may end with, stripped before the name rule applies.
_CONTAINER_SUFFIXES = (".zip", ".gz")
_FILE_SUFFIXES = (".txt", ".run", ".trec", ".tsv", ".jsonl")
# A per-unit figure must average to the score it stands for: within this (rounding only).
_UNIT_MEAN_TOLERANCE = 1e-9


# --------------------------------------------------------------------------- reference folders


def find_subtracks(ref: Path) -> list[tuple[str, Path]]:
    """(sub-track id, reference folder) for REF: REF itself when it is one sub-track's reference
    folder, else every sub-track folder directly inside it, in the order 1a, 1b, 2a, 2b, 2c."""
    ref = Path(ref)
    if (ref / MANIFEST).is_file():
        return [(_subtrack_of(ref), ref)]
    if not ref.is_dir():
        raise InputError("no such reference folder", str(ref))
    found = {}
    for child in sorted(ref.iterdir()):
        if child.is_dir() and (child / MANIFEST).is_file():
            found[_subtrack_of(child)] = child
    if not found:
        raise InputError(f"neither a reference folder ({MANIFEST}) nor a folder of them (REF/2a/{MANIFEST}, ...)", str(ref))
    return [(s, found[s]) for s in SUBTRACK_IDS if s in found]


def _subtrack_of(folder: Path) -> str:
    """The sub-track of a reference folder, from its manifest alone (the reference itself, doc
    ids and all, is read once, before scoring)."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the reference manifest: {type(exc).__name__}", str(path)) from None
    subtrack = manifest.get("subtrack") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or subtrack not in benchmark(manifest.get("benchmark", DEFAULT_BENCHMARK)).subtracks:
        raise InputError(
            f"a leaderboard is built for the RETECO sub-tracks ({', '.join(SUBTRACK_IDS)}), not for {quoted(str(subtrack))}",
            str(path),
        )
    return subtrack


# ------------------------------------------------------------------------------ submissions


@dataclass(frozen=True)
class Entry:
    """One submission: its path, its name relative to the submissions folder, team and run."""

    path: Path
    file: str
    team: str
    run: str

    @property
    def name(self) -> str:
        """``team/run``, or ``team`` for a team's only, unnamed run."""
        return f"{self.team}/{self.run}" if self.run else self.team


def names_from_file(file_name: str) -> tuple[str, str]:
    """(team, run) from a submission's file name, by the rule of the module docstring.

    >>> names_from_file("teamA-run1.zip"), names_from_file("uni-x__bm25.zip"), names_from_file("solo")
    (('teamA', 'run1'), ('uni-x', 'bm25'), ('solo', ''))
    """
    stem = file_name
    for suffixes in (_CONTAINER_SUFFIXES[:1], _CONTAINER_SUFFIXES[1:], _FILE_SUFFIXES):
        for suffix in suffixes:
            if stem.lower().endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)]
                break
    for separator in ("__", "-"):
        team, found, run = stem.partition(separator)
        if found and team and run:
            return team, run
    return stem, ""


def read_manifest(path: Path, base: Path) -> dict[str, tuple[str, str]]:
    """``file -> (team, run)`` from a manifest CSV (header ``file,team,run``); ``file`` is relative
    to ``base``. InputError naming the file and line of every bad row."""
    path = Path(path)
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read the manifest: {exc.strerror}", where) from None
    except UnicodeDecodeError:
        raise InputError("the manifest is not UTF-8 text", where) from None
    problems = Problems()
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or [h.strip().lower() for h in header] != list(MANIFEST_COLUMNS):
        raise InputError(f"the header must be {','.join(MANIFEST_COLUMNS)}", where, 1)
    names: dict[str, tuple[str, str]] = {}
    first_line: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(MANIFEST_COLUMNS):
            problems.error(where, line, f"expected 3 columns (file,team,run), found {len(row)}")
            continue
        file, team, run = (cell.strip() for cell in row)
        key = PurePosixPath(file.replace("\\", "/")).as_posix()
        if not file or not team:
            problems.error(where, line, "file and team must not be empty (run may be)")
        elif PurePosixPath(key).is_absolute() or ".." in PurePosixPath(key).parts:
            problems.error(where, line, f"file {quoted(file)} must be relative to the submissions folder")
        elif key in first_line:
            problems.error(where, line, f"file {quoted(file)} is already named on line {first_line[key]}")
        elif not (Path(base) / key).exists():
            problems.error(where, line, f"no submission {quoted(file)} in {base}")
        else:
            names[key] = (team, run)
            first_line[key] = line
    if problems.has_errors:
        raise InputError(problems)
    return names


def discover_submissions(folder: Path, names: dict[str, tuple[str, str]] | None = None, *,
                         prefix: str = "", skip: tuple[Path, ...] = ()) -> list[Entry]:
    """Every submission directly inside ``folder`` (a zip, a folder or a run/answers file), sorted
    by file name; hidden entries, ``__MACOSX`` and the paths in ``skip`` (the manifest) are not
    submissions. ``names`` (from ``read_manifest``) is keyed by ``prefix + file name``.

    InputError when the folder is missing or holds no submission, or when two submissions get the
    same team and run.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no such submissions folder", str(folder))
    skipped = {p.resolve() for p in skip}
    entries = []
    for child in sorted(folder.iterdir(), key=lambda p: p.name):
        if child.name.startswith(".") or child.name == "__MACOSX" or child.resolve() in skipped:
            continue
        if not (child.is_file() or child.is_dir()):
            continue
        file = prefix + child.name
        team, run = (names or {}).get(file) or names_from_file(child.name)
        entries.append(Entry(child, file, team, run))
    if not entries:
        raise InputError("no submission here (a zip, a folder or a run file each)", str(folder))
    problems = Problems()
    seen: dict[str, Entry] = {}
    for entry in entries:
        other = seen.setdefault(entry.name, entry)
        if other is not entry:
            problems.error(
                entry.file, None,
                f"team {quoted(entry.team)} run {quoted(entry.run)} is also the name of {quoted(other.file)}; "
                "rename one, or name both in the manifest (--manifest, columns file,team,run)",
            )
    if problems.has_errors:
        raise InputError(problems)
    return entries


# ---------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class ScoringOptions:
    """What ``score_submission`` is given besides the reference and the submission."""

    run_judge_now: bool = True
    judge_config: Path | None = None  # None: the packaged judge.yaml (endpoint, key from the environment)
    cache_dir: Path | None = None  # None: the judge's default cache
    relevance_round: Path | None = None  # a relevance round's labels: the unjudged diagnostics (round_report)
    # (field, value) pairs set on the loaded judge config, e.g. judge-submissions' batch passes
    # (use_batch_api, batch_queue_only): how requests are sent, never who judges.
    judge_overrides: tuple[tuple[str, object], ...] = ()
    # Where each scored submission's details.json goes (``<details_dir>/<file name>/details.json``,
    # as ``reteco score --out`` writes it): judge-submissions --details-out, for judge-report.
    details_dir: Path | None = None


def score_one(reference: Reference, entry_path: Path, options: ScoringOptions, judge_config=None) -> dict:
    """Score one submission; return what the leaderboard needs of it, as plain data.

    ``{"ok": True, "scores", "warnings", "unit_keys", "unit_values", "unit_values_absent",
    "per_domain", "per_depth", "judge_reason"}`` (judged sub-tracks also ``"judge_turns"``,
    ``judge_scores_per_turn``'s figures, and ``"judge_signature"``) or ``{"ok": False, "kind": "input" | "internal" |
    "reference", "errors": [lines]}``. An input error's lines are the messages ``reteco score``
    prints; "reference" is the organizers' data failing (``ReferenceDataError``, e.g. the frozen
    temporal labels locked by a labelling run), which ``score_entries`` raises for the whole table.
    """
    from reteco.formats.relevance_round import RelevanceRound
    from reteco.scoring.submission import score_submission

    try:
        if options.relevance_round is not None and options.relevance_round not in _ROUNDS:
            _ROUNDS[options.relevance_round] = RelevanceRound.read(options.relevance_round)  # once per process
        result = score_submission(
            reference, entry_path, judge_config=judge_config, cache_dir=options.cache_dir,
            run_judge_now=options.run_judge_now, progress=False, per_topic=True,
            relevance_round=_ROUNDS.get(options.relevance_round),
        )
        details = result.details_json(per_topic=True)
        if options.details_dir is not None:
            from reteco.outputs.scores import write_details

            write_details(Path(options.details_dir) / Path(entry_path).name, details)
        return {"ok": True, **_extract(reference, result.scores, details, result.problems)}
    except ReferenceDataError as exc:  # the organizers' data, not the team's: never "not scored"
        return {"ok": False, "kind": "reference", "errors": exc.problems.lines(),
                "problems": [(p.file, p.line, p.message) for p in exc.problems.errors()]}
    except InputError as exc:
        return {"ok": False, "kind": "input", "errors": exc.problems.lines()}
    except JudgeCacheError:
        raise  # the organizers' cache (locked, unreadable): it stops the command, no team's row
    except Exception as exc:  # a bug of reteco: the organizer sees it, the table lists it
        print(f"{entry_path}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("RETECO_DEBUG"):
            traceback.print_exc()
        return {"ok": False, "kind": "internal",
                "errors": [f"internal error in reteco {__version__} ({type(exc).__name__}); please report it"]}


_ROUNDS: dict = {}  # a relevance round's labels by path, read once per process (score_one)


def ranking_candidate(subtrack_id: str) -> str:
    """The key a sub-track is ranked by when present: its official figure, 2b's judge_mean."""
    return SUBTRACKS[subtrack_id].official or JUDGE_MEAN


def _extract(reference: Reference, scores: dict, details: dict, problems: Problems) -> dict:
    sub = SUBTRACKS[reference.subtrack]
    key = ranking_candidate(sub.id)
    generation = details.get("generation", {})
    dimensions = judged_dimensions(generation.get("judge"))  # the judge's prompt version's
    out = {
        "scores": {k: float(scores[k]) for k in sub.keys if k in scores},
        "warnings": [str(p) for p in problems.warnings()],
        "per_domain": _breakdown(sub.keys, details.get("per_domain"), generation.get("per_domain")),
        "per_depth": _breakdown(sub.keys, details.get("per_depth"), generation.get("per_depth")),
        "judge_reason": generation.get("judge", {}).get("reason"),
        # What the submission's verdicts cost (calls, tokens, money at the config's prices): reteco.llm.usage.
        "judge_usage": generation.get("judge", {}).get("run", {}).get("usage_of_verdicts"),
        # What this scoring's judge run sent and paid (the server's usage): reteco.workbench.leaderboard.usage.run_usage.
        "judge_run": _judge_run(generation.get("judge", {}).get("run")),
        "unit_values_absent": None,
        "unjudged": unjudged_figures(details),  # holes in the qrels (reteco.workbench.leaderboard.round_report)
    }
    injection = generation.get("judge", {}).get("injection", {})
    if injection.get("asked"):
        out["flagged_answers"] = int(injection["answers_flagged"])
    if key in scores and sub.takes_run:
        rows = details["per_unit"]
        out["unit_keys"] = [row["unit"] for row in rows]
        out["unit_values"] = [float(row[key]) for row in rows]
        # Every per-unit retrieval figure, for the topic-set stability (reteco.workbench.leaderboard.topic_stability).
        # A figure some unit lacks (None: e.g. a temporal figure of a topic without periods) is left out.
        out["unit_metrics"] = {k: [float(row[k]) for row in rows] for k in sub.keys
                               if rows and all(row.get(k) is not None for row in rows)}
    elif key in scores:
        out["unit_keys"], out["unit_values"], out["unit_values_absent"] = judge_mean_per_turn(generation["per_turn"],
                                                                                             dimensions)
    else:
        out["unit_keys"], out["unit_values"] = [], None
    if out["unit_values"] is not None and abs(math.fsum(out["unit_values"]) / len(out["unit_values"]) - scores[key]) > _UNIT_MEAN_TOLERANCE:
        raise RuntimeError(f"the per-unit {key} figures do not average to scores.json's {key}")
    if sub.judged and key != JUDGE_MEAN and JUDGE_MEAN in scores:
        # 2c: the generation side's figure gets its own interval and test (``generation_statistics``).
        keys, values, absent = judge_mean_per_turn(generation["per_turn"], dimensions)
        if values is not None and abs(math.fsum(values) / len(values) - scores[JUDGE_MEAN]) > _UNIT_MEAN_TOLERANCE:
            raise RuntimeError(f"the per-turn {JUDGE_MEAN} figures do not average to scores.json's {JUDGE_MEAN}")
        out["generation_units"] = {"keys": keys, "values": values, "absent": absent}
    if sub.judged and generation.get("per_turn"):
        out["figure_units"] = generation_figure_units(generation["per_turn"], out["scores"], dimensions)
        # For ``--human-ratings`` (reteco.workbench.leaderboard.human_corrected): the judge's per-turn scores.
        out["judge_turns"] = judge_scores_per_turn(generation["per_turn"], dimensions)
        out["judge_signature"] = generation.get("judge", {}).get("signature")
    return out


def _judge_run(run: dict | None) -> dict | None:
    """The requests a submission's judge run sent and their usage as the server reported it."""
    if not run:
        return None
    return {"http_requests": int(run.get("http_requests") or 0), "usage": run.get("usage_this_run")}


def judge_scores_per_turn(per_turn: list[dict], dimensions: tuple[str, ...] = DIMENSIONS) -> dict:
    """The judge's per-turn figures of 2b/2c's ``per_turn`` rows: ``{"keys": turn keys,
    "answered": [bool], <dimension>: [``turn_dimension_figure``: normalized (s - 1) / 4, 0 for an
    unanswered turn, None without a valid verdict], "judge_mean": [the dimensions' mean, None
    unless all are valid]}``, for the run's ``dimensions`` (its prompt version's)."""
    out: dict = {"keys": [row["turn"] for row in per_turn], "answered": [bool(row["answered"]) for row in per_turn]}
    for d in dimensions:
        out[d] = [turn_dimension_figure(row, d) for row in per_turn]
    columns = list(zip(*(out[d] for d in dimensions)))
    out[JUDGE_MEAN] = [None if None in turn else math.fsum(turn) / len(dimensions) for turn in columns]
    return out


def generation_figure_units(per_turn: list[dict], scores: dict[str, float],
                            dimensions: tuple[str, ...] = DIMENSIONS) -> dict[str, dict]:
    """Per-turn figures of each judge dimension and text-overlap metric in ``scores``, as its mean
    averages them, for its bootstrap interval (``figure_intervals``).

    A dimension's turn figure is the normalized score (s - 1) / 4, 0 for an unanswered turn, and no
    figure for an invalid or failed judgment (left out of the mean too); a text metric's is the
    turn's value, no figure where the reference has no answer to compare with. Returns key ->
    ``{"values": [float | None per turn]}``, or ``{"absent": why}`` when the figures do not
    average to the reported mean (a withheld dimension is not in ``scores`` at all)."""
    out: dict[str, dict] = {}
    for key in (*dimensions, *TEXT_METRICS):
        if key not in scores:
            continue
        values: list[float | None] = []
        for row in per_turn:
            if key in dimensions:
                values.append(turn_dimension_figure(row, key))
            else:
                value = row.get(key)
                values.append(None if value is None else float(value))
        kept = [v for v in values if v is not None]
        if not kept or abs(math.fsum(kept) / len(kept) - scores[key]) > _UNIT_MEAN_TOLERANCE:
            out[key] = {"absent": f"its per-turn figures do not average to the reported {key}"}
        else:
            out[key] = {"values": values}
    return out


def figure_intervals(systems: list[dict], outcomes: list[dict], *, resamples: int | None, seed: int,
                     confidence: float) -> None:
    """A bootstrap interval for every judge dimension and text-overlap metric of 2b and 2c, per
    system (``figure_intervals`` in its row: key -> ``{"ci_low", "ci_high", "turns"}`` or
    ``{"absent": why}``), drawn as the ranking figure's is (``bootstrap_ci``: percentile
    bootstrap over turns, the same seed and resamples, the same turns drawn for every system that
    has a figure on the same turns). Turns without a figure (an invalid judgment, a reference
    without an answer) are left out as the mean leaves them out. Intervals only: the pairwise test
    is the ranking figure's and, for 2c, judge_mean's (``generation_statistics``); a test per
    dimension would multiply the comparisons the paper must correct for."""
    resamples = resamples or DEFAULT_RESAMPLES
    seen = list(dict.fromkeys(k for o in outcomes for k in (o.get("figure_units") or {})))

    def rank(k: str) -> tuple[int, int]:  # the dimensions (the table's order; another version's after), then the text metrics
        if k in TEXT_METRICS:
            return 1, TEXT_METRICS.index(k)
        return 0, DIMENSIONS.index(k) if k in DIMENSIONS else len(DIMENSIONS) + seen.index(k)

    keys = sorted(seen, key=rank)
    for key in keys:
        # Systems with figures on the same turns share one bootstrap (comparable intervals).
        groups: dict[tuple[bool, ...], list[int]] = {}
        for i, outcome in enumerate(outcomes):
            units = (outcome.get("figure_units") or {}).get(key)
            if units is None:
                continue
            if "absent" in units:
                systems[i].setdefault("figure_intervals", {})[key] = {"absent": units["absent"]}
                continue
            groups.setdefault(tuple(v is not None for v in units["values"]), []).append(i)
        for kept, members in groups.items():
            matrix = np.array([[v for v in outcomes[i]["figure_units"][key]["values"] if v is not None] for i in members],
                              dtype=np.float64)
            low, high = bootstrap_ci(matrix, confidence=confidence, resamples=resamples, seed=seed)
            for row, i in enumerate(members):
                systems[i].setdefault("figure_intervals", {})[key] = {
                    "ci_low": float(low[row]), "ci_high": float(high[row]), "turns": int(sum(kept))}


def turn_dimension_figure(row: dict, dimension: str) -> float | None:
    """One ``per_turn`` row's figure on one judge dimension, as the dimension's mean counts it:
    the normalized score (s - 1) / 4, 0 for an unanswered turn, None for an invalid or failed
    judgment (left out of the mean)."""
    if not row["answered"]:
        return 0.0
    judgment = (row.get("judgments") or {}).get(dimension)
    if judgment and judgment["status"] == "ok" and judgment["normalized"] is not None:
        return float(judgment["normalized"])
    return None


def judge_mean_per_turn(per_turn: list[dict],
                        dimensions: tuple[str, ...] = DIMENSIONS) -> tuple[list[str], list[float] | None, str | None]:
    """(turn keys, per-turn judge_mean figures or None, why None) from 2b/2c's ``per_turn`` rows.

    A turn's figure is the mean of its normalized ``dimensions`` (the run's prompt version's), (s - 1) / 4 each; an
    unanswered turn scores 0 (as in the dimension averages). A turn with an invalid or failed
    judgment has no figure: then the per-turn figures do not average to judge_mean, and None is
    returned with the count of such turns.
    """
    keys, values, incomplete = [], [], 0
    for row in per_turn:
        keys.append(row["turn"])
        figures = [turn_dimension_figure(row, d) for d in dimensions]
        if None in figures:
            incomplete += 1
            continue
        values.append(math.fsum(figures) / len(dimensions))
    if incomplete:
        return keys, None, (
            f"{incomplete} answered turns have an invalid or failed judgment, so the per-turn judge means "
            "do not average to judge_mean; no interval or test for this system"
        )
    return keys, values, None


def _breakdown(keys: tuple[str, ...], *sources: dict | None) -> dict[str, dict[str, float]]:
    """Group -> key -> finite figure, merging retrieval's and generation's per-group figures
    (counts and figures that are None left out)."""
    out: dict[str, dict[str, float]] = {}
    for source in sources:
        for group, figures in (source or {}).items():
            for k in keys:
                v = figures.get(k)
                if isinstance(v, (int, float)) and math.isfinite(v):
                    out.setdefault(group, {})[k] = float(v)
    return out


_WORKER: dict = {}


def _init_worker(reference_dir: str, options: ScoringOptions) -> None:
    from reteco.arrow_memory import use_scoring_memory_pool

    use_scoring_memory_pool()
    # A spawned process starts without the command's logging setup (reteco.commands.library_logs):
    # without a handler, Python's last-resort handler would print the judge's warnings bare on
    # stderr. Each submission's warnings are kept in its row, in the command's words.
    logging.getLogger().addHandler(logging.NullHandler())
    _WORKER["reference"] = Reference.read(Path(reference_dir))
    _WORKER["options"] = options
    _WORKER["judge_config"] = _judge_config(options)


def _score_in_worker(path: str) -> dict:
    return score_one(_WORKER["reference"], Path(path), _WORKER["options"], _WORKER["judge_config"])


def _judge_config(options: ScoringOptions):
    """The judge configuration to pass on (None: score_submission loads the packaged one)."""
    if options.judge_config is None and not options.judge_overrides:
        return None
    from reteco.judge import load_judge_config

    config = load_judge_config(options.judge_config)
    return replace(config, **dict(options.judge_overrides)) if options.judge_overrides else config


def score_entries(reference_dir: Path, entries: list[Entry], options: ScoringOptions, *, jobs: int,
                  progress: bool, label: str = "") -> list[dict]:
    """``score_one`` for every entry, in the entries' order, over ``jobs`` worker processes.

    Processes, not threads: scoring is CPU-bound Python and numpy. Each worker reads the
    reference once (``spawn``, so no lock held by pyarrow's threads is inherited by a fork).
    With ``jobs`` 1 everything runs in this process. A worker that dies (killed, out of memory)
    fails its submission as an internal error; the others are still scored. Reference data that
    fails while a submission is scored is no submission's fault: ``ReferenceDataError`` (exit 1)
    for the whole table, with the first such message. Nor is a judge cache that cannot be used
    (JudgeCacheError: locked past the wait limit, unreadable): it is raised, and the submissions
    not yet started are not scored.
    """
    from tqdm import tqdm

    results: list[dict | None] = [None] * len(entries)
    bar = tqdm(total=len(entries), disable=not progress, unit="submission", desc=f"{label} scoring".strip())
    try:
        if jobs <= 1 or len(entries) <= 1:
            reference = Reference.read(reference_dir)
            judge_config = _judge_config(options)
            for i, entry in enumerate(entries):
                results[i] = score_one(reference, entry.path, options, judge_config)
                bar.update()
        else:
            with ProcessPoolExecutor(
                max_workers=min(jobs, len(entries)), mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=(str(reference_dir), options),
            ) as pool:
                futures = {pool.submit(_score_in_worker, str(entry.path)): i for i, entry in enumerate(entries)}
                for future in as_completed(futures):
                    i = futures[future]
                    try:
                        results[i] = future.result()
                    except JudgeCacheError:
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise
                    except Exception as exc:  # the worker process died, or could not start
                        print(f"{entries[i].path}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
                        results[i] = {"ok": False, "kind": "internal", "errors": [
                            f"internal error: the scoring process failed ({type(exc).__name__}); please report it"]}
                    bar.update()
    finally:
        bar.close()
    failed = next((r for r in results if r is not None and r.get("kind") == "reference"), None)
    if failed is not None:
        problems = Problems()
        for file, line, message in failed["problems"]:
            problems.error(file, line, message)
        raise ReferenceDataError(problems)
    return results  # type: ignore[return-value]


# ------------------------------------------------------------------------------ the table


def expected_unit_keys(reference: Reference) -> list[str]:
    """The units every system's figures must list, in order: the reference's units (retrieval)
    or its turns (2b)."""
    if SUBTRACKS[reference.subtrack].takes_run:
        return list(Units.of(reference).keys)
    return [t.key for t in reference.topics]


def competition_ranks(values: list[float], tolerance: float = TIE_TOLERANCE) -> list[int]:
    """Ranks of ``values`` sorted best first, ties sharing a rank ("1224"): a value within
    ``tolerance`` of the previous one takes its rank; otherwise the rank is its position + 1.

    >>> competition_ranks([0.9, 0.8, 0.8, 0.7])
    [1, 2, 2, 4]
    """
    ranks: list[int] = []
    for i, value in enumerate(values):
        if i and values[i - 1] - value <= tolerance:
            ranks.append(ranks[-1])
        else:
            ranks.append(i + 1)
    return ranks


def _order_key(entry: Entry) -> tuple:
    return (entry.team.casefold(), entry.run.casefold(), entry.team, entry.run)


def interval_monte_carlo_error(unit_values: np.ndarray, resamples: int, confidence: float) -> np.ndarray:
    """Approximate Monte Carlo standard error of each end of a percentile bootstrap interval,
    per system (row).

    The p-quantile of R draws from a distribution with density f has standard error
    sqrt(p (1 - p) / R) / f(q_p) (asymptotic variance of a sample quantile; e.g. Serfling 1980,
    2.3.3). The bootstrap distribution of a mean is taken as normal with the plug-in standard
    error s / sqrt(n) (s with divisor n), so f(q_p) = phi(z_p) / (s / sqrt(n)), z_p the normal
    p-quantile: SE = sqrt(p (1 - p) / R) * (s / sqrt(n)) / phi(z_p), the same at both ends.
    """
    p = (1.0 - confidence) / 2
    normal = NormalDist()
    n = unit_values.shape[1]
    spread = unit_values.std(axis=1) / math.sqrt(n)
    return math.sqrt(p * (1 - p) / resamples) * spread / normal.pdf(normal.inv_cdf(p))


def build_leaderboard(subtrack_id: str, entries: list[Entry], outcomes: list[dict], *, unit_keys: list[str],
                      resamples: int | None = None, seed: int = DEFAULT_SEED,
                      confidence: float = DEFAULT_CONFIDENCE, reference_info: dict | None = None,
                      procedure: str = DEFAULT_PROCEDURE, alpha: float = DEFAULT_ALPHA) -> dict:
    """The leaderboard of one sub-track, as ``leaderboard.json`` holds it (see the module
    docstring for the ranking and the statistics). ``resamples`` None: as many as the table
    needs (``reteco.metrics.significance.compare_systems``); ``procedure`` the pairwise test
    (tukey-hsd, holm or fdr) and ``alpha`` its level, for the groups and the warnings.

    ``outcomes[i]`` is ``score_one``'s result for ``entries[i]``; ``unit_keys`` the reference's
    units in order (``expected_unit_keys``): every system's unit figures must list exactly these,
    or the figures would be compared on different units (RuntimeError: a bug, not an input).
    """
    sub = SUBTRACKS[subtrack_id]
    candidate = ranking_candidate(subtrack_id)
    scored = [(e, o) for e, o in zip(entries, outcomes) if o["ok"]]
    failed = [(e, o) for e, o in zip(entries, outcomes) if not o["ok"]]
    for entry, outcome in scored:
        if outcome["unit_values"] is not None and outcome["unit_keys"] != unit_keys:
            raise RuntimeError(f"{entry.file}: its unit figures are not on the reference's units in order")

    ranked = sorted(((e, o) for e, o in scored if candidate in o["scores"]),
                    key=lambda pair: (-pair[1]["scores"][candidate], _order_key(pair[0])))
    unranked = sorted(((e, o) for e, o in scored if candidate not in o["scores"]), key=lambda p: _order_key(p[0]))
    ranked_by = candidate if ranked else None

    systems = []
    ranks = competition_ranks([o["scores"][candidate] for _, o in ranked])
    for rank, (entry, outcome) in zip(ranks, ranked):
        systems.append({"rank": rank} | _system_row(sub.keys, entry, outcome))
    unranked_rows = [_system_row(sub.keys, e, o) | {"reason": f"no {candidate}: {_absent_reason(candidate, o)}"}
                     for e, o in unranked]
    failed_rows = [{"team": e.team, "run": e.run, "name": e.name, "file": e.file, "kind": o["kind"],
                    "errors": list(o["errors"])} for e, o in failed]

    tested = [i for i, (_, o) in enumerate(ranked) if o["unit_values"] is not None]
    for i, (_, outcome) in enumerate(ranked):
        if outcome["unit_values"] is None:
            systems[i]["statistics_absent"] = outcome["unit_values_absent"] or "no per-unit figures"
    pairs: list[dict] = []
    if tested:
        matrix = np.array([ranked[i][1]["unit_values"] for i in tested], dtype=np.float64)
        names = [systems[i]["name"] for i in tested]
        comparison = compare_systems(matrix, names, confidence=confidence, resamples=resamples, seed=seed,
                                     procedure=procedure, alpha=alpha)
        for row, i in enumerate(tested):
            systems[i]["ci_low"] = float(comparison.ci_low[row])
            systems[i]["ci_high"] = float(comparison.ci_high[row])
            systems[i]["rank_low"] = int(comparison.rank_low[row])
            systems[i]["rank_high"] = int(comparison.rank_high[row])
            systems[i]["letters"] = comparison.letters[row]
        pairs = [pair.as_dict() for pair in comparison.pairs]
        method = _method(comparison.method, sub, candidate, matrix, confidence)
        warnings = list(comparison.warnings)
    else:
        method = {"absent": "no ranked system has per-unit figures: no interval and no test"}
        warnings = []

    generation = generation_statistics(sub, systems, ranked, resamples=resamples, seed=seed, confidence=confidence,
                                       procedure=procedure, alpha=alpha)
    figure_intervals(systems, [o for _, o in ranked], resamples=resamples, seed=seed, confidence=confidence)
    board = {
        "subtrack": sub.id,
        "title": sub.name,
        "official": sub.official,
        "ranked_by": ranked_by,
        "keys": [{"key": k, "title": KEYS[k].title} for k in sub.keys],
        "units": len(unit_keys),
        "unit": sub.unit,
        "domains": sorted({d for row in systems + unranked_rows for d in row["per_domain"]}),
        "depth_groups": [g for g in DEPTH_GROUPS if any(g in row["per_depth"] for row in systems + unranked_rows)],
        "systems": systems,
        "unranked": unranked_rows,
        "failed": failed_rows,
        "pairs": pairs,
        "method": method,
        "warnings": warnings,
        **({"generation": generation} if generation else {}),
        "scorer": {"name": "reteco", "version": __version__},
        "reference": reference_info or {},
    }
    if ranked_by is None:
        board["unranked_reason"] = _board_unranked_reason(subtrack_id, [o for _, o in scored])
    return board


def generation_statistics(sub, systems: list[dict], ranked: list[tuple[Entry, dict]], *, resamples: int | None,
                          seed: int, confidence: float, procedure: str, alpha: float) -> dict | None:
    """2c's generation side, compared as the official figure is: per ranked system with per-turn
    judge means, a bootstrap interval of its judge_mean, a rank interval and group letters among
    those systems (stored in its row as ``generation_statistics``), and every pair's test, in
    order of judge_mean (best first). None for a sub-track without a ranked run and a judge."""
    if not (sub.judged and sub.takes_run):
        return None
    order = sorted((i for i, (_, o) in enumerate(ranked) if (o.get("generation_units") or {}).get("values") is not None),
                   key=lambda i: (-ranked[i][1]["scores"][JUDGE_MEAN], _order_key(ranked[i][0])))
    for i, (_, outcome) in enumerate(ranked):
        units = outcome.get("generation_units")
        if i not in order:
            systems[i]["generation_statistics"] = {"absent": (units or {}).get("absent") or f"no {JUDGE_MEAN}"}
    if not order:
        return {"figure": JUDGE_MEAN, "pairs": [], "method": {"absent": f"no ranked system has per-turn {JUDGE_MEAN} figures"},
                "warnings": []}
    keys = ranked[order[0]][1]["generation_units"]["keys"]
    if any(ranked[i][1]["generation_units"]["keys"] != keys for i in order):
        raise RuntimeError("the per-turn judge means are not on the same turns in the same order")
    matrix = np.array([ranked[i][1]["generation_units"]["values"] for i in order], dtype=np.float64)
    comparison = compare_systems(matrix, [systems[i]["name"] for i in order], confidence=confidence, resamples=resamples,
                                 seed=seed, procedure=procedure, alpha=alpha)
    ranks = competition_ranks([ranked[i][1]["scores"][JUDGE_MEAN] for i in order])
    for row, i in enumerate(order):
        systems[i]["generation_statistics"] = {
            "ci_low": float(comparison.ci_low[row]), "ci_high": float(comparison.ci_high[row]),
            "rank": ranks[row], "rank_low": int(comparison.rank_low[row]), "rank_high": int(comparison.rank_high[row]),
            "letters": comparison.letters[row]}
    method = dict(comparison.method) | {
        "figure": JUDGE_MEAN, "unit": "turn",
        "unit_figures": "per turn, the mean of the five normalized judge dimensions (details.json generation.per_turn); "
                        "an unanswered turn 0"}
    return {"figure": JUDGE_MEAN, "pairs": [pair.as_dict() for pair in comparison.pairs], "method": method,
            "warnings": list(comparison.warnings)}


def best_per_team(subtrack_id: str, entries: list[Entry], outcomes: list[dict]) -> tuple[list[Entry], list[dict]]:
    """Each team's best run, for the paper's main table: the scored run with the highest ranking
    figure (ties: the first by run name), or, for a team without one, its first scored run (it
    stays unranked, with its reason); runs that could not be scored are left out (the full
    table lists them). Entries keep their order."""
    candidate = ranking_candidate(subtrack_id)
    best: dict[str, int] = {}
    for i, (entry, outcome) in enumerate(zip(entries, outcomes)):
        if not outcome["ok"]:
            continue
        j = best.get(entry.team)
        if j is None or _better(entry, outcome, entries[j], outcomes[j], candidate):
            best[entry.team] = i
    kept = sorted(best.values())
    return [entries[i] for i in kept], [outcomes[i] for i in kept]


def _better(entry: Entry, outcome: dict, other: Entry, other_outcome: dict, key: str) -> bool:
    mine, theirs = outcome["scores"].get(key), other_outcome["scores"].get(key)
    if (mine is None) != (theirs is None):
        return theirs is None
    if mine is not None and abs(mine - theirs) > TIE_TOLERANCE:
        return mine > theirs
    return _order_key(entry) < _order_key(other)


def _system_row(keys: tuple[str, ...], entry: Entry, outcome: dict) -> dict:
    scores = outcome["scores"]
    row = {"team": entry.team, "run": entry.run, "name": entry.name, "file": entry.file}
    row |= {k: scores[k] for k in keys if k in scores}
    absent = {k: _absent_reason(k, outcome) for k in keys if k not in scores}
    if absent:
        row["absent"] = absent
    if "flagged_answers" in outcome:  # answers the judge flagged as attempts to influence it
        row["flagged_answers"] = outcome["flagged_answers"]
    if outcome.get("judge_usage") is not None:  # what its verdicts cost (reteco.workbench.leaderboard.usage)
        row["judge_usage"] = outcome["judge_usage"]
    row["per_domain"] = outcome["per_domain"]
    row["per_depth"] = outcome["per_depth"]
    row["warnings"] = list(outcome["warnings"])
    return row


def _absent_reason(key: str, outcome: dict) -> str:
    if key in JUDGE and outcome.get("judge_reason"):
        return f"the judge did not run: {outcome['judge_reason']}"
    return KEYS[key].absent_when or "not reported"


def _board_unranked_reason(subtrack_id: str, outcomes: list[dict]) -> str:
    if not outcomes:
        return "no submission could be scored"
    if SUBTRACKS[subtrack_id].official is None:
        return (f"{subtrack_id} is ranked by {JUDGE_MEAN} (it has no official figure), and no submission has a "
                f"{JUDGE_MEAN} here: the judge has not judged the answers")
    return f"no submission has the official figure {SUBTRACKS[subtrack_id].official}"


def _method(base: dict, sub, key: str, matrix: np.ndarray, confidence: float) -> dict:
    method = dict(base)
    method["figure"] = key
    method["unit"] = sub.unit
    method["unit_figures"] = (
        f"the per-unit {key} of details.json (per_unit) as `reteco score` writes it" if sub.takes_run
        else "per turn, the mean of the five normalized judge dimensions (details.json generation.per_turn); "
             "an unanswered turn 0"
    )
    method["ranking"] = {"key": key, "order": "descending", "ties": TIES}
    errors = interval_monte_carlo_error(matrix, base["interval"]["resamples"], confidence)
    method["interval"] = dict(method["interval"]) | {
        "monte_carlo_standard_error": {
            "formula": "sqrt(p (1 - p) / R) * (s / sqrt(n)) / phi(z_p), p = (1 - confidence) / 2: each end, "
                       "normal approximation of the bootstrap distribution of the mean (s with divisor n)",
            "max": float(errors.max()),
        }
    }
    return method
