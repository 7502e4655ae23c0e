"""The sha256 of a file, read in 1 MiB blocks (reference manifests, temporal label files and the
WordNet sdist record and check these), and the sha256 a JSON manifest records of itself."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

# The field in which a manifest (reference.json, a label folder's manifest.json) records the
# sha256 of its own content, so that an edit of the manifest is found like an edit of a file.
MANIFEST_DIGEST = "manifest_sha256"


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file's bytes, without holding the file in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_digest(manifest: dict) -> str | None:
    """Hex sha256 of a manifest's content without its ``manifest_sha256`` field; None when the
    content is not plain JSON (NaN, infinities), which no manifest written by reteco holds.

    Taken over the canonical serialisation (sorted keys, no spaces, ASCII escapes), so it is
    the same for the file as written and as re-indented, and differs as soon as any key or
    value does.
    """
    body = {key: value for key, value in manifest.items() if key != MANIFEST_DIGEST}
    try:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("ascii")).hexdigest()
