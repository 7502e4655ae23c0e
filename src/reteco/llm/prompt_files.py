"""Prompt files shared by every LLM use (the judge, the temporal and the relevance labellers).

A prompt version is a folder ``v<N>/`` of text files frozen by ``manifest.json`` beside it:
the sha256 of each file and of a fixed rendering of sample requests, so a prompt cannot change
without a new version. This module holds the one mechanism every family of prompts uses: a
family is a row (``PromptFamily``: its folder, its loader, its renderer, the fields its
manifest declares), frozen and checked by the same code (``check_frozen``, ``record_frozen``;
``reteco freeze-prompt --family NAME``); reading a version's files (line endings normalised),
hashing, fencing of data inside a message (so no data can open or close a block), and the
strict check of a JSON reply against its schema's keys. What a prompt says and how its
messages are assembled belongs to its family's module (``reteco.judge.prompts``,
``reteco.workbench.labels.prompts``, ``...relevance_prompts``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"

_LT_RUN = re.compile(r"<{3,}")
_GT_RUN = re.compile(r">{3,}")


class PromptIntegrityError(ValueError):
    """A prompt version's files are missing, malformed or differ from the frozen manifest."""


class ReplyProblem(ValueError):
    """The judge's reply is unusable; the message says why (it is also sent back in a re-ask)."""


