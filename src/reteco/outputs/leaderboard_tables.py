"""``leaderboard.json``, ``leaderboard.csv``, ``leaderboard.html`` and ``leaderboard.tex`` of a sub-track.

Each renders the leaderboard dict of ``reteco.organizers.leaderboard.build_leaderboard``:

- JSON: the dict as is (every number finite: a NaN raises, it is a bug, never written);
- CSV: one row per submission (ranked, then unranked, then those that could not be scored),
  numbers at full precision (Python's shortest round-trip form), an absent figure an empty
  cell whose reason is in the ``notes`` column;
- HTML: one self-contained page (inline CSS, no script, no external request; every text
  escaped): the ranked table with the interval, the per-domain and turn-depth breakdowns of the
  ranking figure, every pair's test, the unranked and failed submissions with their messages,
  the method;
- LaTeX: booktabs tables for the overview paper (``\\usepackage{booktabs}``), LaTeX specials
  in names escaped; figures to 4 decimals as on Codabench.

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
SIGNIFICANCE_LEVEL = 0.05  # marks p_holm <= 0.05 in the tables; every p-value is in the JSON

JSON_FILE = "leaderboard.json"
CSV_FILE = "leaderboard.csv"
HTML_FILE = "leaderboard.html"
TEX_FILE = "leaderboard.tex"


def write_tables(board: dict, folder: Path) -> list[Path]:
    """Write the four files into ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in ((JSON_FILE, render_json(board)), (CSV_FILE, render_csv(board)),
                       (HTML_FILE, render_html(board)), (TEX_FILE, render_latex(board))):
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


def _next_pair_p(board: dict) -> dict[str, float]:
    """Per ranked system, p_holm of its test against the next system that has one."""
    pairs = {(p["a"], p["b"]): p["p_holm"] for p in board["pairs"]}
    tested = [s["name"] for s in board["systems"] if "ci_low" in s]
    return {a: pairs[(a, b)] for a, b in zip(tested, tested[1:]) if (a, b) in pairs}


def _fixed(value: float | None) -> str:
    return "" if value is None else f"{value:.{DECIMALS}f}"


def _ranking_sentence(board: dict) -> str:
    if board["ranked_by"] is None:
        return f"Unranked: {board['unranked_reason']}."
    key = board["ranked_by"]
    official = "the official figure" if key == board["official"] else "a reported figure (not an official ranking)"
    return (f"Ranked by {_titles(board)[key]} ({key}, {official}; {board['unit']}), best first. "
            f"Ties: {board['method'].get('ranking', {}).get('ties', 'shared rank')}.")


def _interval_sentence(board: dict) -> str:
    method = board["method"]
    if "absent" in method:
        return f"No interval or test: {method['absent']}."
    interval = method["interval"]
    return (f"Interval: {round(100 * interval['confidence'])}% {interval['method']} ({interval['resamples']} resamples, "
            f"seed {interval['seed']}). Test: {method['test']}, {method['sidedness']}, "
            f"{method['sign_vectors']} sign vectors{' (exact)' if method['exact'] else ''}, seed {method['seed']}; "
            f"{method['correction']}.")


# -------------------------------------------------------------------------------------- CSV


def render_csv(board: dict) -> str:
    """One row per submission; see the module docstring."""
    keys = _keys(board)
    domains, groups = board["domains"], board["depth_groups"]
    figure = board["ranked_by"]
    header = ["status", "rank", "team", "run", "file", *keys, "ci_low", "ci_high"]
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
        cells = [status, system.get("rank", ""), system["team"], system["run"], system["file"]]
        cells += [_exact(system.get(k)) for k in keys] + [_exact(system.get("ci_low")), _exact(system.get("ci_high"))]
        if figure:
            cells += [_exact(system["per_domain"].get(d, {}).get(figure)) for d in domains]
            cells += [_exact(system["per_depth"].get(g, {}).get(figure)) for g in groups]
        writer.writerow(cells + ["; ".join(notes)])
    for failure in board["failed"]:
        width = len(header) - 6
        writer.writerow(["failed", "", failure["team"], failure["run"], failure["file"], *[""] * width,
                         " | ".join(failure["errors"])])
    return out.getvalue()


def _exact(value: float | None) -> str:
    return "" if value is None else repr(float(value))


