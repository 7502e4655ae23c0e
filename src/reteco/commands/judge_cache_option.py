"""``--judge-cache DIR``: one spelling on every command that reads or writes the judge cache.

The judge cache (``reteco.llm.cache``) keeps every request and reply sent to the LLM: the
generation judge's (2b/2c) and the temporal labeller's (``label-temporal``) alike, in one folder,
by default ``$RETECO_CACHE_DIR``, else ``$XDG_CACHE_HOME/reteco/judge``. Some commands had
another spelling before (``reteco judge --cache``, ``judge-meta`` and ``label-temporal
--cache-dir``): it still works, so no organizer's script breaks, is left out of --help (which
names it in the option's help), and says on stderr what the option is now called.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

OPTION = "--judge-cache"
DEFAULT = "default: $RETECO_CACHE_DIR, else $XDG_CACHE_HOME/reteco/judge"


def add_judge_cache_option(parser: argparse.ArgumentParser, *, used_for: str = "", former: str | None = None) -> None:
    """Add ``--judge-cache DIR`` (``args.judge_cache``, None when not given: the default cache)
    to ``parser``; ``used_for`` says what the command keeps there, ``former`` is the command's
    old spelling, still accepted."""
    note = f"; formerly {former}" if former else ""
    parser.add_argument(OPTION, type=Path, metavar="DIR", help=f"judge cache folder{used_for} ({DEFAULT}{note})")
    if former:
        parser.add_argument(former, dest="judge_cache", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                            action=_FormerSpelling)


class _FormerSpelling(argparse.Action):
    """Stores the value as ``--judge-cache`` does, and says the option's name now."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is now {OPTION} (the old spelling still works)", file=sys.stderr)
        setattr(namespace, self.dest, values)
