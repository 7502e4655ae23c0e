"""``reteco leaderboard --human-ratings --key``: human-corrected system scores from the humans'
ratings of ``reteco human-sample``'s blind paired sample, end to end on the synthetic release
against the fake OpenAI server, each point estimate recomputed here with ppi-python (lambda = 1,
every judged turn unlabelled) and each interval with the formulas written out independently from
the judge's per-turn verdicts and the filled sheets; 2b ranked by paired differences; identical
systems with humans equal to the judge; 60 systems with a clear order; bad ratings refused by line."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.fake_openai_server import TEST_KEY
from support.intervals import walk_intervals

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.release.synthetic.sample_answers import write_sample_answers
from reteco.scoring.submission import score_submission
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (the test extra: pip install -e '.[test]') is not installed")

SYSTEMS = ("orca-labs", "kestrel-ai", "wombat-nlp", "heron-qa")


def _human_score(item_id: str, dimension: str, annotator: str) -> int:
    """A deterministic 'human' score 1..5 that the judge does not know."""
    return 1 + hashlib.sha256(f"{item_id}/{dimension}/{annotator}".encode()).digest()[0] % 5


@pytest.fixture(scope="module")
def corrected(tmp_path_factory):
    """The synthetic 2b reference (51 dev turns), four systems, a sample of 36 items rated by two
    annotators, and the leaderboard with those ratings; everything judged by the fake server."""
    root = tmp_path_factory.mktemp("human_corrected")
    rel = write_synthetic_release(root / "release")
    prepare_release(rel, "dev", root / "ref", subtracks=("2b",))
    write_sample_answers(rel, root / "samples")
    lines = (root / "samples" / "2b" / "answers.jsonl").read_text().splitlines(keepends=True)
    variants = {"orca-labs": lines, "kestrel-ai": lines[::2], "wombat-nlp": lines[::-1], "heron-qa": lines[1::2] + lines[:10]}
    subs = root / "subs"
    subs.mkdir()
    for name, chosen in variants.items():
        (subs / f"{name}.jsonl").write_text("".join(dict.fromkeys(chosen)))
    from support.fake_openai_server import FakeOpenAI

    server = FakeOpenAI()
    server.start()
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("OPENAI_API_KEY", TEST_KEY)
        mp.setenv("OPENAI_BASE_URL", server.base_url)
        mp.setenv("RETECO_WORDNET", str(root / "no-wordnet"))
        sample = root / "sample"
        assert main(["human-sample", "--ref", str(root / "ref" / "2b"), "--submissions", str(subs), "--design",
                     "paired", "--turns", "16", "--seed", "5", "--out", str(sample), "--annotators", "ann1,ann2"]) == 0
        sheets = []
        for annotator in ("ann1", "ann2"):
            path = sample / "annotators" / annotator / "sheet.csv"
            rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
            for row in rows:
                row["score"] = str(_human_score(row["item_id"], row["dimension"], annotator))
            with path.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
                writer.writeheader()
                writer.writerows(rows)
            sheets.append(path)
        cache = root / "cache"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(["leaderboard", "--ref", str(root / "ref" / "2b"), "--submissions", str(subs), "--out",
                         str(root / "out"), "--jobs", "1", "--resamples", "300", "--judge-cache", str(cache),
                         "--human-ratings", *map(str, sheets), "--key", str(sample / "key.csv")])
        assert code == 0
        board = json.loads((root / "out" / "leaderboard.json").read_text())
        block = board["human_corrected"]
        items = block["ratings"]["items"]
        corrected_count = sum("estimate" in s["figures"][JUDGE_MEAN] for s in block["systems"])
        assert corrected_count == 4
        assert f"2b: human-corrected judge_mean for 4 of 4 systems ({items} rated items)" in printed.getvalue()
        reference = Reference.read(root / "ref" / "2b")
        per_turn = {name: score_submission(reference, subs / f"{name}.jsonl", cache_dir=cache).per_topic["generation.per_turn"]
                    for name in SYSTEMS}
        yield {"root": root, "subs": subs, "sample": sample, "sheets": sheets, "cache": cache, "per_turn": per_turn,
               "board": json.loads((root / "out" / "leaderboard.json").read_text())}
    finally:
        mp.undo()
        server.stop()


def _data(corrected, system: str, figure: str):
    """(y, f of the sampled turns, f of every judged turn): the paired design, so a sampled turn the
    system left unanswered counts as rated with y = f = 0 (known by rule), as does every unanswered
    turn in the judge's mean."""
    key = {r["item_id"]: r for r in csv.DictReader((corrected["sample"] / "key.csv").open(encoding="utf-8"))}
    human: dict[tuple[str, str], dict[str, list[float]]] = {}
    for sheet in corrected["sheets"]:
        for row in csv.DictReader(sheet.open(encoding="utf-8")):
            item = key[row["item_id"]]
            human.setdefault((item["submission"], item["turn"]), {}).setdefault(row["dimension"], []).append(
                (int(row["score"]) - 1) / 4)
    sampled = {item["turn"] for item in key.values()}
    y, f, judged = [], [], []
    for row in corrected["per_turn"][system]:
        if not row["answered"]:
            judged.append(0.0)
            if row["turn"] in sampled:
                y.append(0.0)
                f.append(0.0)
            continue
        verdicts = [row["judgments"][d]["normalized"] for d in DIMENSIONS]
        judge = verdicts[DIMENSIONS.index(figure)] if figure in DIMENSIONS else sum(verdicts) / 5
        judged.append(judge)
        rated = human.get((f"{system}.jsonl", row["turn"]))
        if rated:
            means = {d: sum(v) / len(v) for d, v in rated.items()}
            y.append(means[figure] if figure in DIMENSIONS else sum(means.values()) / 5)
            f.append(judge)
    return np.array(y), np.array(f), np.array(judged)


