"""When the scoring program's judging must end: the deadline it gives ``run_judge``.

A run gets ``time_limit_s`` seconds on the worker (phase.json; ``min(MAX_EXECUTION_TIME_LIMIT,
phase limit)``), counted from before the container starts: the worker sets its alarm in
``Run.start`` (``compute_worker.py``) and then creates the container. The deadline keeps back
what comes before the program's first line and what follows judging::

    deadline = started + limit - reserve
    reserve  = STARTUP_S + FINISH_S + turns * FINISH_PER_TURN_S + SAFETY_SHARE * limit

- ``STARTUP_S``: the container's creation and the interpreter's start before ``started``;
- ``FINISH_S``: the archive, details.json, the page and scores.json (10 s, kept from when it
  also covered loading WordNet, 4.5 s on 2 cores, which now comes before judging);
- ``FINISH_PER_TURN_S``: writing each reference turn's figures and verdicts (10 ms kept);
- ``SAFETY_SHARE``: a share of the limit for a machine slower than the one measured.

For the default 600 s and 200 turns: 5 + 10 + 2 + 30 = 47 s kept back, so judging may run
until 553 s after the program started.

The text metrics (ROUGE-L, METEOR, BERTScore) are not in the reserve: ``score_generation``
computes them *before* judging, so the deadline, fixed from ``started``, leaves to judging
whatever they did not use, measured on this submission on this machine whatever its load.
An estimate kept back instead would have to hold for every answer the format accepts (32,000
characters, 4,000 words: ``reteco.formats.answers``), and their cost is far from linear in the
characters. Measured in one process on the development machine (2 cores, shared): a
4,000-word English answer against a 60-word reference takes ~0.2 s of ROUGE-L and ~0.2 s of
METEOR, against a 400-word reference ~0.9 s of ROUGE-L (its LCS grows with the product of the
two token counts), while a 32,000-character CJK answer takes ~5 ms (no token for ROUGE-L, one
long word for METEOR): seconds per character vary by two orders of magnitude between answers of
one size. For a whole run, ``bench/bench_scoring_program_judge.py --long`` (figures in
``bench/README.md``): 20 answers of 4,000 words took 21 s of text metrics on the loaded machine,
twice the 10.2 s the plan keeps back after judging. ``details["generation"]["judge"]["window"]``
records what the text metrics took and the window left to judging; ``plan``
(``JudgePlan.as_dict``) the figures above.

``run_judge`` starts no request after ``deadline - 1 s`` and cuts the one in flight at the
deadline; what it leaves unjudged makes the judge keys absent with the reason
(``reteco.scoring.judge_run.judge_stop``). How much judging needs at a given latency and
concurrency is measured in ``bench/bench_scoring_program_judge.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

STARTUP_S = 5.0
FINISH_S = 10.0
FINISH_PER_TURN_S = 0.01
SAFETY_SHARE = 0.05


@dataclass(frozen=True)
class JudgePlan:
    """The judging deadline of one scoring run, and what it keeps back."""

    started: float  # time.monotonic() when the scoring program started
    limit_s: int  # the run's effective time limit
    reserve_s: float  # kept back from the limit (module docstring)
    turns: int = 0  # the reference turns the reserve counts

    @property
    def deadline(self) -> float:
        """The ``time.monotonic()`` value by which judging ends."""
        return self.started + self.limit_s - self.reserve_s

    @property
    def judging_until_s(self) -> float:
        """Seconds after ``started`` at which judging ends (negative: no time for it at all)."""
        return self.limit_s - self.reserve_s

    def as_dict(self) -> dict:
        """The plan as details.json records it for the organizers (seconds; the formula's parts)."""
        return {
            "time_limit_s": self.limit_s,
            "reserve_s": round(self.reserve_s, 3),
            "reserve": {"startup_s": STARTUP_S, "finish_s": FINISH_S, "finish_each_turn_s": FINISH_PER_TURN_S,
                        "turns": self.turns, "safety_share": SAFETY_SHARE},
            "judging_until_s": round(self.judging_until_s, 3),
            "text_metrics": "computed before judging: the window is what they leave (reteco.codabench.program.judge_plan)",
        }


def plan_judging(started: float, limit_s: int, turns: int) -> JudgePlan:
    """The deadline for a run of ``limit_s`` seconds that started at ``started`` and scores
    ``turns`` reference turns (module docstring)."""
    reserve = STARTUP_S + FINISH_S + turns * FINISH_PER_TURN_S + SAFETY_SHARE * limit_s
    return JudgePlan(started, limit_s, reserve, turns)