# ------------------------------------------------------------------------------------- HTML

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:80em}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "td.n{text-align:right;font-family:monospace;white-space:nowrap}td.key{font-weight:bold}"
    ".absent{color:#a15c00}.error{color:#b00020}.small{font-size:.9em;color:#555}"
    "pre{white-space:pre-wrap;margin:0}"
)


def render_html(board: dict) -> str:
    """The page of the sub-track's leaderboard."""
    e = escape
    keys, titles = _keys(board), _titles(board)
    figure = board["ranked_by"]
    next_p = _next_pair_p(board)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>RETECO leaderboard {e(board['subtrack'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>RETECO leaderboard: {e(board['title'])}</h1>",
        f"<p>{e(_ranking_sentence(board))}</p>",
        f"<p class='small'>{e(_interval_sentence(board))} "
        f"Significant: p<sub>Holm</sub> &le; {SIGNIFICANCE_LEVEL}. {board['units']} units.</p>",
    ]
    if board["systems"]:
        head = ["Rank", "Team", "Run", e(titles[figure]), f"{_confidence(board)}% CI", "p<sub>Holm</sub> vs next"]
        head += [e(titles[k]) for k in keys if k != figure]
        out.append("<h2>Ranking</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
        for s in board["systems"]:
            cells = [f"<td class='n'>{s['rank']}</td>", f"<td>{e(s['team'])}</td>", f"<td>{e(s['run'])}</td>",
                     _html_value(s, figure, "n key"), _html_interval(s),
                     f"<td class='n'>{_fixed(next_p.get(s['name']))}</td>"]
            cells += [_html_value(s, k, "n") for k in keys if k != figure]
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table>")
        out.append(_html_absent(board["systems"]))
        for name, title, groups in (("per_domain", "Per domain", board["domains"]),
                                    ("per_depth", "Per turn depth", board["depth_groups"])):
            if groups:
                out.append(f"<h2>{title}: {e(titles[figure])}</h2><table><tr><th>Rank</th><th>Team</th><th>Run</th>"
                           + "".join(f"<th>{e(g)}</th>" for g in groups) + "</tr>")
                for s in board["systems"]:
                    values = "".join(f"<td class='n'>{_fixed(s[name].get(g, {}).get(figure))}</td>" for g in groups)
                    out.append(f"<tr><td class='n'>{s['rank']}</td><td>{e(s['team'])}</td><td>{e(s['run'])}</td>{values}</tr>")
                out.append("</table>")
    if board["pairs"]:
        out.append("<h2>Pairs</h2><table><tr><th>a (ranked above)</th><th>b</th><th>mean(a) - mean(b)</th>"
                   "<th>p</th><th>p<sub>Holm</sub></th><th>significant</th></tr>")
        for p in board["pairs"]:
            significant = "yes" if p["p_holm"] <= SIGNIFICANCE_LEVEL else "no"
            out.append(f"<tr><td>{e(p['a'])}</td><td>{e(p['b'])}</td><td class='n'>{p['delta']:+.{DECIMALS}f}</td>"
                       f"<td class='n'>{_fixed(p['p_value'])}</td><td class='n'>{_fixed(p['p_holm'])}</td>"
                       f"<td>{significant}</td></tr>")
        out.append("</table>")
    if board["unranked"]:
        out.append("<h2>Unranked</h2><table><tr><th>Team</th><th>Run</th><th>Why</th>"
                   + "".join(f"<th>{e(titles[k])}</th>" for k in keys) + "</tr>")
        for s in board["unranked"]:
            out.append(f"<tr><td>{e(s['team'])}</td><td>{e(s['run'])}</td><td class='absent'>{e(s['reason'])}</td>"
                       + "".join(_html_value(s, k, "n") for k in keys) + "</tr>")
        out.append("</table>")
    if board["failed"]:
        out.append("<h2 class='error'>Not scored</h2><table><tr><th>Team</th><th>Run</th><th>File</th><th>Messages</th></tr>")
        for f in board["failed"]:
            out.append(f"<tr><td>{e(f['team'])}</td><td>{e(f['run'])}</td><td>{e(f['file'])}</td>"
                       f"<td class='error'><pre>{e(chr(10).join(f['errors']))}</pre></td></tr>")
        out.append("</table>")
    out.append("<h2>Method</h2>" + _html_mapping(board["method"]))
    if board.get("plots"):
        out.append("<h2>Plots</h2><ul>")
        for name, plot in board["plots"].items():
            text = ", ".join(plot["files"]) if "files" in plot else f"absent: {plot['absent']}"
            out.append(f"<li>{e(name)}: {e(text)}</li>")
        out.append("</ul>")
    reference = board.get("reference", {})
    out.append(f"<p class='small'>reteco {e(board['scorer']['version'])}, reference "
               f"{e(reference.get('fingerprint', '?'))} ({e(reference.get('split', '?'))} split)</p></body></html>\n")
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


def _html_mapping(mapping: dict) -> str:
    rows = []
    for key, value in mapping.items():
        shown = _html_mapping(value) if isinstance(value, dict) else escape(value)
        rows.append(f"<tr><th>{escape(key)}</th><td>{shown}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


# ------------------------------------------------------------------------------------ LaTeX

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX prints it literally: the ten specials and | < > escaped (``R&D_lab``
    becomes ``R\\&D\\_lab``), control characters (which LaTeX cannot print) dropped."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text) if ch.isprintable() or ch == " ")


def render_latex(board: dict) -> str:
    """booktabs tables: the ranking (figure, interval, p_Holm against the next system,
    diagnostics), and the per-domain and turn-depth breakdowns of the ranking figure."""
    x = latex_escape
    keys, titles = _keys(board), _titles(board)
    figure = board["ranked_by"]
    sub = board["subtrack"]
    out = [f"% RETECO leaderboard, sub-track {x(board['title'])}: written by reteco {board['scorer']['version']}.",
           "% Needs \\usepackage{booktabs}. Every figure at full precision: leaderboard.json / leaderboard.csv."]
    if board["failed"]:
        out.append(f"% {len(board['failed'])} submission(s) could not be scored and are not in the tables: "
                   "see leaderboard.html or leaderboard.json.")
    if not board["systems"]:
        out.append(f"% {x(_ranking_sentence(board))}")
        return "\n".join(out) + "\n"
    next_p = _next_pair_p(board)
    others = [k for k in keys if k != figure]
    columns = ["Rank", "Team", "Run", x(titles[figure]), f"{_confidence(board)}\\% CI", "$p_{\\mathrm{Holm}}$"]
    columns += [x(titles[k]) for k in others]
    body = []
    for s in board["systems"]:
        interval = f"[{_fixed(s['ci_low'])}, {_fixed(s['ci_high'])}]" if "ci_low" in s else "--"
        p = _fixed(next_p.get(s["name"])) or "--"
        cells = [str(s["rank"]), x(s["team"]), x(s["run"]), _fixed(s[figure]), interval, p]
        cells += [_fixed(s.get(k)) or "--" for k in others]
        body.append(cells)
    caption = (f"Sub-track {x(board['title'])}: ranked by {x(titles[figure])} over {board['units']} units; "
               f"{_confidence(board)}\\% percentile bootstrap interval; $p_{{\\mathrm{{Holm}}}}$: paired randomization "
               "test against the next system, Holm-corrected over all pairs; -- absent (reasons in leaderboard.json).")
    out += _latex_table(columns, "rll" + "r" * (len(columns) - 3), body, caption, f"tab:reteco-{sub}")
    for name, title, groups in (("per_domain", "per domain", board["domains"]),
                                ("per_depth", "per turn depth", board["depth_groups"])):
        if not groups:
            continue
        body = [[str(s["rank"]), x(s["team"]), x(s["run"])]
                + [_fixed(s[name].get(g, {}).get(figure)) or "--" for g in groups] for s in board["systems"]]
        caption = f"Sub-track {x(board['title'])}: {x(titles[figure])} {title}."
        out += _latex_table(["Rank", "Team", "Run", *(x(g) for g in groups)], "rll" + "r" * len(groups), body,
                            caption, f"tab:reteco-{sub}-{name.replace('_', '-')}")
    return "\n".join(out) + "\n"


def _latex_table(columns: list[str], spec: str, body: list[list[str]], caption: str, label: str) -> list[str]:
    return [
        "", "\\begin{table*}[t]", "\\centering", "\\small", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
        " & ".join(columns) + " \\\\", "\\midrule",
        *(" & ".join(row) + " \\\\" for row in body),
        "\\bottomrule", "\\end{tabular}", f"\\caption{{{caption}}}", f"\\label{{{label}}}", "\\end{table*}",
    ]

