"""The starting kit's folder after its walk-through, on the synthetic release: ``kit`` holds
``ref/<sub-track>`` (the dev split prepared for every sub-track) and ``sample_submissions/``
(the kit's own samples), where the pages' examples run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.paths import SAMPLES

from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


@pytest.fixture(scope="session")
def kit(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kit")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref")
    shutil.copytree(SAMPLES, root / "sample_submissions")
    return root