def _expected(corrected, figure: str) -> dict[str, dict]:
    """Every system's figure: the point estimate by ppi-python (lambda = 1, every judged turn as
    the unlabelled set), the interval by the formulas written out:
    se^2 = max(u, mean u over the systems) / n + var1(f0) / T + 2 cov1(f, y - f) / T, t(n-1)."""
    from scipy.stats import t

    data = {system: _data(corrected, system, figure) for system in SYSTEMS}
    parts = {}
    for system, (y, f, f0) in data.items():
        n, big_t, c = len(y), len(f0), 1.0
        point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, f0, lam=1.0)))
        r = y - f
        u = float(np.var(r, ddof=1))
        covariance = float(np.cov(f, r, ddof=1)[0, 1])
        parts[system] = (point, u, float(np.var(f0, ddof=1)) / big_t + 2 * covariance / big_t, n, big_t, c, y)
    pooled = float(np.mean([p[1] for p in parts.values()]))
    out = {}
    for system, (point, u, rest, n, big_t, c, y) in parts.items():
        se = math.sqrt(max(u, pooled) / n + rest)
        q = float(t.ppf(0.975, n - 1))
        human_half = q * c * float(np.std(y, ddof=1)) / math.sqrt(n)
        out[system] = {"estimate": point, "ci_low": max(0.0, point - q * se), "ci_high": min(1.0, point + q * se),
                       "standard_error": se, "n_rated": n, "n_judged": big_t, "human": c * y.mean(),
                       "human_ci_low": max(0.0, c * y.mean() - human_half),
                       "human_ci_high": min(1.0, c * y.mean() + human_half)}
    return out


@pytest.mark.parametrize("figure", [*DIMENSIONS, JUDGE_MEAN])
def test_every_figure_equals_ppi_python_and_the_formulas_on_the_judges_verdicts_and_the_sheets(corrected, figure):
    block = corrected["board"]["human_corrected"]
    rows = {Path(s["file"]).stem: s for s in block["systems"]}
    assert set(rows) == set(SYSTEMS)
    expected = _expected(corrected, figure)
    for system in SYSTEMS:
        got = rows[system]["figures"][figure]
        for name, value in expected[system].items():
            assert got[name] == pytest.approx(value, abs=1e-12), (system, figure, name)
        assert 0 <= got["ci_low"] <= got["estimate"] <= got["ci_high"] <= 1
        assert got["lambda"] == 1.0 and got["effective_sample_size"] > 0
    # the judge-only column is the leaderboard's own figure of that dimension
    board_rows = {Path(s["file"]).stem: s for s in corrected["board"]["systems"]}
    for system in SYSTEMS:
        assert rows[system]["figures"][figure]["judge"] == pytest.approx(board_rows[system][figure], abs=1e-12)


