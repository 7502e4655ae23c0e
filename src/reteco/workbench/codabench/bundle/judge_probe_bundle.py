"""``reteco judge-probe``: the judge probe's competition bundle (``reteco.codabench.program.judge_probe``).

One phase (open from ``PROBE_START``, no end), one task, one solution (an empty submission),
``hide_score_output`` on, the image of the real competition (``image.reference()``). The scoring
program is ``probe.py`` with the two stdlib-only modules it runs (``judge_probe``,
``llm.model_retirement``) and empty package files; the reference data is ``probe.json`` and
``judge/api_key``. The command also probes the endpoint from the organizers' machine (which says
nothing of the worker's network) and prints the warnings on the model's shutdown date.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import yaml

import reteco
from reteco.codabench.program import image
from reteco.codabench.program.judge_probe import BUNDLE_NAME, KEY_MEMBER, PROBE_FILE, PROBE_FORMAT
from reteco.workbench.codabench.bundle.competition import PHASES

PROBE_START = "2026-01-01 00:00:00"
# The package files the probe program carries: stdlib-only modules, and package markers.
PROGRAM_MODULES = ("codabench/program/judge_probe.py", "llm/model_retirement.py")
ENTRY = "from reteco.codabench.program.judge_probe import main\nimport sys\n\nsys.exit(main(sys.argv[1:]))\n"
PAGE = ("# RETECO judge probe (organizers only)\n\nSubmit the empty solution; read the log and the scoring output's "
        "probe.json. See docs/codabench_judge.md, \"Before a judged phase: the probe\".\n")


def probe_record(setup, phase_keys: tuple[str, ...]) -> dict:
    """``probe.json``: the endpoint, the model, the judge's decoding parameters (its completion is
    asked as the judge asks: a reasoning model refuses ``temperature: 0``), and the name and end of
    each judged phase."""
    return {
        "format": PROBE_FORMAT,
        "base_url": setup.config.resolved_base_url(),
        "model": setup.config.model,
        "decoding": setup.config.decoding(),
        "phases": [{"name": p.name, "end": p.end} for p in PHASES if p.key in phase_keys],
    }


def competition_yaml() -> dict:
    return {
        "version": 2,
        "title": "RETECO judge probe (organizers only, never published)",
        "description": "Whether the LLM judge's endpoint answers from this queue's compute worker.",
        "image": "logo.png",
        "terms": "pages/probe.md",
        "docker_image": image.reference(),
        "pages": [{"title": "Probe", "file": "pages/probe.md"}],
        "tasks": [{"index": 0, "name": "Judge probe", "scoring_program": "scoring_program.zip",
                   "reference_data": "reference_data.zip"}],
        "solutions": [{"index": 0, "name": "Empty submission", "path": "solutions/empty.zip", "tasks": [0]}],
        "phases": [{"index": 0, "name": "Probe", "start": PROBE_START, "tasks": [0], "execution_time_limit": 600,
                    "max_submissions_per_day": 50, "hide_output": False, "hide_score_output": True}],
        "leaderboards": [{"title": "Judge probe", "key": "probe", "submission_rule": "Force_Last", "columns": [
            {"title": "Reachable (1/0)", "key": "reachable", "index": 0, "sorting": "desc", "precision": 0},
            {"title": "Answer (s)", "key": "answer_s", "index": 1, "sorting": "asc", "precision": 3}]}],
    }


def build_probe_bundle(setup, out: Path, phase_keys: tuple[str, ...]) -> Path:
    """Write ``out/reteco_judge_probe.zip`` for the judge ``setup`` (``judge_setup.JudgeSetup``)."""

    package = Path(reteco.__file__).parent
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / BUNDLE_NAME
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("competition.yaml", yaml.safe_dump(competition_yaml(), sort_keys=False))
        bundle.writestr("logo.png", _png())
        bundle.writestr("pages/probe.md", PAGE)
        bundle.writestr("scoring_program.zip", _zip({
            "metadata.yaml": "command: python3 probe.py /app/input /app/output\n",
            "probe.py": ENTRY,
            "reteco/__init__.py": "", "reteco/codabench/__init__.py": "", "reteco/codabench/program/__init__.py": "",
            "reteco/llm/__init__.py": "",
            **{f"reteco/{m}": (package / m).read_text(encoding="utf-8") for m in PROGRAM_MODULES},
        }))
        bundle.writestr("reference_data.zip", _zip({
            PROBE_FILE: json.dumps(probe_record(setup, phase_keys), indent=2) + "\n",
            KEY_MEMBER: setup.key + "\n",
        }))
        bundle.writestr("solutions/empty.zip", _zip({"README.txt": "The judge probe reads no submission.\n"}))
    return path


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _png() -> bytes:
    """A 1x1 grey PNG: Codabench refuses a logo that is not an image."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
