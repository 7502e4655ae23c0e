"""``leaderboard.json``, ``.csv``, ``.html``, ``.tex``, ``_appendix.tex`` and ``pairs.csv`` of a sub-track.

Each renders the leaderboard dict of ``reteco.workbench.leaderboard.standings.build_leaderboard``:

- JSON: the dict as is (every number finite: a NaN raises, it is a bug, never written);
- CSV: one row per submission (ranked, then unranked, then those that could not be scored),
  numbers at full precision (Python's shortest round-trip form), an absent figure an empty
  cell whose reason is in the ``notes`` column; ``pairs.csv``: every pair's test;
- HTML: one self-contained page (inline CSS, no script, no external request but the plots next
  to it; every text escaped): the warnings, the ranked table in a box that scrolls sideways with
  its first columns pinned (rank, team, run, the ranking figure), the plots inline, the
  per-domain and turn-depth breakdowns, the adjacent pairs' tests (every pair too while they
  are at most ``PAIRS_SHOWN``; else in pairs.csv), the unranked and failed submissions with
  their messages, the method in sentences;
- LaTeX: booktabs tables for the overview paper (``reteco.workbench.leaderboard.latex``): the main
  table alone in ``leaderboard.tex`` (a table*), the others in ``leaderboard_appendix.tex``.

No file holds a per-unit figure: the tables may be published, and per-topic figures on the
hidden test labels would reveal them; only the aggregates, per-domain and turn-depth figures are
written (the statistics use the per-unit figures, and say how).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from reteco.outputs.charts import escape
from reteco.workbench.leaderboard import human_corrected_tables as corrected
from reteco.workbench.leaderboard import topic_stability_tables
from reteco.workbench.leaderboard import usage as leaderboard_usage
from reteco.workbench.leaderboard.bulk_download import selection_html
from reteco.workbench.leaderboard.latex import render_latex, render_latex_appendix
from reteco.workbench.leaderboard.round_html import html_round
from reteco.workbench.leaderboard.text import (
    DECIMALS,
    alpha_of,
    confidence_percent,
    fixed,
    keys_of,
    rank_interval_text,
    ranking_sentence,
    titles_of,
)

PAIRS_SHOWN = 500  # more pairs than this: the page shows the adjacent ones, pairs.csv has all
# 2c's generation figure (judge_mean), compared as the official one: its columns in the CSV.
GENERATION_COLUMNS = ("rank", "ci_low", "ci_high", "rank_low", "rank_high", "letters")

JSON_FILE = "leaderboard.json"
CSV_FILE = "leaderboard.csv"
HTML_FILE = "leaderboard.html"
TEX_FILE = "leaderboard.tex"  # the main table alone, a table* (two-column safe)
APPENDIX_TEX_FILE = "leaderboard_appendix.tex"  # every other table (longtables: one-column mode)
PAIRS_FILE = "pairs.csv"


def write_tables(board: dict, folder: Path, *, latex_columns: list[str] | None = None,
                 top: int | None = None) -> list[Path]:
    """Write the six files into ``folder``; return their paths. ``latex_columns`` and ``top``
    shape the LaTeX main table (``reteco.workbench.leaderboard.latex.render_latex``)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    files = [(JSON_FILE, render_json(board)), (CSV_FILE, render_csv(board)),
             (PAIRS_FILE, render_pairs_csv(board)), (HTML_FILE, render_html(board)),
             (TEX_FILE, render_latex(board, columns=latex_columns, top=top)),
             (APPENDIX_TEX_FILE, render_latex_appendix(board, columns=latex_columns, top=top))]
    if "topic_stability" in board:
        files.append((topic_stability_tables.TEXT_FILE,
                      topic_stability_tables.render_text(board["topic_stability"], f"RETECO {board['title']}")))
    for name, text in files:
        path = folder / name
        path.write_text(text, encoding="utf-8", newline="")
        written.append(path)
    if "human_corrected" in board:  # --human-ratings: reteco.workbench.leaderboard.human_corrected_tables
        for name, text in ((corrected.CSV_FILE, corrected.render_csv(board["human_corrected"])),
                           (corrected.TEX_FILE, corrected.render_latex(board))):
            (folder / name).write_text(text, encoding="utf-8", newline="")
            written.append(folder / name)
    return written


