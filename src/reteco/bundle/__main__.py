"""``python -m reteco.bundle bundle|check-bundle ...``: the two bundle commands without the main CLI.

``make bundle`` calls this entry point, so it works whether or not the ``reteco`` command lists
them; both behave as ``reteco bundle`` and ``reteco check-bundle`` (exit 1 with the messages on
input that cannot be used).
"""

from __future__ import annotations

import argparse
import sys

from reteco.bundle.builder import add_bundle_parser
from reteco.bundle.checker import add_check_bundle_parser
from reteco.problems import InputError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reteco.bundle")
    sub = parser.add_subparsers(dest="command", required=True)
    add_bundle_parser(sub)
    add_check_bundle_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        for line in exc.problems.lines():
            print(line, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
