"""How a competition bundle names its files: the task's file kinds, safe paths, dataset keys.

The facts both readers of a bundle's ``competition.yaml`` share: the rules (``unpacker_rules``)
that check each named file, and the storage count (``upload_storage``) that sizes the copies
Codabench keeps. Both import this module and neither imports the other.

A task names its files under the four keys of ``TASK_FILES``; a task's or solution's value that
has the form of a UUID (32 hex digits, hyphens optional) and is no file of the bundle is read as
the key of a Codabench dataset uploaded separately.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

TASK_FILES = ("scoring_program", "reference_data", "input_data", "ingestion_program")
UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def safe_path(path: str) -> bool:
    """A relative path that stays inside the bundle."""
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


def is_dataset_key(root: Path, value: str) -> bool:
    """Whether a task's or solution's data names a Codabench dataset (uploaded separately)."""
    return bool(UUID.match(value)) and not (root / value).exists()
