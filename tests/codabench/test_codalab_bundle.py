"""The CodaLab Competitions v1.5 bundle (``reteco bundle --platform codalab``) and its check.

The v1.5 bundles are assembled from the session's Codabench build (conftest ``built_all``), as
``build_codalab`` does after its own build: no second build, no network.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from support.bundle_edits import rewrite, zip_bytes
from support.paths import REPO_ROOT, SAMPLES

from reteco.codabench.program import scoring_program
from reteco.outputs.scores import write_scores_txt
from reteco.problems import InputError
from reteco.subtracks import SUBTRACKS
from reteco.workbench.codabench.bundle import codalab
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle.builder import BuildOptions
from reteco.workbench.codabench.bundle.page_markdown import render
from reteco.workbench.codabench.check import codalab_worker
from reteco.workbench.codabench.check.check_bundle import check_bundle

SLIM = ("metadata", "score.py", "vendor/VENDOR.json")  # what the static pass reads of the program


@pytest.fixture(scope="module")
def v15(built_all, tmp_path_factory):
    """The 1a v1.5 bundle, and the build's options."""
    _, options = built_all
    root = tmp_path_factory.mktemp("codalab")
    built = codalab.assemble(Path(options.build_dir) / "files", root / "dist", ("1a",), root / "work", compression=1)
    return built[0].path, options


@pytest.fixture(scope="module")
def v15_slim(v15, tmp_path_factory):
    """The 1a v1.5 bundle with a scoring program of only what the static pass reads."""
    path, _ = v15
    with zipfile.ZipFile(path) as archive:
        program = zipfile.ZipFile(io.BytesIO(archive.read("scoring_program.zip")))
        small = zip_bytes({n: program.read(n) for n in SLIM})
    return rewrite(path, tmp_path_factory.mktemp("slim") / "slim.zip", members={"scoring_program.zip": small})


def _scores_txt(path: Path) -> dict[str, float]:
    """scores.txt read as v1.5's server reads it (update_submission): split at the colon, float."""
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line:
            key, value = line.split(":")
            out[key.strip()] = float(value)
    return out


@pytest.mark.slow
def test_v15_bundle_passes_the_check_and_its_solutions_score_in_the_simulated_v15_worker(v15):
    path, options = v15
    report = check_bundle(path, cache=options.cache)
    assert report.errors == []
    assert len(report.runs) == 3 and all(run["returncode"] == 0 for run in report.runs)


def test_v15_yaml_has_the_schema_v15_reads(v15):
    path, _ = v15
    with zipfile.ZipFile(path) as archive:
        assert [n for n in archive.namelist() if ".yaml" in n][0] == "competition.yaml"
        content = yaml.full_load(archive.read("competition.yaml"))  # as v1.5's unpacker loads it
        assert "version" not in content and content["competition_docker_image"]
        assert {"overview", "evaluation", "terms", "data"} <= set(content["html"])
        for page in content["html"].values():
            assert archive.read(page).decode("utf-8").lstrip().startswith("<h1>")
        assert list(content["phases"]) == [1, 2, 3]
        assert [p["label"] for p in content["phases"].values()] == [p.name for p in definition.PHASES]
        columns = content["leaderboard"]["columns"]
        assert list(columns) == list(SUBTRACKS["1a"].keys)
        labels = {b["label"] for b in content["leaderboard"]["leaderboards"].values()}
        assert all(c["leaderboard"]["label"] in labels for c in columns.values())
        assert columns["ndcg_10"]["selection_default"] == 1
        program = zipfile.ZipFile(io.BytesIO(archive.read("scoring_program.zip")))
        command = yaml.safe_load(program.read("metadata"))["command"]
        assert command.split(" ")[:4] == ["python3", "$program/score.py", "$input", "$output"]


