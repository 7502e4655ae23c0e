"""``leaderboard.json``, ``.csv``, ``.html``, ``.tex`` and ``pairs.csv`` of a sub-track.

Each renders the leaderboard dict of ``reteco.organizers.leaderboard.build_leaderboard``:

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
- LaTeX: booktabs tables for the overview paper (``render_latex``): a main table that fits a
  two-column ACL page (width estimated, see ``text_width_pt``), the diagnostics beside it,
  names escaped and shortened; figures to 4 decimals as on Codabench.

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

DECIMALS = 4
SIGNIFICANCE_LEVEL = 0.05  # the level when a board's method does not state one (older boards)
PAIRS_SHOWN = 500  # more pairs than this: the page shows the adjacent ones, pairs.csv has all

JSON_FILE = "leaderboard.json"
CSV_FILE = "leaderboard.csv"
HTML_FILE = "leaderboard.html"
TEX_FILE = "leaderboard.tex"
PAIRS_FILE = "pairs.csv"


def write_tables(board: dict, folder: Path, *, latex_columns: list[str] | None = None,
                 top: int | None = None) -> list[Path]:
    """Write the five files into ``folder``; return their paths. ``latex_columns`` and ``top``
    shape the LaTeX main table and the page's ranking (see ``render_latex``)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((JSON_FILE, render_json(board)), (CSV_FILE, render_csv(board)),
                       (PAIRS_FILE, render_pairs_csv(board)), (HTML_FILE, render_html(board, top=top)),
                       (TEX_FILE, render_latex(board, columns=latex_columns, top=top))):
        path = folder / name
        path.write_text(text, encoding="utf-8", newline="")
        written.append(path)
    return written


def render_json(board: dict) -> str:
    """The dict, indented; ValueError on a number that is not finite."""
    return json.dumps(board, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# ----------------------------------------------------------------------------------- shared


def _keys(board: dict) -> list[str]:
    return [k["key"] for k in board["keys"]]


def _titles(board: dict) -> dict[str, str]:
    return {k["key"]: k["title"] for k in board["keys"]}


def _alpha(board: dict) -> float:
    return board["method"].get("alpha", SIGNIFICANCE_LEVEL)


def _adjacent_pairs(board: dict) -> list[dict]:
    """The pair of every tested system with the next tested one, in rank order."""
    pairs = {(p["a"], p["b"]): p for p in board["pairs"]}
    tested = [s["name"] for s in board["systems"] if "ci_low" in s]
    return [pairs[(a, b)] for a, b in zip(tested, tested[1:]) if (a, b) in pairs]


def _next_pair_p(board: dict) -> dict[str, float]:
    """Per ranked system, the adjusted p-value of its test against the next tested system."""
    return {p["a"]: p["p_adjusted"] for p in _adjacent_pairs(board)}


def _fixed(value: float | None) -> str:
    return "" if value is None else f"{value:.{DECIMALS}f}"


def _ranking_sentence(board: dict) -> str:
    if board["ranked_by"] is None:
        return f"Unranked: {board['unranked_reason']}."
    key = board["ranked_by"]
    official = "the official figure" if key == board["official"] else \
        f"the ranking figure of {board['subtrack']}, which has no official figure"
    return (f"Ranked by {_titles(board)[key]} ({key}, {official}; {board['unit']}), best first. "
            f"Ties: {board['method'].get('ranking', {}).get('ties', 'shared rank')}.")


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
    keys = _keys(board)
    domains, groups = board["domains"], board["depth_groups"]
    figure = board["ranked_by"]
    header = ["status", "rank", "rank_low", "rank_high", "letters", "team", "run", "file", *keys, "ci_low", "ci_high",
              "flagged_answers"]
    if figure:
        header += [f"{figure}[{d}]" for d in domains] + [f"{figure}[{g}]" for g in groups]
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
        if figure:
            cells += [_exact(system["per_domain"].get(d, {}).get(figure)) for d in domains]
            cells += [_exact(system["per_depth"].get(g, {}).get(figure)) for g in groups]
        writer.writerow(cells + ["; ".join(notes)])
    for failure in board["failed"]:
        width = len(header) - 9
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
                         "yes" if p["p_adjusted"] <= _alpha(board) else "no",
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
    ".scroll{overflow-x:auto;max-width:100%}.scroll table{margin:0}"
    # rem, not em: a monospace cell's em is smaller in most browsers, and the second pinned
    # column must start exactly where the first ends.
    ".pin{position:sticky;z-index:1}.pin1{left:0;box-sizing:border-box;width:3.5rem;min-width:3.5rem}"
    ".pin2{left:3.5rem;max-width:14rem;overflow-wrap:anywhere}"
    "figure{margin:0 0 1.5em}figure img{max-width:100%;height:auto;border:1px solid #eee}"
)


