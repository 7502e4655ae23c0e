"""When the scoring program's judging must end: the deadline it gives ``run_judge``.

A run gets ``time_limit_s`` seconds on the worker (phase.json; ``min(MAX_EXECUTION_TIME_LIMIT,
phase limit)``), counted from before the container starts: the worker sets its alarm in
``Run.start`` (``compute_worker.py``) and then creates the container. Judging comes before the
text metrics in ``score_generation``, and the output is written after both, so the deadline
keeps back what follows and what came before the program's first line::

    deadline = started + limit - reserve
    reserve  = STARTUP_S + FINISH_S + turns * FINISH_PER_TURN_S + SAFETY_SHARE * limit

- ``STARTUP_S``: the container's creation and the interpreter's start before ``started``;
- ``FINISH_S``: loading WordNet for METEOR (4.5 s measured on the synthetic release, 2 cores),
  the archive, details.json, the page and scores.json;
- ``FINISH_PER_TURN_S``: ROUGE-L and METEOR per reference turn (about 2 ms measured; 10 ms kept);
- ``SAFETY_SHARE``: a share of the limit for a machine slower than the one measured.

For the default 600 s and 200 turns: 5 + 10 + 2 + 30 = 47 s kept back, so judging may run
until 553 s after the program started. ``run_judge`` starts no request after ``deadline - 1 s``
and cuts the one in flight at the deadline; what it leaves unjudged makes the judge keys absent
with the reason (``reteco.scoring.judge_run.judge_stop``). How much judging needs at a given
latency and concurrency is measured in ``bench/bench_scoring_program_judge.py``.
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

    @property
    def deadline(self) -> float:
        """The ``time.monotonic()`` value by which judging ends."""
        return self.started + self.limit_s - self.reserve_s

    @property
    def judging_until_s(self) -> float:
        """Seconds after ``started`` at which judging ends (negative: no time for it at all)."""
        return self.limit_s - self.reserve_s


def plan_judging(started: float, limit_s: int, turns: int) -> JudgePlan:
    """The deadline for a run of ``limit_s`` seconds that started at ``started`` and scores
    ``turns`` reference turns (module docstring)."""
    reserve = STARTUP_S + FINISH_S + turns * FINISH_PER_TURN_S + SAFETY_SHARE * limit_s
    return JudgePlan(started, limit_s, reserve)