def reply_object(content: str | None, allowed: Collection[str], required: Sequence[str]) -> dict[str, Any]:
    """A reply's content as a JSON object with only ``allowed`` keys and every ``required`` one.

    Raises ReplyProblem, saying what was wrong, when it is empty, not JSON, not an object, has
    a key the schema does not allow or lacks one (listed in ``required``'s order).
    """
    if content is None or not content.strip():
        raise ReplyProblem("the reply was empty")
    try:
        value = json.loads(content)
    except json.JSONDecodeError as exc:
        raise ReplyProblem(f"it was not valid JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(value, dict):
        raise ReplyProblem(f"it was a JSON {type(value).__name__}, not an object")
    extra = sorted(set(value) - set(allowed))
    if extra:
        raise ReplyProblem(f"it had the key(s) {', '.join(map(repr, extra))}, which the schema does not allow")
    missing = [k for k in required if k not in value]
    if missing:
        raise ReplyProblem(f"it lacked the key(s) {', '.join(map(repr, missing))}")
    return value


def neutralise(text: str) -> str:
    """Make data unable to imitate a block delimiter: runs of 3+ '<' or '>' become '‹' or '›'."""
    text = _LT_RUN.sub(lambda m: "\u2039" * len(m.group()), text)
    return _GT_RUN.sub(lambda m: "\u203a" * len(m.group()), text)


def fence_tag(contents: Sequence[str]) -> str:
    """The tag shared by a message's blocks: a hash of the (neutralised) data they hold.

    Deterministic, so equal requests stay equal (and hit the cache); unforgeable in practice,
    because a text would have to contain the hash of itself.
    """
    h = hashlib.sha256()
    for c in contents:
        h.update(c.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:10].upper()


def fenced_blocks(header: str, blocks: Sequence[tuple[str, str, str]]) -> list[str]:
    """A message's parts: ``header`` (its ``{tag}`` filled) then each ``(intro, label, content)``
    block between ``<<<BEGIN label TAG>>>`` and ``<<<END label TAG>>>`` lines, TAG the blocks'
    ``fence_tag``. The contents must be neutralised already."""
    tag = fence_tag([content for _, _, content in blocks])
    return [header.format(tag=tag)] + [
        f"{intro}\n<<<BEGIN {label} {tag}>>>\n{content}\n<<<END {label} {tag}>>>" for intro, label, content in blocks
    ]


def file_text(path: Path) -> str:
    """A prompt file's text with line endings normalised (a CRLF checkout is the same prompt)."""
    return path.read_bytes().decode("utf-8").replace("\r\n", "\n")


def read_version_files(root: Path, version: int, names: Sequence[str], what: str = "prompt version") -> tuple[Path, dict[str, str]]:
    """``root/v<version>/`` and the text of each of its files ``names``; PromptIntegrityError
    (``"<what> <version>: ..."``) when the folder or a file is missing."""
    directory = Path(root) / f"v{version}"
    if not directory.is_dir():
        raise PromptIntegrityError(f"{what} {version}: no folder {directory}")
    texts = {}
    for name in names:
        path = directory / name
        if not path.is_file():
            raise PromptIntegrityError(f"{what} {version}: missing {path}")
        texts[name] = file_text(path)
    return directory, texts


def sha256_text(text: str) -> str:
    """The sha256 hex digest of a text's UTF-8 bytes (file and rendering hashes of a manifest)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of a prompts folder ({"versions": {"<N>": entry}})."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        raise PromptIntegrityError(f"no {MANIFEST} in {root}: freeze the prompt version first")
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PromptFamily:
    """One family of frozen prompts: the row that the one freeze and check read.

    A family's versions are folders ``root/v<N>/`` frozen by ``root/manifest.json``. ``load``
    reads and parses one version, ``load(version, root, verify=...)``, and returns an object
    with ``version`` and ``file_hashes`` (the sha256 of each of its files, normalised line
    endings); with ``verify`` it calls ``check_frozen``. ``rendered`` is the sha256 of a fixed
    rendering of sample requests by that loaded version (so a change of the code that assembles
    the messages is a prompt change too). ``declared`` gives the fields of a version's entry
    that are not hashes but facts of the version the loader reads from the manifest (the
    judge's ``dimensions``); they are written by hand in the entry before the version is
    frozen. ``selected_by`` says, for messages, where the version in use is chosen.
    ``reteco freeze-prompt --family NAME`` freezes or checks any family
    (``reteco.workbench.commands.freeze_prompt``, whose ``FAMILIES`` lists them).
    """

    name: str  # the command's --family value
    what: str  # how messages name a version: "judge prompt version"
    root: Path  # the packaged folder of v<N>/ and manifest.json
    load: Callable[..., Any]
    rendered: Callable[[Any], str]
    selected_by: str
    declared: Callable[[Any], dict[str, Any]] = lambda loaded: {}

    def entry(self, loaded: Any) -> dict[str, Any]:
        """What the manifest records for a loaded version: its declared fields, the sha256 of
        each file and of the rendering of the sample requests."""
        return {**self.declared(loaded), "files": dict(loaded.file_hashes), "rendered": self.rendered(loaded)}

    def versions(self, root: Path | None = None) -> list[int]:
        """The versions frozen in the manifest (entries holding hashes), in order."""
        recorded = read_manifest(self.root if root is None else Path(root)).get("versions", {})
        return sorted(int(v) for v, entry in recorded.items() if "files" in entry)

    def check(self, version: int, root: Path | None = None) -> Any:
        """The loaded version, checked against its manifest entry (PromptIntegrityError if not)."""
        return self.load(version, self.root if root is None else Path(root), verify=True)

    def freeze(self, version: int, root: Path | None = None) -> dict[str, Any]:
        """Record ``version``'s entry in the manifest; refuses to change a version already frozen."""
        root = self.root if root is None else Path(root)
        return record_frozen(self, root, version, self.entry(self.load(version, root, verify=False)))

    def how_to_change(self, version: int | str = "N") -> str:
        """The way forward from a changed frozen version, for messages."""
        return (f"copy v{version} to a new folder, edit it there, freeze it (reteco freeze-prompt --family "
                f"{self.name} N) and select it ({self.selected_by})")


def version_signature(entry: dict[str, Any]) -> str:
    """A short hash of a version's files and of how they render (the labels' prompt signature)."""
    payload = {"files": dict(entry["files"]), "rendered": entry["rendered"]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def recorded_entry(root: Path, version: int) -> dict[str, Any]:
    """The manifest's entry of ``version`` as written so far ({} when there is none): a frozen
    version's whole entry, or the declared fields of one about to be frozen."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return {}
    entry = read_manifest(Path(root)).get("versions", {}).get(str(version))
    return dict(entry) if isinstance(entry, dict) else {}


def check_frozen(family: PromptFamily, root: Path, version: int, entry: dict[str, Any]) -> None:
    """PromptIntegrityError unless ``root/manifest.json`` records ``entry`` (declared fields,
    files' and rendering's sha256) for ``version``; the message names the changed files."""
    recorded = read_manifest(Path(root)).get("versions", {}).get(str(version))
    if recorded is None or "files" not in recorded:
        raise PromptIntegrityError(
            f"{family.what} {version} is not frozen in {Path(root) / MANIFEST}; "
            f"run: reteco freeze-prompt --family {family.name} {version}"
        )
    if recorded != entry:
        files, current = recorded.get("files", {}), entry["files"]
        changed = sorted(n for n in set(files) | set(current) if files.get(n) != current.get(n))
        declared = sorted(k for k in set(recorded) | set(entry) if k not in ("files", "rendered")
                          and recorded.get(k) != entry.get(k))
        shown = (f"files changed: {', '.join(changed)}" if changed
                 else f"its {', '.join(declared)}" if declared else "the rendering of the messages changed (code)")
        raise PromptIntegrityError(
            f"{family.what} {version} differs from its frozen manifest ({shown}). A frozen prompt never changes, "
            f"so it can only change with a new version: {family.how_to_change(version)}."
        )


def record_frozen(family: PromptFamily, root: Path, version: int, entry: dict[str, Any]) -> dict[str, Any]:
    """Record ``entry`` for ``version`` in ``root/manifest.json`` (versions in numeric order);
    refuses to change a version already frozen with other contents. An entry holding only
    declared fields (no hashes yet) is completed."""
    path = Path(root) / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"versions": {}}
    existing = manifest["versions"].get(str(version))
    if existing is not None and existing != entry and ("files" in existing or "rendered" in existing
                                                       or any(entry.get(k) != v for k, v in existing.items())):
        raise PromptIntegrityError(f"{family.what} {version} is already frozen with other contents; make a new version")
    manifest["versions"][str(version)] = entry
    manifest["versions"] = dict(sorted(manifest["versions"].items(), key=lambda kv: int(kv[0])))
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return entry
