"""``reteco golden-sheet`` and ``reteco judge-meta --human-grades`` (issue 33, point 2): the blind
sheets hold nothing of the golden set's intent; filled sheets read back give the kappas that
scikit-learn gives; bad rows are refused by file and line; ``--gate-against consensus`` gates on
the humans' grades."""

from __future__ import annotations

import csv
import json
import random
import re
from collections import Counter
from pathlib import Path
from statistics import median

import numpy as np
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from reteco.commands import main
from reteco.judge.prompts import load_prompt_set
from reteco.problems import EXIT_INPUT, EXIT_OK
from reteco.workbench.judge_audit.golden import CASES_FILE, THRESHOLDS_FILE, golden_dir, golden_prompt_version, load_golden_set
from reteco.workbench.judge_audit.golden_humans import consensus_cases, consensus_grades, group_figures
from reteco.workbench.judge_audit.golden_sheet import NOT_SHOWN, HumanGrades, item_id
from reteco.workbench.judge_audit.meta_contrasts import load_contrast_thresholds, probe_items
from reteco.workbench.judge_audit.meta_evaluation import load_thresholds, meta_evaluate
from reteco.workbench.judge_audit.simulated_judges import simulated_judges, simulated_outcomes

VERSIONS = (3, 4)
ANNOTATORS = ("ann1", "ann2", "ann3")


@pytest.fixture(scope="module")
def cases():
    return {v: load_golden_set(v) for v in VERSIONS}


def write_sheets(tmp_path: Path, version: int, seed: int = 7, annotators=ANNOTATORS) -> Path:
    out = tmp_path / f"sheets-v{version}-{seed}"
    code = main(["golden-sheet", "--golden-version", str(version), "--annotators", ",".join(annotators),
                 "--out", str(out), "--seed", str(seed)])
    assert code == EXIT_OK
    return out


def read_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# --- blindness ----------------------------------------------------------------------------------


def _shown_texts(version: int, prompts) -> list[str]:
    """What an annotator must see, verbatim from the golden file and the prompt files: the turns,
    passages, references, key points, answers; and the rubric. Whatever else a sheet holds is
    the writer's own, and must reveal nothing."""
    data = yaml.safe_load((golden_dir(version) / CASES_FILE).read_text(encoding="utf-8"))
    texts = [prompts.system, *(d.text for d in prompts.dimensions.values()),
             *(block["label"] for block in prompts.layout["blocks"].values())]  # the judge's names of the columns
    for series in data["series"]:
        turn = series["turn"]
        texts += [turn["query"], turn.get("history") or "", turn["reference_answer"]]
        texts += [text for _, text in turn["gold"] + turn.get("retrieved", [])]
        texts += [kp["text"] for kp in turn.get("key_points", [])]
        texts += [v["answer"] for v in series["variants"]]
    return sorted({t.strip() for t in texts if t.strip()}, key=len, reverse=True)


def _residue(raw: str, shown: list[str]) -> str:
    """The file's text with every shown text removed, in each encoding the writers use (CSV
    doubles quotes; JSON escapes), longest first."""
    for text in shown:
        for form in {text, text.replace('"', '""'), json.dumps(text, ensure_ascii=False)[1:-1]}:
            raw = raw.replace(form, "\x00")
    return raw


def _forbidden(version: int, golden_cases) -> set[str]:
    """Every string of the golden set that says what its author intended."""
    data = yaml.safe_load((golden_dir(version) / CASES_FILE).read_text(encoding="utf-8"))
    words = {"intended", "min_score", "max_score", "allowed", "expect", "varies", "answerable", "purpose", "series",
             "variant", "tags", "kind", "injection"}
    for c in golden_cases:
        words |= {c.id, c.series, c.variant, c.kind, c.purpose, *c.tags, f"{c.series}/{c.variant}"}
        words |= {f"[{c.grade}, {c.min_score}, {c.max_score}]", f"{c.min_score}-{c.max_score}"}
    for series in data["series"]:
        words |= {doc_id for doc_id, _ in series["turn"]["gold"] + series["turn"].get("retrieved", [])}
        words |= {pair["tag"] for pair in series["pairs"]}
    return {w for w in words if w}


