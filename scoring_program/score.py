"""Codabench scoring program: a thin entry point over the reteco package.

Run as ``python3 score.py /app/input /app/output`` (see metadata.yaml). Wheels or the package
vendored next to this file (``vendor/``) are used when present, so the stock image needs no
network.
"""

import sys
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "vendor"
if VENDOR.is_dir():
    sys.path.insert(0, str(VENDOR))

from reteco.codabench.scoring_program import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
