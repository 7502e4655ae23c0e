"""Fixtures of the hostile-input suite: one marked synthetic release, prepared once per session
into the five sub-tracks' reference folders, and a fresh workspace per case. Release and
reference are made by the `reteco synth` and `reteco prepare` commands, as organizers make them."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from support.hostile_harness import Subtrack, Workspace, describe_subtrack, mark_release, reteco_main

SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")


def reteco(*argv) -> None:
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
        code = reteco_main()([str(a) for a in argv])
    assert code == 0, captured.getvalue()


@pytest.fixture(scope="session")
def marked_release(tmp_path_factory) -> Path:
    """The built-in synthetic release with secret markers in its gold ids, answers and passages
    (read-only: a case that damages a release works on its own copy)."""
    release = tmp_path_factory.mktemp("hostile_release") / "release"
    reteco("synth", "--out", release)
    mark_release(release)
    return release


@pytest.fixture(scope="session")
def prepared(marked_release, tmp_path_factory) -> dict[str, Subtrack]:
    out = tmp_path_factory.mktemp("hostile_ref") / "ref"
    reteco("prepare", "--release", marked_release, "--split", "dev", "--out", out)
    return {sub: describe_subtrack(sub, out / sub, marked_release) for sub in SUBTRACKS}


@pytest.fixture()
def workspace(tmp_path, prepared, marked_release) -> Workspace:
    return Workspace(tmp_path, prepared, marked_release)
