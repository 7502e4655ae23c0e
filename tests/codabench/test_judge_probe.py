"""The judge probe and the model's shutdown date, against the fake OpenAI server on 127.0.0.1.

The probe's scoring program is run as the worker runs it (``python3 probe.py /app/input
/app/output`` from the program's folder, ``-E -s``: no PYTHONPATH, its own folder first on the
path): it carries the only reteco modules it imports, standard library only, for the stock image."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from support.judged_program import KEY, judge_yaml

from reteco.codabench.program.judge_probe import BUNDLE_NAME, PROBE_FILE
from reteco.commands import main
from reteco.llm.model_retirement import KNOWN_SHUTDOWN_DATES, as_date, ask_model, retirement_warning

EVALUATION_END = "2027-01-31 23:59:59"


def test_the_fake_server_answers_models_as_before_and_with_a_shutdown_date(server):
    plain = ask_model(server.base_url, KEY, "fake-judge")
    assert plain.reachable and plain.status == 200 and plain.model == "fake-judge" and plain.shutdown_date is None
    server.models = {"gpt-4o-2024-08-06": {"shutdown_date": "2027-01-14"}}
    dated = ask_model(server.base_url, KEY, "gpt-4o-2024-08-06")
    assert dated.shutdown_date == "2027-01-14"
    missing = ask_model(server.base_url, KEY, "fake-judge")
    assert missing.status == 404 and missing.failure == "the endpoint answered HTTP 404"
    down = ask_model("http://127.0.0.1:9/v1", KEY, "fake-judge", timeout_s=2)
    assert not down.reachable and down.failure == "the endpoint could not be reached"


def test_a_shutdown_inside_a_phase_warns_and_one_after_it_does_not():
    assert KNOWN_SHUTDOWN_DATES["gpt-4o-2024-08-06"] == "2027-01-14"  # openai-python 3.63.0's list
    warning = retirement_warning("gpt-4o-2024-08-06", "2027-01-14", "Evaluation", EVALUATION_END, "the table")
    assert "announced shutdown date of 2027-01-14 (the table), and phase 'Evaluation' ends 2027-01-31" in warning
    assert retirement_warning("m", "2027-02-01", "Evaluation", EVALUATION_END, "x") is None
    assert "has no end" in retirement_warning("m", "2030-01-01", "Post-evaluation", None, "x")
    assert retirement_warning("m", None, "Evaluation", EVALUATION_END, "x") is None
    assert as_date(1799884800) == "2027-01-14" and as_date("2027-01-14T00:00:00Z") == "2027-01-14"
    assert as_date("soon") is None and as_date(True) is None


def _run_probe(bundle: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict, dict, str]:
    root = tmp_path / "worker"
    with zipfile.ZipFile(bundle) as archive:
        content = yaml.safe_load(archive.read("competition.yaml"))
        for member, dest in (("scoring_program.zip", root / "program"), ("reference_data.zip", root / "input" / "ref")):
            zipfile.ZipFile(io.BytesIO(archive.read(member))).extractall(dest)
    command = yaml.safe_load((root / "program" / "metadata.yaml").read_text())["command"].split()
    assert command[:2] == ["python3", "probe.py"]
    done = subprocess.run([sys.executable, "-E", "-s", "probe.py", str(root / "input"), str(root / "output")],
                          cwd=root / "program", capture_output=True, text=True, timeout=120, check=False)
    result = json.loads((root / "output" / PROBE_FILE).read_text())
    scores = json.loads((root / "output" / "scores.json").read_text())
    assert KEY not in done.stdout + done.stderr
    assert all(KEY.encode() not in p.read_bytes() for p in (root / "output").rglob("*") if p.is_file())
    assert content["phases"][0]["hide_score_output"] is True
    return done, result, scores, done.stdout + done.stderr


@pytest.mark.parametrize("reachable", [True, False])
def test_the_probe_reports_reach_speed_model_and_shutdown(tmp_path, server, capsys, reachable):
    server.models = {"gpt-4o-2024-08-06": {"shutdown_date": "2027-01-14"}}
    base_url = server.base_url if reachable else "http://127.0.0.1:9/v1"
    config = judge_yaml(tmp_path, base_url, model="gpt-4o-2024-08-06")
    assert main(["judge-probe", "--judge-config", str(config), "--out", str(tmp_path / "dist"), "--no-local"]) == 0
    local = capsys.readouterr()
    assert "Evaluation" in local.err and "2027-01-14" in local.err and KEY not in local.out + local.err
    done, result, scores, log = _run_probe(tmp_path / "dist" / BUNDLE_NAME, tmp_path)
    assert done.returncode == 0, log
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2  # Evaluation ends after 2027-01-14; Post-evaluation has no end
    assert "phase 'Evaluation' ends 2027-01-31 23:59:59 UTC" in warnings[0]
    if reachable:
        assert scores["reachable"] == 1 and result["completion"]["model"] == "fake-judge"
        assert "answered a completion from this worker in" in log
        assert result["shutdown_source"] == "announced by the endpoint"
    else:
        assert scores["reachable"] == 0 and result["completion"]["failure"] == "the endpoint could not be reached"
        assert "reteco judge-submissions" in log
        assert result["shutdown_source"].startswith("reteco's table")  # the endpoint said nothing: the table
