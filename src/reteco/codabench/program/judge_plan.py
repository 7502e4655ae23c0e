"""When the scoring program's judging must end: the deadline it gives ``run_judge``.

A run gets ``time_limit_s`` seconds on the worker (phase.json; ``min(MAX_EXECUTION_TIME_LIMIT,
phase limit)``), counted from before the container starts: the worker sets its alarm in
``Run.start`` (``compute_worker.py``) and then creates the container. The deadline keeps back
what comes before the program's first line and what follows judging, the latter scaled by how
slowly this run's own start went::

    deadline = started + limit - reserve
    reserve  = startup + CONTAINER_S + slowdown * (FINISH_S + turns * FINISH_PER_TURN_S) + SAFETY_SHARE * limit
    slowdown = max(startup / REFERENCE_STARTUP_S, startup / startup_cpu), within [1, MAX_SLOWDOWN]

- ``started``: ``time.monotonic()`` at the first line of ``scoring_program.main``;
- ``startup`` (measured, ``measure_startup``): the process's start, read from the OS, to
  ``started``: the interpreter, ``score.py`` and the imports, on this machine under its load;
  ``startup_cpu`` the CPU time the process had in it. Not measured (not Linux, or ``main`` called
  inside another program): ``startup`` 0 and ``slowdown`` 1;
- ``CONTAINER_S`` (5 s): the container's creation before the process, which it cannot see;
- ``FINISH_S`` (6 s) and ``FINISH_PER_TURN_S`` (10 ms): what follows the deadline (the judge's
  requests cut and recorded, the figures, details.json, the page, scores.json, the interpreter's
  exit) on the reference machine, the development machine with 2 cores: 1.4-2.0 s measured
  there quiet for 45 turns, 1.8-8.6 s under load at a slowdown of 1.6
  (``bench/bench_scoring_program_judge.py --stall-after``, ``bench/README.md``): three times the
  quiet figure, as the start predicts the work after judging only roughly;
- ``slowdown``: how much slower this machine runs the program than the reference machine,
  judged from the same fixed work, the start: ``startup / REFERENCE_STARTUP_S`` (0.4 s there,
  0.36 s measured) for a slower machine, ``startup / startup_cpu`` for a shared one (a process
  given a sixth of a core takes six times as long). Bounded by ``MAX_SLOWDOWN`` (4) so that a
  start slowed by a cold disk cannot take the whole window: a run given less than a quarter of
  the machine is not a fair share, and the platform's kill stays possible there;
- ``SAFETY_SHARE``: a share of the limit for what the rest does not foresee.

For the default 600 s and 200 turns, quiet (startup 0.4 s, slowdown 1): 0.4 + 5 + 8 + 30 =
43.4 s kept back, judging until 556.6 s after ``started``; at the bound (a startup of 1.6 s, or
a quarter of the CPU): 1.6 + 5 + 32 + 30 = 68.6 s.

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
``bench/README.md``): 20 answers of 4,000 words took 21 s of text metrics on the loaded machine.
``details["generation"]["judge"]["window"]`` records what the text metrics took and the window
left to judging; ``plan`` (``JudgePlan.as_dict``) the figures above, measured and scaled.

``run_judge`` starts no request after ``deadline - 1 s`` and cuts the one in flight at the
deadline; what it leaves unjudged makes the judge keys absent with the reason
(``reteco.scoring.judge_run.judge_stop``). How much judging needs at a given latency and
concurrency is measured in ``bench/bench_scoring_program_judge.py``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CONTAINER_S = 5.0
FINISH_S = 6.0
FINISH_PER_TURN_S = 0.01
SAFETY_SHARE = 0.05
REFERENCE_STARTUP_S = 0.4
MAX_SLOWDOWN = 4.0


@dataclass(frozen=True)
class Startup:
    """What the program's start took, read from the OS at ``main()``'s first line (``measure_startup``)."""

    wall_s: float  # the process's start to main()
    cpu_s: float  # the CPU time the process had in that time (every thread)

    @property
    def slowdown(self) -> float:
        """max(wall / REFERENCE_STARTUP_S, wall / cpu), within [1, MAX_SLOWDOWN] (module docstring)."""
        slower_machine = self.wall_s / REFERENCE_STARTUP_S
        shared_cpu = self.wall_s / self.cpu_s if self.cpu_s > 0 else MAX_SLOWDOWN
        return min(MAX_SLOWDOWN, max(1.0, slower_machine, shared_cpu))


@dataclass(frozen=True)
class JudgePlan:
    """The judging deadline of one scoring run, and what it keeps back (module docstring)."""

    started: float  # time.monotonic() at the first line of scoring_program.main
    limit_s: int  # the run's effective time limit
    turns: int = 0  # the reference turns the reserve counts
    startup: Startup | None = None  # None: not measured (not Linux, or main() called inside another program)

    @property
    def slowdown(self) -> float:
        """The factor on what is kept back after judging: the start's, 1 when it was not measured."""
        return 1.0 if self.startup is None else self.startup.slowdown

    @property
    def finish_s(self) -> float:
        """Kept back for the work after judging: slowdown * (FINISH_S + turns * FINISH_PER_TURN_S)."""
        return self.slowdown * (FINISH_S + self.turns * FINISH_PER_TURN_S)

    @property
    def reserve_s(self) -> float:
        """Seconds kept back from the limit, counted from ``started`` (module docstring)."""
        startup = 0.0 if self.startup is None else self.startup.wall_s
        return startup + CONTAINER_S + self.finish_s + SAFETY_SHARE * self.limit_s

    @property
    def deadline(self) -> float:
        """The ``time.monotonic()`` value by which judging ends."""
        return self.started + self.limit_s - self.reserve_s

    @property
    def judging_until_s(self) -> float:
        """Seconds after ``started`` at which judging ends (negative: no time for it at all)."""
        return self.limit_s - self.reserve_s

    def as_dict(self) -> dict:
        """The plan as details.json records it for the organizers (seconds; the formula's parts,
        measured and scaled)."""
        measured = self.startup
        return {
            "time_limit_s": self.limit_s,
            "reserve_s": round(self.reserve_s, 3),
            "reserve": {
                "startup_s": None if measured is None else round(measured.wall_s, 3),
                "startup_cpu_s": None if measured is None else round(measured.cpu_s, 3),
                "container_s": CONTAINER_S,
                "slowdown": round(self.slowdown, 3),
                "slowdown_rule": (f"max(startup_s / {REFERENCE_STARTUP_S} (the reference machine's), startup_s / "
                                  f"startup_cpu_s), within [1, {MAX_SLOWDOWN}]; 1 when the start was not measured"),
                "finish_s": round(self.finish_s, 3),
                "finish_reference_s": FINISH_S,
                "finish_each_turn_s": FINISH_PER_TURN_S,
                "turns": self.turns,
                "safety_share": SAFETY_SHARE,
                "safety_s": round(SAFETY_SHARE * self.limit_s, 3),
            },
            "judging_until_s": round(self.judging_until_s, 3),
            "text_metrics": "computed before judging: the window is what they leave (reteco.codabench.program.judge_plan)",
        }


def plan_judging(started: float, limit_s: int, turns: int, startup: Startup | None = None) -> JudgePlan:
    """The deadline for a run of ``limit_s`` seconds whose ``main()`` started at ``started``, its
    start measured as ``startup`` (``measure_startup``; None: not measured), that scores ``turns``
    reference turns (module docstring)."""
    return JudgePlan(started, limit_s, turns, startup)


def measure_startup() -> Startup | None:
    """This process's age and the CPU time it has had, read from the OS; None where the age cannot be read.

    Linux's ``/proc/self/stat`` gives the start as ``starttime`` (field 22, proc(5)): clock ticks
    after boot on the boot-time clock (CLOCK_BOOTTIME, since Linux 5.5), so the age is
    ``clock_gettime(CLOCK_BOOTTIME) - starttime / SC_CLK_TCK``, to a tick (10 ms).
    ``time.process_time()`` is the CPU time of the process since it started, every thread.
    """
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        # The command's name (field 2) is in parentheses and may hold spaces: count after the last ")".
        start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux, or no /proc
        return None
    return Startup(age, time.process_time()) if age >= 0 else None
