"""What the holes in the qrels change: ``reteco leaderboard --round LABELS`` (issue 21).

Beside the official ranking (untouched), per ranked system: ``ndcg_10_augmented`` and
``ndcg_10_condensed`` (``reteco.scoring.judged``: the official qrels plus the round's labels;
unjudged documents removed) with their percentile bootstrap intervals (the leaderboard's own
resamples and seed, so the same units are drawn as for the official interval), its rank under
each, ``unjudged_10`` and ``round_labelled_10`` (the share of its top 10 only the round judged).
For the phase: Kendall's tau-b (``reteco.metrics.rank_agreement.kendall_tau_b``) between the official figures and
each other figure over the ranked systems, and the systems that *move*: whose rank under the
other figure lies outside their official 95% rank interval (``rank_low``..``rank_high``, the
leaderboard's bootstrap), i.e. a change the official interval does not explain.

tau_AP (Yilmaz, Aslam & Robertson 2008; ``reteco.metrics.rank_agreement.tau_ap``) beside it, its
positions from the other figure's ranking and its correctness from the official one: a swap near
the top of the other ranking costs more than one near the bottom.

The figures come from what ``reteco score`` writes in details.json (section ``unjudged`` and the
per-unit rows): ``unjudged_figures`` takes them from one submission's details, in the
leaderboard's worker, and ``round_comparison`` compares the systems of a built leaderboard.
"""

from __future__ import annotations

import json

import numpy as np

from reteco.metrics.rank_agreement import kendall_tau_b, tau_ap
from reteco.metrics.significance import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_ci

ALTERNATIVES = ("ndcg_10_augmented", "ndcg_10_condensed")
PER_SYSTEM = ("unjudged_10", "round_labelled_10", *ALTERNATIVES)
MOVED = "rank under the figure outside the system's official 95% bootstrap rank interval"


def unjudged_figures(details: dict) -> dict | None:
    """One submission's unjudged diagnostics from its details.json (with per-unit rows): the
    means and the per-unit values of ``PER_SYSTEM``; None when details has no such section."""
    section = details.get("unjudged")
    if not section:
        return None
    rows = details.get("per_unit") or []
    overall = section.get("overall", {})
    return {
        "overall": {k: float(overall[k]) for k in PER_SYSTEM if k in overall},
        "units": {k: [float(row[k]) for row in rows] for k in PER_SYSTEM if rows and k in rows[0]},
        "round": section.get("round"),
        "absent": dict(section.get("absent", {})),
    }


def _ranks(values: list[float]) -> list[int]:
    """Standard competition ranks, best (largest) first: 1 + the number of strictly larger values."""
    return [1 + sum(other > value for other in values) for value in values]


def round_comparison(board: dict, unjudged_by_name: dict[str, dict | None], *, resamples: int | None = None,
                     seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """The ``round`` section of leaderboard.json for a built ``board`` (its ranked systems) and
    each system's ``unjudged_figures`` by name. Systems without the round's figures (their
    scoring had no round) are listed under ``absent``."""
    systems = [s for s in board["systems"] if (unjudged_by_name.get(s["name"]) or {}).get("units", {}).get(ALTERNATIVES[0])]
    absent = [s["name"] for s in board["systems"] if s not in systems]
    out: dict = {"systems": [], "agreement": {}, "moved": {}, "definitions": {"moved": MOVED}, "absent_systems": absent}
    if not systems:
        out["absent"] = "no ranked system has the round's figures"
        return out
    rounds = {json_key(unjudged_by_name[s["name"]]["round"]) for s in systems}
    out["round"] = unjudged_by_name[systems[0]["name"]]["round"]
    if len(rounds) > 1:
        raise RuntimeError("the systems were scored with different rounds")
    official = [float(s[board["ranked_by"]]) for s in systems]
    rows = [{"name": s["name"], "rank": s["rank"], "official": official[i],
             "rank_low": s.get("rank_low"), "rank_high": s.get("rank_high")} for i, s in enumerate(systems)]
    for key in PER_SYSTEM:
        for row, s in zip(rows, systems):
            value = unjudged_by_name[s["name"]]["overall"].get(key)
            if value is not None:
                row[key] = value
    for key in ALTERNATIVES:
        matrix = np.array([unjudged_by_name[s["name"]]["units"][key] for s in systems], dtype=np.float64)
        interval = bootstrap_ci(matrix, confidence=confidence, resamples=resamples or DEFAULT_RESAMPLES, seed=seed)
        values = [row[key] for row in rows]
        ranks = _ranks(values)
        moved = []
        for i, row in enumerate(rows):
            row[f"{key}_ci_low"] = float(interval.low[i])
            row[f"{key}_ci_high"] = float(interval.high[i])
            row[f"{key}_rank"] = ranks[i]
            low, high = row["rank_low"], row["rank_high"]
            if low is not None and high is not None and not low <= ranks[i] <= high:
                moved.append({"name": row["name"], "official_rank": row["rank"], "rank": ranks[i],
                              "official_rank_interval": [low, high]})
        out["moved"][key] = moved
        if len(systems) >= 2:
            pair = np.array([official], dtype=np.float64), np.array([values], dtype=np.float64)
            agreement = {}
            for name, figure in (("kendall_tau_b", kendall_tau_b), ("tau_ap", tau_ap)):
                value, defined = figure(*pair)
                agreement |= {name: float(value[0])} if defined[0] else {
                    f"{name}_absent": "undefined: every system has the same figure under one of the two"}
            out["agreement"][key] = agreement
        else:
            out["agreement"][key] = {"absent": "one ranked system: no ranking to compare"}
    out["systems"] = rows
    return out


def json_key(value) -> str:
    """A hashable, order-independent text of a JSON value (to compare rounds)."""
    return json.dumps(value, sort_keys=True)


__all__ = ["ALTERNATIVES", "PER_SYSTEM", "round_comparison", "unjudged_figures"]