@pytest.mark.parametrize("version", VERSIONS)
def test_no_file_an_annotator_gets_holds_an_intended_grade_id_tag_kind_or_purpose(tmp_path, cases, version):
    out = write_sheets(tmp_path, version)
    prompts = load_prompt_set(golden_prompt_version(version))
    shown = _shown_texts(version, prompts)
    forbidden = _forbidden(version, cases[version])
    files = sorted(p for p in (out / "annotators").rglob("*") if p.is_file())
    assert {p.relative_to(out).as_posix() for p in files} == {
        f"annotators/{a}/{f}" for a in ANNOTATORS for f in ("sheet.csv", "sheet.jsonl", "guide.md")}
    assert sorted(p.name for p in out.iterdir()) == ["annotators", "key.json"]  # the key is beside, not inside
    checked = 0
    for path in files:
        residue = _residue(path.read_text(encoding="utf-8"), shown).lower()
        for word in forbidden:
            # a whole token: "base" is no leak inside "database", "answer" none inside "reference_answer"
            pattern = rf"(?<![\w-]){re.escape(word.lower())}(?![\w-])" if re.fullmatch(r"[\w-]+", word) else re.escape(word.lower())
            assert not re.search(pattern, residue), f"{path.relative_to(out)} reveals {word!r}"
            checked += 1
    assert checked > 1000
    # The columns beside the shown texts hold only the opaque id, the dimension, the sub-track,
    # the annotator and an empty grade.
    for a in ANNOTATORS:
        rows = read_rows(out / "annotators" / a / "sheet.csv")
        assert len(rows) == len(cases[version])
        assert all(re.fullmatch(r"g[0-9a-f]{12}", r["item_id"]) and r["grade"] == "" and r["annotator"] == a
                   and r["subtrack"] in ("2b", "2c") for r in rows)


@pytest.mark.parametrize("version", VERSIONS)
def test_each_annotator_gets_every_case_in_an_order_of_their_own_and_the_key_recovers_it(tmp_path, cases, version):
    out = write_sheets(tmp_path, version)
    key = json.loads((out / "key.json").read_text())
    assert key["golden_version"] == version and key["prompt_version"] == golden_prompt_version(version)
    assert sorted(key["items"].values()) == sorted(c.id for c in cases[version])
    assert all(item_id(key["secret"], version, case) == i for i, case in key["items"].items())
    orders = {a: [key["items"][r["item_id"]] for r in read_rows(out / "annotators" / a / "sheet.csv")] for a in ANNOTATORS}
    golden_order = [c.id for c in cases[version]]
    assert len({tuple(o) for o in orders.values()}) == 3 and all(o != golden_order for o in orders.values())
    assert all(sorted(o) == sorted(golden_order) for o in orders.values())
    # the same seed, the same orders (the ids differ: a new secret per sheet set)
    again = write_sheets(tmp_path / "again", version)
    key2 = json.loads((again / "key.json").read_text())
    assert [key2["items"][r["item_id"]] for r in read_rows(again / "annotators" / "ann1" / "sheet.csv")] == orders["ann1"]
    assert key2["secret"] != key["secret"]
    # a second run into the same folder would orphan the sheets handed out: refused
    assert main(["golden-sheet", "--golden-version", str(version), "--out", str(out)]) == EXIT_INPUT


def test_each_row_shows_what_its_dimension_s_prompt_shows(tmp_path, cases):
    out = write_sheets(tmp_path, 4)
    key = json.loads((out / "key.json").read_text())
    by_id = {c.id: c for c in cases[4]}
    prompts = load_prompt_set(4)
    seen = set()
    for row in read_rows(out / "annotators" / "ann1" / "sheet.csv"):
        case = by_id[key["items"][row["item_id"]]]
        inputs = prompts.dimensions[case.item.dimension].inputs
        assert row["dimension"] == case.item.dimension and row["response"] == case.item.answer
        assert row["query"] == case.item.query
        assert (row["passages"] != NOT_SHOWN) == ("evidence" in inputs)
        assert (row["gold_passages"] != NOT_SHOWN) == ("gold_evidence" in inputs)
        assert (row["reference_answer"] == case.item.reference_answer) == ("reference_answer" in inputs)
        if "evidence" in inputs:
            assert row["passages"] == "\n\n".join(f"[{n}] {t.strip()}" for n, (_, t) in enumerate(case.item.evidence, 1))
        seen.add((case.item.dimension, row["passages"] == NOT_SHOWN, row["gold_passages"] == NOT_SHOWN))
    # prompt version 4: faithfulness sees the system's passages alone, correctness the gold ones
    assert ("faithfulness", False, True) in seen and ("correctness", True, False) in seen
    assert ("relevance", True, True) in seen
    guide = (out / "annotators" / "ann1" / "guide.md").read_text()
    assert prompts.system.strip() in guide and all(d.text.strip() in guide for d in prompts.dimensions.values())


