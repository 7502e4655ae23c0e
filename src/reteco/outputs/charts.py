"""Inline SVG charts for the detailed results page: horizontal bars and a turn-depth curve.

Each chart is one ``<svg>`` element, self-contained (presentation attributes, no stylesheet, no
script, no external reference) and accessible: ``role="img"``, an ``aria-label`` that reads
every value, and a ``<title>``/``<desc>`` pair for tools that read those. Every value is also
drawn as text beside its bar or point, so the chart is read without measuring bar lengths.

All figures of the page are in 0..1 (retrieval measures, temporal diagnostics, normalized judge
dimensions, text metrics), so every axis is fixed at 0..1: two charts of the page compare by eye.
A figure that is undefined (None) gets no bar and the words ``missing_text`` instead, never 0.

The viewBox is narrow (360 user units) and the SVG scales with its box (``width:100%``, the
page caps it): at a phone's 390 px the 13-unit text is drawn at about 12 px.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Sequence

WIDTH = 360  # user units of every chart's viewBox: about a phone's width, so its text stays at 11-13 px
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif" font-size="13"'
BAR = "#3b6ea5"
MEAN = "#b03a2e"
GRID = "#d9dde2"
INK = "#1d232a"
MUTED = "#5b6672"
LABEL_CHARS = 22  # longer group labels are cut (the full label stays in the title and aria-label)


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value in 0..1 (None: undefined) and how many units it averages."""

    label: str
    value: float | None
    count: int | None = None


def number(value: float | None, missing: str = "—") -> str:
    """A figure as the page writes it: four decimals, ``missing`` for None or a non-finite value."""
    if not is_finite(value):
        return missing
    return f"{value:.4f}"


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    *,
    mean: float | None = None,
    mean_label: str = "overall",
    count_word: str = "",
    missing_text: str = "undefined",
) -> str:
    """Horizontal bars on a fixed 0..1 axis, value written at each bar's end.

    ``mean``: a dashed line across all bars (e.g. the overall mean over units, which is not the
    mean of the bars when groups differ in size), labelled ``mean_label`` and its value.
    ``count_word``: the unit of ``Bar.count`` ("queries", "turns"), written under each label.
    """
    row = 34 if count_word else 26
    top = 22 if mean is not None else 6
    # The label column fits the longest label (under 8 units a character at 13 units).
    longest = max((len(_cut(b.label)) for b in bars), default=4)
    left, right = min(190, max(56, round(7.9 * longest) + 12)), 58  # right: the value after a full bar
    span = WIDTH - left - right
    height = top + row * len(bars) + 22
    parts = [_grid(left, span, top, top + row * len(bars))]
    values = []  # drawn last, over the mean line, each on a white halo
    described = []
    for i, bar in enumerate(bars):
        y = top + i * row
        parts.append(_text(left - 8, y + 15, _cut(bar.label), anchor="end", title=bar.label))
        if count_word and bar.count is not None:
            parts.append(_text(left - 8, y + 28, f"{bar.count} {count_word}", anchor="end", fill=MUTED, size=11))
        if is_finite(bar.value):
            length = span * _clamped(bar.value)
            parts.append(f'<rect x="{left}" y="{y + 4}" width="{length:.1f}" height="16" fill="{BAR}" rx="2"/>')
            values.append(_text(left + length + 4, y + 16, number(bar.value), halo=True))
        else:
            values.append(_text(left + 4, y + 16, missing_text, fill=MUTED, halo=True))
        count = f" ({bar.count} {count_word})" if count_word and bar.count is not None else ""
        described.append(f"{bar.label} {number(bar.value, missing_text)}{count}")
    if is_finite(mean):
        x = left + span * _clamped(mean)
        bottom = top + row * len(bars)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="{MEAN}" stroke-width="2" '
            'stroke-dasharray="4 3"/>'
        )
        text = f"{mean_label} {number(mean)}"
        # After the line, or before it when only so it fits (under 8 units a character).
        anchor = "end" if x + 3 + 7.8 * len(text) > WIDTH - 2 else "start"
        parts.append(_text(x + (-3 if anchor == "end" else 3), 13, text, anchor=anchor, fill=MEAN))
        described.append(f"{mean_label} {number(mean)}")
    parts += values
    return _svg(title, "; ".join(described), height, parts)


@dataclass(frozen=True)
class Point:
    """One point of a curve: its x label (T1 .. T5+), value in 0..1 (None: undefined), unit count."""

    label: str
    value: float | None
    count: int | None = None


