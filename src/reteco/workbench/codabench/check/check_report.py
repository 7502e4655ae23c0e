"""What ``reteco check-bundle`` finds: the report every rule writes to, and a task as checked.

Shared by the rule modules (``unpacker_rules``, ``competition_rules``), the storage count
(``upload_storage``) and the simulated worker's checks (``scoring_check``), so that none of them
imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reteco.workbench.codabench.check.upload_storage import Storage


@dataclass
class Report:
    """Every problem at once (``errors``, each ``[rule] message``), notes, simulated runs, storage."""

    bundle: Path
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    storage: Storage | None = None  # what one upload stores, once counted

    def error(self, rule: str, message: str) -> None:
        self.errors.append(f"[{rule}] {message}")

    def note(self, message: str) -> None:
        self.notes.append(message)


@dataclass
class BundleTask:
    """One task of competition.yaml as the checker knows it."""

    index: object
    name: str
    files: dict[str, Path] = field(default_factory=dict)  # file type -> local zip or folder
    subtrack: str | None = None  # from its reference data's reference.json
    phase_record: dict | None = None  # its reference data's phase.json
    phase: dict | None = None  # the competition.yaml phase that uses it
    judged: bool = False  # its reference data holds a judge setup (judge/: the judge and its key)
    ingestion_only_during_scoring: bool = False  # the task runs the participant's code in the scoring step
