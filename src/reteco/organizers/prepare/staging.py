"""The transaction of ``reteco prepare``: each sub-track folder is written beside its destination
and moved into place at the end, so a failed run never leaves a half-written reference; an
existing destination is replaced only if it is a reference folder (or empty).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from reteco.formats.phase_record import local_phase, write_phase
from reteco.formats.reference import MANIFEST
from reteco.problems import InputError


@dataclass
class PrepareContext:
    release: Path
    split: str
    out: Path
    summary: dict
    staged: list[Path] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.summary["warnings"].append(message)

    @property
    def release_name(self) -> str:
        return self.release.resolve().name


def check_destination(path: Path) -> None:
    # Refuse before any work: overwriting someone's unrelated folder would be worse than failing.
    if path.exists() and not (path.is_dir() and ((path / MANIFEST).is_file() or not any(path.iterdir()))):
        raise InputError("exists and is not a reference folder written by `reteco prepare`; not overwriting", str(path))


def staging_folder(ctx: PrepareContext, name: str) -> Path:
    staging = ctx.out / f".{name}.preparing"
    if staging.exists():
        shutil.rmtree(staging)  # left over by an interrupted run
    staging.mkdir(parents=True)
    ctx.staged.append(staging)
    return staging


def install(staging: Path, final: Path, split: str) -> None:
    """Move a written reference folder into place, with a local phase record beside its manifest
    (per-topic figures on; the bundle builder writes each phase's own record over it)."""
    write_phase(staging, local_phase(split))
    check_destination(final)
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
