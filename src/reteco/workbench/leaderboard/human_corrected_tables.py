"""The human-corrected figures of a leaderboard (``leaderboard.json``'s ``human_corrected`` block,
``reteco.workbench.leaderboard.human_corrected``) as files: ``human_corrected.csv`` (one row per system and
figure, full precision, an absent figure with its reason), a section of the leaderboard page,
and a LaTeX table (``human_corrected.tex``: judge_mean per system, judge / prediction-powered /
humans, and for the sub-track ranked by judge_mean the two rankings side by side).
"""

from __future__ import annotations

import csv
import io

from reteco.outputs.charts import escape
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN
from reteco.workbench.leaderboard.latex import _latex_table, system_text
from reteco.workbench.leaderboard.text import fixed, rank_interval_text

CSV_FILE = "human_corrected.csv"
TEX_FILE = "human_corrected.tex"
FIGURES = (*DIMENSIONS, JUDGE_MEAN)
CSV_COLUMNS = ("estimate", "ci_low", "ci_high", "judge", "judge_ci_low", "judge_ci_high", "human", "human_ci_low",
               "human_ci_high", "n_rated", "n_judged", "effective_sample_size", "lambda")


def render_csv(block: dict) -> str:
    """One row per system and figure: team, run, file, figure, the CSV_COLUMNS, notes (why absent)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["team", "run", "file", "figure", *CSV_COLUMNS, "notes"])
    for system in block["systems"]:
        for figure in FIGURES:
            row = system.get("figures", {}).get(figure, {"absent": system.get("absent", "")})
            cells = [_exact(row.get(c)) if isinstance(row.get(c), float) else row.get(c, "") for c in CSV_COLUMNS]
            writer.writerow([system["team"], system["run"], system["file"], figure, *cells,
                             row.get("absent", "") or row.get("ci_absent", "")])
    return out.getvalue()


def _exact(value: float) -> str:
    return repr(float(value))


def _interval(row: dict, prefix: str) -> str:
    low, high = row.get(f"{prefix}ci_low"), row.get(f"{prefix}ci_high")
    return "" if low is None else f"[{fixed(low)}, {fixed(high)}]"


def render_html(block: dict) -> str:
    """The page's section: judge_mean per system (judge, prediction-powered, humans), the
    corrected ranking beside the judge's, and the sentence of the method."""
    e = escape
    percent = round(100 * block["confidence"])
    ratings = block["ratings"]
    out = ["<h2>Human-corrected judge figures</h2>",
           f"<p class='small'>{ratings['items']} items rated by {ratings['raters']} humans "
           f"({e(', '.join(ratings['dimensions']))}); judge signature {e(', '.join(block['judge_signatures']) or 'unknown')}. "
           f"Prediction-powered: {e(block['method']['estimator'])}; every figure and dimension in {CSV_FILE}.</p>",
           "<div class='scroll'><table><tr><th>Team / run</th><th>Judge mean (judge)</th>"
           f"<th>{percent}% CI</th><th>Prediction-powered</th><th>{percent}% CI</th><th>Humans only</th>"
           f"<th>{percent}% CI</th><th>n rated</th><th>n judged</th><th>Effective n</th></tr>"]
    for system in block["systems"]:
        row = system.get("figures", {}).get(JUDGE_MEAN, {"absent": system.get("absent", "")})
        if "estimate" not in row:
            out.append(f"<tr><td>{e(system['name'])}</td><td class='absent' colspan='9'>{e(row['absent'])}</td></tr>")
            continue
        out.append(f"<tr><td>{e(system['name'])}</td><td class='n'>{fixed(row['judge'])}</td>"
                   f"<td class='n'>{_interval(row, 'judge_')}</td><td class='n'>{fixed(row['estimate'])}</td>"
                   f"<td class='n'>{_interval(row, '')}</td><td class='n'>{fixed(row['human'])}</td>"
                   f"<td class='n'>{_interval(row, 'human_')}</td><td class='n'>{row['n_rated']}</td>"
                   f"<td class='n'>{row['n_judged']}</td><td class='n'>{_effective(row)}</td></tr>")
    out.append("</table></div>")
    ranking = block.get("ranking")
    if ranking and "absent" in ranking:
        out.append(f"<p class='absent'>No ranking by the corrected figure: {e(ranking['absent'])}.</p>")
    elif ranking:
        out.append("<h2>Ranked by the human-corrected judge mean</h2>"
                   f"<p class='small'>{e(ranking['method']['test'])}; {e(ranking['method']['groups'])}. "
                   f"{e(_order_sentence(ranking))}</p>"
                   "<div class='scroll'><table><tr><th>Rank</th><th>Team / run</th><th>Prediction-powered</th>"
                   "<th>Rank CI</th><th>Group</th><th>Judge rank</th><th>Judge rank CI</th><th>Judge group</th></tr>")
        for row in ranking["systems"]:
            judge = {k[len("judge_"):]: v for k, v in row.items() if k.startswith("judge_")}
            out.append(f"<tr><td class='n'>{row['rank']}</td><td>{e(row['name'])}</td><td class='n'>{fixed(row['estimate'])}</td>"
                       f"<td class='n'>{e(rank_interval_text(row))}</td><td>{e(row['letters'])}</td>"
                       f"<td class='n'>{row['judge_rank']}</td><td class='n'>{e(rank_interval_text(judge))}</td>"
                       f"<td>{e(row.get('judge_letters', ''))}</td></tr>")
        out.append("</table></div>")
    return "".join(out)


