"""The scoring program's platform behaviour: phases, sub-track folders, absent keys, the page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import SAMPLES

from reteco.codabench.program import scoring_program as codabench
from reteco.outputs import results
from reteco.scoring import generation
from reteco.subtracks import JUDGE, SUBTRACKS
from reteco.workbench.codabench.bundle import competition as definition

KEYS = {s: row.keys for s, row in SUBTRACKS.items()}
from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission


@pytest.fixture(scope="module")
def ref_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("program")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref")
    return root / "ref"


def _input(tmp_path: Path, ref_root: Path, subtrack: str, phase_key: str | None) -> Path:
    ref = tmp_path / "input" / "ref"
    shutil.copytree(ref_root / subtrack, ref)
    (ref / "phase.json").unlink()  # prepare's local record: each case decides the phase
    if phase_key is not None:
        phase = next(p for p in definition.PHASES if p.key == phase_key)
        (ref / "phase.json").write_text(json.dumps(definition.phase_record(phase, subtrack)))
    (tmp_path / "input" / "res").mkdir()
    return tmp_path / "input"


def _run(input_dir: Path, tmp_path: Path) -> tuple[int, dict, dict, str]:
    status = codabench.main([str(input_dir), str(tmp_path / "output")])
    out = tmp_path / "output"
    scores = json.loads((out / "scores.json").read_text()) if (out / "scores.json").exists() else {}
    details = json.loads((out / "details.json").read_text()) if (out / "details.json").exists() else {}
    page = (out / "detailed_results.html").read_text() if (out / "detailed_results.html").exists() else ""
    return status, scores, details, page


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize("phase_key, per_topic", [("development", True), ("evaluation", False), ("post_evaluation", True)])
def test_per_topic_figures_only_in_phases_that_allow_them(ref_root, tmp_path, phase_key, per_topic):
    input_dir = _input(tmp_path, ref_root, "1b", phase_key)
    shutil.copy(SAMPLES / "1b" / "run.txt", input_dir / "res" / "run.txt")
    status, scores, details, page = _run(input_dir, tmp_path)
    assert status == 0
    assert all(key in scores for key in KEYS["1b"] if key != "ndcg_fc_10")
    assert {"per_unit", "per_step"} <= _keys(details) if per_topic else not ({"per_unit", "per_step"} & _keys(details))
    assert details["phase"]["per_topic"] is per_topic
    assert ("Per query" in page) is per_topic and ("withheld" in page) is (not per_topic)
    # The same scores in every phase: only what is shown differs.
    expected = score_submission(Reference.read(ref_root / "1b"), SAMPLES / "1b", per_topic=False).scores
    assert scores == pytest.approx(expected, abs=0)


def test_prepare_writes_a_local_phase_record_with_per_topic_figures(ref_root, tmp_path, capsys):
    """The starting kit's copy-into-input/ref flow: reference data from `reteco prepare` scores
    as local dev data (per-topic figures written), not as hidden labels."""
    assert json.loads((ref_root / "2a" / "phase.json").read_text())["per_topic"] is True
    ref = tmp_path / "input" / "ref"
    shutil.copytree(ref_root / "2a", ref)
    (tmp_path / "input" / "res").mkdir()
    shutil.copy(SAMPLES / "2a" / "run.txt", tmp_path / "input" / "res" / "run.txt")
    status, _, details, _ = _run(tmp_path / "input", tmp_path)
    assert status == 0 and "per_unit" in details and details["phase"]["name"] == "local (dev split)"
    assert "phase local (dev split)" in capsys.readouterr().out


def test_without_a_phase_record_per_topic_figures_are_withheld(ref_root, tmp_path, capsys):
    input_dir = _input(tmp_path, ref_root, "2a", None)
    shutil.copy(SAMPLES / "2a" / "run.txt", input_dir / "res" / "run.txt")
    status, _, details, _ = _run(input_dir, tmp_path)
    assert status == 0 and "per_unit" not in details and details["per_topic_withheld"] is True
    assert "no phase.json" in capsys.readouterr().out


def test_a_multi_subtrack_submission_is_scored_by_its_own_folder(ref_root, tmp_path, capsys):
    input_dir = _input(tmp_path, ref_root, "2a", "development")
    res = input_dir / "res" / "team"  # the worker does not strip a top-level folder
    for sub in ("1a", "2a"):
        shutil.copytree(SAMPLES / sub, res / sub)
    (res / "__MACOSX").mkdir()
    (input_dir / "res" / "metadata").write_text("exitCode: 0\n")
    status, scores, _, _ = _run(input_dir, tmp_path)
    assert status == 0
    assert scores == pytest.approx(score_submission(Reference.read(ref_root / "2a"), SAMPLES / "2a").scores, abs=0)

    other = tmp_path / "other"
    input_dir = _input(other, ref_root, "1b", "development")
    shutil.copytree(SAMPLES / "1a", input_dir / "res" / "1a")
    status, scores, _, page = _run(input_dir, other)
    assert status == 1 and scores == {}
    err = capsys.readouterr().err
    assert "holds the sub-track folders 1a/ but none named 1b/" in err
    assert "could not be scored" in page and "none named 1b/" in page


def test_generation_keys_absent_with_their_reasons(ref_root, tmp_path, capsys):
    input_dir = _input(tmp_path, ref_root, "2c", "evaluation")
    for name in ("run.txt", "answers.jsonl"):
        shutil.copy(SAMPLES / "2c" / name, input_dir / "res" / name)
    status, scores, details, page = _run(input_dir, tmp_path)
    assert status == 0
    absent = details["absent_scores"]
    assert set(absent) == set(KEYS["2c"]) - set(scores)
    for key in JUDGE:
        assert key not in scores and absent[key] == results.JUDGE_NOT_RUN
    assert all(reason for reason in absent.values())
    assert all(key in scores for key in ("ndcg_10", "map_10", "recall_10", "p_10", "mrr", "ndcg_10_domain_macro"))
    out = capsys.readouterr().out
    # Why the judge did not run is said once in the log, in the participant's words, naming the
    # keys it leaves out; the page says it under the headline.
    assert out.count(generation.JUDGE_NOT_CALLED) == 1, out
    judge_line = next(line for line in out.splitlines() if generation.JUDGE_NOT_CALLED in line)
    assert all(key in judge_line for key in JUDGE)
    assert "asked not to call" not in out and "asked not to call" not in page
    assert "absent: " + results.JUDGE_NOT_RUN in page
    # Each other absent key's reason once too (BERTScore: no model configured here).
    for reason in set(absent.values()):
        assert out.count(reason) == 1, (reason, out)


def test_absent_scores_takes_the_scorers_reasons_and_refuses_a_missing_required_key():
    scores = {k: 0.5 for k in KEYS["1a"] if k != "ndcg_fc_10"}
    reasons = {"ndcg_fc_10": "undefined: no query reaches full temporal coverage at 10", "mrr": "not used: mrr is there"}
    assert results.absent_scores("1a", scores, reasons) == {
        "ndcg_fc_10": "undefined: no query reaches full temporal coverage at 10"
    }
    # Without a reason the key maps to "" (check-bundle rejects it); a required key is a bug.
    assert results.absent_scores("1a", {k: 0.5 for k in KEYS["1a"] if k != "ndcg_fc_10"}, {}) == {"ndcg_fc_10": ""}
    with pytest.raises(results.MissingScoreError, match="tp_10"):
        results.absent_scores("1a", {k: 0.5 for k in KEYS["1a"] if k != "tp_10"}, {})
    with pytest.raises(results.MissingScoreError, match="mrr"):
        results.absent_scores("2a", {**{k: 0.5 for k in KEYS["2a"]}, "mrr": float("nan")}, {})


def test_the_page_escapes_the_participants_text(ref_root, tmp_path):
    input_dir = _input(tmp_path, ref_root, "2a", "development")
    run = (SAMPLES / "2a" / "run.txt").read_text()
    (input_dir / "res" / "run.txt").write_text(run + "<script>alert(1)</script> Q0 doc 1 1.0 x\n")
    status, _, _, page = _run(input_dir, tmp_path)
    assert status == 0
    assert "<script>" not in page and "&lt;script&gt;" in page


# ---------------------------------------------------------------------------------------------
# check-bundle's reading of a scoring run's output


def _output(tmp_path: Path, scores_text: str, details: dict | None = None) -> Path:
    out = tmp_path / "out"
    out.mkdir(parents=True)
    (out / "scores.json").write_text(scores_text)
    (out / "details.json").write_text(json.dumps(details or {}))
    (out / "detailed_results.html").write_text("<html></html>")
    return out


def test_scoring_output_rules(tmp_path):
    from reteco.workbench.codabench.check.check_bundle import scoring_output_errors

    full = {k: 0.5 for k in KEYS["2a"]}
    assert scoring_output_errors("2a", True, _output(tmp_path / "a", json.dumps(full))) == []
    nan = json.dumps(full).replace("0.5}", "NaN}")
    assert any("finite" in e for e in scoring_output_errors("2a", True, _output(tmp_path / "b", nan)))
    lacking = {k: v for k, v in full.items() if k != "mrr"}
    assert any("lacks mrr" in e for e in scoring_output_errors("2a", True, _output(tmp_path / "c", json.dumps(lacking))))
    retrieval = {k: 0.5 for k in KEYS["2c"] if k not in JUDGE and k not in ("rouge_l", "meteor", "bertscore_f1")}
    reasons = {k: "the judge did not run" for k in JUDGE} | {"rouge_l": "x", "meteor": "y"}
    errors = scoring_output_errors("2c", True, _output(tmp_path / "d", json.dumps(retrieval), {"absent_scores": reasons}))
    assert errors == ["[scores] output: bertscore_f1 is absent and details.json does not say why (absent_scores)"]
    reasons["bertscore_f1"] = "rouge-score is not installed (No module named 'six')"
    errors = scoring_output_errors("2c", True, _output(tmp_path / "e", json.dumps(retrieval), {"absent_scores": reasons}))
    assert errors and "lacks a package" in errors[0]
    leak = {"per_unit": [{"unit": "bitcoin/1", "ndcg_10": 1.0}], "phase": {"per_topic": False}}
    errors = scoring_output_errors("2a", False, _output(tmp_path / "f", json.dumps(full), leak))
    assert errors and errors[0].startswith("[leak]")


def test_the_organizers_bertscore_set_up_is_not_advised_on_the_platform(ref_root, tmp_path, capsys, monkeypatch):
    """The input that triggered it (issue 22): a 2c submission scored where no BERTScore model is
    configured. The platform's log, page and details say that the figure is absent and why, not
    the organizers' set-up (a variable to set, a package to install), which a participant cannot
    act on; the CLI on the organizers' machine still says how to set it up."""
    monkeypatch.delenv("RETECO_BERTSCORE_MODEL", raising=False)
    input_dir = _input(tmp_path, ref_root, "2c", "evaluation")
    for name in ("run.txt", "answers.jsonl"):
        shutil.copy(SAMPLES / "2c" / name, input_dir / "res" / name)
    status, scores, details, page = _run(input_dir, tmp_path)
    log = capsys.readouterr()
    assert status == 0 and "bertscore_f1" not in scores
    said = "no BERTScore model configured where this scoring runs"
    assert details["absent_scores"]["bertscore_f1"] == said
    assert f"metrics: warning: bertscore_f1 is not reported: {said}\n" in log.out
    for shown in (log.out, log.err, page, json.dumps(details)):
        assert "RETECO_BERTSCORE_MODEL" not in shown and "pip install" not in shown
    local = score_submission(Reference.read(input_dir / "ref"), input_dir / "res", run_judge_now=False)
    assert local.absent["bertscore_f1"] == (
        f"{said}; set RETECO_BERTSCORE_MODEL to a local model folder (and install the extra: pip install 'reteco[bertscore]')"
    )
