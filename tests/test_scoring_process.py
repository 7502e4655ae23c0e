"""What a scoring process sets up, checked in fresh processes (the pool and the loaded modules
are process-wide, so a test must not change the process pytest runs in): the Arrow memory pool
(reteco.arrow_memory) and which command modules a command loads."""

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
        "from reteco.commands import main\n"
        "code = main(['synth', '--out', sys.argv[1]])\n"
        "print(code, pa.default_memory_pool().backend_name)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "release")], env=env, capture_output=True, text=True, check=True)
    expected = "jemalloc" if _jemalloc_available() else pa.default_memory_pool().backend_name
    assert done.stdout.split()[-2:] == ["0", expected]


def test_scoring_commands_do_not_load_the_other_commands_modules(tmp_path):
    # `reteco synth` and `reteco score` build a parser of their own commands only; the judge,
    # labelling and bundle modules stay unloaded. `reteco --help` still lists every command.
    script = (
        "import sys\n"
        "from reteco.commands import main\n"
        "release, out = sys.argv[1], sys.argv[2]\n"
        "main(['synth', '--out', release])\n"
        "main(['prepare', '--release', release, '--split', 'dev', '--out', out, '--subtracks', '1a'])\n"
        "code = main(['validate', '--ref', out + '/1a', release + '/missing.txt'])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith(('reteco.judge', 'reteco.codabench', 'reteco.workbench.labels'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "release"), str(tmp_path / "ref")], capture_output=True, text=True, check=True
    )
    assert done.stdout.split("\n")[-2] == "1 []"
    listed = subprocess.run([sys.executable, "-m", "reteco", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("score", "judge", "bundle", "check-bundle", "pool", "label-temporal", "setup-wordnet"):
        assert command in listed