def test_2b_is_ranked_by_the_corrected_figure_with_paired_differences(corrected):
    from scipy.stats import t

    block = corrected["board"]["human_corrected"]
    ranking = block["ranking"]
    estimates = {s["name"]: s["figures"][JUDGE_MEAN]["estimate"] for s in block["systems"]}
    names = list(estimates)
    order = sorted(names, key=lambda n: -estimates[n])
    assert [s["name"] for s in ranking["systems"]] == order
    judge = {s["name"]: s["rank"] for s in corrected["board"]["systems"]}
    for k, row in enumerate(ranking["systems"]):
        assert row["rank"] == k + 1 and row["judge_rank"] == judge[row["name"]]
        assert row["rank_low"] <= row["rank"] <= row["rank_high"] and row["letters"]
    assert len(ranking["pairs"]) == 6
    key = list(csv.DictReader((corrected["sample"] / "key.csv").open(encoding="utf-8")))
    assert len({r["turn"] for r in key}) == 16  # the paired design: 16 turns, each for every system answering it
    for pair in ranking["pairs"]:
        assert pair["paired"] and pair["p_adjusted"] >= pair["p_value"]
        assert -1 <= pair["ci_low"] <= pair["delta"] <= pair["ci_high"] <= 1
        q = float(t.ppf(0.975, pair["degrees_of_freedom"]))
        assert pair["ci_high"] == pytest.approx(min(1.0, pair["delta"] + q * pair["standard_error"]), abs=1e-12)
        assert pair["p_value"] == pytest.approx(
            min(1.0, 2 * float(t.sf(abs(pair["delta"]) / pair["standard_error"], pair["degrees_of_freedom"]))), abs=1e-12)
        assert pair["delta"] == pytest.approx(estimates[pair["a"]] - estimates[pair["b"]], abs=1e-12)
    # "order differs" only for significant pairs the judge orders the other way
    significant = {(p["a"], p["b"]) for p in ranking["pairs"] if p["significant"]}
    assert {(p["a"], p["b"]) for p in ranking["pairs_ordered_differently"]} <= significant
    assert set(ranking["order_differs"]) == {n for p in ranking["pairs_ordered_differently"] for n in (p["a"], p["b"])}
    assert ("note" in ranking) == (not significant)
    page = (corrected["root"] / "out" / "leaderboard.html").read_text()
    assert "Human-corrected" in page
    table = (corrected["root"] / "out" / "human_corrected.csv").read_text()
    assert table.count("\n") == 1 + len(SYSTEMS) * (len(DIMENSIONS) + 1)


