"""Run a command with its stderr on a pseudo-terminal, as a participant's shell has it: progress
bars are drawn only there (``sys.stderr.isatty()``)."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios
import threading


def run_on_a_terminal(args: list[str], **kwargs) -> tuple[int, str, str]:
    """(exit code, stdout, what it wrote on the terminal): stdout is a pipe, stderr a terminal."""
    primary, secondary = os.openpty()
    # 24 x 120: a new pseudo-terminal measures 0 x 0, where a bar has no room to be drawn.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=secondary, **kwargs)
    os.close(secondary)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()))  # a full pipe never blocks it
    reader.start()
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            break
        if not chunk:
            break
        chunks.append(chunk)
    reader.join()
    process.stdout.close()
    code = process.wait(timeout=600)
    os.close(primary)
    return code, b"".join(out).decode("utf-8", "replace"), b"".join(chunks).decode("utf-8", "replace")
