"""Writing ``scores.json`` (the leaderboard's numbers) and ``details.json`` (everything else).

Codabench drops a submission's scores silently when ``scores.json`` holds NaN or Infinity, so a
non-finite number here is a bug in reteco, never something to write: it raises instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path


def check_finite(scores: dict[str, float]) -> None:
    """Raise ValueError if any score is not a finite number (a metric that does not apply must be
    left out of scores.json, not written as NaN or 0)."""
    bad = [k for k, v in scores.items() if not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        raise ValueError(f"internal error: non-finite scores for {bad}; nothing was written")


def write_scores(out: Path, scores: dict[str, float]) -> Path:
    """Write ``out/scores.json``: a flat object of key -> finite number."""
    check_finite(scores)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scores.json"
    path.write_text(json.dumps({k: float(v) for k, v in scores.items()}, indent=2) + "\n", encoding="utf-8")
    return path


def write_details(out: Path, details: dict) -> Path:
    """Write ``out/details.json``; NaN is written as null (JSON has no NaN)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "details.json"
    try:
        text = json.dumps(details, indent=2, allow_nan=False)
    except ValueError:  # a NaN somewhere: only then pay for walking the whole structure
        text = json.dumps(_nan_to_none(details), indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _nan_to_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_to_none(v) for v in value]
    return value