def test_bad_ratings_are_refused_by_line_with_exit_1(corrected, tmp_path, capsys):
    root, sample = corrected["root"], corrected["sample"]
    base = ["leaderboard", "--ref", str(root / "ref" / "2b"), "--submissions", str(corrected["subs"]), "--jobs", "1",
            "--judge-cache", str(corrected["cache"]), "--key", str(sample / "key.csv")]
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,dimension,rater,score\nitem-0001,coherence,ann3,2\nitem-9999,coherence,ann3,2\n"
                   "item-0002,coherence,ann3,7\n")
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "o1"), "--human-ratings", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3: error: item 'item-9999' is not in the key" in err
    assert f"{bad}:4: error: score '7' is not an integer 1..5" in err
    assert "Traceback" not in err and not (tmp_path / "o1" / "leaderboard.json").exists()
    # a judge's ratings are not the humans'
    judge = tmp_path / "judge.csv"
    judge.write_text("item_id,dimension,rater,score\nitem-0001,coherence,m@0123456789abcdef,3\n")
    assert main([*base, "--out", str(tmp_path / "o2"), "--human-ratings", str(judge)]) == 1
    assert f"{judge}:2: error: rater 'm@0123456789abcdef' names a judge" in capsys.readouterr().err
    # a key whose item names a submission that is not in the folder: the key's line
    key = tmp_path / "key.csv"
    rows = (sample / "key.csv").read_text().splitlines()
    rows[2] = rows[2].replace("orca-labs.jsonl", "gone.jsonl").replace("kestrel-ai.jsonl", "gone.jsonl").replace(
        "wombat-nlp.jsonl", "gone.jsonl").replace("heron-qa.jsonl", "gone.jsonl")
    key.write_text("\n".join(rows) + "\n")
    item = rows[2].split(",")[0]
    ok = tmp_path / "ok.csv"
    ok.write_text(f"item_id,dimension,rater,score\n{item},coherence,ann3,2\n")
    assert main([*base[:-2], "--key", str(key), "--out", str(tmp_path / "o3"), "--human-ratings", str(ok)]) == 1
    assert f"{key}:3: error: item '{item}': submission 'gone.jsonl' is not among the submissions" in capsys.readouterr().err


def test_options_that_do_not_go_together_exit_2(corrected, tmp_path, capsys):
    root = corrected["root"]
    base = ["leaderboard", "--ref", str(root / "ref" / "2b"), "--submissions", str(corrected["subs"]), "--jobs", "1"]
    assert main([*base, "--out", str(tmp_path / "o1"), "--human-ratings", str(corrected["sheets"][0])]) == 2
    assert "--human-ratings and --key go together" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "o2"), "--human-ratings", str(corrected["sheets"][0]), "--key",
                 str(corrected["sample"] / "key.csv"), "--no-judge"]) == 2


def test_an_unrated_dimension_is_absent_with_its_reason(corrected, tmp_path, capsys):
    root, sample = corrected["root"], corrected["sample"]
    only = tmp_path / "coherence.csv"
    rows = [r for r in csv.DictReader(corrected["sheets"][0].open(encoding="utf-8")) if r["dimension"] == "coherence"]
    only.write_text("item_id,dimension,rater,score\n" + "".join(
        f"{r['item_id']},coherence,{r['rater']},{r['score']}\n" for r in rows))
    assert main(["leaderboard", "--ref", str(root / "ref" / "2b"), "--submissions", str(corrected["subs"]), "--jobs", "1",
                 "--judge-cache", str(corrected["cache"]), "--out", str(tmp_path / "out"), "--resamples", "50",
                 "--human-ratings", str(only), "--key", str(sample / "key.csv")]) == 0
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["human_corrected"]
    figures = block["systems"][0]["figures"]
    assert "estimate" in figures["coherence"]
    assert figures["correctness"] == {"absent": "no human rated correctness"}
    assert figures[JUDGE_MEAN]["absent"].startswith("judge_mean needs every dimension rated")
    assert math.isfinite(figures["coherence"]["estimate"])
    assert block["ranking"]["absent"].startswith("0 ranked system(s) have a corrected judge_mean")


def test_judge_report_discloses_the_system_scores_under_their_judge(corrected, tmp_path, capsys):
    board_path = corrected["root"] / "out" / "leaderboard.json"
    assert main(["judge-report", "--out", str(tmp_path / "report"), "--leaderboard", str(board_path)]) == 0
    report = json.loads((tmp_path / "report" / "judge-report.json").read_text())
    scores = report["system_scores"]
    block = corrected["board"]["human_corrected"]
    assert scores["judge_signatures"] == block["judge_signatures"] == [report["judge"]["signature"]]
    assert scores["same_judge"] is True
    by_name = {s["name"]: s["figures"][JUDGE_MEAN] for s in block["systems"]}
    for row in scores["systems"]:
        assert row["estimate"] == by_name[row["name"]]["estimate"] and row["judge"] == by_name[row["name"]]["judge"]
    text = (tmp_path / "report" / "judge-report.md").read_text()
    assert "## System scores: judge, prediction-powered, humans" in text
    assert f"judge signature `{report['judge']['signature']}`" in text
    first = scores["systems"][0]
    assert f"{first['estimate']:.4f} [{first['ci_low']:.4f}, {first['ci_high']:.4f}]" in text
    # a leaderboard without human ratings is not what --leaderboard takes
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({k: v for k, v in corrected["board"].items() if k != "human_corrected"}))
    capsys.readouterr()
    assert main(["judge-report", "--out", str(tmp_path / "r2"), "--leaderboard", str(plain)]) == 1
    assert "no 'human_corrected'" in capsys.readouterr().err


