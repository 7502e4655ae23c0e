"""``reteco agreement``: the command's wiring against the library on the same data (which file
is the judge's, which the humans'), its outputs (JSON, a self-contained HTML page) and its
errors. The statistics themselves are tested in metrics/test_agreement.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.intervals import walk_intervals

from reteco.commands import main
from reteco.formats.ratings import read_ratings
from reteco.metrics.agreement import agreement

HEADER = "item_id,conversation_id,dimension,rater,score,system"
JUDGE = "gpt-judge@0123456789abcdef"  # a judge's rater names its signature


def write_files(tmp_path: Path) -> tuple[Path, Path]:
    """Eight items of four conversations, two systems; two humans per item. On correctness the
    judge gives every item one point more than both humans (bias +1 exactly); on coherence it
    agrees with the first human."""
    judge, human = [HEADER], [HEADER]
    for k in range(8):
        conv, system = f"c{k // 2}", f"sys{k % 2}"
        h = 1 + k % 4  # 1, 2, 3, 4, 1, 2, 3, 4
        judge.append(f"i{k},{conv},correctness,{JUDGE},{h + 1},{system}")
        human += [f"i{k},{conv},correctness,ann1,{h},{system}", f"i{k},{conv},correctness,ann2,{h},{system}"]
        other = 1 + (k * 3) % 5
        judge.append(f"i{k},{conv},coherence,{JUDGE},{other},{system}")
        human += [f"i{k},{conv},coherence,ann1,{other},{system}",
                  f"i{k},{conv},coherence,ann2,{min(5, other + k % 2)},{system}"]
    j, h = tmp_path / "judge.csv", tmp_path / "human.csv"
    j.write_text("\n".join(judge) + "\n", encoding="utf-8")
    h.write_text("\n".join(human) + "\n", encoding="utf-8")
    return j, h


def test_the_command_writes_what_the_library_computes_with_the_judge_as_the_judge(tmp_path, capsys):
    j, h = write_files(tmp_path)
    out = tmp_path / "out"
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(out), "--seed", "7",
                 "--resamples", "200"]) == 0
    written = json.loads((out / "agreement.json").read_text())
    assert walk_intervals(written) > 10  # issue 32: every interval holds its own estimate, every number finite
    expected = agreement(read_ratings(j, single_rater=True), read_ratings(h), seed=7, resamples=200)
    expected["method"]["judge_signature"] = "0123456789abcdef"  # the command's: which judge made the figures
    assert written == json.loads(json.dumps(expected))
    assert written["method"]["judge"] == JUDGE
    assert (written["method"]["judge_file"], written["method"]["human_file"]) == (str(j), str(h))
    # By hand: judge minus humans is +1 on every correctness item.
    assert written["dimensions"]["correctness"]["bias"]["value"] == 1.0
    assert written["dimensions"]["correctness"]["n_human_raters"] == 2
    assert "system_level" in written
    printed = capsys.readouterr().out.splitlines()
    # The columns are named as in agreement.json, the bias with its direction.
    assert printed[0].split() == ["dimension", "items", "kappa_quadratic", "ceiling.kappa_quadratic",
                                  "alpha_ordinal_humans", "alpha_ordinal_with_judge", "spearman", "bias", "(judge",
                                  "-", "humans)"]
    correctness = next(line for line in printed if line.startswith("correctness")).split()
    block = written["dimensions"]["correctness"]
    assert correctness == ["correctness", "8", f"{block['kappa_quadratic']['value']:.3f}",
                           f"{written['ceiling']['dimensions']['correctness']['kappa_quadratic']['value']:.3f}",
                           f"{block['alpha_ordinal_humans']['value']:.3f}",
                           f"{block['alpha_ordinal_with_judge']['value']:.3f}", f"{block['spearman']['value']:.3f}",
                           "1.000"]


def test_the_defaults_are_the_librarys(tmp_path):
    j, h = write_files(tmp_path)
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o")]) == 0
    method = json.loads((tmp_path / "o" / "agreement.json").read_text())["method"]
    assert (method["seed"], method["resamples"]) == (2027, 2000)


def test_files_given_the_wrong_way_round_are_refused(tmp_path, capsys):
    j, h = write_files(tmp_path)
    assert main(["agreement", "--judge", str(h), "--human", str(j), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert f"{h}:3: error: rater 'ann2' here but 'ann1' on line 2; the judge's file has one rater" in err
    assert not (tmp_path / "o").exists()


def test_a_bad_line_is_named_and_nothing_is_written(tmp_path, capsys):
    j, h = write_files(tmp_path)
    h.write_text(h.read_text().replace("i3,c1,correctness,ann2,4,sys1", "i3,c1,correctness,ann2,4.0,sys1"))
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o")]) == 1
    assert "score '4.0' is not an integer 1..5" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_resamples_must_be_positive(tmp_path):
    j, h = write_files(tmp_path)
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o"),
                 "--resamples", "0"]) == 2


def test_the_page_is_self_contained_and_plots_every_defined_figure(tmp_path):
    j, h = write_files(tmp_path)
    out = tmp_path / "out"
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(out), "--resamples", "100"]) == 0
    page = (out / "agreement.html").read_text()
    result = json.loads((out / "agreement.json").read_text())
    assert "<script" not in page.lower() and "<svg" in page and "<style>" in page
    # No external resource: the only URL is the SVG namespace, which is a name, not a request.
    assert set(re.findall(r"https?://[^'\"<> ]+", page)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", page)
    plotted = ("kappa_quadratic", "alpha_ordinal_humans", "alpha_ordinal_with_judge", "spearman", "bias")
    defined = sum(1 for block in result["dimensions"].values() for k in plotted if block[k]["value"] is not None)
    undefined = sum(1 for block in result["dimensions"].values() for k in plotted if block[k]["value"] is None)
    assert page.count("<circle") == defined and defined >= 10
    assert page.count(">undefined</text>") == undefined  # the three dimensions nobody rated
    bias = result["dimensions"]["correctness"]["bias"]
    assert f"correctness bias: {bias['value']:.3f} [{bias['ci_low']:.3f}, {bias['ci_high']:.3f}]" in page
    # The human ceiling is drawn beside the judge on the kappa and Spearman plots, where defined.
    ceiling = result["ceiling"]["dimensions"]
    drawn = [(d, k) for d in ceiling for k in ("kappa_quadratic", "spearman") if ceiling[d][k]["value"] is not None]
    assert page.count("class='ceiling'") == len(drawn) >= 2
    kappa = ceiling["correctness"]["kappa_quadratic"]
    assert f"correctness kappa_quadratic, human ceiling: {kappa['value']:.3f}" in page


def test_a_negative_seed_is_a_usage_error_naming_the_option(tmp_path, capsys):
    j, h = write_files(tmp_path)
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o"), "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert "argument --seed: -1 is less than 0" in err and "internal error" not in err
    assert not (tmp_path / "o").exists()


def test_resamples_above_the_maximum_are_refused_before_any_work(tmp_path, capsys):
    j, h = write_files(tmp_path)
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o"),
                 "--resamples", "100000000"]) == 2
    assert "argument --resamples: 100000000 is more than 20000" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_files_with_no_item_in_common_are_refused_saying_so(tmp_path, capsys):
    j, h = write_files(tmp_path)
    h.write_text(h.read_text().replace("\ni", "\nother-i"))  # the same ratings, of other items
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert f"{h}: error: no item is in both files: the judge's file ({j}) has 8 items, this file 8" in err
    assert not (tmp_path / "o").exists()


def test_two_judges_are_compared_and_nothing_calls_the_second_one_humans(tmp_path, capsys):
    j, _ = write_files(tmp_path)
    second = tmp_path / "second.csv"
    second.write_text(j.read_text().replace(JUDGE, "other-judge@fedcba9876543210"))
    out = tmp_path / "out"
    assert main(["agreement", "--judge", str(j), "--second-judge", str(second), "--out", str(out),
                 "--resamples", "50"]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    text = (out / "agreement.json").read_text()
    page = (out / "agreement.html").read_text()
    for shown in (printed, text, page):
        assert "human" not in shown.lower(), [line for line in shown.splitlines() if "human" in line.lower()]
    result = json.loads(text)
    assert result["method"]["reference"] == "judge" and result["method"]["second_judge"] == "other-judge@fedcba9876543210"
    assert result["dimensions"]["correctness"]["kappa_quadratic"]["value"] == 1.0  # the same scores
    assert "bias (judge - second judge)" in printed and "Judge-judge agreement" in page
    # Judges' ratings given as --human are refused, with the way to compare two judges.
    assert main(["agreement", "--judge", str(j), "--human", str(second), "--out", str(tmp_path / "o")]) == 1
    assert "every rater of --human is a judge (other-judge@fedcba9876543210): to compare two judges give the " \
           "second one as --second-judge" in capsys.readouterr().err


def test_a_judge_file_must_name_its_judge_by_signature(tmp_path, capsys):
    j, h = write_files(tmp_path)
    j.write_text(j.read_text().replace(JUDGE, "gpt-judge"))
    assert main(["agreement", "--judge", str(j), "--human", str(h), "--out", str(tmp_path / "o")]) == 1
    assert f"{j}:2: error: rater 'gpt-judge' does not name a judge by its signature" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
