"""A synthetic phase with planted holes (issue 21): relevant documents left out of the qrels that
some systems retrieve. The round labels them; the figures below are computed by hand.

Four identical topics d/q1..d/q4; qrels: g1, g2 relevant; planted holes h1, h2 (relevant, not in
the qrels), labelled 3 by the round; x* are labelled by nobody. Per topic:

    A: x1 g1 x2          official nDCG@10 = (1/log2 3) / (1 + 1/log2 3)
    B: h1 h2 g1 x1       official nDCG@10 = (1/2) / (1 + 1/log2 3)
    C: x1 x2 x3 x4       official nDCG@10 = 0

Augmented gains: g (gold) 3, h 3; ideal 3 (1 + 1/log2 3 + 1/2 + 1/log2 5). B finds both holes and
rises above A; A's condensed list moves g1 to rank 1.
"""

from __future__ import annotations

import math

import pytest

from reteco.formats.reference import Judgment, Reference, Topic
from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.plots import write_plots
from reteco.workbench.leaderboard.round_report import round_comparison
from reteco.workbench.leaderboard.tables import render_html

L2 = math.log2
TOPICS = ("q1", "q2", "q3", "q4")
RUNS = {"A": ["x1", "g1", "x2"], "B": ["h1", "h2", "g1", "x1"], "C": ["x1", "x2", "x3", "x4"]}
IDEAL = 1 + 1 / L2(3) + 1 / 2 + 1 / L2(5)  # in units of gain 3


@pytest.fixture
def phase(tmp_path):
    topics = [Topic(f"d/{t}", "d", t, f"d/{t}", "", None) for t in TOPICS]
    manifest = {"subtrack": "1a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "domains": ["d"]}
    qrels = [Judgment(f"d/{t}", g, 1) for t in TOPICS for g in ("g1", "g2")]
    reference = Reference(manifest, topics, qrels, None, None)
    entries = []
    for name, docs in RUNS.items():
        path = tmp_path / f"team{name}-run.txt"
        path.write_text("".join(f"{t} Q0 {d} {i + 1} {10 - i} run\n" for t in TOPICS for i, d in enumerate(docs)))
        entries.append(lb.Entry(path, path.name, f"team{name}", "run"))
    round_file = tmp_path / "round.qrels"
    round_file.write_text("".join(f"d/{t} 0 {h} 3\n" for t in TOPICS for h in ("h1", "h2")))
    options = lb.ScoringOptions(run_judge_now=False, relevance_round=round_file)
    outcomes = [lb.score_one(reference, e.path, options) for e in entries]
    assert all(o["ok"] for o in outcomes), outcomes
    board = lb.build_leaderboard("1a", entries, outcomes, unit_keys=lb.expected_unit_keys(reference), resamples=200)
    unjudged = {e.name: o["unjudged"] for e, o in zip(entries, outcomes)}
    board["round"] = round_comparison(board, unjudged, resamples=200)
    return board


def test_planted_holes_show_in_unjudged_10_and_the_augmented_rise(phase):
    rows = {r["name"]: r for r in phase["round"]["systems"]}
    a, b, c = rows["teamA/run"], rows["teamB/run"], rows["teamC/run"]
    # The official ranking is untouched: A above B.
    assert a["official"] == pytest.approx((1 / L2(3)) / (1 + 1 / L2(3)), abs=1e-12)
    assert b["official"] == pytest.approx(0.5 / (1 + 1 / L2(3)), abs=1e-12)
    assert (a["rank"], b["rank"], c["rank"]) == (1, 2, 3)
    # Judged = qrels or round: A x1 x2 unjudged of 10 places (3 ranked): 1 - 1/10; B: 1 - 3/10; C: 1.
    assert (a["unjudged_10"], b["unjudged_10"], c["unjudged_10"]) == pytest.approx((0.9, 0.7, 1.0), abs=1e-12)
    assert (a["round_labelled_10"], b["round_labelled_10"], c["round_labelled_10"]) == pytest.approx((0, 0.2, 0), abs=1e-12)
    # The holes filled: B's two planted documents count.
    assert b["ndcg_10_augmented"] == pytest.approx((1 + 1 / L2(3) + 1 / 2) / IDEAL, abs=1e-12)
    assert a["ndcg_10_augmented"] == pytest.approx((1 / L2(3)) / IDEAL, abs=1e-12)
    assert a["ndcg_10_condensed"] == pytest.approx(1 / IDEAL, abs=1e-12)  # x1 removed: g1 at rank 1
    assert b["ndcg_10_condensed"] == pytest.approx(b["ndcg_10_augmented"], abs=1e-12)  # x1 was last
    assert c["ndcg_10_augmented"] == 0.0 and c["ndcg_10_condensed"] == 0.0
    assert (a["ndcg_10_augmented_rank"], b["ndcg_10_augmented_rank"]) == (2, 1)
    # Identical topics: every bootstrap draw is the same, so the intervals are the figures.
    assert b["ndcg_10_augmented_ci_low"] == pytest.approx(b["ndcg_10_augmented"], abs=1e-12)


def test_kendall_tau_and_who_moves(phase):
    agreement = phase["round"]["agreement"]
    # Official A > B > C, augmented B > A > C: one discordant pair of three.
    assert agreement["ndcg_10_augmented"]["kendall_tau_b"] == pytest.approx(1 / 3, abs=1e-12)
    # tau_AP, positions from the augmented ranking B, A, C: A has B above it, which the official
    # ranking puts below A (0 of 1); C has B and A above it, both right (2 of 2):
    # 2/(3-1) (0/1 + 2/2) - 1 = 0. A swap at the top costs more than tau-b's 1/3 says.
    assert agreement["ndcg_10_augmented"]["tau_ap"] == pytest.approx(0.0, abs=1e-12)
    moved = {m["name"]: (m["official_rank"], m["rank"]) for m in phase["round"]["moved"]["ndcg_10_augmented"]}
    assert moved == {"teamA/run": (1, 2), "teamB/run": (2, 1)}  # outside their (degenerate) rank intervals
    # Condensed: A 1/IDEAL = 0.39 < B 0.83 too.
    assert agreement["ndcg_10_condensed"]["kendall_tau_b"] == pytest.approx(1 / 3, abs=1e-12)


def test_the_official_vs_augmented_plot_is_drawn_with_a_round_only(phase, tmp_path):
    plots = write_plots(phase, tmp_path)
    assert plots["official_vs_augmented"]["files"] == ["plots/official_vs_augmented.png", "plots/official_vs_augmented.svg"]
    assert (tmp_path / "plots" / "official_vs_augmented.png").read_bytes().startswith(b"\x89PNG")
    without = dict(phase)
    without.pop("round")
    assert "--round" in write_plots(without, tmp_path / "plain")["official_vs_augmented"]["absent"]


def test_the_page_shows_the_round_and_who_moved(phase):
    page = render_html(phase)
    assert "Holes in the qrels" in page and "teamB/run 2 -&gt; 1" in page
    assert "0.333" in page  # Kendall's tau-b, 1/3
    assert "tau_AP 0.000" in page
    without = dict(phase)
    without.pop("round")
    assert "Holes in the qrels" not in render_html(without)
