"""End to end: synthetic release -> prepare -> score, the Codabench program, the organizers' sample."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO_ROOT, SAMPLES, SHARED_SAMPLE

from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission


@pytest.fixture(scope="module")
def reference_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("e2e")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref")
    return root / "ref"


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a", "2c"])
def test_engines_agree_on_the_sample_submissions(reference_root, subtrack):
    reference = Reference.read(reference_root / subtrack)
    fast = score_submission(reference, SAMPLES / subtrack)
    slow = score_submission(reference, SAMPLES / subtrack, engine="pytrec_eval")
    assert fast.scores.keys() == slow.scores.keys()
    for key in fast.scores:
        assert fast.scores[key] == pytest.approx(slow.scores[key], abs=1e-12), key
    # zip would stop at the shorter list (or check nothing on an empty one): same length, not empty.
    assert len(fast.per_topic["per_unit"]) == len(slow.per_topic["per_unit"]) == len({t.unit for t in reference.topics}) > 0
    for a, b in zip(fast.per_topic["per_unit"], slow.per_topic["per_unit"]):
        assert a == pytest.approx(b, abs=1e-12)


def test_gold_run_scores_one_everywhere(reference_root):
    # A run that ranks exactly each topic's relevant documents must score 1 on nDCG, recall, MRR.
    reference = Reference.read(reference_root / "2a")
    lines = []
    for j in reference.judgments:
        lines.append(f"{j.key} Q0 {j.doc_id} 1 1.0 gold\n")
    run = reference_root.parent / "gold_run.txt"
    run.write_text("".join(lines))
    scores = score_submission(reference, run).scores
    assert scores["ndcg_10"] == pytest.approx(1.0) and scores["recall_10"] == pytest.approx(1.0)
    assert scores["mrr"] == pytest.approx(1.0) and scores["ndcg_10_domain_macro"] == pytest.approx(1.0)


def test_scoring_program_as_the_worker_runs_it(reference_root, tmp_path):
    # Map the worker's layout: program copied, input/ref, input/res (a zip extracted as is, with
    # a top-level folder, __MACOSX and the worker's metadata file), output.
    program = tmp_path / "program"
    shutil.copytree(REPO_ROOT / "scoring_program", program)
    shutil.copytree(reference_root / "2a", tmp_path / "input" / "ref")
    res = tmp_path / "input" / "res"
    (res / "team_run" / "__MACOSX").mkdir(parents=True)
    shutil.copy(SAMPLES / "2a" / "run.txt", res / "team_run" / "run.txt")
    (res / "team_run" / "__MACOSX" / "._run.txt").write_bytes(b"\x00junk")
    (res / "metadata").write_text("submitted-by: someone\n")
    done = subprocess.run(
        [sys.executable, str(program / "score.py"), str(tmp_path / "input"), str(tmp_path / "output")],
        capture_output=True,
        text=True,
        cwd=program,
    )
    assert done.returncode == 0, done.stderr
    scores = json.loads((tmp_path / "output" / "scores.json").read_text())
    expected = score_submission(Reference.read(reference_root / "2a"), SAMPLES / "2a").scores
    assert scores == pytest.approx(expected, abs=0)
    assert (tmp_path / "output" / "details.json").exists()


def test_scoring_program_rejects_bad_input_with_exit_1(reference_root, tmp_path):
    shutil.copytree(reference_root / "1a", tmp_path / "input" / "ref")
    (tmp_path / "input" / "res").mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "input" / "res" / "sub.zip", "w") as z:
        z.writestr("run.txt", "122 Q0 doc 1\n")
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scoring_program" / "score.py"), str(tmp_path / "input"), str(tmp_path / "output")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "sub.zip:run.txt:1: error: expected 6 columns" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "output" / "scores.json").exists()


@pytest.mark.skipif(not SHARED_SAMPLE.is_dir(), reason="the organizers' sample (../shared/data/reteco_sample) is not here")
def test_organizers_sample_scores_gold_runs_perfectly(tmp_path):
    prepare_release(SHARED_SAMPLE, "dev", tmp_path / "ref")
    # 1a: rank each query's gold ids, written in the real qrels' own topic ids.
    qrels_1a = (SHARED_SAMPLE / "track1_tempo" / "qrels.txt").read_text().split("\n")
    run = tmp_path / "run_1a.txt"
    run.write_text("".join(f"{p[0]} Q0 {p[2]} 1 1 x\n" for p in (l.split() for l in qrels_1a) if p))
    scores = score_submission(Reference.read(tmp_path / "ref" / "1a"), run).scores
    assert scores["ndcg_10"] == pytest.approx(1.0)
    # 2a: the sample's '<conv>#turn<n>' ids; conversations '2' and '5' are unique here, so bare ids work.
    qrels_2a = (SHARED_SAMPLE / "track2_recor" / "qrels.txt").read_text().split("\n")
    run = tmp_path / "run_2a.txt"
    run.write_text("".join(f"{p[0]} Q0 {p[2]} 1 1 x\n" for p in (l.split() for l in qrels_2a) if p))
    result = score_submission(Reference.read(tmp_path / "ref" / "2a"), run)
    assert result.scores["ndcg_10"] == pytest.approx(1.0)
    assert result.details["units"] == 13
    assert set(result.details["per_domain"]) == {"law", "drones", "biology", "earth_science"}
    # Only half the gold ranked, in reverse: a value computed by hand for one turn.
    turn = "ex_3025#turn1"  # 3 gold docs
    golds = [p[2] for p in (l.split() for l in qrels_2a) if p and p[0] == turn]
    run.write_text(f"{turn} Q0 not-a-doc 1 3 x\n{turn} Q0 {golds[0]} 2 2 x\n")
    result = score_submission(Reference.read(tmp_path / "ref" / "2a"), run)
    unit = next(u for u in result.per_topic["per_unit"] if u["unit"] == "drones/ex_3025_turn_1")
    assert unit["ndcg_10"] == pytest.approx(1 / (1 + 1 / 1.584962500721156 + 0.5))
    assert result.details["counts"]["unknown_doc_ids"] == 1
