"""docs/development.md's worked examples "Adding a judge dimension" and "Adding a labelling
prompt version", run step by step on a copy of the family's prompts folder: the folders they
copy are the families' own, the blocks they show are what the code reads, the commands they
give freeze and check, and the names they tell to edit exist."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from reteco import subtracks
from reteco.commands import main as reteco
from reteco.judge.config import JudgeConfig
from reteco.judge.prompts import load_prompt_set
from reteco.workbench.commands.freeze_prompt import family

DOC = REPO_ROOT / "docs" / "development.md"
_BLOCK = re.compile(r"^ *```(\w+)\n(.*?)^ *```", re.DOTALL | re.MULTILINE)


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"docs/development.md has no section {title!r}"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``language``, their indentation removed."""
    out = []
    for lang, body in _BLOCK.findall(text):
        if lang == language:
            lines = body.splitlines()
            indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
            out.append("\n".join(line[indent:] for line in lines) + "\n")
    return out


def shell_lines(text: str) -> list[list[str]]:
    return [shlex.split(line) for block in blocks(text, "sh") for line in block.splitlines() if line.strip()]


def run_steps(text: str, name: str, tmp_path: Path) -> tuple[Path, int]:
    """The section's `cp -r` on a copy of the family's folder, then its `reteco freeze-prompt`
    lines with ``--root`` the copy; returns (the copy, the new version)."""
    row = family(name)
    lines = shell_lines(text)
    (cp,) = [line for line in lines if line[0] == "cp"]
    assert cp[:2] == ["cp", "-r"] and (REPO_ROOT / cp[2]).parent == row.root, f"{cp}: not the {name} family's folder"
    assert (REPO_ROOT / cp[3]).parent == row.root and (REPO_ROOT / cp[2]).is_dir()
    new = int(Path(cp[3]).name[1:])
    assert new == max(row.versions()) + 1, "the example's new version is the next free number"
    root = tmp_path / "prompts"
    shutil.copytree(row.root, root)
    shutil.copytree(root / Path(cp[2]).name, root / Path(cp[3]).name)
    return root, new


def freeze_lines(text: str, name: str, root: Path, capsys) -> None:
    commands = [line for line in shell_lines(text) if line[0] == "reteco"]
    assert [c[1] for c in commands] == ["freeze-prompt", "freeze-prompt"] and all(f"--family={name}" in
                                                                                   "=".join(c) for c in commands)
    for command in commands:
        assert reteco([*command[1:], "--root", str(root)]) == 0, capsys.readouterr().err


def test_adding_a_judge_dimension_as_the_docs_say(tmp_path, capsys):
    text = section("Adding a judge dimension")
    root, new = run_steps(text, "judge", tmp_path)
    # Step 2: the dimension's file, named after its front matter.
    (prompt,) = blocks(text, "markdown")
    dimension = re.search(r"^dimension: (\w+)$", prompt, re.MULTILINE).group(1)
    assert f"`v{new}/{dimension}.md`" in text
    (root / f"v{new}" / f"{dimension}.md").write_text(prompt, encoding="utf-8")
    assert re.findall(r"^([1-5]) - ", prompt, re.MULTILINE) == ["5", "4", "3", "2", "1"]
    # Step 3: the manifest entry, as written.
    (entry,) = blocks(text, "json")
    declared = json.loads("{" + entry + "}")
    assert list(declared) == [str(new)] and declared[str(new)]["dimensions"][-1] == dimension
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["versions"].update(declared)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    # Step 4: freeze and check every version.
    freeze_lines(text, "judge", root, capsys)
    prompts = load_prompt_set(new, root)
    assert prompts.dimension_names == tuple(declared[str(new)]["dimensions"])
    assert all(load_prompt_set(v, root).file_hashes == load_prompt_set(v).file_hashes for v in family("judge").versions())
    # Steps 5 and 6 name what exists: the config's field, the table of dimension keys.
    assert f"`prompt_version: {new}`" in text and "prompt_version" in JudgeConfig.__dataclass_fields__
    assert "`DIMENSION_KEYS` of `src/reteco/subtracks.py`" in text and subtracks.DIMENSION_KEYS
    for path in re.findall(r"`(src/reteco/[\w/.]+|tests/[\w/.]+)`", text):
        if not path.startswith(f"src/reteco/judge/prompts/v{new}"):
            assert (REPO_ROOT / path).exists(), f"docs/development.md names {path}, which does not exist"


@pytest.mark.parametrize("name", ["temporal", "relevance"])
def test_adding_a_labelling_prompt_version_as_the_docs_say(name, tmp_path, capsys):
    text = section("Adding a labelling prompt version")
    row = family(name)
    if name == "relevance":  # the example is the temporal family's; the same steps for the other
        relevance = str(row.root.relative_to(REPO_ROOT).as_posix())
        assert f"`{relevance}/`, family `relevance`" in " ".join(text.split())
        text = text.replace(str(family("temporal").root.relative_to(REPO_ROOT).as_posix()), relevance).replace(
            "--family temporal", "--family relevance")
        # The example's numbers are the temporal family's (its next version); the relevance family's are its own.
        current, nxt = max(family("temporal").versions()), max(row.versions())
        text = re.sub(r"(\bv|\bCURRENT_VERSION = |--family relevance )(\d+)\b",
                      lambda m: m.group(1) + str(int(m.group(2)) - current + nxt), text)
    root, new = run_steps(text, name, tmp_path)
    # Edit the copy: a changed prompt is what a new version is for.
    system = root / f"v{new}" / "system.md"
    system.write_text(system.read_text(encoding="utf-8") + "\nA new rule.\n", encoding="utf-8")
    freeze_lines(text, name, root, capsys)
    loaded = row.check(new, root)
    assert loaded.signature != row.check(new - 1, root).signature
    assert loaded.name.endswith(f"-labels/v{new}")
    # Step 3: the name to edit exists in the family's module, and selects the version loaded by default.
    module = __import__(row.load.__module__, fromlist=["CURRENT_VERSION"])
    assert f"`CURRENT_VERSION = {new}`" in text and module.CURRENT_VERSION == max(row.versions())
    assert f"`{Path(module.__file__).name}`" in text and "CURRENT_VERSION" in row.selected_by
    assert f"`{name}-labels/v{new}`" in text or name == "relevance"
    assert set(module.FILES) == set(loaded.file_hashes)