def render_json(board: dict) -> str:
    """The dict, indented; ValueError on a number that is not finite."""
    return json.dumps(board, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# ----------------------------------------------------------------------------------- shared


def _adjacent_pairs(board: dict) -> list[dict]:
    """The pair of every tested system with the next tested one, in rank order."""
    pairs = {(p["a"], p["b"]): p for p in board["pairs"]}
    tested = [s["name"] for s in board["systems"] if "ci_low" in s]
    return [pairs[(a, b)] for a, b in zip(tested, tested[1:]) if (a, b) in pairs]


def _next_pair_p(board: dict) -> dict[str, float]:
    """Per ranked system, the adjusted p-value of its test against the next tested system."""
    return {p["a"]: p["p_adjusted"] for p in _adjacent_pairs(board)}


def method_sentences(board: dict) -> list[str]:
    """The method block in sentences, for the page."""
    method = board["method"]
    if "absent" in method:
        return [f"No interval or test: {method['absent']}."]
    interval = method["interval"]
    out = [f"Intervals: {round(100 * interval['confidence'])}% {interval['method']}, {interval['resamples']} "
           f"resamples, seed {interval['seed']}; the rank interval is, over the same resamples, {method.get('rank_interval', '')}."]
    if method.get("procedure") == "tukey-hsd":
        out.append(f"Test: {method['test']}; {method['resamples']} trials, seed {method['seed']}. {method['p_value']}. "
                   f"Correction: {method['correction']}.")
    else:
        exact = f"all {method['sign_vectors']} sign vectors (exact)" if method["exact"] else \
            f"{method['sign_vectors']} random sign vectors, seed {method['seed']}"
        out.append(f"Test: {method['test']}, {method['sidedness']}, {exact}; p = {method['p_value']}. "
                   f"Correction: {method['correction']}.")
    mc = method["monte_carlo_standard_error"]
    if "smallest_attainable_adjusted_p" in method:
        out.append(f"A pair is significant when its adjusted p-value is at most {method['alpha']}; the smallest "
                   f"adjusted p-value this table can reach is {method['smallest_attainable_adjusted_p']:.3g}; the Monte "
                   f"Carlo standard error of a p-value is {mc['formula']} (at most {mc['max']:.2g} here, "
                   f"{mc.get('at_alpha', 0):.2g} at p = alpha).")
    if "groups" in method:
        out.append(f"Groups: {method['groups']}.")
    out.append(f"Figures per unit: {method.get('unit_figures', '')}; {method['units']} units, {method['systems']} "
               f"systems tested; ties in the p-value count within {method['tie_tolerance']}.")
    return out


# -------------------------------------------------------------------------------------- CSV


def render_csv(board: dict) -> str:
    """One row per submission; see the module docstring."""
    keys = keys_of(board)
    domains, groups = board["domains"], board["depth_groups"]
    figure = board["ranked_by"]
    generation = "generation" in board
    header = ["status", "rank", "rank_low", "rank_high", "letters", "team", "run", "file", *keys, "ci_low", "ci_high",
              "flagged_answers"]
    if generation:
        header += [f"{board['generation']['figure']}_{c}" for c in GENERATION_COLUMNS]
    interval_keys = _figure_interval_keys(board)
    header += [f"{k}_{c}" for k in interval_keys for c in ("ci_low", "ci_high")]
    if figure:
        header += [f"{figure}[{d}]" for d in domains] + [f"{figure}[{g}]" for g in groups]
    usage = leaderboard_usage.shows_usage(board)
    if usage:
        header += leaderboard_usage.CSV_COLUMNS
    header.append("notes")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    rows = [("ranked", s) for s in board["systems"]] + [("unranked", s) for s in board["unranked"]]
    for status, system in rows:
        notes = [f"{k} absent: {why}" for k, why in system.get("absent", {}).items()]
        if "statistics_absent" in system:
            notes.append(f"no interval or test: {system['statistics_absent']}")
        if "reason" in system:
            notes.append(system["reason"])
        cells = [status, system.get("rank", ""), system.get("rank_low", ""), system.get("rank_high", ""),
                 system.get("letters", ""), system["team"], system["run"], system["file"]]
        cells += [_exact(system.get(k)) for k in keys] + [_exact(system.get("ci_low")), _exact(system.get("ci_high"))]
        cells.append(system.get("flagged_answers", ""))
        if generation:
            stats = system.get("generation_statistics", {})
            cells += [_exact(stats[c]) if c.startswith("ci") and c in stats else stats.get(c, "") for c in GENERATION_COLUMNS]
        for k in interval_keys:
            interval = system.get("figure_intervals", {}).get(k, {})
            if "absent" in interval:
                notes.append(f"no interval of {k}: {interval['absent']}")
            cells += [_exact(interval.get("ci_low")), _exact(interval.get("ci_high"))]
        if figure:
            cells += [_exact(system["per_domain"].get(d, {}).get(figure)) for d in domains]
            cells += [_exact(system["per_depth"].get(g, {}).get(figure)) for g in groups]
        if usage:
            cells += leaderboard_usage.csv_cells(system)
            if not system.get("judge_usage"):
                notes.append(f"judge usage {leaderboard_usage.NOT_RECORDED}")
        writer.writerow(cells + ["; ".join(notes)])
    for failure in board["failed"]:
        width = len(header) - 9  # every column but the eight named ones and the notes
        writer.writerow(["failed", "", "", "", "", failure["team"], failure["run"], failure["file"], *[""] * width,
                         " | ".join(failure["errors"])])
    return out.getvalue()


def render_pairs_csv(board: dict) -> str:
    """Every pair: a (ranked above), b, delta, p_value (empty under Tukey HSD), p_adjusted,
    significant (yes/no at the board's alpha), adjacent (yes when b is next after a)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["a", "b", "delta", "p_value", "p_adjusted", "significant", "adjacent"])
    adjacent = {(p["a"], p["b"]) for p in _adjacent_pairs(board)}
    for p in board["pairs"]:
        writer.writerow([p["a"], p["b"], _exact(p["delta"]), _exact(p.get("p_value")), _exact(p["p_adjusted"]),
                         "yes" if p["p_adjusted"] <= alpha_of(board) else "no",
                         "yes" if (p["a"], p["b"]) in adjacent else "no"])
    return out.getvalue()


def _exact(value: float | None) -> str:
    return "" if value is None else repr(float(value))


# ------------------------------------------------------------------------------------- HTML

_STYLE = (
    "body{font-family:sans-serif;margin:1em;color:#222;max-width:80em}"
    "table{border-collapse:separate;border-spacing:0;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top;background:#fff}"
    "th{background:#f3f3f3}"
    "td.n{text-align:right;font-family:monospace;white-space:nowrap}td.key{font-weight:bold}"
    ".absent{color:#a15c00}.error{color:#b00020}.small{font-size:.9em;color:#555}.warning{color:#b00020;font-weight:bold}"
    "pre{white-space:pre-wrap;margin:0}"
    # The ranking scrolls sideways in its box; its first columns stay in view (sticky).
    # max-content: the table keeps its natural width (no column squeezed to a letter a line), and
    # the box scrolls.
    ".scroll{overflow-x:auto;max-width:100%}.scroll table{margin:0;width:max-content}"
    # rem, not em: a monospace cell's em is smaller in most browsers, and the second pinned
    # column must start exactly where the first ends.
    ".pin{position:sticky;z-index:1}.pin1{left:0;box-sizing:border-box;width:4.5rem;min-width:4.5rem;max-width:4.5rem}"
    ".pin2{left:4.5rem;min-width:8rem;max-width:14rem;overflow-wrap:anywhere}"
    "@media (max-width:600px){.pin2{min-width:6rem;max-width:7.5rem}}"
    "figure{margin:0 0 1.5em}figure img{max-width:100%;height:auto;border:1px solid #eee}"
)


def render_html(board: dict) -> str:
    """The page of the sub-track's leaderboard."""
    e = escape
    keys, titles = keys_of(board), titles_of(board)
    figure = board["ranked_by"]
    next_p = _next_pair_p(board)
    alpha = alpha_of(board)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>RETECO leaderboard {e(board['subtrack'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>RETECO leaderboard: {e(board['title'])}</h1>",
        f"<p>{e(ranking_sentence(board))}</p>",
        *(f"<p class='warning'>Warning: {e(w)}</p>" for w in board.get("warnings", [])),
    ]
    if board["systems"]:
        systems = board["systems"]
        flagged = any("flagged_answers" in s for s in board["systems"])
        # A figure no ranked system has (BERTScore without its model, everywhere on Codabench) is
        # not a column: one line says why, and the CSV keeps its empty column with the reasons.
        dropped = [k for k in keys if not any(k in s for s in systems)]
        keys = [k for k in keys if k not in dropped]
        # The adjacent pair's p-value carries nothing when it is the same for every system (1.0000
        # in 179 rows at 180 systems): one line says so instead of the column.
        next_values = {fixed(v) for v in next_p.values()}
        show_next = len(next_values) > 1 or len(next_p) < 2
        head = [f"{confidence_percent(board)}% CI", "Rank CI", "Group"] + (["p<sub>adj</sub> vs next"] if show_next else [])
        head += [e(titles[k]) for k in keys if k != figure] + (["Flagged answers"] if flagged else [])
        out.append(f"<h2>Ranking</h2><p class='small'>{len(systems)} systems; systems sharing a group letter are not significantly "
                   f"different (adjusted p &gt; {alpha}); every figure in leaderboard.csv.</p>"
                   "<div class='scroll'><table><tr><th class='pin pin1'>Rank</th>"
                   f"<th class='pin pin2'>Team / run</th><th>{e(titles[figure])}</th>"
                   + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
        for s in systems:
            cells = [f"<td class='n pin pin1'>{s['rank']}</td>", f"<td class='pin pin2'>{e(s['name'])}</td>",
                     _html_value(s, figure, "n key"), _html_interval(s),
                     f"<td class='n'>{e(rank_interval_text(s))}</td>", f"<td>{e(s.get('letters', ''))}</td>"]
            cells += [f"<td class='n'>{fixed(next_p.get(s['name']))}</td>"] if show_next else []
            cells += [_html_value(s, k, "n") for k in keys if k != figure]
            if flagged:
                cells.append(f"<td class='n'>{s.get('flagged_answers', '')}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table></div>")
        if not show_next:
            out.append(f"<p class='small'>Adjusted p against the next system: {e(next_values.pop())} for every "
                       "system (no adjacent pair is told apart); every pair's test is in pairs.csv.</p>")
        if dropped:
            reasons = "; ".join(f"{titles[k]}: {systems[0].get('absent', {}).get(k, 'absent')}" for k in dropped)
            out.append(f"<p class='absent'>Not reported (no ranked system has it): {e(reasons)}.</p>")
        out.append(_html_absent([{**s, "absent": {k: v for k, v in s.get("absent", {}).items() if k not in dropped}}
                                 for s in board["systems"]]))
        out.append(_html_plots(board))
        out.append(_html_generation(board))
        out.append(_html_figure_intervals(board))
        out.append(html_round(board))  # with --round only (reteco.workbench.leaderboard.round_html)
        if "human_corrected" in board:
            out.append(corrected.render_html(board["human_corrected"]))
        out.append(leaderboard_usage.render_html(board))
        for name, title, groups in (("per_domain", "Per domain", board["domains"]),
                                    ("per_depth", "Per turn depth", board["depth_groups"])):
            if groups:
                out.append(f"<h2>{title}: {e(titles[figure])}</h2><div class='scroll'><table>"
                           "<tr><th class='pin pin1'>Rank</th><th class='pin pin2'>Team / run</th>"
                           + "".join(f"<th>{e(g)}</th>" for g in groups) + "</tr>")
                for s in systems:
                    values = "".join(f"<td class='n'>{fixed(s[name].get(g, {}).get(figure))}</td>" for g in groups)
                    out.append(f"<tr><td class='n pin pin1'>{s['rank']}</td><td class='pin pin2'>{e(s['name'])}</td>"
                               f"{values}</tr>")
                out.append("</table></div>")
    else:
        out.append(_html_plots(board))
    if "topic_stability" in board:
        out.append(topic_stability_tables.render_html(board["topic_stability"]))
    if board["pairs"]:
        every = len(board["pairs"]) <= PAIRS_SHOWN
        listed = board["pairs"] if every else _adjacent_pairs(board)
        note = "every pair" if every else (f"the {len(listed)} adjacent pairs (each system against the next); all "
                                           f"{len(board['pairs'])} pairs are in {PAIRS_FILE}")
        out.append(f"<h2>Pairs</h2><p class='small'>{note}.</p><div class='scroll'><table><tr><th>a (ranked above)</th>"
                   "<th>b</th><th>mean(a) - mean(b)</th><th>p</th><th>p<sub>adj</sub></th><th>significant</th></tr>")
        for p in listed:
            significant = "yes" if p["p_adjusted"] <= alpha else "no"
            out.append(f"<tr><td>{e(p['a'])}</td><td>{e(p['b'])}</td><td class='n'>{p['delta']:+.{DECIMALS}f}</td>"
                       f"<td class='n'>{fixed(p.get('p_value'))}</td><td class='n'>{fixed(p['p_adjusted'])}</td>"
                       f"<td>{significant}</td></tr>")
        out.append("</table></div>")
    if board["unranked"]:
        out.append("<h2>Unranked</h2><div class='scroll'><table><tr><th>Team</th><th>Run</th><th>Why</th>"
                   + "".join(f"<th>{e(titles[k])}</th>" for k in keys) + "</tr>")
        for s in board["unranked"]:
            out.append(f"<tr><td>{e(s['team'])}</td><td>{e(s['run'])}</td><td class='absent'>{e(s['reason'])}</td>"
                       + "".join(_html_value(s, k, "n") for k in keys) + "</tr>")
        out.append("</table></div>")
    if board["failed"]:
        out.append("<h2 class='error'>Not scored</h2><table><tr><th>Team</th><th>Run</th><th>File</th><th>Messages</th></tr>")
        for f in board["failed"]:
            out.append(f"<tr><td>{e(f['team'])}</td><td>{e(f['run'])}</td><td>{e(f['file'])}</td>"
                       f"<td class='error'><pre>{e(chr(10).join(f['errors']))}</pre></td></tr>")
        out.append("</table>")
    if "selection" in board:
        out.append(selection_html(board["selection"]))
    out.append("<h2>Method</h2>" + "".join(f"<p>{e(sentence)}</p>" for sentence in method_sentences(board)))
    reference = board.get("reference", {})
    out.append(f"<p class='small'>reteco {e(board['scorer']['version'])}, reference "
               f"{e(reference.get('fingerprint', '?'))} ({e(reference.get('split', '?'))} split)</p></body></html>\n")
    return "".join(out)


def _html_generation(board: dict) -> str:
    """2c's generation figure with its interval, rank interval and groups, best first."""
    generation = board.get("generation")
    if not generation:
        return ""
    e = escape
    key = generation["figure"]
    title = titles_of(board)[key]
    out = [f"<h2>Generation: {e(title)}</h2>"]
    out += [f"<p class='warning'>Warning: {e(w)}</p>" for w in generation["warnings"]]
    if "absent" in generation["method"]:
        return "".join(out) + f"<p class='absent'>{e(generation['method']['absent'])}.</p>"
    rows = sorted((s for s in board["systems"] if "ci_low" in s.get("generation_statistics", {})),
                  key=lambda s: s["generation_statistics"]["rank"])
    out.append(f"<p class='small'>Compared as the ranking figure: {e(generation['method']['test'])}; systems sharing a "
               f"letter are not significantly different. {len(generation['pairs'])} pairs in leaderboard.json.</p>"
               "<div class='scroll'><table><tr><th class='pin pin1'>Rank</th><th class='pin pin2'>Team / run</th>"
               f"<th>{e(title)}</th><th>{confidence_percent(board)}% CI</th><th>Rank CI</th><th>Group</th></tr>")
    for s in rows:
        g = s["generation_statistics"]
        out.append(f"<tr><td class='n pin pin1'>{g['rank']}</td><td class='pin pin2'>{e(s['name'])}</td>"
                   f"<td class='n'>{fixed(s[key])}</td><td class='n'>[{fixed(g['ci_low'])}, {fixed(g['ci_high'])}]</td>"
                   f"<td class='n'>{e(rank_interval_text(g))}</td><td>{e(g['letters'])}</td></tr>")
    out.append("</table></div>")
    missing = [s["name"] for s in board["systems"] if "absent" in s.get("generation_statistics", {})]
    if missing:
        out.append(f"<p class='absent'>No interval or test of {e(title)} for {e(', '.join(missing))} (reasons in "
                   "leaderboard.json).</p>")
    return "".join(out)


def _figure_interval_keys(board: dict) -> list[str]:
    """The judge dimensions and text metrics that carry a per-system interval, in the table's order."""
    found = {k for s in board["systems"] for k in s.get("figure_intervals", {})}
    return [k for k in keys_of(board) if k in found]


def _html_figure_intervals(board: dict) -> str:
    """Each judge dimension and text metric with its interval per system, in ranking order; a
    figure without an interval says why in its cell."""
    keys = _figure_interval_keys(board)
    if not keys:
        return ""
    e, titles = escape, titles_of(board)
    out = [f"<h2>Generation figures with {confidence_percent(board)}% intervals</h2>"
           "<p class='small'>Percentile bootstrap over turns, drawn as the ranking figure's; intervals only "
           "(the pairwise tests are the ranking figure's).</p>"
           "<div class='scroll'><table><tr><th class='pin pin1'>Rank</th><th class='pin pin2'>Team / run</th>"
           + "".join(f"<th>{e(titles[k])}</th>" for k in keys) + "</tr>"]
    for s in board["systems"]:
        cells = []
        for k in keys:
            interval = s.get("figure_intervals", {}).get(k)
            if interval is None or k not in s:
                cells.append("<td class='n'></td>")
            elif "absent" in interval:
                cells.append(f"<td class='n' title='{e(interval['absent'])}'>{fixed(s[k])} (no interval)</td>")
            else:
                cells.append(f"<td class='n'>{fixed(s[k])} [{fixed(interval['ci_low'])}, {fixed(interval['ci_high'])}]</td>")
        out.append(f"<tr><td class='n pin pin1'>{s['rank']}</td><td class='pin pin2'>{e(s['name'])}</td>{''.join(cells)}</tr>")
    out.append("</table></div>")
    return "".join(out)


def _html_plots(board: dict) -> str:
    """The plots, inline (the SVG beside the page), or why one is not drawn."""
    if not board.get("plots"):
        return ""
    out = ["<h2>Plots</h2>"]
    for name, plot in board["plots"].items():
        if "files" in plot:
            svg = next((f for f in plot["files"] if f.endswith(".svg")), plot["files"][0])
            out.append(f"<figure><img src='{escape(svg)}' alt='{escape(name)}'>"
                       f"<figcaption class='small'>{escape(name)}: {escape(', '.join(plot['files']))}</figcaption></figure>")
        else:
            out.append(f"<p class='small'>{escape(name)}: not drawn: {escape(plot['absent'])}</p>")
    return "".join(out)


def _html_value(system: dict, key: str, css: str) -> str:
    if key in system:
        return f"<td class='{css}'>{fixed(system[key])}</td>"
    reason = system.get("absent", {}).get(key, "absent")
    return f"<td class='absent' title='{escape(reason)}'>absent</td>"


def _html_interval(system: dict) -> str:
    if "ci_low" not in system:
        return f"<td class='absent' title='{escape(system.get('statistics_absent', ''))}'>absent</td>"
    return f"<td class='n'>[{fixed(system['ci_low'])}, {fixed(system['ci_high'])}]</td>"


def _html_absent(systems: list[dict]) -> str:
    """The reasons of absent figures, once per (key, reason)."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for s in systems:
        for key, why in s.get("absent", {}).items():
            reasons.setdefault((key, why), []).append(s["name"])
        if "statistics_absent" in s:
            reasons.setdefault(("interval and tests", s["statistics_absent"]), []).append(s["name"])
    if not reasons:
        return ""
    items = "".join(f"<li>{escape(key)} absent for {escape(', '.join(names))}: {escape(why)}</li>"
                    for (key, why), names in reasons.items())
    return f"<p class='absent'>Absent figures:</p><ul class='absent'>{items}</ul>"
