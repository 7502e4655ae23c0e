"""The scorer's choice of Arrow memory pool (see reteco.arrow_memory), checked in fresh processes:
the pool is process-wide, so a test must not change the one pytest runs in."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

PROBE = (
    "import pyarrow as pa\n"
    "from reteco.arrow_memory import use_scoring_memory_pool\n"
    "print(use_scoring_memory_pool(), pa.default_memory_pool().backend_name)\n"
)


def _jemalloc_available() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


def _probe(env_pool: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.skipif(not _jemalloc_available(), reason="this pyarrow wheel has no jemalloc (Windows)")
def test_scoring_switches_to_jemalloc():
    assert _probe(None) == ["jemalloc", "jemalloc"]


def test_a_pool_named_in_the_environment_wins():
    assert _probe("system") == ["system", "system"]


def test_the_cli_process_scores_with_the_chosen_pool(tmp_path):
    # The console script's main() selects the pool before running any command.
    script = (
        "import sys, pyarrow as pa\n"
        "from reteco.cli import main\n"
        "code = main(['synth', '--out', sys.argv[1]])\n"
        "print(code, pa.default_memory_pool().backend_name)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "release")], env=env, capture_output=True, text=True, check=True)
    expected = "jemalloc" if _jemalloc_available() else pa.default_memory_pool().backend_name
    assert done.stdout.split()[-2:] == ["0", expected]