# --- by hand ---------------------------------------------------------------------------------------


def _tiny_inputs(inclusion=None):
    """Eight turns: t0..t6 answered, t7 unanswered; t0..t4 rated by the humans."""
    from reteco.workbench.leaderboard.human_corrected import HumanScores
    from reteco.workbench.leaderboard.standings import Entry

    f = [1.0, 0.5, 0.5, 0.0, 0.75, 0.25, 0.5, 0.0]
    keys = [f"t{i}" for i in range(8)]
    turns = {"keys": keys, "answered": [True] * 7 + [False], **{d: list(f) for d in (*DIMENSIONS, JUDGE_MEAN)}}
    human = {("a.jsonl", f"t{i}"): v for i, v in enumerate([0.75, 0.25, 0.5, 0.25, 0.75])}
    ratings = HumanScores(("h.csv",), "key.csv", 1, {k: {d: v for d in (*DIMENSIONS, JUDGE_MEAN)} for k, v in human.items()},
                          {k: (f"item-{i}", i + 2) for i, k in enumerate(human)}, tuple(DIMENSIONS),
                          {k: (inclusion or {}).get(k[1]) for k in human})
    entry = Entry(Path("a.jsonl"), "a.jsonl", "a", "")
    outcome = {"ok": True, "judge_turns": turns, "judge_reason": None, "judge_signature": "0123456789abcdef"}
    return entry, outcome, ratings


def test_a_tiny_system_by_hand():
    # Answered f = (1, .5, .5, 0, .75, .25, .5): mean 0.5; rated y - f = (-.25, -.25, 0, .25, 0): mean -0.05;
    # c = 7/8 (t7 unanswered: 0 by rule). theta = c (0.5 - 0.05) = 0.39375. The judge: 3.5 / 8 = 0.4375;
    # the humans: c 2.5 / 5 = 0.4375. Variance: r = c (y - f), u = c^2 0.175 / 4 = 0.0334960...;
    # f0 over the 8 judged turns (0 for t7): var1 = 0.84375 / 7; cov1(f, r) over the rated:
    # c (-0.2375) / 4; se^2 = u / 5 + (0.84375 / 7) / 8 + 2 c (-0.2375) / 4 / 8; t_{4, 0.975} = 2.7764...
    from reteco.workbench.leaderboard.human_corrected import human_corrected

    entry, outcome, ratings = _tiny_inputs()
    block = human_corrected("2c", {"systems": []}, [entry], [outcome], ratings, confidence=0.95, alpha=0.05)
    row = block["systems"][0]["figures"]["coherence"]
    c = 7 / 8
    assert row["estimate"] == pytest.approx(c * 0.45, abs=1e-15)
    assert row["judge"] == pytest.approx(3.5 / 8, abs=1e-15)
    assert row["human"] == pytest.approx(c * 0.5, abs=1e-15)
    se = math.sqrt(c * c * 0.175 / 4 / 5 + (0.84375 / 7) / 8 + 2 * c * -0.2375 / 4 / 8)
    assert row["standard_error"] == pytest.approx(se, abs=1e-15)
    assert row["ci_low"] == pytest.approx(c * 0.45 - 2.7764451051977987 * se, abs=1e-12)
    assert row["residual_sd"] == pytest.approx(math.sqrt(0.175 / 4), abs=1e-15)
    assert (row["n_rated"], row["n_judged"], row["n_unanswered"], row["degrees_of_freedom"]) == (5, 8, 1, 4)
    assert "ranking" not in block  # 2c is ranked by its official figure
    assert block["ratings"]["design"] == "per system (unpaired)"  # a key without inclusion probabilities
    # A key with inclusion probabilities, every sampled answered turn rated: the paired design, the
    # residuals over the sampled turns (c = 1), the judge's mean over all 8 judged turns (3.5 / 8).
    # Weights: t4 drawn with probability 1/4, the others 1/2: the residual mean is Hajek's.
    entry, outcome, ratings = _tiny_inputs({"t0": 0.5, "t1": 0.5, "t2": 0.5, "t3": 0.5, "t4": 0.25})
    block = human_corrected("2c", {"systems": []}, [entry], [outcome], ratings, confidence=0.95, alpha=0.05)
    residual = (2 * (-0.25) + 2 * (-0.25) + 2 * 0 + 2 * 0.25 + 4 * 0) / (2 + 2 + 2 + 2 + 4)  # -1/12
    assert block["systems"][0]["figures"]["coherence"]["estimate"] == pytest.approx(3.5 / 8 + residual, abs=1e-15)
    assert block["ratings"]["weighted"] is True and block["ratings"]["design"] == "paired"


