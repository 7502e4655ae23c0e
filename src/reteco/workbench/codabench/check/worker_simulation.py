"""A simulated Codabench compute worker, for ``reteco check-bundle``.

It does what the worker does to a submission, on this machine:

- extracts the program, reference data and submission zips with ``ZipFile.extractall``, which
  drops permission bits (as the worker does: a program must be run as ``python3 x.py``);
- lays out the worker's folders under a temporary root: ``program`` (``/app/program``, the
  working directory), ``input/ref``, ``input/res`` (the submission extracted as is, plus the
  ``metadata`` file the worker writes beside it), ``output``; for a code submission first the
  prediction step: ``ingested_program``, ``input_data`` and its ``output`` becoming ``input/res``;
- reads ``command`` from the program's ``metadata.yaml`` and runs it without a shell (the
  worker hands it to Docker, which splits it like ``shlex.split``), ``/app/...`` paths mapped
  to those folders and ``python3`` to an interpreter that has only the image's packages;
- sets the image's environment (``PYTHONUNBUFFERED``, ``PYTHONDONTWRITEBYTECODE``), no
  ``PYTHONPATH``, and no network: the run is wrapped in ``unshare --net`` when the machine
  allows it (otherwise proxies point at a closed loopback port, and the report says so). With
  ``network="loopback"`` (a judge endpoint on this machine, e.g. the tests' fake server) the run
  has no namespace of its own and the proxies point at the closed port for every host but
  127.0.0.1 and localhost (``NO_PROXY``): an HTTP client that honours the proxy variables, as
  the openai SDK does, reaches loopback only. Codabench's worker gives the container network
  unless its operator sets ``COMPETITION_CONTAINER_NETWORK_DISABLED`` (``compute_worker.py``);
  the simulation is stricter;
- stops it at the phase's ``execution_time_limit``.

The interpreter is a virtual environment made from a Python of the bundle's target version,
without pip and without the system's packages, whose site-packages points (a ``.pth`` file)
at a folder holding only the image's numpy, pandas and pyyaml (``vendor.image_site``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

APP = "/app"
MOUNTS = ("program", "ingested_program", "input_data", "input", "output", "shared", "data")
SHELL_CHARACTERS = set("|&;<>$`*?(){}")
NETWORKS = ("none", "loopback")  # what a simulated run may reach
CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
OUTPUT_TAIL = 4000  # characters of a failed run's log kept in the report


class WorkerError(Exception):
    """The worker could not run the program at all (no metadata, a shell command, ...)."""


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    output: Path
    isolated: bool
    timed_out: bool = False


def read_command(program_dir: Path) -> str:
    """The ``command`` of a program's metadata.yaml (or ``metadata``), as the worker reads it."""
    for name in ("metadata.yaml", "metadata"):
        path = program_dir / name
        if path.is_file():
            try:
                content = yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                raise WorkerError(f"{name} is not valid YAML: {exc}") from None
            command = content.get("command") if isinstance(content, dict) else None
            if not isinstance(command, str) or not command.strip():
                raise WorkerError(f"{name} has no command")
            return command
    raise WorkerError("no metadata.yaml at the program's root (the worker looks only there)")


def legacy_substitute(command: str, kind: str) -> str:
    """The worker's replacement of the old ``$input``-style variables (it does it before running)."""
    table = (
        ("$input", "/app/input_data" if kind == "ingestion" else "/app/input"),
        ("$output", "/app/output"),
        ("$program", "/app/program"),
        ("$ingestion_program", "/app/program"),
        ("$hidden", "/app/input/ref"),
        ("$shared", "/app/shared"),
        ("$submission_program", "/app/ingested_program"),
        ("$tmp", "/app/output"),
        ("$predictions", "/app/output" if kind == "ingestion" else "/app/input/res"),
    )
    for variable, path in table:
        command = command.replace(variable, path)
    return command


def command_problems(command: str, kind: str = "scoring") -> list[str]:
    """Why a command would not run on the worker (it is not given to a shell)."""
    problems = []
    command = legacy_substitute(command, kind)
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return [f"the command cannot be split into words: {exc}"]
    if not words:
        return ["the command is empty"]
    shell = sorted({c for w in words for c in w if c in SHELL_CHARACTERS} | ({"&&"} if "&&" in words else set()))
    if shell:
        problems.append(
            f"the command uses shell syntax ({' '.join(shell)}), but the worker runs it without a shell"
        )
    first = words[0]
    if first.startswith("./") or (first.startswith("/app/") and not first.endswith("python3")):
        problems.append(
            f"the command runs {first} directly; zips are extracted without permission bits, so it cannot be "
            "executed: run it through an interpreter (python3 ...)"
        )
    relative = [w for w in words[1:] if w.endswith(".py") and not w.startswith("/")]
    if relative:
        problems.append(
            f"the command names {', '.join(relative)} by a relative path; use /app/program/... so it does not "
            "depend on the working directory"
        )
    return problems


