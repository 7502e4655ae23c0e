"""The simulated CodaLab Competitions v1.5 compute worker, for ``reteco check-bundle`` (``codalab_rules``).

What v1.5's worker does (codalab/competitions-v1-compute-worker, ``worker.py``; the server's
side in codalab/codalab-competitions ``apps/web/tasks.py``), done on this machine on
``worker_simulation``'s interpreter (the image's Python with only the image's packages, no
network) and runner:

- ``lay_out``: each bundle extracted as ``get_bundle`` does (a root of at most two entries
  without ``metadata``, whose first folder holds one, replaced by that folder; zips at the root
  extracted into folders of their names): ``run/program``, ``run/input/ref``,
  ``run/input/res``, beside ``run/input/metadata`` (the server's ``input.txt``: the bundles'
  addresses and who submitted, ``score``), ``run/output``, ``run/temp``;
- ``commands``: the program's ``metadata`` (the only file read; ``command`` a string or a
  list), ``substitute``: ``$program``, ``$predictions``, ``$input``, ``$output``, ``$tmp``,
  ``$shared`` replaced in that order, the command split at single spaces, no shell (``run``);
- the command run from ``run/``, within the phase's ``execution_time_limit`` (the server sends
  it as is, ``_prepare_compute_worker_run``).

``[codalab-worker]``: exit 0. ``[codalab-scores]``: ``scores.txt`` at the output's root
(without it the server fails the submission, ``update_submission``), every line read as the
server reads it (``read_scores_txt``), the same keys and numbers as ``scores.json``; then
``scoring_check.check_outputs``'s rules on scores.json, details.json and the page. Each phase
scores ``solutions/<split>_<sub>.zip`` of the bundle (v1.5 ignores it); a phase without one is
an error, as a Codabench task without a solution is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import zipfile
from glob import glob
from pathlib import Path

import yaml

from reteco.outputs.scores import SCORES_TXT
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.check import scoring_check
from reteco.workbench.codabench.check import worker_simulation as worker
from reteco.workbench.codabench.check.check_report import BundleTask, Report

METADATA = "metadata"
# The worker's replacements, in its order (run, worker.py): relative to the run folder.
VARIABLES = (("$program", "program"), ("$predictions", "input/res"), ("$input", "input"), ("$output", "output"),
             ("$tmp", "temp"), ("$shared", "shared"))
# What the server writes into input/metadata (score, tasks.py): the bundles' URLs and who submitted.
INPUT_METADATA = ("ref: ref.zip\nres: res.zip\nsubmitted-by: check-bundle\ncompetition-submission: 1\n"
                  "automatic-submission: False\n")


def lay_out(zip_path: Path, dest: Path) -> None:
    """Extract a bundle into ``dest`` as v1.5's worker does (``get_bundle``): unless the root holds
    ``metadata`` among more than two entries, the first of its folders that holds a ``metadata``
    replaces it; zips at the root are then extracted into folders of their names."""
    worker.extract(zip_path, dest)
    names = sorted(os.listdir(dest))  # the worker's os.listdir order is the file system's; sorted here
    if not (len(names) > 2 and METADATA in names):
        folder = next((dest / n for n in names if (dest / n / METADATA).exists() and (dest / n).is_dir()), None)
        if folder is not None:
            moved = dest.with_name(dest.name + "_tmp")
            shutil.copytree(folder, moved)
            shutil.rmtree(dest)
            shutil.move(str(moved), str(dest))
    for inner in glob(str(dest / "*.zip")):
        with zipfile.ZipFile(inner) as archive:
            archive.extractall(os.path.splitext(inner)[0])


def commands(program: Path) -> list[str] | str:
    """The program's commands as the worker reads ``metadata``, or why there are none."""
    path = program / METADATA
    if not path.is_file():
        return "no metadata file at its root (v1.5's worker reads only metadata, never metadata.yaml)"
    try:
        meta = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return f"metadata is not valid YAML ({exc})"
    command = meta.get("command") if isinstance(meta, dict) else None
    if isinstance(command, str) and command.strip():
        return [command.strip()]
    if isinstance(command, list) and command and all(isinstance(c, str) and c.strip() for c in command):
        return [c.strip() for c in command]
    return "metadata has no command"


def substitute(command: str, run_dir: Path) -> list[str]:
    """The worker's argv for ``command``: variables replaced by the run's folders, split at single spaces."""
    for variable, folder in VARIABLES:
        command = command.replace(variable, str(run_dir / folder))
    return command.split(" ")


