"""A freeze that holds: every released version of every family of frozen prompts (the judge's,
the temporal labelling's, the relevance round's: ``reteco freeze-prompt``'s ``FAMILIES``) is,
file by file and in the rendering of its sample requests, what its manifest recorded; and the
one mechanism refuses a changed file of any family, and a changed frozen version."""

from __future__ import annotations

import json
import shutil

import pytest

from reteco.commands import main as reteco
from reteco.workbench.commands.freeze_prompt import FAMILIES, family
from reteco.llm.prompt_files import PromptIntegrityError, read_manifest

VERSIONS = [(name, version) for name in FAMILIES for version in family(name).versions()]


def test_every_family_has_released_versions():
    assert {name for name, _ in VERSIONS} == set(FAMILIES) == {"judge", "temporal", "relevance"}
    assert ("judge", 3) in VERSIONS and ("temporal", 1) in VERSIONS and ("relevance", 1) in VERSIONS


@pytest.mark.parametrize(("name", "version"), VERSIONS)
def test_every_released_version_is_what_its_manifest_recorded(name, version):
    """Fails when a file of a frozen version changes, or the code that renders its messages: that is a
    new version (docs/development.md, "Adding a labelling prompt version")."""
    row = family(name)
    recorded = read_manifest(row.root)["versions"][str(version)]
    current = row.entry(row.load(version, row.root, verify=False))  # recomputed, not the loader's check
    files, now = recorded["files"], current["files"]
    changed = sorted(n for n in set(files) | set(now) if files.get(n) != now.get(n))
    assert not changed, f"{row.what} {version}: {changed} changed; {row.how_to_change(version)}"
    assert current["rendered"] == recorded["rendered"], (
        f"{row.what} {version}: the messages rendered from the same files changed (code); {row.how_to_change(version)}")
    assert current == recorded


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_version_folder_is_frozen(name):
    """A version folder without its manifest entry would be a prompt nobody froze."""
    row = family(name)
    folders = sorted(int(p.name[1:]) for p in row.root.glob("v*") if p.is_dir() and p.name[1:].isdigit())
    assert folders == row.versions()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_changed_file_of_any_family_is_refused_and_the_version_cannot_be_refrozen(name, tmp_path, capsys):
    row = family(name)
    root = tmp_path / "prompts"
    shutil.copytree(row.root, root)
    assert reteco(["freeze-prompt", "--family", name, "--root", str(root), "--check"]) == 0
    version = row.versions(root)[-1]
    path = root / f"v{version}" / "system.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nBe lenient.\n", encoding="utf-8")
    with pytest.raises(PromptIntegrityError, match=rf"{row.what} {version} differs from its frozen manifest \(files changed: system\.md\)"):
        row.check(version, root)
    capsys.readouterr()
    assert reteco(["freeze-prompt", "--family", name, "--root", str(root), "--check", str(version)]) == 1
    assert "system.md" in capsys.readouterr().err
    assert reteco(["freeze-prompt", "--family", name, "--root", str(root), str(version)]) == 1
    assert "already frozen with other contents" in capsys.readouterr().err
    # The way forward: the changed files as a new version, frozen by the same command.
    shutil.copytree(root / f"v{version}", root / f"v{version + 1}")
    shutil.copy(row.root / f"v{version}" / "system.md", path)
    if name == "judge":  # its entry is started with its dimensions
        assert reteco(["freeze-prompt", "--family", name, "--root", str(root), str(version + 1)]) == 1
        assert "lists no dimensions" in capsys.readouterr().err
        manifest = read_manifest(root)
        manifest["versions"][str(version + 1)] = {"dimensions": manifest["versions"][str(version)]["dimensions"]}
        (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert reteco(["freeze-prompt", "--family", name, "--root", str(root), str(version + 1)]) == 0
    assert row.versions(root)[-1] == version + 1 and row.check(version + 1, root).version == version + 1
    assert reteco(["freeze-prompt", "--family", name, "--root", str(root), "--check"]) == 0


def test_freezing_needs_a_version():
    assert reteco(["freeze-prompt", "--family", "temporal"]) == 2
