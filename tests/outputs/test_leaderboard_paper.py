"""The overview paper's tables at a real participant count (issue 25): 180 systems (60 teams x
3 runs) and 9, every sub-track's keys, built by ``build_leaderboard`` from synthetic per-unit
figures and rendered by ``reteco.workbench.leaderboard.tables``.

The LaTeX width check re-implements the documented estimate (``leaderboard_tables``: Times-Roman
advance widths at 9 pt, each character at the upper bound of its class, 2 x 4 pt between
columns) on the written .tex, after undoing the escapes, so a table the writer mis-measures is
caught. (pdflatex is not installed where these tests run; with it, the .tex compiles in an
acl.sty document, longtables after \\onecolumn.)
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from reteco.subtracks import SUBTRACKS
from reteco.workbench.leaderboard import standings as lb
from reteco.workbench.leaderboard.latex import (
    LONG_ROWS,
    SHORT_TITLES,
    TEXT_WIDTH_PT,
    letters_readable,
    render_latex,
    render_latex_appendix,
)
from reteco.workbench.leaderboard.synthetic_outcomes import synthetic_outcomes
from reteco.workbench.leaderboard.tables import render_csv, render_html, render_pairs_csv

UNITS = 18  # synthetic_outcomes' default: 1a's test queries, where Holm over all pairs cannot be significant


@pytest.fixture(scope="module")
def board_180():
    entries, outcomes, units = synthetic_outcomes("2c", 60, 3)
    return lb.build_leaderboard("2c", entries, outcomes, unit_keys=units, seed=5)


# -------------------------------------------------------------------------- significance


def test_at_180_systems_top_and_bottom_differ_and_letters_follow_the_pairs(board_180):
    systems = board_180["systems"]
    assert len(systems) == 180 and board_180["method"]["procedure"] == "tukey-hsd"
    assert board_180["warnings"] == []
    pairs = {(p["a"], p["b"]): p for p in board_180["pairs"]}
    assert len(pairs) == 16_110
    alpha = board_180["method"]["alpha"]
    assert pairs[(systems[0]["name"], systems[-1]["name"])]["p_adjusted"] <= alpha
    # Letters: two systems share one exactly when their pair is not significant (checked on a
    # sample of pairs: every pair is 16,110 set intersections of expanded letter ranges).
    def expand(text):
        tokens = re.findall(r"[a-zA-Z]\d*(?:-[a-zA-Z]\d*)?", text)
        out = set()
        for token in tokens:
            if "-" in token:
                first, last = token.split("-")
                out |= set(range(index(first), index(last) + 1))
            else:
                out.add(index(token))
        return out

    def index(token):
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        return alphabet.index(token[0]) + 52 * (int(token[1:]) - 1 if token[1:] else 0)

    groups = [expand(s["letters"]) for s in systems]
    for i in range(0, 180, 7):
        for j in range(i + 1, 180, 5):
            p = pairs[(systems[i]["name"], systems[j]["name"])]["p_adjusted"]
            assert bool(groups[i] & groups[j]) == (p > alpha), (i, j)
    for s in systems:
        assert s["rank_low"] <= s["rank"] <= s["rank_high"] or s["rank_low"] <= s["rank_high"]
        assert s["ci_low"] <= s["ndcg_10"] <= s["ci_high"]


def test_holm_at_180_systems_warns_in_the_board_and_the_files():
    entries, outcomes, units = synthetic_outcomes("1a", 60, 3)
    board = lb.build_leaderboard("1a", entries, outcomes, unit_keys=units, procedure="holm", resamples=2_000)
    assert len(board["warnings"]) == 1 and "no pair can be significant" in board["warnings"][0]
    assert "Warning: no pair can be significant" in render_html(board)
    assert "% WARNING: no pair can be significant" in render_latex(board)


def test_per_team_best_keeps_each_teams_best_run():
    entries, outcomes, units = synthetic_outcomes("2a", 5, 3)
    outcomes[4] = {"ok": False, "kind": "input", "errors": ["bad"]}  # team01's run1 failed
    outcomes[5]["scores"]["ndcg_10"] = 0.99  # team01's run2 is its best
    outcomes[5]["unit_values"] = [0.99] * UNITS
    best_entries, best_outcomes = lb.best_per_team("2a", entries, outcomes)
    expected = []
    for t in range(5):
        runs = [(o["scores"]["ndcg_10"], e.run) for e, o in zip(entries[3 * t:3 * t + 3], outcomes[3 * t:3 * t + 3])
                if o["ok"]]
        expected.append(max(runs)[1])
    assert [e.run for e in best_entries] == expected and expected[1] == "run2_with_a_long_name"
    assert len({e.team for e in best_entries}) == 5
    board = lb.build_leaderboard("2a", best_entries, best_outcomes, unit_keys=units)
    assert board["systems"][0]["team"] == "team01" and len(board["pairs"]) == 10 and board["failed"] == []


# ------------------------------------------------------------------------------------ LaTeX

_UNESCAPE = [(r"\textbackslash{}", "\\"), (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"),
             (r"\textbar{}", "|"), (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\ldots{}", "…")]


def printed(cell: str) -> str:
    for escaped, plain in _UNESCAPE:
        cell = cell.replace(escaped, plain)
    return re.sub(r"\\([&%$#_{}])", r"\1", cell).strip()


def char_width(ch: str) -> float:
    # The documented rule, written out again (Times-Roman AFM, thousandths of an em, at 9 pt).
    if ch in "0123456789abcdefghijklnopqrstuvxyz#_":
        em = 500
    elif ch in "ABCDEFGHIJKLNOPQRSTUVXYZ":
        em = 722
    elif ch in ".,:;'!|()[]-/":
        em = 333
    else:
        em = {"m": 778, "w": 722, "M": 889, "W": 944, "@": 921, "%": 833, "&": 778, " ": 250}.get(ch, 1000)
    return em * 9 / 1000


def tables_of(tex: str) -> list[tuple[str, list[list[str]]]]:
    """(environment, rows of printed cells) of every tabular or longtable in ``tex``."""
    found = []
    for env, body in re.findall(r"\\begin\{(tabular|longtable)\}\{[a-z]+\}(.*?)\\end\{\1\}", tex, re.S):
        rows = []
        for line in body.splitlines():
            line = line.strip()
            if line.endswith("\\\\") and not line.startswith("\\caption"):
                rows.append([printed(c) for c in re.split(r"(?<!\\)&", line[:-2])])
        found.append((env, rows))
    return found


def estimated_width(rows: list[list[str]]) -> float:
    return sum(max(sum(char_width(ch) for ch in cell) for cell in column) + 8.0 for column in zip(*rows))


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a", "2b", "2c"])
@pytest.mark.parametrize("teams,runs", [(3, 3), (60, 3)])
def test_every_latex_table_fits_an_acl_page(subtrack, teams, runs):
    entries, outcomes, units = synthetic_outcomes(subtrack, teams, runs)
    board = lb.build_leaderboard(subtrack, entries, outcomes, unit_keys=units, resamples=500)
    main_tex, appendix = render_latex(board, top=20), render_latex_appendix(board, top=20)
    tex = main_tex + appendix
    tables = tables_of(tex)
    assert tables and "WARNING" not in tex
    # The main file is one table*, two-column safe; the appendix holds every other table.
    assert [env for env, _ in tables_of(main_tex)] == ["tabular"] and main_tex.count("\\begin{table*}") == 1
    assert "longtable" not in main_tex.replace("% \\usepackage{booktabs", "")
    for env, rows in tables:
        assert estimated_width(rows) <= TEXT_WIDTH_PT, (env, rows[0])
        assert (env == "longtable") == (len(rows) - 1 > LONG_ROWS)
        assert all(len(row) == len(rows[0]) for row in rows)
    main = tables[0][1]
    assert len(main) - 1 == min(20, teams * runs)  # the top 20 (header excluded)
    # The top 20's letters read as letters: the group column stays.
    assert main[0][:2] == ["Rank", "System"] and main[0][3:5] == ["95% CI", "Group"]
    # The rank with its interval, e.g. "4 (2-9)".
    assert all(re.fullmatch(r"\d+ \((\d+|\d+-\d+)\)", row[0]) for row in main[1:])
    # Every figure of the sub-track is in some table (the main one or a diagnostics one).
    headers = {h for _, rows in tables for h in rows[0]}
    titles = {k["key"]: k["title"] for k in board["keys"]}
    # ... or named in a caption as the same for every system (a column without information).
    assert all(SHORT_TITLES.get(k, titles[k]) in headers or f"{SHORT_TITLES.get(k, titles[k])} " in
               tex.split("the same for every system:")[-1] for k in SUBTRACKS[subtrack].keys)
    # Long names are cut to 18 characters: the team to 10, the run to the rest, each cut ending in
    # an ellipsis, so that both stay recognisable.
    names = {row[1] for row in main[1:]}
    assert all(len(name) <= 18 for name in names)
    assert any(name.startswith("Universit…/run") for name in names) or teams * runs < 20
    assert "team01/run0_with_…" in names or "team01/run1_with_…" in names or "team01/run2_with_…" in names


def test_the_width_check_catches_a_table_too_wide():
    entries, outcomes, units = synthetic_outcomes("2c", 3, 3)
    board = lb.build_leaderboard("2c", entries, outcomes, unit_keys=units, resamples=200)
    too_many = ["judge_mean", "correctness", "completeness", "relevance", "coherence", "faithfulness", "rouge_l",
                "map_10", "recall_10"]
    tex = render_latex(board, columns=too_many)
    assert "% WARNING: estimated" in tex
    assert estimated_width(tables_of(tex)[0][1]) > TEXT_WIDTH_PT


# ------------------------------------------------------------------------------------- HTML


def test_html_at_180_systems_collapses_the_pairs(board_180):
    page = render_html(board_180)
    assert len(page.encode()) < 400_000
    assert page.count("<tr><td>") - page.count("<tr><td>team") >= 0
    assert "the 179 adjacent pairs (each system against the next); all 16110 pairs are in pairs.csv" in page
    rows = list(csv.DictReader(io.StringIO(render_pairs_csv(board_180))))
    assert len(rows) == 16_110 and sum(r["adjacent"] == "yes" for r in rows) == 179
    assert "Flagged answers" in page
    # The adjacent pairs' p-value is 1.0000 for all 179: no column, one line (issue 37).
    assert "vs next</th>" not in page and "Adjusted p against the next system: 1.0000 for every system" in page
    # The method in sentences, not a dump of Python values.
    assert "exact False" not in page and "randomised Tukey HSD" in page


# ------------------------------------------------------------------- 2c's generation side


def test_2c_generation_figure_gets_intervals_tests_and_groups(board_180):
    generation = board_180["generation"]
    assert generation["figure"] == "judge_mean" and len(generation["pairs"]) == 16_110
    assert generation["method"]["procedure"] == "tukey-hsd" and generation["warnings"] == []
    by_judge = sorted(board_180["systems"], key=lambda s: -s["judge_mean"])
    stats = [s["generation_statistics"] for s in by_judge]
    assert [g["rank"] for g in stats] == list(range(1, 181))
    assert all(g["ci_low"] <= s["judge_mean"] <= g["ci_high"] for s, g in zip(by_judge, stats))
    pairs = {(p["a"], p["b"]): p["p_adjusted"] for p in generation["pairs"]}
    assert pairs[(by_judge[0]["name"], by_judge[-1]["name"])] <= 0.05
    assert stats[0]["letters"].startswith("a")
    assert "<h2>Generation: Judge mean (0-1)</h2>" in render_html(board_180)
    tex = render_latex(board_180, top=20) + render_latex_appendix(board_180, top=20)
    assert "tab:reteco-2c-generation" in tex and "WARNING" not in tex
    rows = list(csv.DictReader(io.StringIO(render_csv(board_180))))
    assert rows[0]["judge_mean_letters"] == board_180["systems"][0]["generation_statistics"]["letters"]


def test_2c_dimensions_and_text_metrics_get_intervals_at_180_systems(board_180):
    """Issue 25 item 5 at scale: every judge dimension, ROUGE-L and METEOR of every system has an
    interval around its figure, in the JSON, the CSV and on the page."""
    keys = {"correctness", "completeness", "relevance", "coherence", "faithfulness", "rouge_l", "meteor"}
    for s in board_180["systems"]:
        assert set(s["figure_intervals"]) == keys
        for k, interval in s["figure_intervals"].items():
            assert interval["ci_low"] <= s[k] <= interval["ci_high"] and interval["turns"] == UNITS
    rows = list(csv.DictReader(io.StringIO(render_csv(board_180))))
    assert all(rows[0][f"{k}_ci_low"] for k in keys)
    assert "Generation figures with 95% intervals" in render_html(board_180)


def test_at_180_systems_unreadable_letters_are_dropped_with_a_note_and_kept_with_top(board_180):
    """Issue 37: at 180 systems the letters run to many groups ("P-c2"): the main table without
    --top drops them and says why; with --top 20 the top's letters read and stay."""
    assert not letters_readable([s["letters"] for s in board_180["systems"]])
    whole = render_latex(board_180)
    main = tables_of(whole)[0][1]
    assert "Group" not in main[0] and "Group letters omitted: the 180 systems fall into" in whole
    assert "% WARNING: 180 rows do not fit one page: give --top N" in whole
    top = tables_of(render_latex(board_180, top=20))[0][1]
    assert "Group" in top[0] and letters_readable([row[4] for row in top[1:]])
