"""Codabench scoring program: a thin entry point over the reteco package.

Run as ``python3 score.py /app/input /app/output`` (see metadata.yaml). Wheels or the package
vendored next to this file (``vendor/``) are used when present, so the stock image needs no
network. Exit codes (``reteco.problems``): 0 scored, 1 the submission cannot be used, 2 called
wrongly, 3 an internal error (a broken bundle too: reteco that cannot be imported is never the
participant's fault).
"""

import sys
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "vendor"
if VENDOR.is_dir():
    sys.path.insert(0, str(VENDOR))

# reteco.problems.EXIT_INTERNAL, which cannot be imported when reteco itself cannot.
EXIT_INTERNAL = 3

if __name__ == "__main__":
    try:
        from reteco.codabench.scoring_program import main
    except Exception as exc:  # noqa: BLE001 - the bundle is broken: say so, not a traceback
        print(f"internal error: the scoring program cannot load reteco ({type(exc).__name__}); "
              "please report it to the organizers", file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    sys.exit(main(sys.argv[1:]))
