"""``reteco leaderboard --human-ratings --key``: prediction-powered system scores from the humans'
ratings of ``reteco human-sample``'s blind sample, end to end on the synthetic release against
the fake OpenAI server, each figure recomputed here with ppi-python from the judge's per-turn
verdicts and the filled sheets; 2b ranked by the corrected figure; bad ratings refused by line."""

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
        assert main(["human-sample", "--ref", str(root / "ref" / "2b"), "--submissions", str(subs), "--n", "36",
                     "--seed", "5", "--out", str(sample), "--annotators", "ann1,ann2"]) == 0
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
        differs = len(board["human_corrected"]["ranking"]["order_differs"])
        assert (f"2b: human-corrected judge_mean for 4 of 4 systems (36 rated items); the corrected ranking differs "
                f"from the judge's for {differs} systems") in printed.getvalue()
        reference = Reference.read(root / "ref" / "2b")
        per_turn = {name: score_submission(reference, subs / f"{name}.jsonl", cache_dir=cache).per_topic["generation.per_turn"]
                    for name in SYSTEMS}
        yield {"root": root, "subs": subs, "sample": sample, "sheets": sheets, "cache": cache, "per_turn": per_turn,
               "board": json.loads((root / "out" / "leaderboard.json").read_text())}
    finally:
        mp.undo()
        server.stop()


def _expected(corrected, system: str, figure: str):
    """The figure recomputed from the judge's verdicts and the filled sheets with ppi-python."""
    key = {r["item_id"]: r for r in csv.DictReader((corrected["sample"] / "key.csv").open(encoding="utf-8"))}
    human: dict[tuple[str, str], dict[str, list[float]]] = {}
    for sheet in corrected["sheets"]:
        for row in csv.DictReader(sheet.open(encoding="utf-8")):
            item = key[row["item_id"]]
            human.setdefault((item["submission"], item["turn"]), {}).setdefault(row["dimension"], []).append(
                (int(row["score"]) - 1) / 4)
    y, f, unrated, unanswered = [], [], [], 0
    for row in corrected["per_turn"][system]:
        if not row["answered"]:
            unanswered += 1
            continue
        verdicts = [row["judgments"][d]["normalized"] for d in DIMENSIONS]
        judge = verdicts[DIMENSIONS.index(figure)] if figure in DIMENSIONS else sum(verdicts) / 5
        rated = human.get((f"{system}.jsonl", row["turn"]))
        if rated:
            means = {d: sum(v) / len(v) for d, v in rated.items()}
            y.append(means[figure] if figure in DIMENSIONS else sum(means.values()) / 5)
            f.append(judge)
        else:
            unrated.append(judge)
    y, f, unrated = np.array(y), np.array(f), np.array(unrated)
    c = (len(y) + len(unrated)) / (len(y) + len(unrated) + unanswered)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, unrated)))
    low, high = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(y, f, unrated, alpha=0.05))
    human_low, human_high = (float(np.squeeze(v)) for v in ppi_py.classical_mean_ci(y, alpha=0.05))
    return {"estimate": c * point, "ci_low": c * low, "ci_high": c * high, "n_rated": len(y),
            "n_judged": len(y) + len(unrated) + unanswered, "human": c * y.mean(), "human_ci_low": c * human_low,
            "human_ci_high": c * human_high}


@pytest.mark.parametrize("figure", [*DIMENSIONS, JUDGE_MEAN])
def test_every_figure_equals_ppi_python_on_the_judges_verdicts_and_the_sheets(corrected, figure):
    block = corrected["board"]["human_corrected"]
    rows = {Path(s["file"]).stem: s for s in block["systems"]}
    assert set(rows) == set(SYSTEMS)
    for system in SYSTEMS:
        got = rows[system]["figures"][figure]
        expected = _expected(corrected, system, figure)
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, abs=1e-9), (system, figure, name)
        assert got["ci_low"] <= got["estimate"] <= got["ci_high"]
        assert 0 <= got["lambda"] <= 1 and got["effective_sample_size"] > 0
    # the judge-only column is the leaderboard's own figure of that dimension
    board_rows = {Path(s["file"]).stem: s for s in corrected["board"]["systems"]}
    for system in SYSTEMS:
        assert rows[system]["figures"][figure]["judge"] == pytest.approx(board_rows[system][figure], abs=1e-12)


def test_2b_is_ranked_by_the_corrected_figure_beside_the_judges(corrected):
    ranking = corrected["board"]["human_corrected"]["ranking"]
    estimates = {s["name"]: s["figures"][JUDGE_MEAN]["estimate"] for s in corrected["board"]["human_corrected"]["systems"]}
    names = list(estimates)
    order = sorted(names, key=lambda n: -estimates[n])
    assert [s["name"] for s in ranking["systems"]] == order
    judge = {s["name"]: s["rank"] for s in corrected["board"]["systems"]}
    for k, row in enumerate(ranking["systems"]):
        assert row["rank"] == k + 1 and row["judge_rank"] == judge[row["name"]]
        assert row["rank_low"] <= row["rank"] <= row["rank_high"] and row["letters"]
    assert ranking["order_differs"] == [r["name"] for r in ranking["systems"] if r["rank"] != r["judge_rank"]]
    swapped = {(p["a"], p["b"]) for p in ranking["pairs_ordered_differently"]}
    ppi_rank = {r["name"]: r["rank"] for r in ranking["systems"]}
    for a in names:
        for b in names:
            if ppi_rank[a] < ppi_rank[b] and judge[a] > judge[b]:
                assert (a, b) in swapped
    assert len(ranking["pairs"]) == 6 and all(p["p_adjusted"] >= p["p_value"] for p in ranking["pairs"])
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
    assert block["ranking"]["absent"].startswith("0 ranked system(s) have a prediction-powered judge_mean")


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


