"""Reading a small text input file named on the command line (qrels, stance, FactIR's files),
and recognising text saved as UTF-16 or UTF-32 in any input file (runs and answers too).

One rule for every such file: it must be a regular file (a folder, a named pipe or a device is
refused at once, before it is opened, so a FIFO can never make a command wait), its bytes UTF-8
(a byte-order mark is dropped), and every failure an InputError naming the path (and the line of
the first byte that is not UTF-8).

A file in UTF-16 or UTF-32 (Windows PowerShell's ``>`` writes UTF-16 with a byte-order mark) is
said so once, with what to do (``wide_text_error``), instead of one misleading error per line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reteco.problems import InputError

# Byte-order marks of the wide encodings; UTF-32's first, since UTF-32LE's starts with UTF-16LE's.
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
)
# How many bytes at the start of a file are looked at for NUL-interleaved text: enough for a
# few lines, so that telling costs nothing next to reading.
_SNIFF_BYTES = 4096


def wide_encoding(data: bytes | memoryview) -> str | None:
    """The name of the wide encoding ``data`` is in (``"UTF-16 (little-endian)"``...), or None.

    Told by a byte-order mark, or, without one, by ASCII text interleaved with NULs in the
    first ``_SNIFF_BYTES``: in UTF-16LE every second byte of ASCII text is NUL (UTF-32LE: three
    of four), at odd positions for little-endian, even for big-endian. UTF-8 text holds no NUL,
    so a file whose NULs fall in that pattern on nearly every character cannot be UTF-8 text."""
    head = bytes(memoryview(data)[:_SNIFF_BYTES])
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return name
    if b"\x00" not in head:
        return None
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        usable = len(head) - len(head) % width
        if usable < 2 * width:
            continue
        units = [head[i : i + width] for i in range(0, usable, width)]
        for endian, text_at in (("little-endian", 0), ("big-endian", width - 1)):
            # A unit of ASCII text: its one byte not NUL, every other byte NUL.
            ascii_units = sum(1 for u in units if u[text_at] != 0 and u.count(0) == width - 1)
            if ascii_units >= 0.9 * len(units):
                return f"{name} ({endian})"
    return None


def wide_text_error(encoding: str, kind: str, name: str) -> InputError:
    """The one error for a ``kind`` file ("run", "answers"...) saved in ``encoding``."""
    return InputError(
        f"the {kind} file is {encoding} text, not UTF-8 (Windows PowerShell's `>` and Out-File write UTF-16); "
        "save it as UTF-8: in PowerShell `... | Out-File -Encoding utf8 FILE`, in Python "
        "open(path, 'w', encoding='utf-8')",
        name,
    )


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
    encoding = wide_encoding(data)
    if encoding is not None:
        raise wide_text_error(encoding, kind, path.name)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"the line is not valid UTF-8; save the {kind} file as UTF-8 text", path.name, line) from None
