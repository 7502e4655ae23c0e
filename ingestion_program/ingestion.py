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
to the output unchanged. Exit codes: 0 done, 1 a problem with the submission (said in the log).
"""

import importlib.util
import shutil
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRY = "submission.py"
RESERVED = {"metadata", "metadata.yaml", "__MACOSX"}
EXPECTED = {"1a": ("run.txt",), "1b": ("run.txt",), "2a": ("run.txt",), "2b": ("answers.jsonl",),
            "2c": ("run.txt", "answers.jsonl")}


def main(argv):
    if len(argv) != 3:
        print("usage: ingestion.py INPUT_DATA OUTPUT SUBMISSION", file=sys.stderr)
        return 2
    input_dir, output_dir, submission = (Path(a) for a in argv)
    if (HERE / "vendor").is_dir():
        sys.path.insert(0, str(HERE / "vendor"))
    import json

    task = json.loads((input_dir / "task.json").read_text(encoding="utf-8"))
    subtrack, split = task["subtrack"], task["split"]
    output_dir.mkdir(parents=True, exist_ok=True)
    root = _root(submission)
    print(f"RETECO ingestion: sub-track {subtrack}, split {split}")
    if not (root / ENTRY).is_file():
        print(f"no {ENTRY} in the submission: scored as a results submission (its files as they are)")
        for path in root.iterdir():
            if path.name in RESERVED or path.name.startswith("."):
                continue
            target = output_dir / path.name
            (shutil.copytree if path.is_dir() else shutil.copyfile)(path, target)
        return 0
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
            return 1
        run(input_dir, output_dir, subtrack, split)
    except Exception:  # noqa: BLE001 - the participant's own code: its traceback is theirs to read
        traceback.print_exc()
        print("error: the submission's run() failed (traceback above)", file=sys.stderr)
        return 1
    produced = output_dir / subtrack if (output_dir / subtrack).is_dir() else output_dir
    missing = [name for name in EXPECTED[subtrack] if not (produced / name).is_file()]
    if missing:
        print(f"error: run() wrote no {', '.join(missing)} in the output folder (or in {subtrack}/)", file=sys.stderr)
        return 1
    for name in EXPECTED[subtrack]:
        print(f"wrote {(produced / name).relative_to(output_dir)} ({(produced / name).stat().st_size} bytes)")
    return 0


def _root(submission):
    """The submission's folder, looking through one wrapping top-level folder."""
    entries = [p for p in submission.iterdir() if p.name not in RESERVED and not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not (submission / ENTRY).exists():
        return entries[0]
    return submission


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