# --- round trip ---------------------------------------------------------------------------------


def fill(out: Path, version: int, golden_cases, noise: dict[str, float], seed: int = 1, skip: float = 0.0) -> dict:
    """Each annotator grades every row: the intended grade, moved by +-1 with probability
    ``noise[annotator]`` (clipped to 1..5), left blank with probability ``skip``. Returns
    {case id: {annotator: grade}}."""
    key = json.loads((out / "key.json").read_text())
    by_id = {c.id: c for c in golden_cases}
    rng = random.Random(seed)
    given: dict[str, dict[str, int]] = {}
    for a, p in noise.items():
        path = out / "annotators" / a / "sheet.csv"
        rows = read_rows(path)
        for row in rows:
            if rng.random() < skip:
                continue
            case = key["items"][row["item_id"]]
            grade = by_id[case].grade + (rng.choice((-1, 1)) if rng.random() < p else 0)
            row["grade"] = str(min(5, max(1, grade)))
            given.setdefault(case, {})[a] = int(row["grade"])
        write_rows(path, rows)
    return given


@pytest.mark.parametrize("version", VERSIONS)
def test_the_grades_read_back_give_scikit_learns_kappas(tmp_path, cases, version, capsys):
    out = write_sheets(tmp_path, version)
    noise = {"ann1": 0.2, "ann2": 0.35, "ann3": 0.5}
    given = fill(out, version, cases[version], noise, skip=0.05)
    meta = tmp_path / "meta"
    code = main(["judge-meta", "--out", str(meta), "--human-grades", *(str(out / "annotators" / a / "sheet.csv")
                                                                           for a in ANNOTATORS),
                 "--humans-only", "--resamples", "200"])
    assert code == EXIT_OK, capsys.readouterr().err
    report = json.loads((meta / "golden_humans.json").read_text())
    assert report["golden_version"] == version and report["annotators"] == list(ANNOTATORS)
    assert report["graded_cases"] == len(given) and report["blank_grades"] > 0
    by_id = {c.id: c for c in cases[version]}
    consensus = {c: int(np.floor(median(g.values()) + 0.5)) for c, g in given.items()}
    labels = [1, 2, 3, 4, 5]
    for d, figures in report["per_dimension"].items():
        mine = [c for c in given if by_id[c].item.dimension == d]
        assert figures["cases"] == len(mine)
        for a in ANNOTATORS:
            graded = [c for c in mine if a in given[c]]
            expected = cohen_kappa_score([given[c][a] for c in graded], [by_id[c].grade for c in graded],
                                         weights="quadratic", labels=labels)
            assert figures["annotators"][a]["value"] == pytest.approx(expected, abs=1e-12)
            assert figures["annotators"][a]["ci_low"] <= expected <= figures["annotators"][a]["ci_high"]
        pairs = []
        for i, a in enumerate(ANNOTATORS):
            for b in ANNOTATORS[i + 1:]:
                both = [c for c in mine if a in given[c] and b in given[c]]
                pairs.append(cohen_kappa_score([given[c][a] for c in both], [given[c][b] for c in both],
                                               weights="quadratic", labels=labels))
        assert figures["inter_annotator"]["value"] == pytest.approx(np.mean(pairs), abs=1e-12)
        assert figures["consensus"]["value"] == pytest.approx(cohen_kappa_score(
            [consensus[c] for c in mine], [by_id[c].grade for c in mine], weights="quadratic", labels=labels), abs=1e-12)
    # the noisier annotator agrees less with the intended grades, on the whole set
    assert report["per_dimension"]["correctness"]["annotators"]["ann1"]["value"] > \
        report["per_dimension"]["correctness"]["annotators"]["ann3"]["value"]
    outside = sorted(c for c, g in consensus.items() if not by_id[c].min_score <= g <= by_id[c].max_score)
    assert sorted(x["id"] for x in report["disagreements"]) == outside
    for tag, dims in report["per_tag"].items():
        for d, figures in dims.items():
            assert figures["cases"] == sum(1 for c in given if tag in by_id[c].tags and by_id[c].item.dimension == d)
    md = (meta / "golden_humans.md").read_text()
    assert "## Per contrast tag" in md and "Light 1971" in md and "rounded half up" in md


