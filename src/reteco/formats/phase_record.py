"""``phase.json``: which Codabench phase a reference folder serves, and what it may show.

The compute worker tells a scoring program nothing about the phase, so the bundle builder writes
a record into each phase's reference data (``reteco.codabench.competition.phase_record``):
``{"format", "phase", "name", "split", "per_topic"}``. ``per_topic`` decides whether per-topic
figures are written (details.json, the detailed results page). Without a record they are
withheld: the safe side on hidden labels. ``reteco prepare`` writes a local record (per-topic
figures on), so scoring in the starting kit shows what the Development phase shows.
"""

from __future__ import annotations

import json
from pathlib import Path

PHASE_FILE = "phase.json"
PHASE_FORMAT = "reteco-phase/1"
NO_PHASE = {"phase": "unknown", "name": "unknown", "split": "?", "per_topic": False}


def local_phase(split: str | None) -> dict:
    """The record of reference data prepared locally (``reteco prepare``): per-topic figures on."""
    return {"format": PHASE_FORMAT, "phase": "local", "name": f"local ({split or '?'} split)", "split": split or "?", "per_topic": True}


def read_phase(ref: Path) -> tuple[dict, str | None]:
    """The phase record of the reference data and a note when there is none usable
    (``NO_PHASE``: per-topic figures withheld)."""
    path = Path(ref) / PHASE_FILE
    if not path.is_file():
        return NO_PHASE, f"no {PHASE_FILE} in the reference data; per-topic figures are withheld"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NO_PHASE, f"{PHASE_FILE} is unreadable; per-topic figures are withheld"
    if not isinstance(record, dict) or not isinstance(record.get("per_topic"), bool):
        return NO_PHASE, f"{PHASE_FILE} has no per_topic flag; per-topic figures are withheld"
    return {**NO_PHASE, **record}, None


def write_phase(ref: Path, record: dict) -> None:
    (Path(ref) / PHASE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
