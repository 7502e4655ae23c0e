"""llama.cpp's ``llama-server`` from ``../shared/tools/llama.cpp`` on a free 127.0.0.1 port, for
the tests that talk to a real OpenAI-compatible server (they skip when it is absent)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.paths import SHARED

LLAMA_CPP = SHARED / "tools" / "llama.cpp"
SERVER = LLAMA_CPP / "bin" / "llama-server"
MODEL = LLAMA_CPP / "models" / "tiny-biased.gguf"
#: The skip of a test needing the server, with the reason.
needs_llama_server = pytest.mark.skipif(
    not (SERVER.is_file() and MODEL.is_file()),
    reason=f"no prebuilt llama-server and tiny model at {LLAMA_CPP} (../shared/tools/llama.cpp beside the repository)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_llama_server(alias: str, log: Path) -> Iterator[str]:
    """A started llama-server answering as ``alias``, its output in ``log``; yields its /v1 URL
    once /health says it is ready (60 s at most), and stops it after."""
    port = free_port()
    with open(log, "wb") as handle:
        proc = subprocess.Popen(
            [str(SERVER), "--model", str(MODEL), "--alias", alias, "--host", "127.0.0.1", "--port", str(port)],
            stdout=handle, stderr=subprocess.STDOUT,
        )
    try:
        health = f"http://127.0.0.1:{port}/health"
        until = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(health, timeout=2) as answer:  # noqa: S310 (127.0.0.1 only)
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            if proc.poll() is not None or time.monotonic() > until:
                pytest.fail(f"llama-server did not become healthy: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
