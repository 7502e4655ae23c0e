"""What one upload of a bundle stores on Codabench, counted as its unpacker stores it.

From Codabench's source (commit c7dbc75, 2026-03-13), ``src/apps/competitions/unpackers/``:

- ``BaseUnpacker._save_tasks`` calls ``_get_data_key`` for every file of every task
  (``ingestion_program``, ``input_data``, ``scoring_program``, ``reference_data``), and each call
  saves a new ``Data`` object with its own copy of the file (``data_file.save``): a scoring
  program named by 15 tasks is stored 15 times. A folder is zipped first (``zip_if_directory``,
  ``shutil.make_archive``), so its copy is that zip. A task given by ``key``, or a file given as
  the key of an existing dataset, stores nothing new.
- ``_save_solutions``: one copy per solution (not per task it serves).
- ``_save_competition``: one copy of ``starting_kit`` and of ``public_data`` per phase naming it.
- The logo is stored once as the competition's image (``CompetitionSerializer.logo``); the
  100-pixel icon ``Competition.make_logo_icon`` derives from it is left out (its size depends on
  Pillow's encoder, a few kilobytes).
- Pages and terms are read into the database as text (``_unpack_pages``, ``_unpack_terms``):
  counted by their UTF-8 bytes, once per place they are used (our terms page is both).
- The uploaded zip itself is kept as a ``competition_bundle`` dataset
  (``unpack_competition``, ``src/apps/competitions/tasks.py``: deleted only when unpacking
  fails), so it counts too.

Every file counts against the organizer's storage quota (``Data.file_size``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from reteco.workbench.codabench.check.bundle_paths import TASK_FILES, is_dataset_key, safe_path


@dataclass(frozen=True)
class Stored:
    """One stored copy: its role, the bundle path it comes from, its bytes, where it is kept."""

    role: str  # "scoring_program", "reference_data", ..., "solution", "starting_kit", "logo", "page"
    path: str
    size: int
    where: str = "file"  # "file" (a Data object or image file) or "database" (text)


@dataclass
class Storage:
    """Every copy one upload stores, and the uploaded bundle kept beside them."""

    copies: list[Stored] = field(default_factory=list)
    bundle_size: int = 0
    external: list[str] = field(default_factory=list)  # dataset keys named, stored by earlier uploads

    @property
    def unpacked(self) -> int:
        """Bytes the unpacker stores: the sum of every copy."""
        return sum(c.size for c in self.copies)

    @property
    def total(self) -> int:
        """Bytes one upload stores in all: the copies plus the bundle zip itself."""
        return self.unpacked + self.bundle_size

    def by_role(self) -> dict[str, tuple[int, int]]:
        """Role -> (number of copies, bytes), in order of first appearance."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for copy in self.copies:
            out[copy.role][0] += 1
            out[copy.role][1] += copy.size
        return {role: (n, size) for role, (n, size) in out.items()}

    def lines(self) -> list[str]:
        """The report's lines: the total, then each role's copies and bytes."""
        out = [f"one upload stores {megabytes(self.total)}: the unpacked copies {megabytes(self.unpacked)} plus "
               f"the uploaded zip {megabytes(self.bundle_size)} (kept as a dataset)"]
        for role, (n, size) in self.by_role().items():
            out.append(f"  {role}: {n} cop{'y' if n == 1 else 'ies'}, {megabytes(size)}")
        if self.external:
            out.append(f"  not counted: {len(self.external)} Codabench dataset(s) named by key, stored when uploaded")
        return out


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def upload_storage(content: dict, root: Path, bundle: Path) -> Storage:
    """What one upload of ``bundle`` (extracted at ``root``, read as ``content``) stores."""
    storage = Storage(bundle_size=Path(bundle).stat().st_size)
    sizes: dict[str, int | None] = {}

    def add(role: str, value) -> None:
        if not isinstance(value, str) or not safe_path(value):
            return  # the unpacker rules report it
        if is_dataset_key(root, value):
            storage.external.append(value)
            return
        if value not in sizes:
            sizes[value] = _stored_size(root, value)
        if sizes[value] is not None:
            storage.copies.append(Stored(role, value, sizes[value]))

    for task in _mappings(content.get("tasks")):
        if "key" in task:
            continue
        for kind in TASK_FILES:
            add(kind, task.get(kind))
    for solution in _mappings(content.get("solutions")):
        if "key" not in solution:
            add("solution", solution.get("path"))
    for phase in _mappings(content.get("phases")):
        for kind in ("starting_kit", "public_data"):
            add(kind, phase.get(kind))
    add("logo", content.get("image"))
    texts = [content.get("terms")] + [p.get("file") for p in _mappings(content.get("pages"))]
    for path in texts:
        if isinstance(path, str) and safe_path(path) and (root / path).is_file():
            text = (root / path).read_text(encoding="utf-8", errors="replace")
            storage.copies.append(Stored("page", path, len(text.encode("utf-8")), "database"))
    return storage


def _mappings(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _stored_size(root: Path, path: str) -> int | None:
    """Bytes of the copy Codabench stores for a bundle path (a folder as the zip it makes), or None."""
    local = root / path
    if local.is_file():
        return local.stat().st_size
    if not local.is_dir():
        return None  # missing: the unpacker rules report it
    with tempfile.TemporaryDirectory(prefix="reteco-storage-") as tmp:
        return Path(shutil.make_archive(str(Path(tmp) / "folder"), "zip", local)).stat().st_size
