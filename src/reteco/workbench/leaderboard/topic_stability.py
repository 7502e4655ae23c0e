"""``reteco leaderboard --topic-stability``: the topic-set stability of a retrieval table.

The ranked systems' per-unit figures (details.json's ``per_unit``: per query, per query after
averaging its steps, per target turn: the units the leaderboard's statistics use), every
retrieval metric that all of them carry, go to ``reteco.metrics.topic_stability`` (Voorhees &
Buckley 2002: swap rates over random disjoint topic sets, binned by the pair's difference).
The result is ``leaderboard.json``'s ``topic_stability``, rendered by
``reteco.workbench.leaderboard.topic_stability_tables`` into the page, the LaTeX file and
``topic_stability.txt``. A sub-track without a ranked run (2b) has none, said in its place.
"""

from __future__ import annotations

import numpy as np

from reteco.metrics.topic_stability import topic_set_stability


def board_topic_stability(ranked_outcomes: list[dict], *, seed: int, splits: int) -> dict:
    """``topic_stability`` of one leaderboard from its ranked systems' outcomes (``score_one``'s,
    in rank order); ``{"absent": reason}`` when there is nothing to split."""
    carrying = [o.get("unit_metrics") for o in ranked_outcomes if o.get("unit_metrics")]
    if len(carrying) < 2:
        return {"absent": "fewer than 2 ranked systems with per-unit retrieval figures"}
    if len(carrying) < len(ranked_outcomes):
        return {"absent": f"{len(ranked_outcomes) - len(carrying)} ranked systems have no per-unit retrieval figures"}
    metrics = [k for k in carrying[0] if all(k in m for m in carrying)]
    values = {k: np.array([m[k] for m in carrying], dtype=np.float64) for k in metrics}
    out = topic_set_stability(values, seed=seed, splits=splits)
    out["systems"] = len(carrying)
    return out
