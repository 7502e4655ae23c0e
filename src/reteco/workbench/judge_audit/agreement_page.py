"""``agreement.html``: the judge-human agreement of ``reteco agreement`` as one self-contained page.

Inline CSS and inline SVG plots, one per figure (quadratic-weighted kappa, ordinal alpha of the
humans and with the judge, Spearman, each with its 95% bootstrap interval on a -1..1 axis, and
the bias, judge minus humans on the 1-5 scale, on its own axis), one row per dimension; on the
kappa and Spearman plots the human ceiling (each human against the others' median) is drawn
beside the judge, as a grey diamond with its interval, so the judge is read against it. Then the
tables of every figure with its interval (or the reason it is undefined), the human ceiling, the
system-level correlation and the method. No script, no external resource; every text is escaped.

Two judges (``method.reference`` "judge"): the page says judge against second judge everywhere,
and has no human ceiling and no humans-only alpha (``reteco.metrics.agreement``).

Readable at 1280 and at 390 px (checked in headless Chromium, ``tests/outputs``): the plots are
small SVGs that wrap; the tables have one row per figure and one column per dimension, and below
700 px each row becomes a block whose cells are labelled with their dimension, so no table is
wider than the window.
"""

from __future__ import annotations

import math
from typing import Any

from reteco.outputs.charts import escape, is_finite
from reteco.subtracks import DIMENSIONS

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:80em}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em;max-width:100%}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top;overflow-wrap:anywhere}"
    "th{background:#f3f3f3;white-space:nowrap}td.n{text-align:right;font-family:monospace}"
    ".ci{display:block;font-size:85%;color:#555;white-space:nowrap}td.undefined .ci{white-space:normal}"
    ".undefined{color:#a15c00}.plots{display:flex;flex-wrap:wrap;gap:.5em 1.5em}svg{max-width:100%;height:auto}"
    "svg text{font-size:11px}.legend{font-size:90%}"
    "@media (max-width:700px){body{margin:.8em}table,thead,tbody,tr,th,td{display:block}tr:first-child{display:none}"
    "tr{border:1px solid #ccc;margin-bottom:.6em}td{border:none;border-top:1px solid #eee;text-align:left}"
    "td.n{text-align:left}td[data-label]::before{content:attr(data-label) ': ';font-weight:bold;"
    "font-family:sans-serif}td.figure{background:#f3f3f3;font-weight:bold}}"
)

#: The plotted figures: (key in a dimension's block, plot title, axis limit or None for bias).
PLOTTED = (
    ("kappa_quadratic", "kappa (quadratic)", 1.0),
    ("alpha_ordinal_humans", "alpha, humans only", 1.0),
    ("alpha_ordinal_with_judge", "alpha, humans and judge", 1.0),
    ("spearman", "Spearman", 1.0),
    ("bias", "bias (judge - humans)", None),
)
#: The same for two judges: no humans-only alpha.
PLOTTED_JUDGES = (
    ("kappa_quadratic", "kappa (quadratic)", 1.0),
    ("alpha_ordinal_with_judge", "alpha, both judges", 1.0),
    ("spearman", "Spearman", 1.0),
    ("bias", "bias (judge - second judge)", None),
)
#: Figures whose human ceiling (``ceiling.dimensions[d][key]``) is drawn beside the judge's.
CEILING_PLOTTED = ("kappa_quadratic", "spearman")
TABLE_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "alpha_ordinal_humans",
                 "alpha_ordinal_with_judge", "bias")
CEILING_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "abs_rater_bias")

