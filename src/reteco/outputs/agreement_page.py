"""``agreement.html``: the judge-human agreement of ``reteco agreement`` as one self-contained page.

Inline CSS and one inline SVG plot (per dimension: quadratic-weighted kappa, ordinal alpha of the
humans and with the judge, Spearman, each with its 95% bootstrap interval on a -1..1 axis, and
the bias, judge minus humans on the 1-5 scale, on its own axis), then the tables of every
figure with its interval (or the reason it is undefined), the human ceiling, the system-level
correlation and the method. No script, no external resource; every text is escaped.
"""

from __future__ import annotations

import math
from typing import Any

from reteco.outputs.charts import escape, is_finite
from reteco.subtracks import DIMENSIONS

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}"
    "td.n{text-align:right;font-family:monospace}.undefined{color:#a15c00}svg text{font-size:11px}"
)

#: The plotted figures: (key in a dimension's block, panel title, axis limit or None for bias).
PLOTTED = (
    ("kappa_quadratic", "kappa (quadratic)", 1.0),
    ("alpha_ordinal_humans", "alpha, humans", 1.0),
    ("alpha_ordinal_with_judge", "alpha, with judge", 1.0),
    ("spearman", "Spearman", 1.0),
    ("bias", "bias (judge - humans)", None),
)
TABLE_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "alpha_ordinal_humans",
                 "alpha_ordinal_with_judge", "bias")
CEILING_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "abs_rater_bias")

_LABEL_W, _PANEL_W, _PAD, _ROW_H, _TOP = 110, 150, 12, 26, 40


def render(result: dict[str, Any]) -> str:
    """The page for an ``reteco.metrics.agreement.agreement`` result."""
    method = result.get("method", {})
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>RETECO judge-human agreement</title>",
        f"<style>{_STYLE}</style></head><body><h1>Judge-human agreement</h1>",
        f"<p>Judge <b>{escape(method.get('judge', '?'))}</b> ({escape(method.get('judge_file', '?'))}) against the human "
        f"ratings of {escape(method.get('human_file', '?'))}. {escape(method.get('interval', ''))}; "
        f"{escape(method.get('resamples', '?'))} resamples, seed {escape(method.get('seed', '?'))}.</p>",
        "<h2>Per dimension, with 95% intervals</h2>",
        plot(result.get("dimensions", {})),
        "<h2>Figures</h2>",
        _figure_table(result.get("dimensions", {}), TABLE_FIGURES,
                      ("n_items", "n_conversations", "n_human_ratings", "n_human_raters")),
    ]
    ceiling = result.get("ceiling", {})
    if ceiling:
        out += [f"<h2>Human ceiling</h2><p>{escape(ceiling.get('definition', ''))}</p>",
                _figure_table(ceiling.get("dimensions", {}), CEILING_FIGURES, ("n_pairs", "n_items", "n_raters"))]
    system = result.get("system_level")
    if system:
        out.append(f"<h2>System level</h2><p>{escape(system.get('definition', ''))}</p>")
        out.append(_figure_table(system.get("dimensions", {}), ("kendall_tau_b",), ("n_systems",)))
    elif method.get("system_level"):
        out.append(f"<p>System level: {escape(method['system_level'])}.</p>")
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in method.items())
    out.append(f"<h2>Method</h2><table><tr><th>setting</th><th>value</th></tr>{rows}</table></body></html>")
    return "".join(out)


def plot(dimensions: dict[str, Any]) -> str:
    """The inline SVG: one row per dimension, one panel per figure of ``PLOTTED``."""
    names = [d for d in DIMENSIONS if d in dimensions] + [d for d in dimensions if d not in DIMENSIONS]
    bias_limit = _bias_limit(dimensions)
    width = _LABEL_W + _PANEL_W * len(PLOTTED)
    height = _TOP + _ROW_H * len(names) + 10
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"viewBox='0 0 {width} {height}' role='img' aria-label='agreement per dimension'>"]
    for k, (_, title, limit) in enumerate(PLOTTED):
        limit = limit if limit is not None else bias_limit
        x0 = _LABEL_W + k * _PANEL_W
        parts.append(f"<text x='{x0 + _PANEL_W / 2:.1f}' y='12' text-anchor='middle'>{escape(title)}</text>")
        for tick in (-limit, 0.0, limit):
            x = _x(tick, limit, x0)
            parts.append(f"<text x='{x:.1f}' y='{_TOP - 12}' text-anchor='middle'>{_tick(tick)}</text>")
        zero = _x(0.0, limit, x0)
        parts.append(f"<line x1='{zero:.1f}' y1='{_TOP - 6}' x2='{zero:.1f}' y2='{height - 6}' stroke='#bbb' "
                     "stroke-dasharray='3,3'/>")
        parts.append(f"<line x1='{x0 + _PAD}' y1='{_TOP - 6}' x2='{x0 + _PANEL_W - _PAD}' y2='{_TOP - 6}' stroke='#888'/>")
    for row, name in enumerate(names):
        y = _TOP + _ROW_H * row + _ROW_H / 2
        parts.append(f"<text x='4' y='{y + 4:.1f}'>{escape(name)}</text>")
        for k, (key, _, limit) in enumerate(PLOTTED):
            limit = limit if limit is not None else bias_limit
            x0 = _LABEL_W + k * _PANEL_W
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


def _figure_table(dimensions: dict[str, Any], figures: tuple[str, ...], counts: tuple[str, ...]) -> str:
    head = "".join(f"<th>{escape(n)}</th>" for n in ("dimension", *counts, *figures))
    rows = []
    for name, block in dimensions.items():
        cells = [f"<td>{escape(name)}</td>"]
        cells += [f"<td class='n'>{escape(block.get(c, ''))}</td>" for c in counts]
        for f in figures:
            figure = block.get(f) or {}
            css = "n" if is_finite(figure.get("value")) else "undefined"
            cells.append(f"<td class='{css}'>{escape(_interval(figure))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"
