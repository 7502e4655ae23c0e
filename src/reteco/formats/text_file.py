"""Reading a small text input file named on the command line (qrels, stance, FactIR's files).

One rule for every such file: it must be a regular file (a folder, a named pipe or a device is
refused at once, before it is opened, so a FIFO can never make a command wait), its bytes UTF-8
(a byte-order mark is dropped), and every failure an InputError naming the path (and the line of
the first byte that is not UTF-8).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reteco.problems import InputError


def read_text_file(path: Path, kind: str) -> str:
    """The text of ``path``, a ``kind`` file ("qrels", "stance" ...), or InputError."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"the {kind} file cannot be read ({exc.strerror or exc})", str(path)) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"is a folder; give the {kind} file", str(path))
    if not stat.S_ISREG(mode):
        raise InputError(f"is not a regular file (a pipe or a device); give the {kind} file itself", str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"the {kind} file cannot be read ({exc.strerror or exc})", str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"the line is not valid UTF-8; save the {kind} file as UTF-8 text", path.name, line) from None
