"""check-bundle's second pass: every solution of every task through the simulated compute worker.

``[worker]``/``[scores]``/``[leak]``: the simulated worker (``reteco.workbench.codabench.check.worker_simulation``)
scores every solution of every task within the phase's effective time limit
(``competition_rules.effective_time_limit``: what the site sends the worker), and
``scores.json`` must hold every leaderboard key of the task's sub-track as a finite number,
except the keys allowed to be absent, whose reason ``details.json`` must give; a phase without
per-topic figures must write none; a task that judges in the scoring program (its reference
data holds the judge's key) must leave its key in no log and no output file
(``judge_rules.key_leaks``).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reteco.codabench.program import image
from reteco.problems import EXIT_INCOMPLETE, InputError
from reteco.subtracks import KEYS as SCORE_KEYS
from reteco.subtracks import SUBTRACKS
from reteco.workbench.codabench.bundle import vendor
from reteco.workbench.codabench.check import judge_rules
from reteco.workbench.codabench.check import worker_simulation as worker
from reteco.workbench.codabench.check.check_report import BundleTask, Report
from reteco.workbench.codabench.check.competition_rules import PLATFORM_TIME_LIMIT, effective_time_limit

MISSING_PACKAGE = re.compile(r"No module named|not installed|cannot be read")
TOPIC_SECTIONS = {"per_unit", "per_step", "per_turn", "per_topic", "per_query"}


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` (X.Y) on this machine: this one, pyenv's, or PATH's.

    Each candidate is asked its version: a pyenv shim on PATH may exist and still fail.
    """
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return worker.base_python()
    candidates = sorted(Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"), reverse=True)
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        probe = subprocess.run(
            [str(candidate), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def simulate(
    content: dict,
    root: Path,
    tasks: dict,
    datasets: dict[str, Path],
    report: Report,
    *,
    cache: Path,
    python_exe: Path | None,
    wheels: str | None,
    tmp: Path,
    time_limit: int = PLATFORM_TIME_LIMIT,
    network: str = "none",
) -> None:
    """Run every solution of every task that has a scoring program and reference data;
    ``network``: what the runs may reach (``worker_simulation.NETWORKS``)."""
    programs: dict[Path, Path] = {}

    def extracted(local: Path) -> Path:
        if local not in programs:
            target = tmp / "programs" / f"{len(programs)}"
            if local.is_dir():
                shutil.copytree(local, target)
            else:
                worker.extract(local, target)
            programs[local] = target
        return programs[local]

    runnable = {i: t for i, t in tasks.items() if "scoring_program" in t.files and "reference_data" in t.files}
    if not runnable:
        report.note("no task could be simulated")
        return
    python = prepare_interpreter(content, runnable, extracted, report, cache, python_exe, wheels)
    if python is None:
        return
    isolation = worker.network_isolation() if network == "none" else []
    if network == "loopback":
        report.note("the simulated runs could reach loopback (127.0.0.1) only, through the proxy variables")
    elif not isolation:
        report.note("no network namespace here (unshare --net): the simulated runs had network access blocked only by proxies")
    if any(t.judged for t in runnable.values()) and network == "none":
        report.note("the judged tasks' runs had no network: their judge keys are absent (service unreachable), "
                    "which the checks accept")

    jobs = []
    for solution in content.get("solutions") or []:
        if "path" not in solution:
            continue
        path = solution["path"]
        local = datasets.get(path) if path in datasets else (root / path)
        if not Path(local).exists():
            continue
        for ref in solution.get("tasks", []):
            task = runnable.get(ref)
            if task is not None:
                jobs.append((task, solution, Path(local)))
    for task, _, _ in jobs:  # extract every program before the runs share them
        for kind in ("scoring_program", "ingestion_program"):
            if kind in task.files:
                extracted(task.files[kind])

    def run(job) -> None:
        task, solution, submission = job
        limit = effective_time_limit(task.phase or {}, time_limit)
        _run_one(task, solution, submission, extracted, python, isolation, report, tmp, limit, network)

    # Runs are subprocesses: a few at a time use the machine's cores.
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        list(pool.map(run, jobs))
    report.runs.sort(key=lambda r: (str(r["task"]), str(r["solution"])))
    report.errors.sort()


def prepare_interpreter(content, runnable, extracted, report: Report, cache, python_exe, wheels) -> Path | None:
    """The image's Python with only the image's packages the programs take from it, or None after
    reporting; ``content["docker_image"]`` must be the image the programs were built for. Also
    the CodaLab v1.5 check's (``codalab_rules``)."""
    manifests = {}
    for task in runnable.values():
        program = extracted(task.files["scoring_program"])
        manifests[program] = json.loads((program / "vendor" / vendor.VENDOR_MANIFEST).read_text(encoding="utf-8"))
    targets = {(m["python"], m["source"]) for m in manifests.values()}
    if len(targets) > 1:
        report.error("program", f"scoring programs built for different Pythons or sources: {sorted(targets)}")
        return None
    version, source = targets.pop()
    if wheels is not None and wheels != source:
        report.note(f"the scoring program's wheels come from {source}, not {wheels}")
    docker_image = content.get("docker_image")
    built_for = {m.get("image") for m in manifests.values()}
    if docker_image not in built_for:
        report.error("required", f"docker_image is {docker_image!r} but the scoring program was built for {sorted(built_for)}")
    interpreter = Path(python_exe) if python_exe else find_python(version)
    if interpreter is None:
        report.error(
            "worker",
            f"no Python {version} here to simulate the worker (the image's interpreter); install it, pass "
            "--python-exe, or build with --python for an interpreter you have",
        )
        return None
    try:
        # Code submissions run the baseline, whose bm25s needs the image's scipy too.
        extra = ("scipy",) if any("ingestion_program" in t.files for t in runnable.values()) else ()
        taken = sorted({name for m in manifests.values() for name in m.get("from_image", image.SIMULATED)})
        site = vendor.image_site(version, source, cache, tuple(taken) + extra)
        python = worker.make_interpreter(interpreter, site, cache / f"sim-{version}-{source}")
    except (InputError, subprocess.CalledProcessError, OSError) as exc:
        report.error("worker", f"cannot set up the image's Python {version} ({interpreter}): {exc}")
        return None
    report.note(f"simulated worker: Python {version} ({interpreter}), image packages from {source}")
    return python


def _copy_in(source: Path, dest: Path) -> None:
    """A zip extracted as the worker does, or a folder copied."""
    if source.is_file():
        worker.extract(source, dest)
    else:
        shutil.copytree(source, dest)


def _run_one(task: BundleTask, solution: dict, submission: Path, extracted, python, isolation, report: Report,
             tmp: Path, limit: int, network: str = "none") -> None:
    label = f"solution {solution.get('name', solution.get('index'))!r} on task {task.name!r}"
    run_root = Path(tempfile.mkdtemp(prefix="run-", dir=tmp))
    started = time.monotonic()
    try:
        res = run_root / "input" / "res"
        if "ingestion_program" in task.files:
            # The prediction step is a run of its own on the worker, with its own time limit.
            predict_root = run_root / "predict"
            _copy_in(submission, predict_root / "ingested_program")
            if "input_data" in task.files:
                worker.extract(task.files["input_data"], predict_root / "input_data")
            ingestion = extracted(task.files["ingestion_program"])
            run = worker.run_program(ingestion, predict_root, python, timeout=limit, isolation=isolation, kind="ingestion")
            if _failed(run, "ingestion", label, limit, report):
                return
            shutil.copytree(run.output, res)
        else:
            _copy_in(submission, res)
        worker.write_worker_metadata(res)
        _copy_in(task.files["reference_data"], run_root / "input" / "ref")
        program = extracted(task.files["scoring_program"])
        run = worker.run_program(program, run_root, python, timeout=limit, isolation=isolation, network=network)
    except worker.WorkerError as exc:
        report.error("worker", f"{label}: {exc}")
        return
    if task.judged:
        key = judge_rules.read_key(run_root / "input" / "ref")
        leaks = judge_rules.key_leaks(key, {"the log (stdout)": run.stdout, "the log (stderr)": run.stderr}, run.output)
        for where in leaks:
            report.error("leak", f"{label}: the judge's key is in {where}")
        host = judge_rules.read_endpoint_host(run_root / "input" / "ref")
        for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
            if host and host in (text or ""):
                report.error("leak", f"{label}: the judge's endpoint ({host}) is in the log ({name}), which participants see")
    seconds = time.monotonic() - started
    entry = {"task": task.name, "solution": solution.get("name"), "returncode": run.returncode, "seconds": round(seconds, 2),
             "keys": _written_keys(run.output)}
    report.runs.append(entry)
    if task.judged and run.returncode == EXIT_INCOMPLETE and not run.timed_out:
        # The judge did not finish (unreachable with network "none"): the program failed the run
        # rather than rank it without its ranked figure (scoring_program.refuse_unranked).
        report.note(f"{label}: judging did not finish in the simulated worker (network: {network}), so the run was "
                    "failed, not ranked (exit 4): where the real worker cannot reach the judge, every submission of "
                    "this phase whose ranking needs the judge fails and is judged after the phase; run the judge probe "
                    "on the real queue before the phase (docs/codabench_judge.md)")
        return
    if not _failed(run, "scoring", label, limit, report):
        check_outputs(task, label, run.output, report)


def _written_keys(output: Path) -> list[str]:
    """The keys of a run's scores.json (checked by ``check_outputs``), for the report."""
    try:
        scores = json.loads((output / "scores.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sorted(scores) if isinstance(scores, dict) else []


def _failed(run: worker.Run, kind: str, label: str, limit: int, report: Report) -> bool:
    """Whether a program's run timed out or exited non-zero (then reported)."""
    if run.timed_out:
        report.error("worker", f"{label}: the {kind} program did not finish within the phase's effective time limit "
                     f"({limit} s)")
        return True
    if run.returncode != 0:
        report.error("worker", f"{label}: the {kind} program exited {run.returncode}\n"
                     f"{worker.tail(run.stderr or run.stdout)}")
        return True
    return False


def check_outputs(task: BundleTask, label: str, output: Path, report: Report) -> None:
    """One scoring run's output folder: scores.json finite and complete, reasons, page, no leak."""
    scores_path = output / "scores.json"
    if not scores_path.is_file():
        report.error("scores", f"{label}: no scores.json")
        return

    def refuse(constant):
        raise ValueError(f"{constant} is not a finite number")

    try:
        scores = json.loads(scores_path.read_text(encoding="utf-8"), parse_constant=refuse)
    except ValueError as exc:
        report.error("scores", f"{label}: scores.json is not a JSON object of finite numbers ({exc})")
        return
    if not isinstance(scores, dict):
        report.error("scores", f"{label}: scores.json is not a JSON object")
        return
    bad = [k for k, v in scores.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        report.error("scores", f"{label}: not finite numbers: {', '.join(bad)}")
    details = {}
    if (output / "details.json").is_file():
        details = json.loads((output / "details.json").read_text(encoding="utf-8"))
    sub = task.subtrack
    if sub not in SUBTRACKS:
        report.error("scores", f"{label}: unknown sub-track {sub!r}")
        return
    reasons = details.get("absent_scores", {}) if isinstance(details, dict) else {}
    for key in SUBTRACKS[sub].keys:
        if key in scores:
            continue
        if SCORE_KEYS[key].absent_when is None:
            report.error("scores", f"{label}: scores.json lacks {key}")
        elif not (isinstance(reasons.get(key), str) and reasons[key].strip()):
            report.error("scores", f"{label}: {key} is absent and details.json does not say why (absent_scores)")
        elif MISSING_PACKAGE.search(reasons[key]):
            # Allowed to be absent, but not because the bundle left out what computes it.
            report.error("scores", f"{label}: {key} is absent because the bundle lacks a package or its data: "
                         f"{reasons[key].splitlines()[0]}")
    if not (output / "detailed_results.html").is_file():
        report.error("scores", f"{label}: no detailed_results.html")
    record = task.phase_record or {}
    if record.get("per_topic") is False:
        leaked = sorted(_keys_named(details, TOPIC_SECTIONS))
        if leaked:
            report.error("leak", f"{label}: per-topic figures ({', '.join(leaked)}) written in a phase that withholds them")


def scoring_output_errors(subtrack: str, per_topic: bool, output: Path, label: str = "output") -> list[str]:
    """check-bundle's verdict on one scoring run's output folder (scores.json, details.json, page)."""
    report = Report(output)
    task = BundleTask(0, label, subtrack=subtrack, phase_record={"per_topic": per_topic})
    check_outputs(task, label, output, report)
    return report.errors


def _keys_named(value, names: set[str]) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in names and isinstance(item, (list, dict)) and item:
                found.add(key)
            found |= _keys_named(item, names)
    elif isinstance(value, list):
        for item in value:
            found |= _keys_named(item, names)
    return found