def test_group_figures_by_hand(cases):
    # Four faithfulness cases; intended grades t = 5, 3, 2, 1 (sum of squares 39, mean 2.75).
    # Quadratic kappa = 1 - observed / expected, observed the mean squared difference, expected the
    # same over independent pairs: mean(x^2) + mean(y^2) - 2 mean(x) mean(y).
    # a = 5, 4, 2, 1 (46, mean 3): observed 1/4, expected (46 + 39) / 4 - 2 * 3 * 2.75 = 4.75: 18/19.
    # b = 5, 3, 3, 1 (44, mean 3): observed 1/4, expected (44 + 39) / 4 - 16.5 = 4.25: 16/17.
    # a vs b: observed 2/4, expected (46 + 44) / 4 - 2 * 3 * 3 = 4.5: 8/9 (the only pair: the mean).
    # Consensus: medians 5, 3.5 -> 4, 2.5 -> 3, 1 = 5, 4, 3, 1 (51, mean 3.25): observed 2/4,
    # expected (51 + 39) / 4 - 2 * 3.25 * 2.75 = 4.625: 33/37; equal to t on 2 of 4 cases.
    picked = [next(c for c in cases[4] if c.item.dimension == "faithfulness" and c.grade == g) for g in (5, 3, 2, 1)]
    human = HumanGrades({c.id: {"a": x, "b": y} for c, x, y in zip(picked, (5, 4, 2, 1), (5, 3, 3, 1))}, ("a", "b"), 8, 0)
    consensus = {c.id: g for c, g in zip(picked, (5, 4, 3, 1))}
    assert consensus == consensus_grades(human)
    f = group_figures(picked, human, consensus, resamples=100, seed=0)
    assert f["annotators"]["a"]["value"] == pytest.approx(18 / 19, abs=1e-12)
    assert f["annotators"]["b"]["value"] == pytest.approx(16 / 17, abs=1e-12)
    assert f["inter_annotator"]["value"] == pytest.approx(8 / 9, abs=1e-12)
    assert f["consensus"]["value"] == pytest.approx(33 / 37, abs=1e-12)
    assert f["consensus_exact"] == 0.5
    assert f["consensus_in_range"] == sum(c.min_score <= g <= c.max_score for c, g in zip(picked, (5, 4, 3, 1))) / 4


# --- bad rows -----------------------------------------------------------------------------------


