"""RETECO ingestion program: runs a participant's code submission over the phase's input data.

Run by the Codabench worker as ``python3 ingestion.py INPUT_DATA OUTPUT SUBMISSION`` (see
metadata.yaml). ``INPUT_DATA`` is the split's release files without labels plus ``task.json``
(sub-track and split); ``SUBMISSION`` is the participant's zip, extracted.

The interface (the starting kit's README, "Code submissions"): the submission holds
``submission.py`` defining ``run(input_dir, output_dir, subtrack, split)``, which reads the
release-layout ``input_dir`` and writes into ``output_dir`` the files a results submission holds
(``run.txt``, ``answers.jsonl``, or a ``<sub-track>/`` folder of them). The reteco package and
its dependencies (``vendor/`` beside this file) are importable, and so is a ``vendor/`` folder of
the submission's own. The output is then scored by the same scoring program as a results
submission.

A submission without ``submission.py`` is taken as a results submission: its files are copied
to the output unchanged. Exit codes (``reteco.problems``, as for every reteco program): 0 done,
1 a problem with the submission (said in the log), 2 called wrongly, 3 an internal error (the
phase's input data or this program; never the participant's fault).
"""

import importlib.util
import json
import shutil
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
if (HERE / "vendor").is_dir():
    sys.path.insert(0, str(HERE / "vendor"))

try:  # the bundle's vendored reteco (or an installed one): its exit codes and messages
    from reteco.problems import internal_error
    from reteco.problems import EXIT_INPUT, EXIT_OK, EXIT_USAGE, quoted
except Exception as exc:  # noqa: BLE001 - a broken bundle is an internal error (3), never the participant's (1)
    print(f"internal error: the ingestion program cannot load reteco ({type(exc).__name__}); "
          "please report it to the organizers", file=sys.stderr)
    sys.exit(3)

ENTRY = "submission.py"
RESERVED = {"metadata", "metadata.yaml", "__MACOSX"}
EXPECTED = {"1a": ("run.txt",), "1b": ("run.txt",), "2a": ("run.txt",), "2b": ("answers.jsonl",),
            "2c": ("run.txt", "answers.jsonl")}


def main(argv):
    if len(argv) != 3:
        print("usage: ingestion.py INPUT_DATA OUTPUT SUBMISSION", file=sys.stderr)
        return EXIT_USAGE
    input_dir, output_dir, submission = (Path(a) for a in argv)
    try:
        task = json.loads((input_dir / "task.json").read_text(encoding="utf-8"))
        subtrack, split = task["subtrack"], task["split"]
        if subtrack not in EXPECTED:
            raise ValueError(f"unknown sub-track {subtrack!r}")
        output_dir.mkdir(parents=True, exist_ok=True)
        root = _root(submission)
    except Exception as exc:  # noqa: BLE001 - the phase's data or the worker, not the participant
        return internal_error(exc)
    print(f"RETECO ingestion: sub-track {subtrack}, split {split}")
    if not (root / ENTRY).is_file():
        print(f"no {ENTRY} in the submission: scored as a results submission (its files as they are)")
        for path in root.iterdir():
            if path.name in RESERVED or path.name.startswith("."):
                continue
            target = output_dir / path.name
            try:
                (shutil.copytree if path.is_dir() else shutil.copyfile)(path, target)
            except (OSError, shutil.Error) as exc:  # e.g. a broken symbolic link in the zip
                print(f"error: {quoted(path.name)} in the submission cannot be copied ({_reason(exc)}); "
                      "submit plain files", file=sys.stderr)
                return EXIT_INPUT
        return EXIT_OK
    if (root / "vendor").is_dir():
        sys.path.insert(0, str(root / "vendor"))
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("submission", root / ENTRY)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        run = getattr(module, "run", None)
        if not callable(run):
            print(f"error: {ENTRY} defines no run(input_dir, output_dir, subtrack, split)", file=sys.stderr)
            return EXIT_INPUT
        run(input_dir, output_dir, subtrack, split)
    except Exception:  # noqa: BLE001 - the participant's own code: its traceback is theirs to read
        traceback.print_exc()
        print("error: the submission's run() failed (traceback above)", file=sys.stderr)
        return EXIT_INPUT
    produced = output_dir / subtrack if (output_dir / subtrack).is_dir() else output_dir
    missing = [name for name in EXPECTED[subtrack] if not (produced / name).is_file()]
    if missing:
        print(f"error: run() wrote no {', '.join(missing)} in the output folder (or in {subtrack}/)", file=sys.stderr)
        return EXIT_INPUT
    for name in EXPECTED[subtrack]:
        print(f"wrote {(produced / name).relative_to(output_dir)} ({(produced / name).stat().st_size} bytes)")
    return EXIT_OK


def _reason(exc):
    return getattr(exc, "strerror", None) or type(exc).__name__


def _root(submission):
    """The submission's folder, looking through one wrapping top-level folder."""
    entries = [p for p in submission.iterdir() if p.name not in RESERVED and not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not (submission / ENTRY).exists():
        return entries[0]
    return submission


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
