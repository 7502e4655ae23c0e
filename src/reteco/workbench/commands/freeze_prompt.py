"""``reteco freeze-prompt``: freeze or check a version of any family of frozen prompts.

One command for every family (``FAMILIES``: the judge's prompts, the temporal labelling's, the
relevance round's), each a row of the one mechanism (``reteco.llm.prompt_files.PromptFamily``):

    reteco freeze-prompt --family judge 4          # record v4's hashes in the family's manifest.json
    reteco freeze-prompt --family temporal --check  # every frozen version against its manifest
    reteco freeze-prompt --family judge --check 3 --root my_prompts

Freezing never changes a version already frozen with other contents; a judge version's entry
is started by hand with its ``dimensions`` (docs/development.md, "Adding a judge dimension").
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from reteco.problems import InputError, UsageError

# --family value -> (module, the name of its PromptFamily row); imported only when the command runs
FAMILIES: dict[str, tuple[str, str]] = {
    "judge": ("reteco.judge.prompts", "FAMILY"),
    "temporal": ("reteco.workbench.labels.prompts", "FAMILY"),
    "relevance": ("reteco.workbench.labels.relevance_prompts", "FAMILY"),
}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "freeze-prompt",
        help="freeze a prompt version in its family's manifest.json, or check versions against it",
        description="Record a prompt version's hashes (its files and a fixed rendering of sample requests) in "
        "its family's manifest.json, or with --check verify versions against it. A frozen version never "
        "changes: a changed prompt is a new version.",
    )
    p.add_argument("--family", choices=list(FAMILIES), required=True, help="which prompts")
    p.add_argument("--check", action="store_true", help="check instead of freezing (without VERSION: every frozen version)")
    p.add_argument("--root", type=Path, help="a prompts folder of its own (v<N>/ and manifest.json; default: the packaged one)")
    p.add_argument("version", type=int, nargs="?", help="the version N of the folder v<N>/")
    p.set_defaults(func=cmd_freeze_prompt)


def family(name: str):
    """The ``PromptFamily`` row of a ``--family`` name (its module imported now)."""
    module, attribute = FAMILIES[name]
    return getattr(importlib.import_module(module), attribute)


def cmd_freeze_prompt(args) -> int:
    from reteco.llm.prompt_files import MANIFEST, PromptIntegrityError

    row = family(args.family)
    root = args.root if args.root is not None else row.root
    manifest = Path(root) / MANIFEST
    if args.version is None and not args.check:
        raise UsageError("give the VERSION to freeze (only --check goes without one: every frozen version)")
    try:
        if not args.check:
            entry = row.freeze(args.version, root)
            print(json.dumps(entry, indent=2))
            print(f"{row.what} {args.version} frozen in {manifest}")
            return 0
        versions = [args.version] if args.version is not None else row.versions(root)
        for version in versions:
            row.check(version, root)
            print(f"{row.what} {version} matches {manifest}")
    except PromptIntegrityError as exc:
        raise InputError(str(exc), str(manifest)) from None
    return 0