def test_bad_rows_are_refused_by_file_and_line(tmp_path, cases, capsys):
    out = write_sheets(tmp_path, 4, annotators=("ann1", "ann2"))
    fill(out, 4, cases[4], {"ann1": 0.0, "ann2": 0.0})
    path = out / "annotators" / "ann1" / "sheet.csv"
    rows = read_rows(path)
    # every row spans several lines (the history and passages hold line breaks): a row's line is its first
    lines_before = [1]
    for row in rows:
        text = "".join(f'"{v}"' for v in row.values())
        lines_before.append(lines_before[-1] + text.count("\n") + 1)
    rows[2]["item_id"] = ""
    rows[4]["grade"] = "6"
    rows[5]["grade"] = "3.5"
    rows[6]["item_id"] = "g000000000000"
    rows[8]["item_id"], rows[8]["dimension"] = rows[7]["item_id"], rows[7]["dimension"]  # graded twice
    write_rows(path, rows)
    meta = tmp_path / "meta"
    code = main(["judge-meta", "--out", str(meta), "--human-grades", str(path), str(out / "annotators" / "ann2" / "sheet.csv"),
                 "--humans-only"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and not (meta / "golden_humans.json").exists()
    line = {k: lines_before[k] + 1 for k in range(len(rows))}  # rows[k] starts after the header and k rows
    assert f"{path}:{line[2]}: error: missing item id" in err
    # two bad grades: one kind of error, said once with both lines (reteco.problems' rule)
    assert (f"{path}:{line[4]}: error: grade '6' is not a whole number from 1 to 5 (an error of this kind on 2 lines: "
            f"{line[4]}, {line[5]})") in err
    assert f"{path}:{line[6]}: error: unknown item id 'g000000000000'" in err
    assert f"{path}:{line[8]}: error: item '{rows[7]['item_id']}' graded twice by 'ann1' (first at {path}:{line[7]})" in err
    assert "Traceback" not in err


def test_a_sheet_without_its_columns_or_key_is_refused(tmp_path, capsys):
    out = write_sheets(tmp_path, 4, annotators=("ann1",))
    sheet = out / "annotators" / "ann1" / "sheet.csv"
    bare = tmp_path / "bare.csv"
    bare.write_text("item_id,score\ng0,3\n")
    assert main(["judge-meta", "--out", str(tmp_path / "m"), "--human-grades", str(bare), "--golden-key",
                 str(out / "key.json"), "--humans-only"]) == EXIT_INPUT
    assert f"{bare}:1: error: missing column(s) annotator, grade" in capsys.readouterr().err
    assert main(["judge-meta", "--out", str(tmp_path / "m"), "--human-grades", str(bare), "--humans-only"]) == EXIT_INPUT
    assert "--golden-key" in capsys.readouterr().err
    assert main(["judge-meta", "--out", str(tmp_path / "m"), "--human-grades", str(sheet), "--golden-version", "3",
                 "--humans-only"]) == EXIT_INPUT
    assert "the sheets are of golden set 4" in capsys.readouterr().err
    assert main(["judge-meta", "--out", str(tmp_path / "m"), "--gate-against", "consensus"]) == EXIT_INPUT
    assert "needs the annotators' sheets" in capsys.readouterr().err


# --- the gate against the consensus -------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_gating_against_the_consensus_changes_the_verdict(cases, version):
    """A judge that scores every abstention 5 fails the intended grades; humans who graded every
    case as that judge did make it pass: the gate follows the grades it is given."""
    golden = cases[version]
    thresholds_path = golden_dir(version) / THRESHOLDS_FILE
    thresholds, contrast = load_thresholds(thresholds_path, version), load_contrast_thresholds(thresholds_path)
    judge = {j.name: j for j in simulated_judges(golden)}["abstention-always-5"]
    probes = probe_items(golden)
    outcomes, probe_outcomes = simulated_outcomes(judge, golden, probes, random.Random(0))
    intended = meta_evaluate(golden, outcomes, thresholds, contrast_thresholds=contrast, probes=probes,
                             probe_outcomes=probe_outcomes)
    assert intended["passed"] is False
    assert any("abstention" in f for f in intended["failures"])
    regraded = consensus_cases(golden, {c.id: o.score for c, o in zip(golden, outcomes)})
    humans = meta_evaluate(regraded, outcomes, thresholds, contrast_thresholds=contrast, probes=probe_items(regraded),
                           probe_outcomes=probe_outcomes)
    assert humans["failures"] == [] and humans["passed"] is True
    # the regraded cases' ranges follow the golden rule: N-1..N+1 within 1..5
    assert all((c.min_score, c.max_score) == (max(1, c.grade - 1), min(5, c.grade + 1)) for c in regraded)
    # a case nobody graded keeps its intended grade and range
    partial = consensus_cases(golden, {golden[0].id: 1})
    assert partial[1:] == golden[1:] and (partial[0].grade, partial[0].min_score, partial[0].max_score) == (1, 1, 2)


@pytest.mark.slow
def test_judge_meta_gate_against_consensus_through_the_fake_judge(fake_openai, meta_run, cases, tmp_path, capsys):
    """The command end to end on golden v3 (the packaged prompt version's): the fake judge scores
    every abstention 5; annotators who graded every case as it did turn exit 1 into exit 0."""
    from support.fake_openai_server import graded_judge

    from reteco.judge import build_request, load_judge_config

    golden = cases[3]
    config = load_judge_config()
    judge = {j.name: j for j in simulated_judges(golden)}["abstention-always-5"]
    rng = random.Random(0)
    table: dict[str, tuple[int, bool]] = {}
    for c in golden:
        table.setdefault(build_request(c.item, config)["messages"][1]["content"], judge.verdict(c, rng, None))
    for p in probe_items(golden):
        if p.item != p.case.item:
            table.setdefault(build_request(p.item, config)["messages"][1]["content"], judge.verdict(p.case, rng, p.kind))
    fake_openai.judge = graded_judge(table)
    out = write_sheets(tmp_path, 3, annotators=("ann1", "ann2"))
    key = json.loads((out / "key.json").read_text())
    by_id = {c.id: c for c in golden}
    for a in ("ann1", "ann2"):
        path = out / "annotators" / a / "sheet.csv"
        rows = read_rows(path)
        for row in rows:
            row["grade"] = str(table[build_request(by_id[key["items"][row["item_id"]]].item, config)["messages"][1]["content"]][0])
        write_rows(path, rows)
    sheets = [str(out / "annotators" / a / "sheet.csv") for a in ("ann1", "ann2")]
    code, report, err = meta_run(capsys, "--golden-version", "3")
    assert code == EXIT_INPUT and report["gate_against"] == "intended", err
    code, report, err = meta_run(capsys, "--golden-version", "3", "--human-grades", *sheets, "--resamples", "100",
                                 "--gate-against", "consensus")
    assert code == EXIT_OK, err
    assert report["gate_against"] == "consensus" and report["human_consensus"]["graded_cases"] == len(golden)
    assert report["human_consensus"]["kept_intended"] == 0 and "gating against the human consensus" in err


# --- a sample of pairs --------------------------------------------------------------------------

@pytest.mark.parametrize("version", (4, 5))
def test_pairs_per_tag_draws_whole_pairs_reproducibly_and_reads_back(tmp_path, version, capsys):
    golden = load_golden_set(version)
    by_id = {c.id: c for c in golden}
    pairs_of: dict[str, set] = {}
    for c in golden:
        for tag, other in c.pairs:
            pairs_of.setdefault(tag, set()).add((c.series, c.variant, other))
    outs = []
    for run in ("a", "b"):
        out = tmp_path / f"sample-{run}"
        assert main(["golden-sheet", "--golden-version", str(version), "--annotators", ",".join(ANNOTATORS),
                     "--out", str(out), "--seed", "11", "--pairs-per-tag", "3"]) == EXIT_OK
        outs.append(out)
    assert "pairs per tag" in capsys.readouterr().out
    keys = [json.loads((out / "key.json").read_text()) for out in outs]
    drawn = [sorted(k["items"].values()) for k in keys]
    assert drawn[0] == drawn[1]  # the seed decides the sample (the ids differ: a secret per run)
    assert keys[0]["pairs_per_tag"] == 3 and len(drawn[0]) < len(golden)
    variants = {(by_id[c].series, by_id[c].variant) for c in drawn[0]}
    # Whole answers: every graded dimension of a drawn answer is on the sheet.
    assert set(drawn[0]) == {c.id for c in golden if (c.series, c.variant) in variants}
    # Every tag has min(3, its pairs) pairs with both answers drawn; each drawn answer is in one.
    for tag, pairs in pairs_of.items():
        complete = [p for p in pairs if {(p[0], p[1]), (p[0], p[2])} <= variants]
        assert len(complete) >= min(3, len(pairs)), tag
    in_a_pair = {(s, v) for pairs in pairs_of.values() for s, a, b in pairs if {(s, a), (s, b)} <= variants
                 for v in (a, b)}
    # Every (dimension, intended grade) has 3 cases (or all the set has); an answer outside the
    # drawn pairs is there only to bring a grade its pairs left short up to 3.
    def grades_of(answers):
        return Counter((c.item.dimension, c.grade) for c in golden if (c.series, c.variant) in answers)
    whole, sampled, from_pairs = grades_of({(c.series, c.variant) for c in golden}), grades_of(variants), grades_of(in_a_pair)
    assert all(sampled[g] >= min(3, n) for g, n in whole.items())
    for answer in variants - in_a_pair:
        assert any(from_pairs[(c.item.dimension, c.grade)] < 3 for c in golden if (c.series, c.variant) == answer)
    # Each annotator's sheet holds exactly the sample, and reading it back works as for the whole set.
    for a in ANNOTATORS:
        rows = read_rows(outs[0] / "annotators" / a / "sheet.csv")
        assert sorted(keys[0]["items"][r["item_id"]] for r in rows) == drawn[0]
    given = fill(outs[0], version, golden, {"ann1": 0.1, "ann2": 0.1, "ann3": 0.1})
    meta = tmp_path / "meta"
    assert main(["judge-meta", "--out", str(meta), "--human-grades",
                 *(str(outs[0] / "annotators" / a / "sheet.csv") for a in ANNOTATORS),
                 "--humans-only", "--resamples", "50"]) == EXIT_OK, capsys.readouterr().err
    report = json.loads((meta / "golden_humans.json").read_text())
    assert report["graded_cases"] == len(given) == len(drawn[0])
    assert set(report["per_tag"]) == set(pairs_of)


def test_pairs_per_tag_needs_a_tagged_set_and_a_positive_count(tmp_path, capsys):
    assert main(["golden-sheet", "--golden-version", "2", "--out", str(tmp_path / "a"), "--pairs-per-tag", "3"]) == EXIT_INPUT
    assert "golden set 2 has no tagged pairs to draw" in capsys.readouterr().err
    assert main(["golden-sheet", "--golden-version", "5", "--out", str(tmp_path / "b"), "--pairs-per-tag", "0"]) == EXIT_INPUT
    assert "--pairs-per-tag: error: must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "a" / "key.json").exists() and not (tmp_path / "b" / "key.json").exists()
