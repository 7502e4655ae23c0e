"""Fixtures of the hostile-input suite: one marked synthetic release, prepared once per session
into the five sub-tracks' reference folders, and a fresh workspace per case."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_harness import Subtrack, Workspace, describe_subtrack, mark_release

from reteco.prepare import prepare_release
from reteco.synthetic.release import write_synthetic_release

SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")


@pytest.fixture(scope="session")
def marked_release(tmp_path_factory) -> Path:
    """The built-in synthetic release with secret markers in its gold ids, answers and passages
    (read-only: a case that damages a release works on its own copy)."""
    release = write_synthetic_release(tmp_path_factory.mktemp("hostile_release") / "release")
    mark_release(release)
    return release


@pytest.fixture(scope="session")
def prepared(marked_release, tmp_path_factory) -> dict[str, Subtrack]:
    out = tmp_path_factory.mktemp("hostile_ref") / "ref"
    prepare_release(marked_release, "dev", out)
    return {sub: describe_subtrack(sub, out / sub, marked_release) for sub in SUBTRACKS}


@pytest.fixture()
def workspace(tmp_path, prepared, marked_release) -> Workspace:
    return Workspace(tmp_path, prepared, marked_release)
