"""JSON Lines records of the organizers' files (temporal periods and labels): reading each line
with its number, fields checked with a message naming the file and the line, and writing a
file in one step (a temporary file renamed into place).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reteco.problems import InputError

# An ISO 8601 date as the guidance writes time scopes: a year (negative for BCE), a month or a day.
ISO_DATE = re.compile(r"^-?\d{1,4}(-\d{2}(-\d{2})?)?$")


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    if not Path(path).is_file():
        raise InputError("file not found", str(path))
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise InputError("not valid JSON", str(path), number) from None
            if not isinstance(record, dict):
                raise InputError("expected a JSON object", str(path), number)
            yield number, record


def string_field(value: Any, what: str, path: Path, line: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} is missing or not a non-empty string", str(path), line)
    return value.strip()


def optional_text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def optional_iso(value: Any, number: int, what: str, path: Path, line: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not ISO_DATE.match(value):
        raise InputError(f'period {number}: "{what}" must be an ISO date (YYYY, YYYY-MM or YYYY-MM-DD) or null', str(path), line)
    return value


def string_list(value: Any, what: str, path: Path, line: int, required: bool = False) -> list[str]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{what} must be a list of strings", str(path), line)
    return list(value)


def atomic_write(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write beside the destination, flush to disk, then rename over it: never half a file."""
    tmp = path.with_name(f".{path.name}.writing")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