def make_interpreter(python_exe: Path, site: Path, root: Path) -> Path:
    """A clean virtual environment from ``python_exe`` whose only packages are those in ``site``."""
    env_dir = (root / "venv").resolve()
    if not (env_dir / "bin" / "python3").exists():
        if env_dir.exists():
            shutil.rmtree(env_dir)
        subprocess.run([str(python_exe), "-m", "venv", "--without-pip", str(env_dir)], check=True, capture_output=True)
    python = env_dir / "bin" / "python3"
    purelib = subprocess.run(
        [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    (Path(purelib) / "image_packages.pth").write_text(str(site.resolve()) + "\n", encoding="utf-8")
    return python


def base_python() -> Path:
    """This interpreter outside any virtual environment (a venv made from a venv inherits it)."""
    return Path(getattr(sys, "_base_executable", sys.executable))


def network_isolation() -> list[str]:
    """The prefix that runs a command without network, or [] when the machine does not allow it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "--net", "true"], capture_output=True, check=False)
    return [unshare, "--net"] if probe.returncode == 0 else []


def extract(zip_path: Path, dest: Path) -> None:
    """Extract as the worker does: ``extractall``, permission bits dropped."""
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(dest)


def run_program(
    program: Path,
    root: Path,
    python: Path,
    *,
    timeout: int,
    isolation: list[str],
    kind: str = "scoring",
    network: str = "none",
) -> Run:
    """Run a program folder's command with the worker's paths mapped under ``root``; ``network``
    (``NETWORKS``): nothing (``isolation``, else closed proxies), or loopback only (module
    docstring; ``isolation`` is then not used)."""
    if network not in NETWORKS:
        raise ValueError(f"network must be one of {NETWORKS}, not {network!r}")
    command = read_command(program)
    problems = command_problems(command, kind)
    if problems:
        raise WorkerError("; ".join(problems))
    words = shlex.split(legacy_substitute(command, kind))
    mapping = {f"{APP}/{m}": str(root / m) for m in MOUNTS}
    mapping[f"{APP}/program"] = str(program)

    def mapped(word: str) -> str:
        for prefix in sorted(mapping, key=len, reverse=True):
            if word == prefix or word.startswith(prefix + "/"):
                return mapping[prefix] + word[len(prefix):]
        return word

    if words[0] in ("python3", "python"):
        words[0] = str(python)
    else:
        raise WorkerError(f"the command starts with {words[0]}; the simulation runs python3 commands only")
    argv = [words[0]] + [mapped(w) for w in words[1:]]
    return execute(argv, program, python, root, timeout=timeout, isolation=isolation, network=network)


def execute(argv: list[str], cwd: Path, python: Path, root: Path, *, timeout: int, isolation: list[str],
            network: str = "none") -> Run:
    """Run ``argv`` (its interpreter already ``python``) in ``cwd`` as the worker's container
    would: the image's environment, ``network`` as ``run_program`` says, ``root/output`` the
    output folder, stopped after ``timeout`` seconds. Also the CodaLab v1.5 worker's runner
    (``codalab_rules``)."""
    env = {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if network == "loopback":
        isolation = []
        env.update({k: "127.0.0.1,localhost" for k in ("no_proxy", "NO_PROXY")})
    if not isolation:
        # No network namespace here: proxies to a closed loopback port stop HTTP clients at least.
        env.update({k: CLOSED_PROXY for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")})
    output = root / "output"
    output.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            isolation + argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return Run(-1, _text(exc.stdout), _text(exc.stderr), output, bool(isolation), timed_out=True)
    return Run(done.returncode, done.stdout, done.stderr, output, bool(isolation))


def write_worker_metadata(res: Path) -> None:
    """The ``metadata`` file the worker writes into the prediction output (then ``input/res``)."""
    (res / "metadata").write_text("exitCode: 0\nelapsedTime: 1.0\n", encoding="utf-8")


def tail(text: str) -> str:
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def environment_description() -> str:
    return f"{sys.platform}, {os.uname().machine}"