def render_html(board: dict, *, top: int | None = None) -> str:
    """The page of the sub-track's leaderboard (``top``: the ranking shows that many systems,
    the CSV has all)."""
    e = escape
    keys, titles = _keys(board), _titles(board)
    figure = board["ranked_by"]
    next_p = _next_pair_p(board)
    alpha = _alpha(board)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>RETECO leaderboard {e(board['subtrack'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>RETECO leaderboard: {e(board['title'])}</h1>",
        f"<p>{e(_ranking_sentence(board))}</p>",
        *(f"<p class='warning'>Warning: {e(w)}</p>" for w in board.get("warnings", [])),
    ]
    if board["systems"]:
        systems = board["systems"][:top] if top else board["systems"]
        flagged = any("flagged_answers" in s for s in board["systems"])
        head = [f"{_confidence(board)}% CI", "Rank CI", "Group", "p<sub>adj</sub> vs next"]
        head += [e(titles[k]) for k in keys if k != figure] + (["Flagged answers"] if flagged else [])
        shown = f"the top {len(systems)} of {len(board['systems'])}" if len(systems) < len(board["systems"]) else \
            f"{len(systems)} systems"
        out.append(f"<h2>Ranking</h2><p class='small'>{shown}; systems sharing a group letter are not significantly "
                   f"different (adjusted p &gt; {alpha}); every figure in leaderboard.csv.</p>"
                   "<div class='scroll'><table><tr><th class='pin pin1'>Rank</th>"
                   f"<th class='pin pin2'>Team / run</th><th>{e(titles[figure])}</th>"
                   + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
        for s in systems:
            cells = [f"<td class='n pin pin1'>{s['rank']}</td>", f"<td class='pin pin2'>{e(s['name'])}</td>",
                     _html_value(s, figure, "n key"), _html_interval(s),
                     f"<td class='n'>{e(_rank_interval_text(s))}</td>", f"<td>{e(s.get('letters', ''))}</td>",
                     f"<td class='n'>{_fixed(next_p.get(s['name']))}</td>"]
            cells += [_html_value(s, k, "n") for k in keys if k != figure]
            if flagged:
                cells.append(f"<td class='n'>{s.get('flagged_answers', '')}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table></div>")
        out.append(_html_absent(board["systems"]))
        out.append(_html_plots(board))
        for name, title, groups in (("per_domain", "Per domain", board["domains"]),
                                    ("per_depth", "Per turn depth", board["depth_groups"])):
            if groups:
                out.append(f"<h2>{title}: {e(titles[figure])}</h2><div class='scroll'><table>"
                           "<tr><th class='pin pin1'>Rank</th><th class='pin pin2'>Team / run</th>"
                           + "".join(f"<th>{e(g)}</th>" for g in groups) + "</tr>")
                for s in systems:
                    values = "".join(f"<td class='n'>{_fixed(s[name].get(g, {}).get(figure))}</td>" for g in groups)
                    out.append(f"<tr><td class='n pin pin1'>{s['rank']}</td><td class='pin pin2'>{e(s['name'])}</td>"
                               f"{values}</tr>")
                out.append("</table></div>")
    else:
        out.append(_html_plots(board))
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
                       f"<td class='n'>{_fixed(p.get('p_value'))}</td><td class='n'>{_fixed(p['p_adjusted'])}</td>"
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
    out.append("<h2>Method</h2>" + "".join(f"<p>{e(sentence)}</p>" for sentence in method_sentences(board)))
    reference = board.get("reference", {})
    out.append(f"<p class='small'>reteco {e(board['scorer']['version'])}, reference "
               f"{e(reference.get('fingerprint', '?'))} ({e(reference.get('split', '?'))} split)</p></body></html>\n")
    return "".join(out)


def _html_plots(board: dict) -> str:
    """The plots, inline (the SVG beside the page), or why one is not drawn."""
    if not board.get("plots"):
        return ""
    out = ["<h2>Plots</h2>"]
    for name, plot in board["plots"].items():
        if "files" in plot:
            svg = next((f for f in plot["files"] if f.endswith(".svg")), plot["files"][0])
            out.append(f"<figure><img src='{escape(svg)}' alt='{escape(name)}' loading='lazy'>"
                       f"<figcaption class='small'>{escape(name)}: {escape(', '.join(plot['files']))}</figcaption></figure>")
        else:
            out.append(f"<p class='small'>{escape(name)}: not drawn: {escape(plot['absent'])}</p>")
    return "".join(out)


def _confidence(board: dict) -> int:
    return round(100 * board["method"].get("interval", {}).get("confidence", 0.95))


def _html_value(system: dict, key: str, css: str) -> str:
    if key in system:
        return f"<td class='{css}'>{_fixed(system[key])}</td>"
    reason = system.get("absent", {}).get(key, "absent")
    return f"<td class='absent' title='{escape(reason)}'>absent</td>"


def _html_interval(system: dict) -> str:
    if "ci_low" not in system:
        return f"<td class='absent' title='{escape(system.get('statistics_absent', ''))}'>absent</td>"
    return f"<td class='n'>[{_fixed(system['ci_low'])}, {_fixed(system['ci_high'])}]</td>"


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


# ------------------------------------------------------------------------------------ LaTeX

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "…": r"\ldots{}",
}

# The page the tables are made for: ACL's two-column A4 style (acl.sty): \textwidth 16 cm
# (455.2 pt, a table* across both columns), 11 pt Times; the tables are set in \small (10 pt)
# with \tabcolsep 4 pt.
TEXT_WIDTH_PT = 455.2
TABCOLSEP_PT = 4.0
# Width estimate of a cell (pdflatex is not part of the toolchain): Times at 10 pt draws digits
# and lowercase letters at most 5.0 pt wide (lowercase average 4.4), capitals at most 7.2 pt
# except M and W (8.9, 9.4); every character is counted at the upper bound of its class, so the
# estimate is above the width pdflatex sets. A column is its widest cell plus 2 \tabcolsep.
_WIDE = {"M": 9.4, "W": 9.4, "m": 7.8, "w": 7.2, "%": 8.3, "&": 7.8, "@": 9.2}
# More rows than this do not fit one float page (\small rows at 12 pt in a 24.7 cm text height):
# such a table is a longtable, which breaks across pages.
LONG_ROWS = 50
TEAM_CHARS = 16  # team and run names are cut to these many characters (the last one an ellipsis)
RUN_CHARS = 12
# The figures of the main table besides the ranking figure, per sub-track: the paper's choice
# (``--latex-columns`` replaces them); every other figure goes to the diagnostics tables.
PAPER_COLUMNS = {
    "1a": ("map_10", "recall_10", "tc_10"),
    "1b": ("map_10", "recall_10", "tc_10"),
    "2a": ("map_10", "recall_10", "mrr"),
    "2b": ("correctness", "faithfulness", "rouge_l"),
    "2c": ("judge_mean", "recall_10", "rouge_l"),
}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX prints it literally: the ten specials and | < > escaped (``R&D_lab``
    becomes ``R\\&D\\_lab``), control characters (which LaTeX cannot print) dropped."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text) if ch.isprintable() or ch == " ")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis when cut (the full names are
    in leaderboard.csv)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_width_pt(text: str) -> float:
    """The estimated width of ``text`` (plain, before escaping) in a \\small table cell, in pt
    (see ``_WIDE`` for the rule)."""
    width = 0.0
    for ch in text:
        width += _WIDE.get(ch, 7.2 if ch.isupper() else 5.0)
    return width


def table_width_pt(columns: list[str], rows: list[list[str]]) -> float:
    """The estimated width of a tabular: per column its widest cell (header included) plus
    2 \\tabcolsep."""
    return sum(max(text_width_pt(cell) for cell in column) + 2 * TABCOLSEP_PT
               for column in zip(columns, *rows))


def latex_columns(board: dict, chosen: list[str] | None = None) -> list[str]:
    """The main table's figures besides the ranking figure: ``chosen`` (``--latex-columns``), or
    ``PAPER_COLUMNS`` of the sub-track; keys the board does not have are dropped."""
    keys = _keys(board)
    wanted = chosen if chosen is not None else PAPER_COLUMNS.get(board["subtrack"], ())
    return [k for k in wanted if k in keys and k != board["ranked_by"]]


def render_latex(board: dict, *, columns: list[str] | None = None, top: int | None = None) -> str:
    """booktabs tables for the overview paper: the main table (rank, rank interval, team, run,
    the ranking figure, its interval, the significance group, the chosen figures, the answers
    the judge flagged), the top ``top`` systems when given; then the diagnostics (every other
    figure) in tables that each fit the page; then the per-domain and turn-depth breakdowns. A
    table longer than ``LONG_ROWS`` is a longtable."""
    x = latex_escape
    titles = _titles(board)
    figure = board["ranked_by"]
    sub = board["subtrack"]
    out = [f"% RETECO leaderboard, sub-track {x(board['title'])}: written by reteco {board['scorer']['version']}.",
           "% Needs \\usepackage{booktabs} (and \\usepackage{longtable} for a long table, which must sit in "
           "one-column mode: \\onecolumn, e.g. in an appendix).",
           "% Every figure at full precision, and full names: leaderboard.json / leaderboard.csv."]
    if board["failed"]:
        out.append(f"% {len(board['failed'])} submission(s) could not be scored and are not in the tables: "
                   "see leaderboard.html or leaderboard.json.")
    for warning in board.get("warnings", []):
        out.append(f"% WARNING: {x(warning)}")
    if not board["systems"]:
        out.append(f"% {x(_ranking_sentence(board))}")
        return "\n".join(out) + "\n"
    systems = board["systems"][:top] if top else board["systems"]
    chosen = latex_columns(board, columns)
    flagged = any("flagged_answers" in s for s in board["systems"])
    head = ["Rank", "Rank CI", "Team", "Run", titles[figure], f"{_confidence(board)}% CI", "Group",
            *(titles[k] for k in chosen)] + (["Flagged"] if flagged else [])
    rows = []
    for s in systems:
        cells = [str(s["rank"]), _rank_interval_text(s) or "--", shorten(s["team"], TEAM_CHARS),
                 shorten(s["run"], RUN_CHARS), _fixed(s[figure]), _interval_text(s) or "--", s.get("letters", "--")]
        cells += [_fixed(s.get(k)) or "--" for k in chosen]
        if flagged:
            cells.append(str(s["flagged_answers"]) if "flagged_answers" in s else "--")
        rows.append(cells)
    shown = f"the top {len(systems)} of {len(board['systems'])} ranked systems" if len(systems) < len(board["systems"]) \
        else f"{len(systems)} ranked systems"
    caption = (f"Sub-track {board['title']}: {shown}, ranked by {titles[figure]} over {board['units']} units; "
               f"{_confidence(board)}% percentile bootstrap intervals of the figure and of the rank; systems sharing a "
               f"group letter are not significantly different ({_procedure_words(board)}, alpha "
               f"{board['method'].get('alpha', SIGNIFICANCE_LEVEL)}); -- absent (reasons in leaderboard.json).")
    if flagged:
        caption += " Flagged: answers the judge flagged as attempts to influence it."
    out += _latex_table(head, "rrllrrl" + "r" * (len(head) - 7), rows, caption, f"tab:reteco-{sub}")
    diagnostics = [k for k in _keys(board) if k != figure and k not in chosen and any(k in s for s in board["systems"])]
    for part, keys in enumerate(_fitting_chunks(board["systems"], diagnostics, titles), start=1):
        rows = [[str(s["rank"]), shorten(s["team"], TEAM_CHARS), shorten(s["run"], RUN_CHARS)]
                + [_fixed(s.get(k)) or "--" for k in keys] for s in board["systems"]]
        caption = f"Sub-track {board['title']}: diagnostics ({part}), every ranked system in rank order."
        out += _latex_table(["Rank", "Team", "Run", *(titles[k] for k in keys)], "rll" + "r" * len(keys), rows,
                            caption, f"tab:reteco-{sub}-diagnostics-{part}")
    for name, title, groups in (("per_domain", "per domain", board["domains"]),
                                ("per_depth", "per turn depth", board["depth_groups"])):
        for part, chunk in enumerate(_fitting_chunks(board["systems"], groups, None), start=1):
            rows = [[str(s["rank"]), shorten(s["team"], TEAM_CHARS), shorten(s["run"], RUN_CHARS)]
                    + [_fixed(s[name].get(g, {}).get(figure)) or "--" for g in chunk] for s in board["systems"]]
            caption = f"Sub-track {board['title']}: {titles[figure]} {title}."
            label = f"tab:reteco-{sub}-{name.replace('_', '-')}" + (f"-{part}" if part > 1 else "")
            out += _latex_table(["Rank", "Team", "Run", *chunk], "rll" + "r" * len(chunk), rows, caption, label)
    return "\n".join(out) + "\n"


def _procedure_words(board: dict) -> str:
    procedure = board["method"].get("procedure", "holm")
    return {"tukey-hsd": "randomised Tukey HSD over all pairs", "holm": "paired randomization tests, Holm-corrected",
            "fdr": "paired randomization tests, Benjamini-Hochberg FDR"}[procedure]


def _fitting_chunks(systems: list[dict], items: list[str], titles: dict[str, str] | None) -> list[list[str]]:
    """``items`` (keys or group names) cut into runs whose table (rank, team, run and the items'
    figures) fits ``TEXT_WIDTH_PT`` by ``table_width_pt``'s estimate."""
    base = [["Rank", "Team", "Run"]] + [[str(s["rank"]), shorten(s["team"], TEAM_CHARS), shorten(s["run"], RUN_CHARS)]
                                         for s in systems]
    used = table_width_pt(base[0], base[1:])
    chunks: list[list[str]] = []
    width = used
    for item in items:
        column = max(text_width_pt(titles[item] if titles else item), text_width_pt("0.0000")) + 2 * TABCOLSEP_PT
        if not chunks or width + column > TEXT_WIDTH_PT:
            chunks.append([])
            width = used
        chunks[-1].append(item)
        width += column
    return chunks


def _rank_interval_text(system: dict) -> str:
    if "rank_low" not in system:
        return ""
    low, high = system["rank_low"], system["rank_high"]
    return str(low) if low == high else f"{low}-{high}"


def _interval_text(system: dict) -> str:
    return f"[{system['ci_low']:.3f}, {system['ci_high']:.3f}]" if "ci_low" in system else ""


def _latex_table(columns: list[str], spec: str, body: list[list[str]], caption: str, label: str) -> list[str]:
    """A booktabs table of plain cells (escaped here): a table* float, or a longtable past
    ``LONG_ROWS`` rows; a comment when the width estimate exceeds the page."""
    x = latex_escape
    width = table_width_pt(columns, body)
    head = " & ".join(x(c) for c in columns) + " \\\\"
    rows = [" & ".join(x(c) for c in row) + " \\\\" for row in body]
    note = [] if width <= TEXT_WIDTH_PT else [
        f"% WARNING: estimated {width:.0f} pt wide, more than the page's {TEXT_WIDTH_PT} pt: choose fewer columns"]
    if len(body) > LONG_ROWS:
        return ["", *note, "\\begingroup\\small\\setlength{\\tabcolsep}{4pt}",
                f"\\begin{{longtable}}{{{spec}}}", f"\\caption{{{x(caption)}}}\\label{{{label}}}\\\\", "\\toprule",
                head, "\\midrule", "\\endfirsthead", "\\toprule", head, "\\midrule", "\\endhead",
                "\\bottomrule", "\\endlastfoot", *rows, "\\end{longtable}", "\\endgroup"]
    return ["", *note, "\\begin{table*}[t]", "\\centering", "\\small", "\\setlength{\\tabcolsep}{4pt}",
            f"\\begin{{tabular}}{{{spec}}}", "\\toprule", head, "\\midrule", *rows, "\\bottomrule", "\\end{tabular}",
            f"\\caption{{{x(caption)}}}", f"\\label{{{label}}}", "\\end{table*}"]