def simulate(content: dict, root: Path, phases: dict[int, BundleTask], programs: dict[Path, Path],
              subtrack: str | None, report: Report, *, cache: Path, python_exe, wheels, tmp: Path) -> None:
    """Score each phase's solution of ``subtrack`` (``programs``: each program zip's laid-out folder)."""
    runnable = {n: t for n, t in phases.items() if "scoring_program" in t.files and "reference_data" in t.files}
    python = scoring_check.prepare_interpreter(
        {"docker_image": content.get("competition_docker_image")}, runnable, lambda local: programs[local], report,
        cache, python_exe, wheels,
    )
    if python is None:
        return
    isolation = worker.network_isolation()
    if not isolation:
        report.note("no network namespace here (unshare --net): the simulated runs had network access blocked only by proxies")
    for number, task in runnable.items():
        split = (task.phase_record or {}).get("split")
        solution = root / definition.solution_path(str(split), str(subtrack))
        if not solution.is_file():  # as Codabench's check: a phase nothing exercises is not checked
            report.error("codalab-worker", f"phase {number}: no {definition.solution_path(str(split), str(subtrack))} "
                         "in the bundle (v1.5 ignores it; check-bundle scores it): the phase cannot be simulated")
            continue
        run_phase(task, solution, programs[task.files["scoring_program"]], python, isolation, report, tmp)


def run_phase(task: BundleTask, solution: Path, program: Path, python: Path, isolation: list[str], report: Report,
              tmp: Path) -> None:
    """One submission through the simulated v1.5 worker, its output checked (module docstring)."""
    label = f"solution {solution.name} on phase {task.index} ({task.name})"
    run_dir = Path(tempfile.mkdtemp(prefix="v15-run-", dir=tmp))
    (run_dir / "program").symlink_to(program.resolve(), target_is_directory=True)
    lay_out(task.files["reference_data"], run_dir / "input" / "ref")
    lay_out(solution, run_dir / "input" / "res")
    (run_dir / "input" / METADATA).write_text(INPUT_METADATA, encoding="utf-8")
    (run_dir / "temp").mkdir()
    limit = int((task.phase or {}).get("execution_time_limit", 300))
    started = time.monotonic()
    commands_ = commands(program)
    run = None
    for command in commands_ if isinstance(commands_, list) else []:
        argv = substitute(command, run_dir)
        argv[0] = str(python)
        run = worker.execute(argv, run_dir, python, run_dir, timeout=limit, isolation=isolation)
        if run.timed_out or run.returncode != 0:
            break
    if run is None:
        return
    report.runs.append({"task": task.name, "solution": solution.name, "returncode": run.returncode,
                        "seconds": round(time.monotonic() - started, 2)})
    if run.timed_out:
        report.error("codalab-worker", f"{label}: did not finish within the phase's execution_time_limit ({limit} s)")
        return
    if run.returncode != 0:
        report.error("codalab-worker", f"{label}: the scoring program exited {run.returncode}\n"
                     f"{worker.tail(run.stderr or run.stdout)}")
        return
    scores_txt_errors(run.output, label, report)
    scoring_check.check_outputs(task, label, run.output, report)


def read_scores_txt(path: Path) -> dict[str, float]:
    """``scores.txt`` as v1.5's server reads it (``update_submission``): non-empty lines split at
    their one colon, the key stripped, the value through ``float``; raises ValueError where the
    server would fail."""
    scores = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line:
            continue
        parts = line.split(":")
        if len(parts) != 2:
            raise ValueError(f"line {number}: {len(parts) - 1} colons, the server needs exactly one")
        try:
            scores[parts[0].strip()] = float(parts[1])
        except ValueError:
            raise ValueError(f"line {number}: {parts[1].strip()!r} is not a number") from None
    return scores


def scores_txt_errors(output: Path, label: str, report: Report) -> None:
    """``[codalab-scores]``: scores.txt present, readable by the server, equal to scores.json."""
    path = output / SCORES_TXT
    if not path.is_file():
        report.error("codalab-scores", f"{label}: no scores.txt at the output's root: the server fails the submission")
        return
    try:
        text_scores = read_scores_txt(path)
    except ValueError as exc:
        report.error("codalab-scores", f"{label}: scores.txt {exc}")
        return
    try:
        json_scores = json.loads((output / "scores.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # check_outputs says what is wrong with scores.json
    if text_scores != json_scores:
        differ = sorted(k for k in set(text_scores) | set(json_scores) if text_scores.get(k) != json_scores.get(k))
        report.error("codalab-scores", f"{label}: scores.txt and scores.json differ on {', '.join(differ)}")
