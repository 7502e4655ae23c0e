"""A copy of reteco without the workbench (what a bundle's vendor/ and the starting kit carry)
runs the scorer's commands and refuses the organizers' with a sentence, never an ImportError.

The copy is made by the builder's own function (``vendor.copy_scorer``) and run in a child
interpreter: which package Python imports is what the test checks.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import reteco
from reteco.commands import COMMANDS, WORKBENCH
from reteco.workbench.codabench.bundle.vendor import copy_scorer

SCORER_COMMANDS = sorted(name for name, (module, _) in COMMANDS.items() if not module.startswith(WORKBENCH))


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    code = (f"import sys; sys.path.insert(0, {str(copy)!r}); import reteco; "
            f"assert reteco.__file__.startswith({str(copy)!r}), reteco.__file__; "
            "from reteco.commands import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


def test_the_scorer_copy_offers_the_scorer_and_refuses_the_workbench_with_a_sentence(tmp_path):
    copy_scorer(Path(reteco.__file__).parent, tmp_path / "reteco")
    assert not (tmp_path / "reteco" / "workbench").exists()
    assert (tmp_path / "reteco" / "scoring" / "submission.py").is_file()
    assert not list((tmp_path / "reteco").rglob("__pycache__"))

    listed = _run(tmp_path, "--help")
    assert listed.returncode == 0, listed.stderr
    choices = listed.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    assert sorted(choices) == SCORER_COMMANDS
    assert {"score", "validate", "prepare", "synth", "setup-wordnet"} <= set(choices)

    refused = _run(tmp_path, "leaderboard", "--ref", "x")
    assert refused.returncode == 2
    assert "reteco leaderboard: error: an organizers' command of the workbench" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""

    usage = _run(tmp_path, "score", "--help")
    assert usage.returncode == 0 and "--ref" in usage.stdout