def _synthetic_phase(n_systems: int, n_turns: int, n_rated: int, seed: int, *, identical: bool = False):
    """Systems whose true quality falls evenly from best to worst, a judge that errs by a step now
    and then, humans rating the same n_rated turns of every system (the paired design)."""
    from reteco.workbench.leaderboard.human_corrected import HumanScores
    from reteco.workbench.leaderboard.standings import Entry

    rng = np.random.default_rng(seed)
    keys = [f"t{i}" for i in range(n_turns)]
    entries, outcomes, scores = [], [], {}
    quality = np.linspace(0.9, 0.1, n_systems)
    for k in range(n_systems):
        name = f"s{k:03d}"
        truth = np.clip(np.round((quality[0 if identical else k] + rng.normal(0, 0.15, n_turns)) * 4) / 4, 0, 1)
        judge = np.clip(truth + rng.choice([-0.25, 0.0, 0.25], n_turns, p=[0.15, 0.7, 0.15]), 0, 1)
        turns = {"keys": keys, "answered": [True] * n_turns, **{d: judge.tolist() for d in (*DIMENSIONS, JUDGE_MEAN)}}
        entries.append(Entry(Path(f"{name}.jsonl"), f"{name}.jsonl", name, ""))
        outcomes.append({"ok": True, "judge_turns": turns, "judge_reason": None, "judge_signature": "0123456789abcdef"})
        for i in range(n_rated):
            scores[(f"{name}.jsonl", keys[i])] = {d: float(truth[i]) for d in (*DIMENSIONS, JUDGE_MEAN)}
    human = HumanScores(("h.csv",), "key.csv", 1, scores, {k: (f"item-{i}", i + 2) for i, k in enumerate(scores)},
                        tuple(DIMENSIONS), {k: n_rated / n_turns for k in scores})
    board = {"systems": [{"name": e.name, "rank": k + 1} for k, e in enumerate(entries)]}
    return entries, outcomes, human, board


def test_sixty_systems_with_a_clear_order_and_ten_ratings_each_separate_the_best_from_the_worst():
    from reteco.workbench.leaderboard.human_corrected import human_corrected

    entries, outcomes, human, board = _synthetic_phase(60, 400, 10, seed=32)
    block = human_corrected("2b", board, entries, outcomes, human, confidence=0.95, alpha=0.05)
    ranking = block["ranking"]
    assert len(ranking["systems"]) == 60 and len(ranking["pairs"]) == 1770
    best, worst = ranking["systems"][0]["name"], ranking["systems"][-1]["name"]
    pair = next(p for p in ranking["pairs"] if {p["a"], p["b"]} == {best, worst})
    assert pair["significant"] and pair["p_adjusted"] <= 0.05
    assert ranking["systems"][0]["letters"] != ranking["systems"][-1]["letters"]
    assert "note" not in ranking
    _walk_intervals(block)


