"""The RETECO competition on Codabench: the one source of ``competition.yaml``.

Why one module: the one source of ``competition.yaml``: the phases, tasks,
leaderboards, pages and who sees what are rendered by one function (``competition``) from the
decisions written below, beside the Codabench behaviour each rests on.

Two layouts are generated from this module and ``leaderboards``:

- ``per-subtrack`` (the default, ``DEFAULT_LAYOUT``): one competition per sub-track, one task
  per phase, whose leaderboard holds exactly that sub-track's keys, its official figure at
  index 0. Each team keeps exactly its last submission per sub-track.
- ``single``: one competition with the five sub-tracks as tasks of every phase (columns: the
  union of all sub-tracks' keys, ranked by nDCG@10). It loses entries, and ``check-bundle``
  refuses it: under ``Force_Last`` Codabench keeps one submission per team per *phase*,
  whatever its task (``LastestModeStrategy.do_execute``, ``src/apps/leaderboards/strategies.py``;
  Codabench issues #2211, #1570), so a team that submits 1a and then 2a keeps only 2a, and one
  zip sent to all five tasks becomes five child submissions of which only the one scored last
  stays. ``Force_Best`` clears the same way; ``Force_Latest_Multiple`` keeps every submission,
  each its own row, not each team's last. Phases cannot stand in for sub-tracks: they run in
  sequence. It stays buildable to show what the single competition would be.

Phases run in sequence: Development scores against the dev reference; Evaluation against the
hidden test labels, without per-topic figures; Post-evaluation against the same test labels,
with them. The scoring program learns its phase from ``phase.json``, written into each phase's
reference data at build time (``phase_record``), because the compute worker tells a scoring
program nothing about the phase.

Who sees what (``SubmissionFilesSerializer``, ``src/apps/api/serializers/submissions.py``, and
``SubmissionViewSet.get_detail_result``, ``src/apps/api/views/submissions.py``):

- the logs (the scoring program's stdout and stderr: its messages about the participant's
  files, never reference data) are shown to the submitter in every phase: no phase sets
  ``hide_output``, which would hide them and leave a failed submission unexplained;
- the detailed results page (``detailed_results.html``) is always shown, whatever the phase's
  flags: to approved participants and organizers, and to anyone once the competition is
  published. The scoring program writes per-topic figures in it only where ``per_topic`` is
  true (Development, Post-evaluation), never in Evaluation;
- the scoring output folder (scores.json, details.json, the page, and whatever else the scoring
  program writes, such as per-topic figures or the judge's archives) is downloadable by the
  submitter in Development (dev labels are public) and by the organizers only in Evaluation
  and Post-evaluation (``hide_score_output``), which score the hidden test labels;
- the prediction output (a code submission's run) is the participant's own: never hidden;
- the leaderboard is public.

Every phase's ``execution_time_limit`` is 600 s, what a run gets anyway: the site sends the
worker ``min(MAX_EXECUTION_TIME_LIMIT, phase limit)`` and that setting defaults to 600
(``_send_to_compute_worker``, ``src/apps/competitions/tasks.py``); only a custom queue gets the
phase limit as is.

The committed ``competition.yaml`` at the repository root is ``render_all()``: the default
layout's competitions, one YAML document each (each bundle's competition.yaml is one of them);
a test keeps them in sync. Edit dates and limits here, then run
``reteco bundle --write-yaml competition.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from reteco.codabench.program import image
from reteco.formats.phase_record import DEFAULT_TIME_LIMIT_S, PHASE_FORMAT
from reteco.subtracks import SUBTRACK_IDS
from reteco.subtracks import SUBTRACKS as SUBTRACK_ROWS
from reteco.workbench.codabench.bundle.leaderboards import columns, ranking_key

LAYOUTS = ("single", "per-subtrack")
DEFAULT_LAYOUT = "per-subtrack"
# Reference splits whose labels participants never see: a phase scoring one hides its scoring
# output (hide_score_output); check-bundle reads the split from phase.json.
HIDDEN_SPLITS = frozenset({"test"})

TITLE = "RETECO: Temporal and Conversational Retrieval (SemEval-2027 Task 1)"
DESCRIPTION = (
    "Retrieve temporally relevant evidence (TEMPO) and answer multi-turn questions from retrieved "
    "passages (RECOR). Five sub-tracks, ranked by nDCG@10; generation reported with five LLM-judge "
    "dimensions."
)
LOGO = "logo.png"
# The pages are written once, in the repository's pages/ (the participants' rules), and a
# bundle carries them at the same paths, where competition.yaml names them.
PAGES_FOLDER = "pages"
TERMS = f"{PAGES_FOLDER}/terms.md"
SCORING_PROGRAM = "scoring_program.zip"
INGESTION_PROGRAM = "ingestion_program.zip"
STARTING_KIT = "starting_kit.zip"
CODE_SOLUTION = "solutions/code.zip"

# (title, file in the bundle): the pages shown on the competition's page, in order.
PAGES = (
    ("Overview", f"{PAGES_FOLDER}/overview.md"),
    ("Tasks", f"{PAGES_FOLDER}/tasks.md"),
    ("Data", f"{PAGES_FOLDER}/data.md"),
    ("Submission format", f"{PAGES_FOLDER}/submission_format.md"),
    ("Evaluation", f"{PAGES_FOLDER}/evaluation.md"),
    ("Other tools", f"{PAGES_FOLDER}/other_tools.md"),
    ("Python API", f"{PAGES_FOLDER}/python_api.md"),
    ("Judge and audit", f"{PAGES_FOLDER}/judge_and_audit.md"),
    ("Messages", f"{PAGES_FOLDER}/messages.md"),
    ("Terms", TERMS),
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
    execution_time_limit: int  # seconds; the default queue gives at most 600 (MAX_EXECUTION_TIME_LIMIT)
    hide_score_output: bool  # the scoring output folder for the organizers only (labels hidden)


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
        600,
        False,
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
        600,
        True,
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
        600,
        True,
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


def phase_record(phase: Phase, subtrack: str, *, platform_limit: int = DEFAULT_TIME_LIMIT_S) -> dict:
    """Content of ``phase.json`` in the reference data of one (phase, sub-track) task.

    ``time_limit_s`` is what a run of the phase gets on the worker, ``min(platform_limit, phase
    limit)`` (``platform_limit``: MAX_EXECUTION_TIME_LIMIT, 600 s on the default queue; a custom
    queue's limit, ``reteco bundle --time-limit``): the scoring program plans its judging
    against it.
    """
    return {
        "format": PHASE_FORMAT,
        "phase": phase.key,
        "name": phase.name,
        "split": phase.split,
        "per_topic": phase.per_topic,
        "subtrack": subtrack,
        "time_limit_s": min(platform_limit, phase.execution_time_limit),
    }


def reference_path(phase: Phase, subtrack: str) -> str:
    return f"reference_data/{phase.key}_{subtrack}.zip"


def input_path(phase: Phase, subtrack: str) -> str:
    return f"input_data/{phase.key}_{subtrack}.zip"


def solution_path(split: str, subtrack: str) -> str:
    return f"solutions/{split}_{subtrack}.zip"


# The split whose solutions are the starting kit's sample submissions (the builder zips the kit's
# samples as that split's solutions; a real release's baseline output replaces the samples in
# the kit too); every other split's solutions are the kit's BM25 baseline run on that split.
KIT_SAMPLES_SPLIT = "dev"


def solution_name(split: str, subtrack: str) -> str:
    """What a solution is, as Codabench lists it: the kit's sample (dev) or its baseline's run."""
    if split == KIT_SAMPLES_SPLIT:
        return f"Starting kit sample submission {subtrack} ({split})"
    return f"Starting kit BM25 baseline {subtrack} ({split})"


def public_phases() -> tuple[Phase, ...]:
    """The phases whose reference split participants may see (not in ``HIDDEN_SPLITS``): what the
    repository's ``reference_data/`` holds (``make reference-data``)."""
    return tuple(p for p in PHASES if p.split not in HIDDEN_SPLITS)


def splits() -> list[str]:
    """The reference splits the phases score against, in phase order (dev, test)."""
    return list(dict.fromkeys(p.split for p in PHASES))


def competition(
    layout: str,
    subtrack: str | None = None,
    *,
    subtracks: tuple[str, ...] = SUBTRACK_IDS,
    code_submission: bool = False,
    external: dict[str, str] | None = None,
) -> dict:
    """The competition.yaml content of a layout (``per-subtrack`` needs ``subtrack``).

    ``external`` maps bundle paths to Codabench dataset keys (data uploaded separately).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {LAYOUTS}")
    if layout == "per-subtrack":
        if subtrack not in SUBTRACK_IDS:
            raise ValueError("the per-subtrack layout needs one sub-track")
        subs: tuple[str, ...] = (subtrack,)
        title = f"RETECO {SUBTRACK_ROWS[subtrack].name} (SemEval-2027 Task 1)"
        description = (
            f"Sub-track {SUBTRACK_ROWS[subtrack].name} of RETECO, ranked by {ranking_key(subtrack)}. Each "
            "sub-track is a competition of its own, so that your last submission counts in each."
        )
        if SUBTRACK_ROWS[subtrack].ranked_may_be_absent:  # 2b: the judge mean (leaderboards module docstring)
            description += (
                " The ranking figure comes from the LLM judge: where the judge does not run (Development) "
                "the leaderboard is no ranking, and a submission whose judging could not finish is shown as "
                "failed and judged by the organizers after the phase (Evaluation page)."
            )
        leaderboard_key = f"reteco_{subtrack}"
    else:
        subs = tuple(s for s in SUBTRACK_IDS if s in subtracks)
        title = TITLE
        description = DESCRIPTION
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
                "hide_output": False,
                "hide_prediction_output": False,
                "hide_score_output": phase.hide_score_output,
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
                    "name": solution_name(split, sub),
                    "path": place(solution_path(split, sub)),
                    "tasks": [p * len(subs) + s for p, phase in enumerate(PHASES) if phase.split == split],
                }
            )
    if code_submission:
        solutions.append(
            {
                "index": len(solutions),
                "name": "Starting kit BM25 baseline, code submission",
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
        "description": description,
        "image": LOGO,
        "terms": TERMS,
        "docker_image": image.reference(),
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


def competitions(
    layout: str = DEFAULT_LAYOUT,
    *,
    subtracks: tuple[str, ...] = SUBTRACK_IDS,
    code_submission: bool = False,
    external: dict[str, str] | None = None,
) -> list[tuple[str, dict, tuple[str, ...]]]:
    """A layout's competitions: (bundle name, competition.yaml content, its sub-tracks) each."""
    subs = tuple(s for s in SUBTRACK_IDS if s in subtracks)
    if layout == "single":
        return [("reteco", competition("single", subtracks=subs, code_submission=code_submission,
                                       external=external), subs)]
    return [
        (f"reteco_{sub}", competition(layout, sub, code_submission=code_submission, external=external), (sub,))
        for sub in subs
    ]


HEADER = (
    "# RETECO (SemEval-2027 Task 1) on Codabench. Generated by `reteco bundle --write-yaml` from\n"
    "# src/reteco/workbench/codabench/bundle/competition.py and leaderboards.py: edit those, not this file (a test keeps\n"
    "# them in sync). Paths are inside the bundle that `make bundle` builds. Dates are UTC strings,\n"
    "# quoted: an unquoted YAML date-time loses its time of day on Codabench.\n"
)


def render(content: dict) -> str:
    """competition.yaml text: key order kept, dates quoted (PyYAML quotes date-like strings)."""
    return HEADER + _dump(content)


def render_all(layout: str = DEFAULT_LAYOUT, subtracks: tuple[str, ...] = SUBTRACK_IDS) -> str:
    """Every competition of a layout, one YAML document each (the committed competition.yaml).

    Each document is the competition.yaml of the bundle its ``---`` line names; the file itself
    is for reading (Codabench reads one document per bundle).
    """
    named = competitions(layout, subtracks=subtracks)
    intro = (
        f"# The {layout} layout: {len(named)} competition(s), one YAML document each; each bundle's\n"
        "# competition.yaml is the document its --- line names.\n"
    )
    return HEADER + intro + "".join(f"--- # {name}.zip\n" + _dump(content) for name, content, _ in named)


def _dump(content: dict) -> str:
    return yaml.safe_dump(content, sort_keys=False, allow_unicode=True, width=100)