@pytest.mark.slow
def test_scores_txt_equals_scores_json_in_a_v15_worker_layout(v15, tmp_path):
    """The v1.5 worker's run, done by hand: the program's metadata command with the worker's
    variables replaced, from the run folder; scores.txt holds exactly scores.json's figures."""
    path, _ = v15
    run = tmp_path / "run"
    with zipfile.ZipFile(path) as bundle:
        for member, folder in (("scoring_program.zip", "program"), ("reference_data/development_1a.zip", "input/ref"),
                               ("solutions/dev_1a.zip", "input/res")):
            zipfile.ZipFile(io.BytesIO(bundle.read(member))).extractall(run / folder)
    (run / "output").mkdir()
    command = yaml.safe_load((run / "program" / "metadata").read_text())["command"]
    for variable, folder in (("$program", "program"), ("$input", "input"), ("$output", "output")):
        command = command.replace(variable, str(run / folder))
    argv = command.split(" ")
    assert argv[0] == "python3"
    done = subprocess.run([sys.executable] + argv[1:], cwd=run, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    scores = json.loads((run / "output" / "scores.json").read_text())
    assert _scores_txt(run / "output" / "scores.txt") == scores
    assert set(scores) <= set(SUBTRACKS["1a"].keys) and "ndcg_10" in scores


def test_scores_txt_leaves_out_the_absent_keys_as_scores_json_does(tmp_path, built_all):
    """2b without a judge: the judge keys are absent from both files, the text metrics present."""
    _, options = built_all
    ref = Path(options.build_dir) / "staged" / "development_2b"
    status = scoring_program.main([str(_input(tmp_path, ref, SAMPLES / "2b")), str(tmp_path / "out"), "--scores-txt"])
    assert status == 0
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert _scores_txt(tmp_path / "out" / "scores.txt") == scores
    assert "judge_mean" not in scores and "rouge_l" in scores


def _input(tmp_path: Path, ref: Path, sample: Path) -> Path:
    shutil.copytree(ref, tmp_path / "input" / "ref")
    shutil.copytree(sample, tmp_path / "input" / "res")
    return tmp_path / "input"


def test_without_the_flag_the_codabench_program_writes_no_scores_txt(tmp_path, built_all):
    _, options = built_all
    ref = Path(options.build_dir) / "staged" / "development_1a"
    assert scoring_program.main([str(_input(tmp_path, ref, SAMPLES / "1a")), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "scores.json").is_file() and not (tmp_path / "out" / "scores.txt").exists()


def test_scores_txt_numbers_read_back_exactly_and_a_key_with_a_colon_is_refused(tmp_path):
    figures = {"a": 1 / 3, "b": 1e-17, "c": 0.0, "d": 12345.678901234567}
    write_scores_txt(tmp_path, figures)
    assert _scores_txt(tmp_path / "scores.txt") == figures
    with pytest.raises(ValueError):
        write_scores_txt(tmp_path, {"x:y": 1.0})


# ---------------------------------------------------------------------------------------------
# The v1.5 rules, one broken bundle each


def _static(path: Path) -> list[str]:
    return check_bundle(path, simulate=False).errors


def test_slim_v15_bundle_passes_the_static_rules(v15_slim):
    assert _static(v15_slim) == []


def _phase_one_first(content):
    content["phases"] = {2: content["phases"][2], 1: content["phases"][1], 3: content["phases"][3]}


def _unknown_board(content):
    content["leaderboard"]["columns"]["ndcg_10"]["leaderboard"] = {"label": "Nowhere", "rank": 1}


@pytest.mark.parametrize(
    ("mutate", "rule", "text"),
    [
        (lambda c: c.update(docker_image="codalab/codalab-legacy:py312"), "[codalab-key]", "docker_image"),
        (lambda c: c["phases"][1].update(end_date="2027-01-09 23:59:59"), "[codalab-key]", "end_date"),
        (lambda c: c["html"].pop("data"), "[codalab-html]", "no data page"),
        (lambda c: c.pop("competition_docker_image"), "[codalab-image]", "default worker image"),
        (_phase_one_first, "[codalab-phase]", "numbered"),
        (lambda c: c["phases"][3].update(start_date="2026-01-01 00:00:00"), "[codalab-phase]", "not after"),
        (lambda c: c["phases"][2].pop("reference_data"), "[codalab-phase]", "no reference_data"),
        (_unknown_board, "[codalab-leaderboard]", "Nowhere"),
        (lambda c: c["leaderboard"]["columns"].pop("map_10"), "[codalab-leaderboard]", "map_10"),
        (lambda c: c["phases"][1].update(reference_data="reference_data/evaluation_1a.zip"), "[codalab-reference]",
         "Evaluation"),
    ],
)
def test_each_v15_rule_is_caught(v15_slim, tmp_path, mutate, rule, text):
    errors = _static(rewrite(v15_slim, tmp_path / "broken.zip", content=mutate))
    assert any(e.startswith(rule) and text in e for e in errors), errors


@pytest.mark.parametrize(
    ("files", "text"),
    [
        ({"score.py": "", "vendor/VENDOR.json": "{}"}, "no metadata file"),
        ({"metadata": "command: python3 score.py $input $output\n", "score.py": ""}, "does not use $program"),
        ({"metadata": "command: python3 $program/score.py $input  $output\n", "score.py": ""}, "two spaces"),
        ({"metadata": "command: python3 $program/main.py $input $output\n", "score.py": ""}, "not in the program"),
    ],
)
def test_v15_program_rules_are_caught(v15_slim, tmp_path, files, text):
    errors = _static(rewrite(v15_slim, tmp_path / "broken.zip", members={"scoring_program.zip": zip_bytes(files)}))
    assert any(e.startswith("[codalab-program]") and text in e for e in errors), errors


def test_a_yaml_member_before_competition_yaml_is_caught(v15_slim, tmp_path):
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(v15_slim) as source, zipfile.ZipFile(broken, "w") as out:
        out.writestr("notes.yaml.txt", "not the competition")
        for info in source.infolist():
            out.writestr(info.filename, source.read(info))
    assert any(e.startswith("[codalab-zip]") and "notes.yaml.txt" in e for e in _static(broken))


@pytest.mark.slow
def test_a_program_that_writes_no_scores_txt_fails_the_simulated_v15_worker(v15, tmp_path):
    """The Codabench command (no --scores-txt) in the v1.5 metadata: scores.json only, which v1.5 fails."""
    path, options = v15
    with zipfile.ZipFile(path) as archive:
        program = archive.read("scoring_program.zip")
    source, patched = tmp_path / "program.zip", tmp_path / "patched.zip"
    source.write_bytes(program)
    codalab.program_with_metadata(source, patched, "python3 $program/score.py $input $output")
    report = check_bundle(rewrite(path, tmp_path / "broken.zip", members={"scoring_program.zip": patched.read_bytes()}),
                          cache=options.cache)
    assert len(report.runs) == 3
    errors = [e for e in report.errors if e.startswith("[codalab-scores]") and "no scores.txt" in e]
    assert len(errors) == 3, report.errors


@pytest.mark.slow
def test_a_phase_without_a_solution_is_an_error_of_the_simulation(v15, tmp_path):
    path, options = v15
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(broken, "w") as out:
        for info in source.infolist():
            if info.filename != "solutions/test_1a.zip":
                out.writestr(info, source.read(info))
    report = check_bundle(broken, cache=options.cache)
    assert len(report.runs) == 1  # Development's dev solution only
    missing = [e for e in report.errors if e.startswith("[codalab-worker]") and "solutions/test_1a.zip" in e]
    assert len(missing) == 2, report.errors


def test_lay_out_moves_a_lone_folder_with_metadata_up_and_extracts_inner_zips(tmp_path):
    nested = tmp_path / "nested.zip"
    nested.write_bytes(zip_bytes({"other/x.txt": "x", "prog/metadata": "command: c", "prog/inner.zip":
                                  zip_bytes({"a.txt": "a"})}))
    codalab_worker.lay_out(nested, tmp_path / "nested")
    assert sorted(p.name for p in (tmp_path / "nested").iterdir()) == ["inner", "inner.zip", "metadata"]
    assert (tmp_path / "nested" / "inner" / "a.txt").read_text() == "a"
    flat = tmp_path / "flat.zip"  # metadata among more than two entries: kept as it is
    flat.write_bytes(zip_bytes({"metadata": "command: c", "a.py": "", "b.py": "", "sub/metadata": ""}))
    codalab_worker.lay_out(flat, tmp_path / "flat")
    assert sorted(p.name for p in (tmp_path / "flat").iterdir()) == ["a.py", "b.py", "metadata", "sub"]


def test_the_build_refuses_what_v15_cannot_do(tmp_path):
    judge = tmp_path / "judge.yaml"
    judge.write_text("model: x\n")
    for options in (BuildOptions(judge_config=judge), BuildOptions(code_submission=True),
                    BuildOptions(layout="single"), BuildOptions(external={"a.zip": "k"})):
        with pytest.raises(InputError, match="CodaLab Competitions v1.5"):
            codalab.build_codalab(dataclasses.replace(options, build_dir=tmp_path / "build"))
    assert not (tmp_path / "build").exists()  # refused before anything is built


# ---------------------------------------------------------------------------------------------
# The pages


def test_markdown_subset_renders_to_html():
    page = render("# T\n\nSome `a<b` and **bold** [x](http://e?a=1&b=2)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                  "- one\n  two\n- three\n\n  ```\n  code *x*\n  ```\n\n1. first\n")
    assert "<h1>T</h1>" in page and "<code>a&lt;b</code>" in page and "<strong>bold</strong>" in page
    assert '<a href="http://e?a=1&amp;b=2">x</a>' in page and "<th>a</th>" in page and "<td>2</td>" in page
    assert "<ul><li>\none two\n</li><li>\nthree" in page and "<pre><code>code *x*</code></pre>" in page
    assert "<ol><li>\nfirst" in page


@pytest.mark.parametrize("page", sorted(p.name for p in (REPO_ROOT / definition.PAGES_FOLDER).glob("*.md")))
def test_every_participants_page_renders_without_markdown_left(page):
    html = render((REPO_ROOT / definition.PAGES_FOLDER / page).read_text(encoding="utf-8"))
    text = re.sub(r"<pre><code>.*?</code></pre>|<code>.*?</code>", "", html, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    assert not re.search(r"^\s*([-*] |#|\|)|\*\*|\]\(", text, flags=re.M), page
