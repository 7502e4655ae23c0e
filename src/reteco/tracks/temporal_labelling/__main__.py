"""``python -m reteco.tracks.temporal_labelling pool|label-temporal|label-export|label-import ...``

The same commands as ``reteco pool`` etc., with the same exit codes (0 done, 1 unusable input or
unlabelled pairs, 2 internal error), for use before they are wired into the ``reteco`` command.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from reteco import __version__
from reteco.problems import InputError
from reteco.tracks.temporal_labelling import (
    add_label_export_parser,
    add_label_import_parser,
    add_label_temporal_parser,
    add_pool_parser,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reteco.tracks.temporal_labelling")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (add_pool_parser, add_label_temporal_parser, add_label_export_parser, add_label_import_parser):
        add(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        for line in exc.problems.lines():
            print(line, file=sys.stderr)
        return 1
    except Exception:
        if os.environ.get("RETECO_DEBUG"):
            traceback.print_exc()
        print(f"internal error in reteco {__version__} ({sys.exc_info()[0].__name__}); please report it", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