def test_identical_systems_are_never_called_different():
    from reteco.workbench.leaderboard.human_corrected import human_corrected

    entries, outcomes, human, board = _synthetic_phase(3, 200, 10, seed=4, identical=True)
    for outcome in outcomes[1:]:  # three systems with identical answers: identical verdicts
        outcome["judge_turns"] = outcomes[0]["judge_turns"]
    first = {k[1]: v for k, v in human.scores.items() if k[0] == "s000.jsonl"}
    scores = {(f"s{k:03d}.jsonl", turn): v for k in range(3) for turn, v in first.items()}
    human = type(human)(human.files, human.key, 1, scores, {k: (f"item-{i}", i + 2) for i, k in enumerate(scores)},
                        human.dimensions, {k: 0.05 for k in scores})
    block = human_corrected("2b", board, entries, outcomes, human, confidence=0.95, alpha=0.05)
    estimates = {s["figures"][JUDGE_MEAN]["estimate"] for s in block["systems"]}
    assert len(estimates) == 1
    ranking = block["ranking"]
    assert ranking["order_differs"] == [] and ranking["pairs_ordered_differently"] == []
    assert all(p["delta"] == 0 and not p["significant"] for p in ranking["pairs"])


def _walk_intervals(node) -> None:
    assert walk_intervals(node) > 0


def test_no_interval_of_the_leaderboard_excludes_its_own_estimate(corrected):
    _walk_intervals(corrected["board"])


def test_three_identical_systems_with_humans_equal_to_the_judge_end_to_end(tmp_path, fake_openai, monkeypatch, capsys):
    """Issue 32's case against the test server: three systems with identical answers, a paired
    sample, the humans' sheets filled with the judge's own scores of the items: three identical
    corrected estimates, and no "order differs"."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("RETECO_WORDNET", str(tmp_path / "no-wordnet"))
    rel = write_synthetic_release(tmp_path / "release")
    prepare_release(rel, "dev", tmp_path / "ref", subtracks=("2b",))
    write_sample_answers(rel, tmp_path / "samples")
    subs = tmp_path / "subs"
    subs.mkdir()
    answers = (tmp_path / "samples" / "2b" / "answers.jsonl").read_text()
    for name in ("alpha-team", "beta-team", "gamma-team"):
        (subs / f"{name}.jsonl").write_text(answers)
    cache, sample = tmp_path / "cache", tmp_path / "sample"
    assert main(["human-sample", "--ref", str(tmp_path / "ref" / "2b"), "--submissions", str(subs), "--design", "paired",
                 "--turns", "8", "--seed", "3", "--out", str(sample), "--annotators", "ann1", "--judge-out",
                 str(tmp_path / "judge.csv"), "--judge-cache", str(cache)]) == 0
    judge_rows = list(csv.DictReader((tmp_path / "judge.csv").open(encoding="utf-8")))
    sheet = sample / "annotators" / "ann1" / "sheet.csv"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["item_id", "dimension", "rater", "score"])
        writer.writerows([r["item_id"], r["dimension"], "ann1", r["score"]] for r in judge_rows)
    capsys.readouterr()
    assert main(["leaderboard", "--ref", str(tmp_path / "ref" / "2b"), "--submissions", str(subs), "--out",
                 str(tmp_path / "out"), "--jobs", "1", "--resamples", "100", "--judge-cache", str(cache),
                 "--human-ratings", str(sheet), "--key", str(sample / "key.csv")]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "2b: warning: the human-corrected ranking: no pair of the 3 systems differs significantly" in captured.err
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["human_corrected"]
    rows = [s["figures"][JUDGE_MEAN] for s in block["systems"]]
    assert len({r["estimate"] for r in rows}) == 1 and len(rows) == 3
    assert all(r["ci_absent"].startswith("the humans agreed with the judge") for r in rows)
    ranking = block["ranking"]
    assert ranking["order_differs"] == [] and ranking["pairs_ordered_differently"] == []
    assert all(p["delta"] == 0 and not p["significant"] for p in ranking["pairs"])
    assert "the judge orders" not in printed and "no pair of the 3 systems differs significantly" in printed
    _walk_intervals(block)