# What each row of the tables is, for humans and for a second judge ("{other}").
_LABELS = {
    "n_items": "items compared", "n_conversations": "conversations", "n_human_ratings": "human ratings",
    "n_human_raters": "human raters", "items_judge_only": "items only the judge scored",
    "items_humans_only": "items only the humans rated", "items_second_judge_only": "items only the second judge scored",
    "kappa_quadratic": "kappa_quadratic: Cohen's kappa, quadratic weights, judge vs {other}",
    "exact": "exact: share of items where the judge equals {other}",
    "within_1": "within_1: share within 1 point of {other}",
    "spearman": "spearman: rank correlation with {other}",
    "kendall_tau_b": "kendall_tau_b: rank correlation with {other}",
    "alpha_ordinal_humans": "alpha_ordinal_humans: Krippendorff's ordinal alpha among the humans",
    "alpha_ordinal_with_judge": "alpha_ordinal_with_judge: ordinal alpha, {raters}",
    "bias": "bias: judge mean minus {mean} (1-5 scale)",
    "n_pairs": "(rater, item) pairs", "n_raters": "human raters",
    "abs_rater_bias": "abs_rater_bias: a human's |bias| against the others",
}
_CEILING_LABELS = {
    "kappa_quadratic": "kappa_quadratic: each human vs the others' median",
    "exact": "exact: each human equals the others' median",
    "within_1": "within_1: each human within 1 point of the others' median",
    "spearman": "spearman: each human vs the others' median",
    "kendall_tau_b": "kendall_tau_b: each human vs the others' median",
}

_LABEL_W, _PANEL_W, _PAD, _ROW_H, _TOP = 100, 190, 12, 26, 40


def render(result: dict[str, Any]) -> str:
    """The page for an ``reteco.metrics.agreement.agreement`` result."""
    method = result.get("method", {})
    humans = method.get("reference", "humans") == "humans"
    dimensions = result.get("dimensions", {})
    words = {"other": "the humans' median" if humans else "the second judge",
             "mean": "the humans' mean" if humans else "the second judge's mean",
             "raters": "the humans and the judge" if humans else "both judges"}
    if humans:
        title = "Judge-human agreement"
        intro = (f"Judge <b>{escape(method.get('judge', '?'))}</b> ({escape(method.get('judge_file', '?'))}) against "
                 f"the human ratings of {escape(method.get('human_file', '?'))}.")
        counts = ("n_items", "n_conversations", "n_human_ratings", "n_human_raters")
        figures = TABLE_FIGURES
    else:
        title = "Judge-judge agreement"
        intro = (f"Judge <b>{escape(method.get('judge', '?'))}</b> ({escape(method.get('judge_file', '?'))}) against "
                 f"a second judge, <b>{escape(method.get('second_judge', '?'))}</b> "
                 f"({escape(method.get('second_judge_file', '?'))}). Both files are judges.")
        counts = ("n_items", "n_conversations", "items_judge_only", "items_second_judge_only")
        figures = tuple(f for f in TABLE_FIGURES if f != "alpha_ordinal_humans")
    ceiling = result.get("ceiling", {})
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>RETECO {escape(title.lower())}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>",
        f"<p>{intro} {escape(method.get('interval', ''))}; "
        f"{escape(method.get('resamples', '?'))} resamples, seed {escape(method.get('seed', '?'))}.</p>",
        "<h2>Per dimension, with 95% intervals</h2>",
        plots(dimensions, ceiling.get("dimensions", {}) if humans else {}, PLOTTED if humans else PLOTTED_JUDGES),
        "<h2>Figures</h2>",
        _figure_table(dimensions, counts + figures, {k: v.format(**words) for k, v in _LABELS.items()}),
    ]
    if ceiling:
        labels = {**_LABELS, **_CEILING_LABELS}
        out += [f"<h2>Human ceiling</h2><p>{escape(ceiling.get('definition', ''))}</p>",
                _figure_table(ceiling.get("dimensions", {}), ("n_pairs", "n_items", "n_raters") + CEILING_FIGURES,
                              {k: v.format(**words) for k, v in labels.items()})]
    system = result.get("system_level")
    if system:
        out.append(f"<h2>System level</h2><p>{escape(system.get('definition', ''))}</p>")
        rows = {**system.get("dimensions", {}), **({"judge_mean": system["judge_mean"]} if "judge_mean" in system else {})}
        # An interval that measures nothing (interval_note) is not printed: the point, and the note below.
        rows = {name: block if not block.get("interval_note") else {
                    **block, **{f: {**block[f], "ci_low": None, "ci_high": None, "reason": "see the note below"}
                                for f in ("kendall_tau_b", "tau_ap") if block.get(f, {}).get("value") is not None}}
                for name, block in rows.items()}
        out.append(_figure_table(rows, ("n_systems", "kendall_tau_b", "tau_ap"),
                                 {"n_systems": "systems", "kendall_tau_b": "kendall_tau_b: of the means per system",
                                  "tau_ap": f"tau_ap: reference {system.get('tau_ap_reference', '?')}"}))
        notes = sorted({f"{name}: {block['interval_note']}" for name, block in rows.items() if block.get("interval_note")})
        out += [f"<p class='note'>{escape(note)}</p>" for note in notes]
    elif method.get("system_level"):
        out.append(f"<p>System level: {escape(method['system_level'])}.</p>")
    rows = "".join(f"<tr><td class='figure'>{escape(k)}</td><td data-label='{escape(k)}'>{escape(v)}</td></tr>"
                   for k, v in method.items())
    out.append(f"<h2>Method</h2><table><tr><th>setting</th><th>value</th></tr>{rows}</table></body></html>")
    return "".join(out)


