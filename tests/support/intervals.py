"""Walk a JSON tree and check every interval against its own point estimate (issue 32): a dict
with ``ci_low`` and ``ci_high`` beside a ``value``, ``estimate`` or ``delta`` holds it between
them, as do the ``judge_ci_*``/``human_ci_*`` pairs beside ``judge``/``human``; every float is
finite. Used by the leaderboard's, the agreement's and the re-judging tests. Also the re-centred
bootstrap interval written out independently of ``reteco.metrics.significance``, for the expected
values of the agreement tests."""

from __future__ import annotations

import math

import numpy as np

POINTS = ("estimate", "delta", "value")


def walk_intervals(node, path: str = "$") -> int:
    """Assert the rule on every interval under ``node``; returns how many intervals were checked."""
    checked = 0
    if isinstance(node, dict):
        low, high = node.get("ci_low"), node.get("ci_high")
        point = next((node[k] for k in POINTS if node.get(k) is not None), None)
        if low is not None and high is not None and point is not None:
            assert low <= point <= high, (path, node)
            checked += 1
        for prefix in ("judge", "human"):
            low, high, point = node.get(f"{prefix}_ci_low"), node.get(f"{prefix}_ci_high"), node.get(prefix)
            if low is not None and high is not None and isinstance(point, float):
                assert low <= point <= high, (path, prefix, node)
                checked += 1
        for key, value in node.items():
            checked += walk_intervals(value, f"{path}.{key}")
    elif isinstance(node, list):
        for k, value in enumerate(node):
            checked += walk_intervals(value, f"{path}[{k}]")
    elif isinstance(node, float):
        assert math.isfinite(node), path
    return checked


def centred(point, values, low=-1.0, high=1.0):
    """The interval written out (issue 32): the 2.5th and 97.5th percentiles shifted by (median -
    point), clipped to the figure's range."""
    q_low, median, q_high = np.quantile(values, [0.025, 0.5, 0.975])
    shift = median - point
    return min(high, max(low, q_low - shift)), min(high, max(low, q_high - shift))
