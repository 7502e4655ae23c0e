"""``reteco prepare``: an organizers' release -> reference data, one folder per sub-track."""

from __future__ import annotations

import sys
from pathlib import Path

from reteco.commands.output_folder import check_output_folder
from reteco.subtracks import SUBTRACK_IDS


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("prepare", help="release folder -> reference data, one folder per sub-track")
    p.add_argument("--release", type=Path, required=True)
    p.add_argument("--split", required=True, help="train, dev or test")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--subtracks", default=",".join(SUBTRACK_IDS), help="comma-separated (default: all)")
    p.set_defaults(func=cmd_prepare)


def cmd_prepare(args) -> int:
    from reteco.release.prepare import format_summary, prepare_release

    check_output_folder(args.out, "--out")
    subtracks = tuple(s.strip() for s in args.subtracks.split(",") if s.strip())
    # Progress bars only on a terminal: a log file or a pipe gets the summary alone.
    summary = prepare_release(args.release, args.split, args.out, subtracks=subtracks, progress=sys.stderr.isatty())
    print(format_summary(summary))
    return 0
