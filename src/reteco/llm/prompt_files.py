"""Prompt files shared by every LLM use (the judge and the temporal labeller).

A prompt version is a folder ``v<N>/`` of text files frozen by ``manifest.json`` beside it:
the sha256 of each file and of a fixed rendering of sample requests, so a prompt cannot change
without a new version. This module holds what both users need: reading a version's files
(line endings normalised), hashing, the manifest, fencing of data inside a message (so no data
can open or close a block), and the strict check of a JSON reply against its schema's keys.
What a prompt says and how its messages are assembled belongs to its user (``reteco.judge.prompts``,
``reteco.workbench.labels.prompts``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Collection, Sequence
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


def check_frozen(root: Path, version: int, entry: dict[str, Any], what: str) -> None:
    """PromptIntegrityError unless ``root/manifest.json`` records ``entry`` (files' and rendering's
    sha256) for ``version``; the message names the changed files (``what``: "temporal prompt
    version", ...)."""
    recorded = read_manifest(Path(root)).get("versions", {}).get(str(version))
    if recorded is None:
        raise PromptIntegrityError(f"{what} {version} is not frozen in {Path(root) / MANIFEST}")
    if recorded != entry:
        changed = sorted(n for n, h in entry["files"].items() if recorded.get("files", {}).get(n) != h)
        shown = ", ".join(changed) if changed else "the rendering of the messages"
        raise PromptIntegrityError(
            f"{what} {version} differs from its frozen manifest ({shown}); a frozen prompt never changes: write a "
            "new version and freeze it"
        )


def record_frozen(root: Path, version: int, entry: dict[str, Any], what: str) -> dict[str, Any]:
    """Record ``entry`` for ``version`` in ``root/manifest.json``; refuses to change a version
    already frozen with other contents."""
    path = Path(root) / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"versions": {}}
    existing = manifest["versions"].get(str(version))
    if existing is not None and existing != entry:
        raise PromptIntegrityError(f"{what} {version} is already frozen with other contents")
    manifest["versions"][str(version)] = entry
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return entry


def freeze_command(argv: list[str] | None, prog: str, manifest: str, freeze) -> int:
    """``python -m <prompts module> freeze N``: record version N's hashes (``freeze(N)``, which
    refuses to change a frozen version) in ``manifest`` and print the entry."""
    parser = argparse.ArgumentParser(prog=prog)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("freeze", help=f"record a prompt version's hashes in {manifest}").add_argument("version", type=int)
    args = parser.parse_args(argv)
    print(json.dumps(freeze(args.version), indent=2, sort_keys=True))
    return 0

