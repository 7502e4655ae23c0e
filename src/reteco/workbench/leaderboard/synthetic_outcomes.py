"""Synthetic scored submissions for the leaderboard at a real participant count (60 teams x 3
runs, or 3 x 3): what ``reteco.workbench.leaderboard.standings.score_one`` returns, without scoring.

Used by the paper-table tests (``tests/outputs/test_leaderboard_paper.py``) and the benchmark
``bench/bench_leaderboard_paper.py``. Team t's runs lie a little apart, the teams spread from
about 0.95 down to 0.40 of the ranking figure, with per-unit noise; every key of the sub-track
is present (judge and text figures uniform in 0.2..0.9; 2b and 2c with per-turn figures of the
judge dimensions, ROUGE-L and METEOR for their intervals), per-domain figures for three domains,
turn-depth figures for Track 2, and one flagged answer for team 1's runs. Every seventh team has
a long name, so that the tables' shortening is exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from reteco.formats.topic_ids import DEPTH_GROUPS
from reteco.metrics.text_overlap import METEOR, ROUGE_L
from reteco.subtracks import DIMENSIONS, SUBTRACKS
from reteco.workbench.leaderboard.standings import Entry, ranking_candidate

DOMAINS = ("biology", "finance", "law")


def synthetic_outcomes(subtrack: str, teams: int, runs: int, *, units: int = 18,
                       seed: int = 3) -> tuple[list[Entry], list[dict], list[str]]:
    """(entries, outcomes, unit keys) of ``teams`` x ``runs`` scored submissions of ``subtrack``
    on ``units`` units."""
    rng = np.random.default_rng(seed)
    figure_rng = np.random.default_rng(seed + 1)  # its own stream: the other figures stay as they were
    sub = SUBTRACKS[subtrack]
    key = ranking_candidate(subtrack)
    unit_keys = [f"u{i}" for i in range(units)]
    entries, outcomes = [], []
    for t in range(teams):
        team = f"University of Somewhere Team {t:02d}" if t % 7 == 0 else f"team{t:02d}"
        for r in range(runs):
            quality = 0.95 - 0.55 * t / max(1, teams - 1) - 0.02 * r
            values = np.clip(quality + rng.normal(0, 0.12, units), 0, 1)
            scores = {k: float(rng.uniform(0.2, 0.9)) for k in sub.keys}
            scores[key] = float(values.mean())
            if "tc_10" in scores:  # temporal coverage loosely follows the figure
                scores["tc_10"] = float(np.clip(scores[key] + rng.normal(0, 0.1), 0, 1))
            depth = {g: {key: float(np.clip(quality - 0.05 * i + rng.normal(0, 0.05), 0, 1))}
                     for i, g in enumerate(DEPTH_GROUPS)} if sub.track == 2 else {}
            generation = {}
            if sub.judged and sub.takes_run:  # 2c: per-turn judge means that average to judge_mean
                judged = np.clip(rng.uniform(0.2, 0.9) + rng.normal(0, 0.15, units), 0, 1)
                scores["judge_mean"] = float(np.mean(judged))
                generation = {"generation_units": {"keys": unit_keys, "values": [float(v) for v in judged],
                                                   "absent": None}}
            if sub.judged:  # per-turn figures of each judge dimension and text metric, for their intervals
                generation["figure_units"] = {}
                for k in (*DIMENSIONS, ROUGE_L, METEOR):
                    per_turn = np.clip(scores[k] + figure_rng.normal(0, 0.2, units), 0, 1)
                    scores[k] = float(np.mean(per_turn))
                    generation["figure_units"][k] = {"values": [float(v) for v in per_turn]}
            entries.append(Entry(Path(f"{team}-run{r}"), f"{team}-run{r}.zip", team, f"run{r}_with_a_long_name"))
            outcomes.append({"ok": True, "scores": scores, "warnings": [], "unit_keys": unit_keys,
                             "unit_values": [float(v) for v in values], "unit_values_absent": None,
                             "per_domain": {d: {key: float(rng.random())} for d in DOMAINS},
                             "per_depth": depth, "judge_reason": None}
                            | ({"flagged_answers": int(t == 1)} if sub.judged else {}) | generation)
    return entries, outcomes, unit_keys
