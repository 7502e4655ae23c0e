"""The RETECO competition on Codabench: the one source of ``competition.yaml``.

Two layouts are generated from this module and ``leaderboards``:

- ``single``: one competition with the five sub-tracks as tasks of every phase. Codabench
  keeps one leaderboard per competition and repeats its columns once per task, so its columns
  are the union of all sub-tracks' keys, ranked by nDCG@10 (index 0). A participant picks the
  tasks at submission time; a submission to several tasks holds one folder per sub-track
  (``1a/run.txt``, ``2c/answers.jsonl`` ...).
- ``per-subtrack``: one competition per sub-track, whose leaderboard holds exactly that
  sub-track's keys, its official figure at index 0.

Phases run in sequence (Codabench cannot run them side by side): Development scores against
the dev reference; Evaluation against the hidden test labels, without per-topic figures;
Post-evaluation against the same test labels, with them. The scoring program learns its phase
from ``phase.json``, written into each phase's reference data at build time
(``phase_record``), because the compute worker tells a scoring program nothing about the phase.

The committed ``competition.yaml`` at the repository root is ``render(competition("single"))``;
a test keeps the two in sync. Edit dates and limits here, then run
``reteco bundle --write-yaml competition.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from reteco.codabench import image
from reteco.codabench.leaderboards import columns, ranking_key
from reteco.subtracks import IDS as SUBTRACKS
from reteco.subtracks import SUBTRACKS as SUBTRACK_ROWS

LAYOUTS = ("single", "per-subtrack")
PHASE_FILE = "phase.json"
PHASE_FORMAT = "reteco-phase/1"

TITLE = "RETECO: Temporal and Conversational Retrieval (SemEval-2027 Task 1)"
DESCRIPTION = (
    "Retrieve temporally relevant evidence (TEMPO) and answer multi-turn questions from retrieved "
    "passages (RECOR). Five sub-tracks, ranked by nDCG@10; generation reported with five LLM-judge "
    "dimensions."
)
LOGO = "logo.png"
TERMS = "pages/terms.md"
SCORING_PROGRAM = "scoring_program.zip"
INGESTION_PROGRAM = "ingestion_program.zip"
STARTING_KIT = "starting_kit.zip"
CODE_SOLUTION = "solutions/code.zip"

# (title, file): the pages shown on the competition's page, in order.
PAGES = (
    ("Overview", "pages/overview.md"),
    ("Tasks", "pages/tasks.md"),
    ("Data", "pages/data.md"),
    ("Evaluation", "pages/evaluation.md"),
    ("Submission format", "pages/submission_format.md"),
    ("Judge and audit", "pages/judge_and_audit.md"),
    ("Terms", "pages/terms.md"),
)


@dataclass(frozen=True)
class Phase:
    key: str  # file names and phase.json
    name: str
    description: str
    start: str  # UTC, 'YYYY-MM-DD HH:MM:SS'
    end: str | None  # None only for the last phase
    split: str  # the reference split scored against: "dev" or "test"
    per_topic: bool  # whether per-topic figures may be written (never on hidden labels while they rank)
    max_submissions_per_day: int
    max_submissions: int
    execution_time_limit: int  # seconds; Codabench's default queue caps it (600-1200 s)


PHASES = (
    Phase(
        "development",
        "Development",
        "Score runs on the dev split (labels public). Per-topic figures in the detailed results.",
        "2026-09-01 00:00:00",
        "2027-01-09 23:59:59",
        "dev",
        True,
        10,
        500,
        1200,
    ),
    Phase(
        "evaluation",
        "Evaluation",
        "Official ranking on the hidden test labels. Only your last submission counts. No per-topic "
        "figures: they would reveal hidden labels through repeated submissions.",
        "2027-01-10 00:00:00",
        "2027-01-31 23:59:59",
        "test",
        False,
        3,
        10,
        1200,
    ),
    Phase(
        "post_evaluation",
        "Post-evaluation",
        "Unofficial scoring on the test split after the competition, with per-topic figures.",
        "2027-02-01 00:00:00",
        None,
        "test",
        True,
        10,
        500,
        1200,
    ),
)

# Codabench's fact sheet: asked at every submission. The participation rules require teams to
# disclose their system, and every model and API it used.
FACT_SHEET = {
    "team_name": ("text", "Team name", True),
    "system_description": ("text", "System description (2-3 sentences)", True),
    "models_used": ("text", "Models used (name and version; 'none' if none)", True),
    "apis_used": ("text", "APIs used (e.g. hosted LLMs; 'none' if none)", True),
    "external_data": ("text", "External data or resources beyond the official corpus", True),
    "code_link": ("text", "Link to code (optional)", False),
}


def phase_record(phase: Phase, subtrack: str) -> dict:
    """Content of ``phase.json`` in the reference data of one (phase, sub-track) task."""
    return {
        "format": PHASE_FORMAT,
        "phase": phase.key,
        "name": phase.name,
        "split": phase.split,
        "per_topic": phase.per_topic,
        "subtrack": subtrack,
    }


def reference_path(phase: Phase, subtrack: str) -> str:
    return f"reference_data/{phase.key}_{subtrack}.zip"


def input_path(phase: Phase, subtrack: str) -> str:
    return f"input_data/{phase.key}_{subtrack}.zip"


def solution_path(split: str, subtrack: str) -> str:
    return f"solutions/{split}_{subtrack}.zip"


def splits() -> list[str]:
    """The reference splits the phases score against, in phase order (dev, test)."""
    return list(dict.fromkeys(p.split for p in PHASES))


def competition(
    layout: str,
    subtrack: str | None = None,
    *,
    subtracks: tuple[str, ...] = SUBTRACKS,
    code_submission: bool = False,
    external: dict[str, str] | None = None,
) -> dict:
    """The competition.yaml content of a layout (``per-subtrack`` needs ``subtrack``).

    ``external`` maps bundle paths to Codabench dataset keys (data uploaded separately).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {LAYOUTS}")
    if layout == "per-subtrack":
        if subtrack not in SUBTRACKS:
            raise ValueError("the per-subtrack layout needs one sub-track")
        subs: tuple[str, ...] = (subtrack,)
        title = f"RETECO {SUBTRACK_ROWS[subtrack].name} (SemEval-2027 Task 1)"
        leaderboard_key = f"reteco_{subtrack}"
    else:
        subs = tuple(s for s in SUBTRACKS if s in subtracks)
        title = TITLE
        leaderboard_key = "reteco"
    external = external or {}

    def place(path: str) -> str:
        return external.get(path, path)

    tasks = []
    phases = []
    for p, phase in enumerate(PHASES):
        indexes = []
        for s, sub in enumerate(subs):
            index = p * len(subs) + s
            indexes.append(index)
            task = {
                "index": index,
                "name": f"{SUBTRACK_ROWS[sub].name}: {phase.name}",
                "description": f"Sub-track {sub}, {phase.name} phase ({phase.split} split); "
                f"ranked by {ranking_key(sub)}",
                "scoring_program": place(SCORING_PROGRAM),
                "reference_data": place(reference_path(phase, sub)),
            }
            if code_submission:
                task["ingestion_program"] = place(INGESTION_PROGRAM)
                task["input_data"] = place(input_path(phase, sub))
            tasks.append(task)
        entry = {
            "index": p,
            "name": phase.name,
            "description": phase.description,
            "start": phase.start,
        }
        if phase.end is not None:
            entry["end"] = phase.end
        entry.update(
            {
                "max_submissions_per_day": phase.max_submissions_per_day,
                "max_submissions": phase.max_submissions,
                "execution_time_limit": phase.execution_time_limit,
                "starting_kit": STARTING_KIT,
                "tasks": indexes,
            }
        )
        phases.append(entry)
    # A solution holds runs of one split's topics, so each split has its own per sub-track.
    solutions = []
    for split in splits():
        for s, sub in enumerate(subs):
            solutions.append(
                {
                    "index": len(solutions),
                    "name": f"Baseline {sub} ({split})",
                    "path": place(solution_path(split, sub)),
                    "tasks": [p * len(subs) + s for p, phase in enumerate(PHASES) if phase.split == split],
                }
            )
    if code_submission:
        solutions.append(
            {
                "index": len(solutions),
                "name": "BM25 baseline, code submission",
                "path": place(CODE_SOLUTION),
                "tasks": [task["index"] for task in tasks],
            }
        )
    leaderboard = {
        "title": "Results" if layout == "single" else f"Results {sub_label(subs)}",
        "key": leaderboard_key,
        "submission_rule": "Force_Last",
        "columns": [c.as_yaml() for c in columns(subs)],
    }
    return {
        "version": 2,
        "title": title,
        "description": DESCRIPTION,
        "image": LOGO,
        "terms": TERMS,
        "docker_image": image.IMAGE,
        "registration_auto_approve": True,
        "enable_detailed_results": True,
        "show_detailed_results_in_submission_panel": True,
        "show_detailed_results_in_leaderboard": False,
        "make_programs_available": True,
        "make_input_data_available": False,
        "auto_run_submissions": True,
        "can_participants_make_submissions_public": True,
        "forum_enabled": True,
        "fact_sheet": {
            key: {
                "key": key,
                "type": kind,
                "title": question,
                "selection": "",
                "is_required": "true" if required else "false",
                "is_on_leaderboard": "false",
            }
            for key, (kind, question, required) in FACT_SHEET.items()
        },
        "pages": [{"title": t, "file": f} for t, f in PAGES],
        "tasks": tasks,
        "solutions": solutions,
        "phases": phases,
        "leaderboards": [leaderboard],
    }


def sub_label(subs: tuple[str, ...]) -> str:
    return ", ".join(subs)


HEADER = (
    "# RETECO (SemEval-2027 Task 1) on Codabench. Generated by `reteco bundle --write-yaml` from\n"
    "# src/reteco/codabench/competition.py and leaderboards.py: edit those, not this file (a test keeps\n"
    "# them in sync). Paths are inside the bundle that `make bundle` builds. Dates are UTC strings,\n"
    "# quoted: an unquoted YAML date-time loses its time of day on Codabench.\n"
)


def render(content: dict) -> str:
    """competition.yaml text: key order kept, dates quoted (PyYAML quotes date-like strings)."""
    return HEADER + yaml.safe_dump(content, sort_keys=False, allow_unicode=True, width=100)