# --- by hand, and the ranking's bootstrap against a plain loop -------------------------------------


def _tiny_inputs():
    """Six turns: t0..t4 answered, t5 unanswered; t0 and t1 rated by the humans."""
    from reteco.workbench.leaderboard.human_corrected import HumanScores
    from reteco.workbench.leaderboard.standings import Entry

    f = [1.0, 0.5, 0.5, 0.0, 0.75, 0.0]
    keys = [f"t{i}" for i in range(6)]
    turns = {"keys": keys, "answered": [True] * 5 + [False], **{d: list(f) for d in (*DIMENSIONS, JUDGE_MEAN)}}
    human = {("a.jsonl", "t0"): 0.75, ("a.jsonl", "t1"): 0.25}
    ratings = HumanScores(("h.csv",), "key.csv", 1, {k: {d: v for d in (*DIMENSIONS, JUDGE_MEAN)} for k, v in human.items()},
                          {k: (f"item-{i}", i + 2) for i, k in enumerate(human)}, tuple(DIMENSIONS))
    entry = Entry(Path("a.jsonl"), "a.jsonl", "a", "")
    outcome = {"ok": True, "judge_turns": turns, "judge_reason": None, "judge_signature": "0123456789abcdef"}
    return entry, outcome, ratings


def test_a_tiny_system_by_hand():
    # y = (0.75, 0.25), f = (1, 0.5), f~ = (0.5, 0, 0.75): cov0(y, f) = 0.0625; var1 of the pooled
    # f = 0.55 / 4 = 0.1375; lambda = 0.0625 / ((1 + 2/3) 0.1375) = 3/11;
    # theta_A = (3/11)(5/12) + 0.5 - (3/11)(3/4) = 9/22; one of six judged turns is unanswered
    # (0 by rule): the estimate is (5/6)(9/22) = 15/44; the judge's mean 2.75/6; humans (5/6) 0.5.
    from reteco.workbench.leaderboard.human_corrected import human_corrected

    entry, outcome, ratings = _tiny_inputs()
    block = human_corrected("2c", {"systems": []}, [entry], [outcome], ratings, n_units=6, confidence=0.95,
                            resamples=10, seed=1, alpha=0.05)
    row = block["systems"][0]["figures"]["coherence"]
    assert row["lambda"] == pytest.approx(3 / 11, abs=1e-15)
    assert row["estimate"] == pytest.approx(15 / 44, abs=1e-15)
    assert row["judge"] == pytest.approx(2.75 / 6, abs=1e-15)
    assert row["human"] == pytest.approx(5 / 12, abs=1e-15)
    assert (row["n_rated"], row["n_judged"], row["n_unanswered"]) == (2, 6, 1)
    assert "ranking" not in block  # 2c is ranked by its official figure


def test_the_rankings_bootstrap_equals_a_plain_loop():
    from reteco.workbench.leaderboard.human_corrected import _Sample, bootstrap_estimates

    rng = np.random.default_rng(8)
    n_units, resamples, seed = 30, 200, 5
    samples = []
    for _ in range(3):
        order = rng.permutation(n_units)
        rated, unrated, unanswered = np.sort(order[:6]), np.sort(order[6:26]), np.sort(order[26:])
        f_all = rng.random(n_units)
        samples.append(_Sample(rated, rng.random(6), f_all[rated], unrated, f_all[unrated], unanswered,
                               float(rng.random())))
    theta = bootstrap_estimates(samples, n_units=n_units, resamples=resamples, seed=seed)
    draws = np.random.default_rng(seed).integers(0, n_units, size=(resamples, n_units))
    rated_rng = np.random.default_rng(seed + 1)
    rated_draws = [rated_rng.integers(0, len(s.y), size=(resamples, len(s.y))) for s in samples]
    for s, sample in enumerate(samples):
        f_of = dict(zip(sample.unrated.tolist(), sample.f_unrated.tolist()))
        answered = set(sample.rated.tolist()) | set(f_of)
        judged = answered | set(sample.unanswered.tolist())
        for r in range(resamples):
            picked = [f_of[t] for t in draws[r] if t in f_of]
            imputed = sum(picked) / len(picked) if picked else sample.f_unrated.mean()
            share = sum(t in answered for t in draws[r]) / max(1, sum(t in judged for t in draws[r]))
            residual = [sample.y[i] - sample.lam * sample.f[i] for i in rated_draws[s][r]]
            expected = share * (sample.lam * imputed + sum(residual) / len(residual))
            assert theta[s, r] == pytest.approx(expected, abs=1e-12)
