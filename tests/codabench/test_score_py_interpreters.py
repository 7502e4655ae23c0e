"""``scoring_program/score.py`` on the Pythons a participant may have: the bundle's vendored
packages only on the interpreter they were built for, else an installed reteco, else one line
saying what is needed (exit 3), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT, SAMPLES

from reteco.problems import EXIT_INTERNAL
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"


def _other_python(version: str) -> Path | None:
    """An interpreter of ``version`` without this checkout's packages (pyenv's, or on PATH)."""
    for candidate in sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python")):
        return candidate
    found = shutil.which(f"python{version}")
    return Path(found) if found else None


@pytest.fixture(scope="module")
def ref(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("interpreters")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref", subtracks=("1a",))
    return root / "ref" / "1a"


def _program(tmp_path: Path, python: str, from_image=("numpy",)) -> Path:
    """score.py beside a vendor/ built for ``python``, whose pyarrow cannot load elsewhere."""
    folder = tmp_path / "scoring_program"
    folder.mkdir()
    shutil.copy(REPO_ROOT / "scoring_program" / "score.py", folder / "score.py")
    (folder / "vendor" / "pyarrow").mkdir(parents=True)
    (folder / "vendor" / "pyarrow" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pyarrow.lib'\")\n"
    )
    record = {"python": python, "source": "pip", "platforms": ["manylinux_2_28_x86_64"], "from_image": list(from_image)}
    (folder / "vendor" / "VENDOR.json").write_text(json.dumps(record))
    return folder / "score.py"


def _clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RETECO_"))}


def _run(python: Path | str, script: Path, ref: Path, tmp_path: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    shutil.copytree(ref, tmp_path / "input" / "ref")
    shutil.copytree(SAMPLES / "1a", tmp_path / "input" / "res")
    return subprocess.run([str(python), str(script), str(tmp_path / "input"), str(tmp_path / "output")],
                          capture_output=True, text=True, env=_clean_environment(), timeout=300, check=False, cwd=cwd)


def test_vendor_for_another_python_is_left_aside_for_the_installed_reteco(ref, tmp_path):
    other = "3.12" if RUNNING != "3.12" else "3.13"
    done = _run(sys.executable, _program(tmp_path, other), ref, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert f"note: the bundle's packages (vendor/) are built for Python {other}, not {RUNNING}; " \
           "scoring with the reteco installed here" in done.stderr
    assert json.loads((tmp_path / "output" / "scores.json").read_text())["ndcg_10"] > 0


@pytest.fixture
def second_python() -> tuple[Path, str]:
    """Another interpreter than this one (3.12 beside 3.11, or 3.11 beside 3.12) without reteco,
    and its version."""
    python = _other_python("3.12" if RUNNING != "3.12" else "3.11")
    if python is None:
        pytest.skip("no second Python (3.11 or 3.12) here (pyenv has both on the project's machines)")
    probe = subprocess.run(
        [str(python), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}'); import reteco"],
        capture_output=True, text=True, env=_clean_environment(), check=False,
    )
    if probe.returncode == 0:
        pytest.skip(f"{python} has reteco installed")
    return python, probe.stdout.strip()


def test_without_installed_reteco_it_says_in_one_line_what_it_needs(ref, tmp_path, second_python):
    python, version = second_python
    done = _run(python, _program(tmp_path, RUNNING), ref, tmp_path)
    assert done.returncode == EXIT_INTERNAL
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0] == (
        f"score.py: cannot score here: the bundle's packages (vendor/) are built for Python {RUNNING}, not "
        f"{version}, and no reteco is installed: run it with Python 3.12 with numpy, pandas and pyyaml (the "
        'platform\'s image), or install the scorer first (pip install "./reteco" from the starting kit)'
    )
    assert not (tmp_path / "output" / "scores.json").exists()


def test_the_right_python_lacking_an_image_package_is_said_too(ref, tmp_path, second_python):
    python, version = second_python
    # Built for that very Python, but it lacks a package the platform's image has (on 3.12
    # without numpy the old score.py said only "internal error").
    done = _run(python, _program(tmp_path, version, from_image=("numpy", "reteco-test-absent-package")), ref, tmp_path)
    assert done.returncode == EXIT_INTERNAL
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"score.py: cannot score here: Python {version} here lacks " in lines[0]
    assert "reteco-test-absent-package, which the platform's image provides, and no reteco is installed" in lines[0]


def test_on_the_worker_an_image_lacking_a_module_is_the_organizers_internal_error(ref, tmp_path, second_python):
    """Run from its own folder, as the worker runs it (cwd /app/program): the message names the
    module, says it is not the participant's fault and what the organizers must do; exit 3."""
    python, version = second_python
    script = _program(tmp_path, version, from_image=("numpy", "reteco-test-absent-package"))
    done = _run(python, script, ref, tmp_path, cwd=script.parent)
    assert done.returncode == EXIT_INTERNAL
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("score.py: internal error, not a problem of your submission: ")
    assert "reteco-test-absent-package" in line and "name the image by the digest" in line
