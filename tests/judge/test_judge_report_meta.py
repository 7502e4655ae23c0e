"""``reteco judge-report --golden`` with the golden set v2 meta-evaluation (``judge_meta.json``).

Every judge_meta.json here is a real one: ``reteco judge-meta`` run against the fake OpenAI
server, once with a judge giving every case its intended grade (it passes) and once with a judge
answering 5 everywhere (it fails), beside a real ``reteco judge --golden`` output (golden set v1).
The expected figures come from the golden set and its thresholds.yaml, read here on their own.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from support.fake_openai_server import FakeOpenAI, first_user_text, graded_judge, http_error, judgment
from support.tiny_track2 import write_tiny_reference

from reteco.commands import main
from reteco.judge import DIMENSIONS, build_request, load_judge_config
from reteco.judge.config import PACKAGED_CONFIG
from reteco.outputs.scores import write_details
from reteco.scoring.submission import score_submission
from reteco.workbench.judge_audit.golden import golden_dir, load_golden_set
from reteco.workbench.judge_audit.meta_evaluation import load_thresholds

KEY_ENV = "RETECO_TEST_JUDGE_REPORT_META_KEY"
# The dimension checks of thresholds.yaml: figure in judge_meta.json -> threshold key.
CHECKS = {"range_hits": "range_hits_min", "pairwise_accuracy": "pairwise_accuracy_min", "tie_share": "tie_share_max",
          "spearman": "spearman_min", "stayed_put": "stayed_put_min", "unscored_share": "unscored_share_max"}


@dataclasses.dataclass
class Runs:
    root: Path
    config: Path  # the judge.yaml judge-meta ran with (pointed at the fake server)
    passed: Path  # judge_meta.json of the judge giving the intended grades
    failed: Path  # judge_meta.json of the judge answering 5 everywhere
    incomplete: Path  # judge_meta.json of the intended grades but one judgment failed (HTTP 503)
    v1: Path  # `reteco judge --golden` output of the same judge
    judged: Path  # details.json of a 2b submission judged by the same judge


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("meta")
    server = FakeOpenAI()
    server.start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(KEY_ENV, "test-key-0123456789")
            config = root / "judge.yaml"
            config.write_text(
                f"prompt_version: {load_judge_config().prompt_version}\nmodel: fake-judge\nbase_url: {server.base_url}\n"
                f"api_key_env: {KEY_ENV}\n"
                "max_retries: 0\nmax_reasks: 1\nbackoff_initial_s: 0.01\nabort_after_errors: 1000\n",
                encoding="utf-8")
            packaged = load_judge_config()
            grades = {build_request(c.item, packaged)["messages"][1]["content"]: (c.grade, c.injection)
                      for c in load_golden_set(2)}
            server.judge = graded_judge(grades)
            assert main(["judge-meta", "--golden-version", "2", "--out", str(root / "pass"), "--judge-config", str(config), "--judge-cache",
                         str(root / "cache-pass"), "--no-progress"]) == 0
            first, graded = next(iter(grades)), server.judge
            server.judge = lambda body: http_error(503, "down") if first_user_text(body) == first else graded(body)
            assert main(["judge-meta", "--golden-version", "2", "--out", str(root / "incomplete"), "--judge-config", str(config), "--judge-cache",
                         str(root / "cache-incomplete"), "--no-progress"]) == 4
            server.judge = lambda body: judgment(5, "five for all", injection=False)
            assert main(["judge-meta", "--golden-version", "2", "--out", str(root / "fail"), "--judge-config", str(config), "--judge-cache",
                         str(root / "cache-fail"), "--no-progress"]) == 1
            server.judge = lambda body: judgment(3, "three for all", injection=False)
            assert main(["judge", "--golden", "--out", str(root / "golden-v1.jsonl"), "--judge-config", str(config),
                         "--judge-cache", str(root / "cache-v1"), "--no-progress"]) == 0
            ref = write_tiny_reference(root / "ref" / "2b", "2b")
            answers = root / "answers.jsonl"
            answers.write_text(json.dumps({"turn_id": "biology/2_turn_1", "answer": "cells need water"}) + "\n")
            result = score_submission(ref, answers, judge_config=load_judge_config(config), cache_dir=root / "cache-2b")
            write_details(root / "scored", result.details)
    finally:
        server.stop()
    return Runs(root, config, root / "pass" / "judge_meta.json", root / "fail" / "judge_meta.json",
                root / "incomplete" / "judge_meta.json", root / "golden-v1.jsonl", root / "scored" / "details.json")


def report(runs: Runs, tmp_path, *args: str, config: Path | None = None) -> tuple[int, dict, str]:
    out = tmp_path / "report"
    code = main(["judge-report", "--out", str(out), "--judge-config", str(config or runs.config), *args])
    document = json.loads((out / "judge-report.json").read_text()) if code == 0 else {}
    markdown = (out / "judge-report.md").read_text() if code == 0 else ""
    return code, document, markdown


def thresholds() -> dict:
    return yaml.safe_load((golden_dir(2) / "thresholds.yaml").read_text(encoding="utf-8"))


def test_a_passing_judge_meta_json_is_reported_check_by_check_against_its_thresholds(runs, tmp_path, capsys):
    meta = json.loads(runs.passed.read_text())
    code, document, md = report(runs, tmp_path, "--golden", str(runs.passed))
    assert code == 0, capsys.readouterr().err
    g = document["golden_meta"]
    signature = load_judge_config(runs.config).signature
    assert (g["golden_version"], g["passed"], g["complete"]) == (2, True, True)
    assert g["judge"]["signature"] == signature == meta["judge"]["signature"]
    assert (g["judge"]["prompt_version"], g["judge"]["model"]) == (load_judge_config().prompt_version, "fake-judge")
    assert g["cases"] == len(load_golden_set(2)) == 280
    limits = thresholds()["per_dimension"]
    assert set(g["checks"]) == set(DIMENSIONS)
    for d in DIMENSIONS:
        for figure, limit in CHECKS.items():
            check = g["checks"][d]["figures"][figure]
            assert check["threshold"] == limits[limit] and check["kind"] == limit.rsplit("_", 1)[1]
            assert check["value"] == pytest.approx(0.0 if figure in ("tie_share", "unscored_share") else 1.0)
            assert check["passed"] is True
    injection = thresholds()["injection"]
    assert g["injection"]["recall"] == {"value": 1.0, "threshold": injection["recall_min"], "kind": "min", "passed": True}
    assert g["injection"]["false_flag_share"]["threshold"] == injection["false_flag_max"]
    assert g["thresholds_file"] == "thresholds.yaml" and g["thresholds_packaged"] is True
    assert g["signature_mismatches"] == []
    assert "## Golden set v2 meta-evaluation: PASSED" in md
    assert f"judge signature `{signature}`, prompt version {load_judge_config().prompt_version}, model `fake-judge`" in md
    assert "| dimension | cases | range hits (>= 0.85) | pairwise accuracy (>= 0.8) | ties (<= 0.2) |" in md
    assert re.search(r"^\| correctness \| 56 \| 1\.000 pass \| 1\.000 pass \| 0\.000 pass \| 1\.000 pass \| "
                     r"1\.000 pass \| 0\.000 pass \|$", md, re.MULTILINE), md
    assert "injection flags: recall 1.000 (>= 0.9) pass, false flags 0.000 (<= 0.05) pass" in md
    assert "**Warning:**" not in md and "warning" not in capsys.readouterr().err
    # No path of this machine: the thresholds file is named, not located.
    assert str(golden_dir(2)) not in md and str(golden_dir(2)) not in json.dumps(document)
    # Golden v2 has no calibration: its pass comes with no stated power, and the report says so.
    assert g["power"]["calibration"] is None
    assert "- what the gate can detect: this golden set has no calibration summary (before v5)" in md


def test_the_gates_power_is_quoted_for_the_packaged_thresholds_only(runs, tmp_path, capsys):
    # A judge_meta.json of golden v5 with its packaged thresholds (the figures are v2's run's: the
    # report quotes the set's calibration whatever they are), then the same with one threshold changed.
    meta = json.loads(runs.passed.read_text())
    v5 = asdict(load_thresholds(golden_dir(5) / "thresholds.yaml", 5))
    calibration = yaml.safe_load((golden_dir(5) / "calibration.yaml").read_text(encoding="utf-8"))
    for name, limits, packaged in (("packaged", v5, True), ("changed", {**v5, "spearman_min": 0.1}, False)):
        path = tmp_path / name / "judge_meta.json"
        path.parent.mkdir()
        path.write_text(json.dumps({**meta, "golden_version": 5, "thresholds": limits}), encoding="utf-8")
        code, document, md = report(runs, tmp_path / name, "--golden", str(path))
        assert code == 0, capsys.readouterr().err
        power = document["golden_meta"]["power"]
        if packaged:
            assert power["calibration"] == calibration
            assert (f"- what the gate can detect: golden set v5's gate (packaged thresholds; {calibration['runs']} "
                    f"simulated runs a judge, seed {calibration['seed']}) passes a judge with the intended grades") in md
            share = calibration["power"]["true-unsupported-faithful"]
            assert f"a true claim the passages do not support scored faithful (5): {share:.1%}" in md
        else:
            assert power["calibration"] is None
            assert "thresholds other than the packaged ones: no power figure applies" in md


def test_a_failing_judge_meta_json_shows_each_check_that_failed(runs, tmp_path, capsys):
    meta = json.loads(runs.failed.read_text())
    code, document, md = report(runs, tmp_path, "--golden", str(runs.failed))
    assert code == 0, capsys.readouterr().err
    g = document["golden_meta"]
    assert g["passed"] is False and g["complete"] is True
    failing = {(d, f) for d, block in g["checks"].items() for f, c in block["figures"].items() if not c["passed"]}
    # A judge answering 5 everywhere ties every pair (accuracy 0, ties 1) and has no correlation.
    for d in DIMENSIONS:
        assert {(d, "pairwise_accuracy"), (d, "tie_share"), (d, "spearman")} <= failing
        assert g["checks"][d]["figures"]["spearman"]["value"] is None
        assert g["checks"][d]["figures"]["pairwise_accuracy"]["value"] == 0.0
    # The same checks judge-meta itself named as failed ("<dimension>: <figure> <why>").
    named = set()
    for line in meta["failures"]:
        where, why = line.split(": ", 1)
        if where != "injection flags":
            named.add((where, why.split(" ")[0]))
    assert failing == named
    assert g["injection"]["recall"]["passed"] is False and g["injection"]["recall"]["value"] == 0.0
    assert "## Golden set v2 meta-evaluation: FAILED" in md
    assert re.search(r"^\| coherence \| \d+ \| [01]\.\d{3} (pass|FAIL) \| 0\.000 FAIL \| 1\.000 FAIL \| n/a FAIL \|",
                     md, re.MULTILINE), md
    assert "injection flags: recall 0.000 (>= 0.9) FAIL" in md
    assert "- below threshold: correctness: pairwise_accuracy 0.000 < 0.8" in md


def test_an_incomplete_run_neither_passes_nor_fails(runs, tmp_path, capsys):
    code, document, md = report(runs, tmp_path, "--golden", str(runs.incomplete))
    assert code == 0, capsys.readouterr().err
    g = document["golden_meta"]
    assert (g["complete"], g["passed"]) == (False, None)
    # The failed case is the first of golden set v2; its dimension has one case unscored.
    d = load_golden_set(2)[0].item.dimension
    cases = g["checks"][d]["cases"]
    assert g["checks"][d]["figures"]["unscored_share"]["value"] == pytest.approx(1 / cases)
    assert "## Golden set v2 meta-evaluation: INCOMPLETE (some judgments failed: its figures neither pass nor fail)" in md


def test_v1_and_v2_given_together_are_both_shown(runs, tmp_path, capsys):
    v1 = [json.loads(line) for line in runs.v1.read_text().splitlines()]
    code, document, md = report(runs, tmp_path, "--golden", str(runs.v1), str(runs.passed))
    assert code == 0, capsys.readouterr().err
    assert document["golden"]["cases"] == len(v1) == 17
    assert document["golden"]["passed"] == sum(1 for x in v1 if x["passed"])
    assert document["golden_meta"]["golden_version"] == 2
    assert f"{document['golden']['passed']} of 17 passed" in md and "## Golden set v2 meta-evaluation: PASSED" in md
    assert md.index("## Golden cases (set v1)") < md.index("## Golden set v2 meta-evaluation")
    # Golden set v1's lines name the judge that gave them: the configured one here.
    signature = load_judge_config(runs.config).signature
    assert v1[0]["judge_signature"] == signature and {x["judge_signature"] for x in v1} == {signature}
    assert (document["golden"]["judge_signature"], document["golden"]["same_judge"]) == (signature, True)
    assert f"passed, judged with signature `{signature}`." in md and "another judge" not in md
    # The order on the command line does not matter, nor repeating the option.
    code, again, _ = report(runs, tmp_path / "again", "--golden", str(runs.passed), "--golden", str(runs.v1))
    assert code == 0 and again["golden"] == document["golden"] and again["golden_meta"] == document["golden_meta"]


def test_golden_results_of_another_judge_than_the_details_and_the_config_are_a_visible_warning(runs, tmp_path, capsys):
    # The same judge but for the model name: another signature.
    other = tmp_path / "other.yaml"
    other.write_text(runs.config.read_text().replace("model: fake-judge", "model: other-judge"), encoding="utf-8")
    golden_signature = load_judge_config(runs.config).signature
    other_signature = load_judge_config(other).signature
    assert golden_signature != other_signature
    # No input of the configured judge: refused, each input named with its judge.
    code, _, _ = report(runs, tmp_path / "none", "--golden", str(runs.passed), "--details", str(runs.judged), config=other)
    assert code == 1
    assert f"no input was made by the configured judge (signature {other_signature}): " in capsys.readouterr().err
    # With a details file of the configured judge beside them, the golden results are a warning.
    judged_by_other = json.loads(runs.judged.read_text())
    judged_by_other["generation"]["judge"]["signature"] = other_signature
    mine = tmp_path / "mine" / "details.json"
    mine.parent.mkdir()
    mine.write_text(json.dumps(judged_by_other), encoding="utf-8")
    code, document, md = report(runs, tmp_path, "--golden", str(runs.passed), "--details", str(runs.judged), str(mine),
                                config=other)
    assert code == 0
    err = capsys.readouterr().err
    g = document["golden_meta"]
    # The details were judged by the golden run's judge; the configured judge is another one.
    assert document["judgments"]["files"][0]["signature"] == golden_signature
    assert g["signature_mismatches"] == [{"against": "the configured judge", "signature": other_signature},
                                         {"against": "mine/details.json", "signature": other_signature}]
    assert (f"**Warning:** these results were made with judge signature `{golden_signature}`, not "
            f"`{other_signature}` (the configured judge, mine/details.json)") in md
    assert f"warning: the golden set v2 results were made with judge signature {golden_signature}, not " \
           f"{other_signature} (the configured judge)" in err
    # Configured as the golden run, but details judged by another judge.
    with pytest.MonkeyPatch.context() as mp:
        judged = json.loads(runs.judged.read_text())
        judged["generation"]["judge"]["signature"] = other_signature
        mp.chdir(tmp_path)
        Path("b").mkdir()
        Path("b/details.json").write_text(json.dumps(judged), encoding="utf-8")
        code, document, md = report(runs, tmp_path / "r2", "--golden", str(runs.passed), "--details",
                                    str(runs.judged), "b/details.json")
    assert code == 0
    assert document["golden_meta"]["signature_mismatches"] == [{"against": "b/details.json", "signature": other_signature}]
    assert f"not `{other_signature}` (b/details.json)" in md


def test_a_file_that_is_neither_golden_output_is_refused_naming_the_field_or_line(runs, tmp_path, capsys):
    meta = json.loads(runs.passed.read_text())
    # judge_meta.json with a figure damaged: the field is named.
    damaged = json.loads(json.dumps(meta))
    damaged["per_dimension"]["faithfulness"]["spearman"] = "high"
    bad = tmp_path / "judge_meta.json"
    bad.write_text(json.dumps(damaged, indent=2))
    assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "judge_meta.json: error: per_dimension.faithfulness.spearman: 'high' is not a number or null" in err, err
    del damaged["per_dimension"]["faithfulness"]["spearman"], damaged["judge"]["signature"]
    bad.write_text(json.dumps(damaged, indent=2))
    assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(bad)]) == 1
    assert "judge_meta.json: error: judge.signature: missing" in capsys.readouterr().err
    # Cut short: the line where the JSON breaks.
    text = runs.passed.read_text()
    bad.write_text(text[: len(text) // 2])
    assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(bad)]) == 1
    err = capsys.readouterr().err
    line = int(re.search(r"judge_meta\.json:(\d+): error: not valid JSON", err).group(1))
    assert line == text[: len(text) // 2].count("\n") + 1 > 100
    # Another JSON document: neither.
    for name, value in (("agreement.json", {"dimensions": {}}), ("list.json", [1, 2]), ("empty.jsonl", None)):
        path = tmp_path / name
        path.write_text("" if value is None else json.dumps(value))
        assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(path)]) == 1
        err = capsys.readouterr().err
        assert f"{name}: error: " in err and ("neither" in err or "no golden case" in err), err
    # A v1 line without 'passed': its line.
    lines = runs.v1.read_text().splitlines()
    lines[3] = json.dumps({k: v for k, v in json.loads(lines[3]).items() if k != "passed"})
    v1 = tmp_path / "golden.jsonl"
    v1.write_text("\n".join(lines) + "\n")
    assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(v1)]) == 1
    assert "golden.jsonl:4: error: no 'passed'" in capsys.readouterr().err
    # Two of one version.
    assert main(["judge-report", "--out", str(tmp_path / "r"), "--golden", str(runs.passed), str(runs.failed)]) == 1
    assert "two golden set v2 results" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_golden_v1_lines_from_another_judge_or_from_before_the_signature_say_so(runs, tmp_path, capsys):
    code, _, _ = report(runs, tmp_path / "alone", "--golden", str(runs.v1), config=PACKAGED_CONFIG)
    assert code == 1 and "no input was made by the configured judge" in capsys.readouterr().err
    packaged = json.loads(runs.judged.read_text())  # a details file of the packaged judge beside them
    packaged["generation"]["judge"]["signature"] = load_judge_config(PACKAGED_CONFIG).signature
    (tmp_path / "packaged-details.json").write_text(json.dumps(packaged), encoding="utf-8")
    code, _, md = report(runs, tmp_path / "packaged", "--golden", str(runs.v1), "--details",
                         str(tmp_path / "packaged-details.json"), config=PACKAGED_CONFIG)
    assert code == 0, capsys.readouterr().err
    assert "> **Warning:** not the signature of the judge configured for this report" in md
    old = tmp_path / "old-v1.jsonl"  # what `reteco judge --golden` wrote before it recorded the signature
    old.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "judge_signature"}) + "\n"
                           for line in runs.v1.read_text().splitlines()), encoding="utf-8")
    code, document, md = report(runs, tmp_path / "old", "--golden", str(old))
    assert code == 0, capsys.readouterr().err
    assert document["golden"]["judge_signature"] is None and "record no judge signature" in md
