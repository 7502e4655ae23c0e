"""Codabench scoring program: a thin entry point over the reteco package.

Run as ``python3 score.py /app/input /app/output`` (see metadata.yaml); in a CodaLab Competitions
v1.5 bundle as ``python3 $program/score.py $input $output --scores-txt`` (its ``metadata``, added by
``reteco bundle --platform codalab``), which writes scores.txt too. Which reteco it runs:

1. the bundle's ``vendor/`` (reteco and the wheels the platform's image lacks), when
   ``vendor/VENDOR.json`` says its packages were built for this interpreter (Python version and
   platform) and the packages it takes from the image (numpy, pandas, pyyaml) are importable:
   on the platform, always;
2. else an installed reteco (``pip install ./reteco`` from the starting kit), with the bundle's
   WordNet for METEOR: scoring on a participant's machine with another Python;
3. else nothing: one line on stderr saying what is needed, exit 3.

Exit codes (``reteco.problems``): 0 scored, 1 the submission cannot be used, 2 called wrongly, 3
an internal error (a broken bundle too: reteco that cannot be imported is never the
participant's fault).
"""

import importlib.util
import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "vendor"
VENDOR_MANIFEST = VENDOR / "VENDOR.json"  # reteco.workbench.codabench.bundle.vendor.VENDOR_MANIFEST
WORDNET = VENDOR / "nltk_data" / "corpora" / "wordnet"  # the bundle's WordNet 3.0 (METEOR)

# reteco.problems.EXIT_INTERNAL, which cannot be imported when reteco itself cannot.
EXIT_INTERNAL = 3
IMAGE_LACKS = "the platform's image"  # ends the message of a module the image should provide


def vendor_problem() -> str | None:
    """Why this interpreter cannot use ``vendor/`` (None: it can)."""
    try:
        record = json.loads(VENDOR_MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "the bundle has no readable vendor/VENDOR.json"
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    target = record.get("python")
    if target != running:
        return f"the bundle's packages (vendor/) are built for Python {target}, not {running}"
    platforms = record.get("platforms") or []
    if record.get("source") == "environment":
        usable = sys.platform in platforms
    else:  # manylinux wheels for the image's machine
        usable = sys.platform.startswith("linux") and any(p.endswith(platform.machine()) for p in platforms)
    if not usable:
        return f"the bundle's packages (vendor/) are built for {', '.join(platforms) or 'another platform'}"
    missing = [name for name in record.get("from_image", []) if not _installed(name)]
    if missing:
        return f"Python {running} here lacks {', '.join(missing)}, which {IMAGE_LACKS} provides"
    return None


def _installed(distribution: str) -> bool:
    # By distribution name (pyyaml, not yaml): importlib.metadata matches names normalized.
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def choose_reteco() -> str | None:
    """Put the reteco to run on the path; None, or the one line saying why none can run."""
    problem = vendor_problem()
    if problem is None:
        sys.path.insert(0, str(VENDOR))
        return None
    if importlib.util.find_spec("reteco") is None:
        if problem.endswith(f"which {IMAGE_LACKS} provides") and Path.cwd() == VENDOR.parent:
            # Run from its own folder, as the worker runs it (cwd /app/program): the competition's
            # image lacks a module the bundle was built against.
            return (
                f"score.py: internal error, not a problem of your submission: {problem}. The competition's "
                "Docker image (docker_image) does not have what the scoring program was built for; the "
                "organizers must name the image by the digest the bundle was tested on (docs/organizers.md, "
                "\"The image\"); please tell them"
            )
        return (
            f"score.py: cannot score here: {problem}, and no reteco is installed: run it with Python "
            "3.12 with numpy, pandas and pyyaml (the platform's image), or install the scorer first "
            '(pip install "./reteco" from the starting kit)'
        )
    if VENDOR.is_dir():  # a bundle's program: say which reteco scores (the repository's has no vendor/)
        print(f"note: {problem}; scoring with the reteco installed here", file=sys.stderr)
    if WORDNET.is_dir():  # the bundle's WordNet, as on the platform (reteco.formats.wordnet.ENV_VAR)
        os.environ.setdefault("NLTK_DATA", str(WORDNET.parents[1]))
        os.environ.setdefault("RETECO_WORDNET", str(WORDNET))
    return None


if __name__ == "__main__":
    refusal = choose_reteco()
    if refusal is not None:
        print(refusal, file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    try:
        from reteco.codabench.program.scoring_program import main
    except Exception as exc:  # noqa: BLE001 - the bundle is broken: say so, not a traceback
        print(f"internal error: the scoring program cannot load reteco ({type(exc).__name__}); "
              "please report it to the organizers", file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    status = main(sys.argv[1:], own_process=True)  # own_process: this process's start counts (judge_plan)
    # Every output is written and closed by now. Ending without the interpreter's teardown saves
    # freeing the process's objects one by one, all of it after the judging deadline
    # (reteco.codabench.program.judge_plan, bench/README.md): with nltk's WordNet reader (read
    # when the bundle's WordNet has no prepared map) 3.5 s on 2 quiet cores, 8 s under load.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
