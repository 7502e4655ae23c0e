"""``phase.json``: which Codabench phase a reference folder serves, and what it may show.

The compute worker tells a scoring program nothing about the phase, so the bundle builder writes
a record into each phase's reference data (``reteco.workbench.codabench.bundle.competition.phase_record``):
``{"format", "phase", "name", "split", "per_topic", "time_limit_s"}``. ``per_topic`` decides
whether per-topic figures are written (details.json, the detailed results page). Without a
record they are withheld: the safe side on hidden labels. ``time_limit_s`` is the run's
effective time limit on the worker (``min(MAX_EXECUTION_TIME_LIMIT, phase limit)``, what the
site sends the worker), which the scoring program plans its judging against
(``reteco.codabench.program.judge_plan``); a record without one (older bundles, local records) gives
``DEFAULT_TIME_LIMIT_S``. ``reteco prepare`` writes a local record (per-topic figures on), so
scoring in the starting kit shows what the Development phase shows.
"""

from __future__ import annotations

import json
from pathlib import Path

PHASE_FILE = "phase.json"
PHASE_FORMAT = "reteco-phase/1"
NO_PHASE = {"phase": "unknown", "name": "unknown", "split": "?", "per_topic": False}
#: The limit assumed when a record gives none: Codabench's default MAX_EXECUTION_TIME_LIMIT.
DEFAULT_TIME_LIMIT_S = 600


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


def phase_rules(reference, *, no_per_topic: bool = False) -> dict:
    """The phase rules this scoring applies: the reference's phase.json (as the platform reads
    it) when it has one, else local scoring (per-topic figures written); ``--no-per-topic``
    withholds them either way. ``reteco score`` and the Python API (``reteco.api``) both apply it."""
    has_record = reference.root is not None and (reference.root / PHASE_FILE).is_file()
    phase = read_phase(reference.root)[0] if has_record else local_phase(reference.manifest.get("split"))
    if no_per_topic:
        phase = {**phase, "per_topic": False}
    return phase


def time_limit(record: dict) -> int:
    """The record's ``time_limit_s`` (a positive whole number of seconds), else
    ``DEFAULT_TIME_LIMIT_S``."""
    value = record.get("time_limit_s")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_TIME_LIMIT_S


def write_phase(ref: Path, record: dict) -> None:
    (Path(ref) / PHASE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
