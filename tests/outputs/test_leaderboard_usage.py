"""The judge's usage in the leaderboard's CSV and HTML (issue 20): per submission, per team and for
the phase, tokens as reported and money at the config's prices, never a made-up price; the LaTeX
table unchanged."""

from __future__ import annotations

import csv
import io

from reteco.subtracks import JUDGE_MEAN
from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.latex import render_latex
from reteco.workbench.leaderboard.tables import render_csv, render_html


def judged(mean: float, usage: dict | None) -> dict:
    outcome = {"ok": True, "scores": {JUDGE_MEAN: mean, "rouge_l": 0.3}, "warnings": [], "unit_keys": [],
               "unit_values": None, "unit_values_absent": "not needed here", "per_domain": {}, "per_depth": {},
               "judge_reason": None}
    return outcome | ({"judge_usage": usage} if usage is not None else {})


def usage(calls: int, prompt: int, cached: int, completion: int, money: float | None, not_recorded: int = 0) -> dict:
    return {"calls": calls, "prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": completion,
            "calls_usage_not_recorded": not_recorded, "money_usd": money}


def board(outcomes: list[dict], names: list[tuple[str, str]]) -> dict:
    return lb.build_leaderboard("2b", [lb.Entry(None, f"{t}-{r}", t, r) for t, r in names], outcomes, unit_keys=["t1"])


def test_each_submission_team_and_the_phase_get_calls_tokens_and_money():
    b = board([judged(0.8, usage(10, 1000, 400, 200, 0.25)), judged(0.6, usage(10, 1200, 0, 150, 0.5)),
               judged(0.4, usage(5, 500, 100, 90, 0.125, not_recorded=1))],
              [("alpha", "r1"), ("alpha", "r2"), ("beta", "r1")])
    rows = {r["run"] + r["team"]: r for r in csv.DictReader(io.StringIO(render_csv(b)))}
    assert rows["r1alpha"]["judge_calls"] == "10" and rows["r1alpha"]["judge_cached_tokens"] == "400"
    assert rows["r1beta"]["judge_calls_usage_not_recorded"] == "1" and rows["r1beta"]["judge_money_usd"] == "0.125"
    page = render_html(b)
    # alpha's two runs by hand: 20 calls, 2,200 input tokens (400 cached), 350 output, $0.75; the phase adds beta's.
    assert ("<td class='pin pin1'>team alpha</td><td class='n'>20</td><td class='n'>2,200</td><td class='n'>400</td>"
            "<td class='n'>350</td><td class='n'>0</td><td class='n'>$0.75</td>") in page
    assert ("<th class='pin pin1'>phase</th><td class='n'>25</td><td class='n'>2,700</td><td class='n'>500</td>"
            "<td class='n'>440</td><td class='n'>1</td><td class='n'>$0.88</td>") in page
    assert "Judge calls" not in render_latex(b) and "money" not in render_latex(b).lower()


def test_without_prices_tokens_only_and_an_older_row_is_not_recorded():
    b = board([judged(0.8, usage(10, 1000, 400, 200, None)), judged(0.6, None)], [("alpha", "r1"), ("beta", "r1")])
    rows = list(csv.DictReader(io.StringIO(render_csv(b))))
    assert rows[0]["judge_money_usd"] == "" and rows[0]["judge_prompt_tokens"] == "1000"
    assert rows[1]["judge_calls"] == "" and "judge usage not recorded" in rows[1]["notes"]
    page = render_html(b)
    assert "$" not in page.split("What the judge cost")[1] and "no prices" in page
    assert "<td class='pin pin1'>team beta</td><td class='absent' colspan='6'>not recorded</td>" in page
    assert "<th class='pin pin1'>phase (1 submission not recorded)</th><td class='n'>10</td>" in page


def test_a_retrieval_board_has_no_usage_columns():
    outcome = {"ok": True, "scores": {"ndcg_cut_10": 0.5}, "warnings": [], "unit_keys": ["q1"], "unit_values": [0.5],
               "unit_values_absent": None, "per_domain": {}, "per_depth": {}, "judge_reason": None, "judge_usage": None}
    b = lb.build_leaderboard("2a", [lb.Entry(None, "a-r", "a", "r")], [outcome], unit_keys=["q1"], resamples=20)
    assert "judge_calls" not in render_csv(b) and "What the judge cost" not in render_html(b)