def plots(dimensions: dict[str, Any], ceiling: dict[str, Any], plotted=PLOTTED) -> str:
    """One small inline SVG per figure of ``plotted`` (one row per dimension), wrapping on a
    narrow window; the human ceiling beside the judge on ``CEILING_PLOTTED`` figures."""
    names = [d for d in DIMENSIONS if d in dimensions] + [d for d in dimensions if d not in DIMENSIONS]
    bias_limit = _bias_limit(dimensions)
    parts = ["<div class='plots'>"]
    for key, title, limit in plotted:
        parts.append(_panel(names, dimensions, ceiling if key in CEILING_PLOTTED else {}, key, title,
                            limit if limit is not None else bias_limit))
    parts.append("</div>")
    if any(key in CEILING_PLOTTED for key, _, _ in plotted) and ceiling:
        parts.append("<p class='legend'>Blue dot: the judge, with its interval. Grey diamond: the human ceiling, "
                     "each human against the median of the others, with its interval.</p>")
    return "".join(parts)


def _panel(names: list[str], dimensions: dict[str, Any], ceiling: dict[str, Any], key: str, title: str,
           limit: float) -> str:
    width = _LABEL_W + _PANEL_W
    height = _TOP + _ROW_H * len(names) + 10
    x0 = _LABEL_W
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
             f"role='img' aria-label='{escape(title)} per dimension'>",
             f"<text x='{x0 + _PANEL_W / 2:.1f}' y='12' text-anchor='middle'>{escape(title)}</text>"]
    for tick in (-limit, 0.0, limit):
        parts.append(f"<text x='{_x(tick, limit, x0):.1f}' y='{_TOP - 12}' text-anchor='middle'>{_tick(tick)}</text>")
    zero = _x(0.0, limit, x0)
    parts.append(f"<line x1='{zero:.1f}' y1='{_TOP - 6}' x2='{zero:.1f}' y2='{height - 6}' stroke='#bbb' "
                 "stroke-dasharray='3,3'/>")
    parts.append(f"<line x1='{x0 + _PAD}' y1='{_TOP - 6}' x2='{x0 + _PANEL_W - _PAD}' y2='{_TOP - 6}' stroke='#888'/>")
    for row, name in enumerate(names):
        y = _TOP + _ROW_H * row + _ROW_H / 2
        parts.append(f"<text x='4' y='{y + 4:.1f}'>{escape(name)}</text>")
        human = (ceiling.get(name) or {}).get(key) or {}
        if is_finite(human.get("value")):
            yc = y + 6  # just below the judge's row line
            low, high = human.get("ci_low"), human.get("ci_high")
            if is_finite(low) and is_finite(high):
                parts.append(f"<line x1='{_x(low, limit, x0):.1f}' y1='{yc:.1f}' x2='{_x(high, limit, x0):.1f}' "
                             f"y2='{yc:.1f}' stroke='#999' stroke-width='2'/>")
            xc = _x(human["value"], limit, x0)
            parts.append(f"<path class='ceiling' d='M{xc:.1f},{yc - 4:.1f} l4,4 l-4,4 l-4,-4 z' fill='#777'>"
                         f"<title>{escape(name)} {escape(key)}, human ceiling: {_interval(human)}</title></path>")
        figure = dimensions[name].get(key) or {}
        value = figure.get("value")
        if not is_finite(value):
            parts.append(f"<text x='{x0 + _PANEL_W / 2:.1f}' y='{y + 4:.1f}' text-anchor='middle' fill='#a15c00'>"
                         "undefined</text>")
            continue
        low, high = figure.get("ci_low"), figure.get("ci_high")
        if is_finite(low) and is_finite(high):
            parts.append(f"<line x1='{_x(low, limit, x0):.1f}' y1='{y:.1f}' x2='{_x(high, limit, x0):.1f}' "
                         f"y2='{y:.1f}' stroke='#3465a4' stroke-width='2'/>")
        parts.append(f"<circle cx='{_x(value, limit, x0):.1f}' cy='{y:.1f}' r='3.5' fill='#204a87'>"
                     f"<title>{escape(name)} {escape(key)}: {_interval(figure)}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)


def _bias_limit(dimensions: dict[str, Any]) -> float:
    """The bias axis: symmetric, whole points, wide enough for every bias and interval (at least 1)."""
    extremes = [abs(v) for d in dimensions.values() for k in ("value", "ci_low", "ci_high")
                if is_finite(v := (d.get("bias") or {}).get(k))]
    return float(max(1, math.ceil(max(extremes, default=1.0))))


def _x(value: float, limit: float, x0: float) -> float:
    clipped = min(max(value, -limit), limit)
    return x0 + _PAD + (clipped + limit) / (2 * limit) * (_PANEL_W - 2 * _PAD)


def _tick(value: float) -> str:
    return f"{value:+g}" if value else "0"


def _interval(figure: dict[str, Any]) -> str:
    value = figure.get("value")
    if not is_finite(value):
        return f"undefined: {figure.get('reason', '')}"
    low, high = figure.get("ci_low"), figure.get("ci_high")
    if is_finite(low) and is_finite(high):
        return f"{value:.3f} [{low:.3f}, {high:.3f}]"
    return f"{value:.3f} (no interval: {figure.get('reason', '')})"


def _cell(figure: Any) -> str:
    """A figure's cell content: the value, its interval (or why there is none) on a line below."""
    if not isinstance(figure, dict):  # a count
        return escape(figure if figure is not None else "")
    value = figure.get("value")
    if not is_finite(value):
        return f"undefined<span class='ci'>{escape(figure.get('reason', ''))}</span>"
    low, high = figure.get("ci_low"), figure.get("ci_high")
    below = f"[{low:.3f}, {high:.3f}]" if is_finite(low) and is_finite(high) else \
        f"no interval: {figure.get('reason', '')}"
    return f"{value:.3f}<span class='ci'>{escape(below)}</span>"


def _figure_table(dimensions: dict[str, Any], rows: tuple[str, ...], labels: dict[str, str]) -> str:
    """One row per figure (its label saying what it is), one column per dimension."""
    names = list(dimensions)
    head = "<tr><th>figure</th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    body = []
    for key in rows:
        cells = [f"<td class='figure'>{escape(labels.get(key, key))}</td>"]
        for name in names:
            figure = dimensions[name].get(key)
            css = "n" if not isinstance(figure, dict) or is_finite(figure.get("value")) else "undefined"
            cells.append(f"<td class='{css}' data-label='{escape(name)}'>{_cell(figure)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"
