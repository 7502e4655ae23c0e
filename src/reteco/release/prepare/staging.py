"""The transaction of ``reteco prepare``: each sub-track folder is written beside its destination
and moved into place at the end, so a failed run never leaves a half-written reference; an
existing destination is replaced only if it is a reference folder (or empty).
"""

from __future__ import annotations

import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

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
    progress: bool = False  # progress bars on stderr while the corpora are read

    def warn(self, message: str) -> None:
        self.summary["warnings"].append(message)

    @contextmanager
    def reading(self, label: str, paths: Iterable[Path]) -> Iterator[Callable[[int], None] | None]:
        """While ``paths`` are read: a progress bar in MB read (with ``progress``), whose update
        function is given to the readers (``bytes_read``); None without progress."""
        if not self.progress:
            yield None
            return
        from tqdm import tqdm

        total = sum(p.stat().st_size for p in paths)
        with tqdm(total=total, unit="B", unit_scale=True, desc=label, file=sys.stderr, dynamic_ncols=True) as bar:
            pending = 0

            def update(size: int) -> None:
                # One call per document: the bar itself is moved once a MB, so it costs nothing.
                nonlocal pending
                pending += size
                if pending >= 1 << 20:
                    bar.update(pending)
                    pending = 0

            yield update
            bar.update(pending)

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
