"""Helpers for the bundle tests: zips in memory, a bundle copy with its yaml or members changed.

The session fixtures built on them (the default layout's bundles, their slimmed copies) are in
codabench/conftest.py, so that the bundle tests share one build.
"""

from __future__ import annotations

import io
import shutil
import sys
import zipfile
from pathlib import Path

import yaml

from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle import leaderboards

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# What check-bundle's static pass reads of a scoring program: a slim program keeps only these.
SLIM_PROGRAM = ("metadata.yaml", "score.py", "vendor/VENDOR.json")


def zip_bytes(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def slim_program(program_zip: bytes) -> bytes:
    """A scoring program zip cut to what the static pass reads."""
    program = zipfile.ZipFile(io.BytesIO(program_zip))
    return zip_bytes({n: program.read(n) for n in SLIM_PROGRAM})


def rewrite(source: Path, dest: Path, *, content=None, members=None, yaml_text=None) -> Path:
    """A copy of bundle ``source`` with competition.yaml changed and members replaced."""
    members = dict(members or {})
    with zipfile.ZipFile(source) as archive:
        text = archive.read("competition.yaml").decode("utf-8")
        if content is not None:
            data = yaml.safe_load(text)
            content(data)
            text = yaml.safe_dump(data, sort_keys=False)
        if yaml_text is not None:
            text = yaml_text
        with zipfile.ZipFile(dest, "w") as out:
            out.writestr("competition.yaml", text)
            for info in archive.infolist():
                if info.filename == "competition.yaml" or info.filename in members:
                    continue
                with archive.open(info) as src, out.open(info.filename, "w") as sink:
                    shutil.copyfileobj(src, sink)
            for name, data in members.items():
                out.writestr(name, data)
    return dest


def only_first_task(content: dict, phase_key: str, subtrack: str) -> None:
    """Keep one phase and one task (and its solution) of a competition."""
    reference = next(p for p in definition.PHASES if p.key == phase_key)
    task = next(t for t in content["tasks"] if t["reference_data"] == definition.reference_path(reference, subtrack))
    task = dict(task, index=0)
    phase = next(p for p in content["phases"] if p["name"] == reference.name)
    phase = dict(phase, index=0, tasks=[0])
    phase.pop("end", None)
    solution_path = definition.solution_path(reference.split, subtrack)
    content["tasks"] = [task]
    content["phases"] = [phase]
    content["solutions"] = [dict(s, index=0, tasks=[0]) for s in content["solutions"] if s["path"] == solution_path]
    # A one-sub-track competition's leaderboard holds exactly that sub-track's keys.
    content["leaderboards"][0]["columns"] = [c.as_yaml() for c in leaderboards.columns([subtrack])]
