"""The judge's runtime loads no audit code: the runner, a judge run over a submission's answers
and the Codabench scoring program (a judged phase, scored to the end) load none of the
organizers' audit modules (the disclosure report, golden sets, meta-evaluation, simulated
judges, the ranking-stability report, the cost estimate). Checked in fresh processes: what is
loaded is process-wide, and pytest's own process has loaded everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.judged_program import judge_yaml, judged_input
from support.paths import REPO_ROOT

from reteco.subtracks import JUDGE

#: What a module's last name must not look like in the runtime: the judge's audit modules.
AUDIT_NAMES = ("golden", "meta_", "simulated_judges", "report", "stability_report", "estimate")

LOADED = (
    "import json, sys\n"
    "def loaded():\n"
    "    return sorted(n for n in sys.modules if n == 'reteco' or n.startswith('reteco.'))\n"
)


def audit_modules(names: list[str]) -> list[str]:
    """The names among ``names`` whose last part is one of the audit modules'."""
    return [n for n in names if n.rsplit(".", 1)[-1].startswith(AUDIT_NAMES)]


def loaded_modules(script: str, *args: str) -> list[str]:
    """reteco's modules loaded in a fresh process by ``script`` (which prints them as its last line)."""
    done = subprocess.run([sys.executable, "-c", LOADED + script, *args], capture_output=True, text=True,
                          check=False, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests")})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_audit_names_are_the_ones_the_package_has():
    # Every name of the list names a module of the package, so the check below can fail.
    modules = [p.stem for p in (REPO_ROOT / "src" / "reteco").rglob("*.py")]
    for name in AUDIT_NAMES:
        assert any(m.startswith(name) for m in modules), name
    assert audit_modules(["reteco.workbench.judge_audit.report", "reteco.workbench.judge_audit.golden", "reteco.workbench.judge_audit.golden_templates",
                          "reteco.workbench.judge_audit.meta_contrasts", "reteco.judge.runner", "reteco.scoring.judge_run"]) == [
        "reteco.workbench.judge_audit.report", "reteco.workbench.judge_audit.golden", "reteco.workbench.judge_audit.golden_templates", "reteco.workbench.judge_audit.meta_contrasts"]


@pytest.mark.parametrize("module", ["reteco.judge.runner", "reteco.scoring.judge_run",
                                    "reteco.codabench.program.scoring_program"])
def test_importing_the_runtime_loads_no_audit_module(module):
    names = loaded_modules(f"import {module}\nprint(json.dumps(loaded()))\n")
    assert module in names
    assert audit_modules(names) == []


def test_a_judged_phase_scored_by_the_scoring_program_loads_no_audit_module(ref_root, tmp_path, server):
    # The worker's whole path: the judge's setup read, the answers judged (the fake server), the
    # provenance written into details.json, the outputs written.
    config = judge_yaml(tmp_path, server.base_url)
    input_dir = judged_input(tmp_path, ref_root, "2b", config)
    output = tmp_path / "output"
    script = (
        "from reteco.codabench.program.scoring_program import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps(loaded()))\n"
        "sys.exit(status)\n"
    )
    names = loaded_modules(script, str(input_dir), str(output))
    scores = json.loads((output / "scores.json").read_text())
    assert set(JUDGE) <= set(scores)  # the answers were judged
    details = json.loads((output / "details.json").read_text())
    assert details["generation"]["judge"]["provenance"]["configured_model"] == "fake-judge"
    assert {"reteco.judge.runner", "reteco.judge.provenance", "reteco.scoring.judge_run"} <= set(names)
    assert audit_modules(names) == []


def test_the_check_sees_an_audit_module_loaded():
    names = loaded_modules("import reteco.workbench.judge_audit.report\nprint(json.dumps(loaded()))\n")
    assert {"reteco.workbench.judge_audit.report", "reteco.workbench.judge_audit.golden", "reteco.workbench.judge_audit.meta_evaluation"} <= set(audit_modules(names))

