"""The sha256 of a file, read in 1 MiB blocks (reference manifests, temporal label files and the
WordNet sdist record and check these)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file's bytes, without holding the file in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
