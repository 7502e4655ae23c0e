"""``--judge-cache DIR`` and ``--judge-config FILE``: one spelling on every command that uses them.

The judge cache (``reteco.llm.cache``) keeps every request and reply sent to the LLM: the
generation judge's (2b/2c) and the temporal labeller's (``label-temporal``) alike, in one folder,
by default ``$RETECO_CACHE_DIR``, else ``$XDG_CACHE_HOME/reteco/judge``. A cache that cannot be
used (unreadable, locked past its wait limit) stops any command with exit 1 naming the option
(``reteco.commands.main``), never a submission's row. Some commands had
another spelling before (``reteco judge --cache``, ``judge-meta`` and ``label-temporal
--cache-dir``): it still works, so no organizer's script breaks, is left out of --help (which
names it in the option's help), and says on stderr what the option is now called. The same
holds for the judge's configuration: ``--judge-config`` everywhere, ``reteco judge --config`` and
``judge-report --config`` the former spelling.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

OPTION = "--judge-cache"
CONFIG_OPTION = "--judge-config"
DEFAULT = "default: $RETECO_CACHE_DIR, else $XDG_CACHE_HOME/reteco/judge"


def add_judge_cache_option(parser: argparse.ArgumentParser, *, used_for: str = "", former: str | None = None) -> None:
    """Add ``--judge-cache DIR`` (``args.judge_cache``, None when not given: the default cache)
    to ``parser``; ``used_for`` says what the command keeps there, ``former`` is the command's
    old spelling, still accepted."""
    note = f"; formerly {former}" if former else ""
    parser.add_argument(OPTION, type=Path, metavar="DIR", help=f"judge cache folder{used_for} ({DEFAULT}{note})")
    if former:
        add_former_spelling(parser, former, OPTION, "judge_cache")


def describe_judge_cache(cache_dir: Path | None) -> str:
    """Which judge cache a command uses and why, for its log: the folder and where it came from
    (``--judge-cache``, ``$RETECO_CACHE_DIR``, ``$XDG_CACHE_HOME`` or the home folder's default),
    so an organizer who set the variable sees it was read, not "the default cache"."""
    from reteco.llm.cache import default_cache_dir  # loaded when used, as in check_judge_cache

    if cache_dir is not None:
        return f"{cache_dir} ({OPTION})"
    if os.environ.get("RETECO_CACHE_DIR"):
        source = "$RETECO_CACHE_DIR"
    elif os.environ.get("XDG_CACHE_HOME"):
        source = "under $XDG_CACHE_HOME"
    else:
        source = "the default, under the home folder"
    return f"{default_cache_dir()} ({source})"


def check_judge_cache(cache_dir: Path) -> None:
    """Open the judge cache at ``cache_dir`` once, before any work: one that cannot be used
    (unreadable, not a cache, locked) raises JudgeCacheError, which the command reports naming
    ``--judge-cache`` (exit 1), instead of failing every submission."""
    from reteco.llm.cache import JudgeCache

    JudgeCache(cache_dir).close()


def add_judge_config_option(parser: argparse.ArgumentParser, *, help_text: str, former: str | None = None) -> None:
    """Add ``--judge-config FILE`` (``args.judge_config``; None when not given, each command says its default);
    ``former`` is the command's old spelling, still accepted."""
    note = f" (formerly {former})" if former else ""
    parser.add_argument(CONFIG_OPTION, type=Path, metavar="FILE", help=help_text + note)
    if former:
        add_former_spelling(parser, former, CONFIG_OPTION, "judge_config")


def add_former_spelling(parser: argparse.ArgumentParser, former: str, now: str, dest: str) -> None:
    """Accept ``former`` as ``now`` (same destination), hidden from --help, with a note on stderr."""
    parser.add_argument(former, dest=dest, type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                        action=_FormerSpelling, now=now)


class _FormerSpelling(argparse.Action):
    """Stores the value as the option's current spelling does, and says that spelling."""

    def __init__(self, *args, now: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.now = now

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is now {self.now} (the old spelling still works)", file=sys.stderr)
        setattr(namespace, self.dest, values)
