"""Progress bars on long work, on a terminal only: a log or a pipe gets none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import SAMPLES
from support.terminal import run_on_a_terminal
from tqdm import tqdm

from reteco.release.synthetic.release import write_synthetic_release

format_sizeof = tqdm.format_sizeof


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_synthetic_release(tmp_path_factory.mktemp("progress") / "release")


def _reteco(*args) -> list[str]:
    return [sys.executable, "-m", "reteco", *map(str, args)]


@pytest.mark.slow
def test_prepare_shows_the_documents_read_on_a_terminal(release, tmp_path):
    code, out, terminal = run_on_a_terminal(_reteco("prepare", "--release", release, "--split", "dev", "--out", tmp_path / "a"))
    assert code == 0 and "prepared" in out
    # One bar per track, in bytes of documents read, ending at the size of the track's corpora.
    for track in ("track1_tempo", "track2_recor"):
        size = format_sizeof(sum(p.stat().st_size for p in (release / track).rglob("documents.jsonl")))
        assert f"{track} documents: 100%" in terminal and f"{size}/{size}" in terminal, (track, size, terminal)
    piped = subprocess.run(_reteco("prepare", "--release", release, "--split", "dev", "--out", tmp_path / "b"),
                           capture_output=True, text=True, check=False)
    assert piped.returncode == 0 and "documents:" not in piped.stderr and "%" not in piped.stderr


@pytest.mark.slow
def test_scoring_several_submissions_shows_a_bar_over_them_on_a_terminal(release, tmp_path):
    done = subprocess.run(_reteco("prepare", "--release", release, "--split", "dev", "--out", tmp_path / "ref",
                                  "--subtracks", "1a"), capture_output=True, check=False)
    assert done.returncode == 0
    runs = [SAMPLES / "1a" / "run.txt"] * 3
    code, out, terminal = run_on_a_terminal(_reteco("score", "--ref", tmp_path / "ref" / "1a", *runs))
    assert code == 0 and "ndcg_10 (official)" in out
    assert "scoring: 100%" in terminal and "3/3" in terminal, terminal
    piped = subprocess.run(_reteco("score", "--ref", tmp_path / "ref" / "1a", *runs), capture_output=True, text=True, check=False)
    assert piped.returncode == 0 and "scoring:" not in piped.stderr
