"""Session fixtures of the Codabench bundle tests (test_bundle.py, test_bundle_platform_rules.py,
test_solution_names.py).

One build of the default layout (one competition per sub-track, what `make bundle` builds) for
the interpreter running the tests (wheels copied from this environment: no network), and copies
cut for the static rules. Requested only by those tests: other tests build nothing.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.bundle_edits import PYTHON, rewrite, slim_program

from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle.builder import BuildOptions, build


@pytest.fixture(scope="session")
def built_all(tmp_path_factory):
    """The default layout's bundles (BuildOptions' default layout, as `make bundle`), by sub-track."""
    root = tmp_path_factory.mktemp("bundle")
    options = BuildOptions(
        out=root / "dist", build_dir=root / "build", cache=root / "cache", python=PYTHON, wheels="environment",
        compression=1, download_wordnet=False,  # no network: WordNet comes from `make setup`
    )
    bundles = build(options)
    return {b.subtracks: b for b in bundles}, options


@pytest.fixture(scope="session")
def built(built_all):
    """The 1a competition's bundle, and the build's options."""
    bundles, options = built_all
    return bundles[("1a",)], options


@pytest.fixture(scope="session")
def slim(built, tmp_path_factory):
    """The 1a bundle with a scoring program of only what the static pass reads."""
    bundle, _ = built
    with zipfile.ZipFile(bundle.path) as archive:
        small = slim_program(archive.read("scoring_program.zip"))
    path = tmp_path_factory.mktemp("slim") / "slim.zip"
    return rewrite(bundle.path, path, members={"scoring_program.zip": small})


@pytest.fixture(scope="session")
def single_slim(built_all, tmp_path_factory):
    """The single layout (five tasks per phase) on the same build's files, scoring program slimmed.

    The build keeps every file a bundle may hold at its bundle path (``build_dir/files``); the
    single competition names them all.
    """
    _, options = built_all
    files = Path(options.build_dir) / "files"
    path = tmp_path_factory.mktemp("single") / "single.zip"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("competition.yaml", definition.render(definition.competition("single")))
        for local in sorted(p for p in files.rglob("*") if p.is_file()):
            name = local.relative_to(files).as_posix()
            data = local.read_bytes()
            out.writestr(name, slim_program(data) if name == definition.SCORING_PROGRAM else data)
    return path
