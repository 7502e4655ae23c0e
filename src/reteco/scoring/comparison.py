"""Comparing a participant's own runs (``reteco compare``, ``reteco.compare``): the leaderboard's
procedure on two or more runs scored against one reference.

The organizers' ranked tables (``reteco.workbench.leaderboard``) and this comparison call the
same function, ``reteco.metrics.significance.compare_systems``, on the same matrix: one row per
run, best first by the official figure, one column per unit of the reference (queries for 1a and
1b, turns for 2a and 2c; a unit a run does not rank is already 0), each value the unit's
official figure (nDCG@10). So a participant gets the leaderboard's percentile bootstrap interval
of each mean, its paired test of every pair (the randomised Tukey HSD test by default; paired
randomization tests with Holm's or Benjamini-Hochberg's correction), and its significance groups,
with the same seed and the same resampling streams: the figures are those the organizers'
table would print for these runs alone.
"""

from __future__ import annotations

import numpy as np

from reteco.formats.reference import Reference
from reteco.metrics.significance import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_PROCEDURE, DEFAULT_SEED, compare_systems
from reteco.problems import InputError


def compare_results(reference: Reference, official: str, named: list[tuple[str, object]], *,
                    procedure: str = DEFAULT_PROCEDURE, resamples: int | None = None, seed: int = DEFAULT_SEED,
                    confidence: float = DEFAULT_CONFIDENCE, alpha: float = DEFAULT_ALPHA) -> dict:
    """``named``: (name, ``ScoreResult``) per run, each scored with per-topic figures. Returns
    ``{"official", "units", "systems": [{name, mean, ci_low, ci_high, letters}], "pairs": [...],
    "method": {...}, "warnings": [...]}``, systems best first."""
    if len(named) < 2:
        raise InputError("give two runs or more to compare", "compare")
    rows = []
    units = None
    for name, result in named:
        per_unit = (result.per_topic or {}).get("per_unit")
        if not per_unit:
            raise InputError("per-topic figures are withheld by the reference's phase rules; a comparison "
                             "needs them (score against a reference prepared with reteco prepare)", name)
        values = {record["unit"]: float(record.get(official, 0.0)) for record in per_unit}
        if units is None:
            units = list(values)
        if set(values) != set(units):  # pragma: no cover - one reference gives every run its units
            raise RuntimeError(f"{name}: its units are not the reference's")
        rows.append((name, np.array([values[u] for u in units], dtype=np.float64)))
    rows.sort(key=lambda row: -row[1].mean())  # stable: equal means keep the order given
    matrix = np.vstack([values for _, values in rows])
    names = [name for name, _ in rows]
    found = compare_systems(matrix, names, confidence=confidence, resamples=resamples, seed=seed,
                            procedure=procedure, alpha=alpha)
    systems = [
        {"name": name, "mean": float(matrix[i].mean()), "ci_low": float(found.ci_low[i]),
         "ci_high": float(found.ci_high[i]), "letters": found.letters[i]}
        for i, name in enumerate(names)
    ]
    pairs = [pair.as_dict() | {"significant": pair.p_adjusted <= alpha} for pair in found.pairs]
    return {"official": official, "units": len(units), "systems": systems, "pairs": pairs,
            "method": found.method, "warnings": list(found.warnings or [])}