def depth_curve(
    title: str,
    points: Sequence[Point],
    *,
    mean: float | None = None,
    mean_label: str = "overall",
    count_word: str = "turns",
    missing_text: str = "undefined",
) -> str:
    """A curve over ordered groups (turn depths T1..T5+) on a fixed 0..1 axis.

    Each point carries its value above it and its unit count under its x label; the line is
    broken at an undefined point rather than drawn through it. ``mean``: a dashed reference line.
    """
    left, right, top, plot = 34, 16, 22, 150
    bottom = top + plot
    height = bottom + 40
    span = WIDTH - left - right
    step = span / max(len(points), 1)
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = bottom - plot * tick
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(_text(left - 4, y + 4, f"{tick:g}", anchor="end", fill=MUTED, size=11))
    mean_y = bottom - plot * _clamped(mean) if is_finite(mean) else None
    if mean_y is not None:
        y = mean_y
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}" stroke="{MEAN}" stroke-width="1.5" '
            'stroke-dasharray="4 3"/>'
        )
        parts.append(_text(WIDTH - right, top - 8, f"{mean_label} {number(mean)}", anchor="end", fill=MEAN))
    xy = []
    described = []
    for i, point in enumerate(points):
        x = left + step * (i + 0.5)
        parts.append(_text(x, bottom + 16, point.label, anchor="middle"))
        if point.count is not None:
            parts.append(_text(x, bottom + 31, f"{point.count} {count_word}", anchor="middle", fill=MUTED, size=11))
        count = f" ({point.count} {count_word})" if point.count is not None else ""
        described.append(f"{point.label} {number(point.value, missing_text)}{count}")
        xy.append(None if not is_finite(point.value) else (x, bottom - plot * _clamped(point.value)))
    for segment in _segments(xy):
        if len(segment) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in segment)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{BAR}" stroke-width="2.5"/>')
    for i, point in enumerate(points):
        x = left + step * (i + 0.5)
        if xy[i] is None:
            parts.append(_text(x, bottom - 6, missing_text, anchor="middle", fill=MUTED, size=11))
            continue
        y = xy[i][1]
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{BAR}"/>')
        # The value goes above its point, or below it when the point is at the top of the axis or
        # the text would sit on the mean line.
        label_y = y - 9
        if label_y < top - 4 or (mean_y is not None and abs(label_y - 4 - mean_y) < 8 and y + 18 < bottom):
            label_y = y + 18
        parts.append(_text(x, label_y, number(point.value), anchor="middle", halo=True))
    if is_finite(mean):
        described.append(f"{mean_label} {number(mean)}")
    return _svg(title, "; ".join(described), height, parts)


def _svg(title: str, values: str, height: float, parts: list[str]) -> str:
    label = f"{title}: {values}" if values else title
    return (
        f'<svg role="img" viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" '
        f'height="{height:.0f}" aria-label="{escape(label)}" {FONT} fill="{INK}">'
        f"<title>{escape(title)}</title><desc>{escape(values)}</desc>" + "".join(parts) + "</svg>"
    )


def _grid(left: float, span: float, top: float, bottom: float) -> str:
    out = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + span * tick
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{GRID}"/>')
        if tick in (0.0, 0.5, 1.0):
            out.append(_text(x, bottom + 15, f"{tick:g}", anchor="middle", fill=MUTED, size=11))
    return "".join(out)


def _text(x: float, y: float, text: str, *, anchor: str = "start", fill: str | None = None, size: int | None = None,
          title: str | None = None, halo: bool = False) -> str:
    attributes = f'x="{x:.1f}" y="{y:.1f}"'
    if halo:  # a white outline under the glyphs, so a line crossing the text does not hide it
        attributes += ' paint-order="stroke" stroke="#fff" stroke-width="3" stroke-linejoin="round"'
    if anchor != "start":
        attributes += f' text-anchor="{anchor}"'
    if fill:
        attributes += f' fill="{fill}"'
    if size:
        attributes += f' font-size="{size}"'
    tip = f"<title>{escape(title)}</title>" if title is not None and title != text else ""
    return f"<text {attributes}>{tip}{escape(text)}</text>"


def _segments(xy: list[tuple[float, float] | None]) -> list[list[tuple[float, float]]]:
    """Runs of consecutive defined points (a curve is not drawn through an undefined one)."""
    out: list[list[tuple[float, float]]] = [[]]
    for p in xy:
        if p is None:
            out.append([])
        else:
            out[-1].append(p)
    return [s for s in out if s]


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def is_finite(value) -> bool:
    """A real number (not a bool), finite: the test every figure of the outputs passes before it is drawn."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _clamped(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)


def escape(value) -> str:
    """Any value as HTML text or an attribute value: every output page escapes through this."""
    return html.escape(str(value), quote=True)
