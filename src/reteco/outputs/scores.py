"""Writing ``scores.json`` (the leaderboard's numbers), its ``scores.txt`` twin, and ``details.json``.

``scores.txt`` is what CodaLab Competitions v1.5 reads instead of ``scores.json``: one ``key:
value`` line per score, split at the colon and the value read with ``float`` (``update_submission``,
``apps/web/tasks.py``); the same keys and the same numbers, written with ``repr`` so they read
back exactly.

Codabench drops a submission's scores silently when ``scores.json`` holds NaN or Infinity, so a
non-finite number here is a bug in reteco, never something to write: it raises instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

SCORES_TXT = "scores.txt"


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


def write_scores_txt(out: Path, scores: dict[str, float]) -> Path:
    """Write ``out/scores.txt``: one ``key: value`` line per score of ``scores.json`` (module docstring)."""
    check_finite(scores)
    bad = [k for k in scores if ":" in k or "\n" in k]
    if bad:  # the server splits each line at its one colon
        raise ValueError(f"internal error: score keys {bad} cannot be written to scores.txt")
    out.mkdir(parents=True, exist_ok=True)
    path = out / SCORES_TXT
    path.write_text("".join(f"{k}: {float(v)!r}\n" for k, v in scores.items()), encoding="utf-8")
    return path


def write_details(out: Path, details: dict) -> Path:
    """Write ``out/details.json``; NaN is written as null (JSON has no NaN).

    Layout: indented, except that a long list (per-topic rows) holds one compact row per line,
    which stays readable, diffs well, and lets json's C encoder do the work (10,000 topics in
    tens of milliseconds instead of half a second through the pure-Python indenting encoder).
    """
    out.mkdir(parents=True, exist_ok=True)
    path = out / "details.json"
    try:
        text = _render(details, 0)
    except ValueError:  # a NaN somewhere: only then pay for walking the whole structure
        text = _render(_nan_to_none(details), 0)
    path.write_text(text + "\n", encoding="utf-8")
    return path


ROWS_PER_LINE_FROM = 20  # lists at least this long are written one item per line, compactly


def _render(value, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict) and value:
        items = (f"{inner}{json.dumps(str(k))}: {_render(v, depth + 1)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)) and value:
        if len(value) >= ROWS_PER_LINE_FROM:
            rows = (inner + json.dumps(v, allow_nan=False) for v in value)
        else:
            rows = (inner + _render(v, depth + 1) for v in value)
        return "[\n" + ",\n".join(rows) + f"\n{pad}]"
    return json.dumps(value, allow_nan=False)


def _nan_to_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_to_none(v) for v in value]
    return value
