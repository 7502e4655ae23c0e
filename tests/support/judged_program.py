"""The inputs of the Codabench scoring program judging 2b and 2c, as the worker and the
organizers lay them out: the organizers' judge config (its key in a file beside it) and INPUT/
with a judged phase's reference data. Used by the scoring-program tests and by the tests of
``reteco judge-submissions`` (the same judged runs, judged again after the phase)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reteco.codabench.program.judge_setup import call_budget, count_turns, load_for_bundle, write_judge_setup
from reteco.workbench.codabench.bundle import competition as definition
from support.paths import SAMPLES

KEY = "sk-reteco-in-program-KEY-5f3a9c0e7d21"  # recognisable, so a leak is easy to find
EVALUATION = next(p for p in definition.PHASES if p.key == "evaluation")
POST_EVALUATION = next(p for p in definition.PHASES if p.key == "post_evaluation")


def judge_yaml(tmp_path: Path, base_url: str, **settings) -> Path:
    """An organizers' judge config: the key in a file beside it, test-sized waits."""
    (tmp_path / "organizers").mkdir(exist_ok=True)
    (tmp_path / "organizers" / "judge.key").write_text(KEY + "\n")
    values = {"prompt_version": 2, "model": "fake-judge", "base_url": base_url, "api_key_file": "judge.key",
              "max_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5, **settings}
    path = tmp_path / "organizers" / "judge.yaml"
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()))
    return path


def judged_input(tmp_path: Path, ref_root: Path, sub: str, config: Path, phase=EVALUATION, limit: int = 600) -> Path:
    """INPUT/ as the worker lays it out, the reference data of a judged phase (as the bundle
    builds it: phase.json, then judge/), the sample submission in res/."""
    ref = tmp_path / "input" / "ref"
    shutil.copytree(ref_root / sub, ref)
    (ref / "phase.json").write_text(json.dumps(definition.phase_record(phase, sub, platform_limit=limit)))
    setup = load_for_bundle(config)
    write_judge_setup(ref, setup, max_calls=call_budget(setup, count_turns(ref)))
    shutil.copytree(SAMPLES / sub, tmp_path / "input" / "res")
    return tmp_path / "input"