def _order_sentence(ranking: dict) -> str:
    """What the corrected ranking says against the judge's: only significant pairs count."""
    if "note" in ranking:
        return ranking["note"][0].upper() + ranking["note"][1:] + "."
    swapped = ranking.get("pairs_ordered_differently") or []
    return (f"{ranking.get('significant_pairs', 0)} pairs differ significantly; the judge orders "
            f"{len(swapped)} of them the other way" + (f" ({', '.join(ranking['order_differs'])})." if swapped else "."))


def _effective(row: dict) -> str:
    return f"{row['effective_sample_size']:.1f}" if "effective_sample_size" in row else ""


def render_latex(board: dict) -> str:
    """Booktabs tables for the paper: judge / prediction-powered / humans per system, and the
    corrected ranking beside the judge's when there is one."""
    block = board["human_corrected"]
    percent = round(100 * block["confidence"])
    rows = []
    for system in block["systems"]:
        row = system.get("figures", {}).get(JUDGE_MEAN, {})
        if "estimate" in row:
            rows.append([system_text(system), fixed(row["judge"]), _interval(row, "judge_"), fixed(row["estimate"]),
                         _interval(row, ""), fixed(row["human"]), _interval(row, "human_"), str(row["n_rated"]),
                         _effective(row)])
    lines = ["% reteco: human-corrected judge figures (judge signature "
             f"{', '.join(block['judge_signatures']) or 'unknown'})"]
    if rows:
        caption = (f"Sub-track {board['title']}: the judge mean per system by the judge alone, corrected by "
                   f"{block['ratings']['items']} human-rated items (prediction-powered inference, lambda = 1, "
                   f"docs/human_corrected.md), and by the humans alone; {percent}% intervals (judge: normal; "
                   f"corrected and humans: t); n rated and the effective sample size.")
        lines += _latex_table(["System", "Judge", f"{percent}% CI", "PPI", f"{percent}% CI", "Humans", f"{percent}% CI",
                               "n", "n eff"], "lrrrrrrrr", rows, caption, f"tab:reteco-{board['subtrack']}-ppi")
    ranking = block.get("ranking")
    if ranking and "systems" in ranking:
        body = [[f"{r['rank']} ({rank_interval_text(r)})", r["name"], fixed(r["estimate"]), r["letters"],
                 f"{r['judge_rank']} ({rank_interval_text({k[6:]: v for k, v in r.items() if k.startswith('judge_')})})",
                 r.get("judge_letters", "")] for r in ranking["systems"]]
        caption = (f"Sub-track {board['title']}: ranked by the prediction-powered judge mean (rank with its "
                   f"range consistent with the tests; groups by Holm-corrected paired t tests) beside the judge's rank; "
                   f"{_order_sentence(ranking)}")
        lines += _latex_table(["Rank", "System", "PPI", "Group", "Judge rank", "Judge group"], "rlrlrl", body, caption,
                              f"tab:reteco-{board['subtrack']}-ppi-ranking")
    return "\n".join(lines) + "\n"
