"""Where the tests and the bench scripts find the repository and the data beside it.

The repository's root is found by walking up from this file to the folder holding
``pyproject.toml`` and ``src/reteco``, so a module's depth under ``tests/`` does not matter.
``SHARED`` is ``../shared`` beside the repository (the organizers' data and tools, on the
developers' machines and in CI): tests that need it skip with a message when it is absent.
"""

from __future__ import annotations

from pathlib import Path


def _repository_root() -> Path:
    here = Path(__file__).resolve()
    for folder in here.parents:
        if (folder / "pyproject.toml").is_file() and (folder / "src" / "reteco").is_dir():
            return folder
    raise RuntimeError(f"no repository root (pyproject.toml beside src/reteco) above {here}")


REPO_ROOT = _repository_root()
#: The starting kit's sample submissions, one folder per sub-track.
SAMPLES = REPO_ROOT / "starting_kit" / "sample_submissions"
#: The organizers' folder beside the repository (may be absent).
SHARED = REPO_ROOT.parent / "shared"
#: The organizers' real sample release, in ../shared/data.
SHARED_SAMPLE = SHARED / "data" / "reteco_sample"
