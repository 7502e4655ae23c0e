"""Plots of a sub-track's leaderboard for the overview paper, each as PNG and SVG.

- ``domain_heatmap``: the ranking figure of every ranked system (rows, in rank order) in every
  domain (columns);
- ``depth_curves`` (Track 2): the ranking figure per turn-depth group T1..T5+, one line per
  system;
- ``ndcg_vs_tc`` (Track 1): nDCG@10 against temporal coverage TC@10, one point per system;
- ``judge_dimensions`` (2b, 2c, when the judge ran): the five judge dimensions and their mean
  per system.

A plot that does not apply is not drawn; ``write_plots`` returns why, and the leaderboard files
say it. Drawing goes through matplotlib's Agg canvas on a ``Figure`` of its own (no pyplot, no
global backend switch, nothing shown), and the files are reproducible byte for byte: the SVG's
ids come from a fixed ``svg.hashsalt``, its text is drawn as paths, and neither file records a
date or the matplotlib version.

matplotlib is an organizers' dependency: the scoring program never imports this module, and
the Codabench bundle does not vendor it (``reteco.codabench.bundle.vendor.EXCLUDED``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, KEYS, SUBTRACKS

PLOTS_FOLDER = "plots"
FORMATS = ("png", "svg")
PLOTS = ("domain_heatmap", "depth_curves", "ndcg_vs_tc", "judge_dimensions")
DPI = 150
_RC = {
    "svg.hashsalt": "reteco-leaderboard",  # the SVG's element ids, otherwise random per run
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",  # shipped with matplotlib: the same glyphs on every machine
    "font.size": 9,
}
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
_LIMITS = (-0.03, 1.03)  # figures in 0..1, with room for the markers at either end
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def write_plots(board: dict, folder: Path) -> dict[str, dict]:
    """Draw every plot that applies into ``folder/plots``; return, per plot, ``{"files": [paths
    relative to folder]}`` or ``{"absent": reason}``. Files of a plot that no longer applies
    are removed, so the folder never shows a stale one."""
    import matplotlib

    target = Path(folder) / PLOTS_FOLDER
    result: dict[str, dict] = {}
    with matplotlib.rc_context(_RC):
        for name in PLOTS:
            figure, absent = _DRAW[name](board)
            files = [target / f"{name}.{fmt}" for fmt in FORMATS]
            if figure is None:
                for path in files:
                    path.unlink(missing_ok=True)
                result[name] = {"absent": absent}
                continue
            target.mkdir(parents=True, exist_ok=True)
            for fmt, path in zip(FORMATS, files):
                figure.savefig(path, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
            result[name] = {"files": [f"{PLOTS_FOLDER}/{p.name}" for p in files]}
    return result


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _colour(i: int, n: int):
    """Distinct colours: tab10/tab20 while they last, then evenly along viridis (with the markers
    cycling, no two of 50 lines look alike)."""
    from matplotlib import colormaps

    if n <= 10:
        return colormaps["tab10"](i)
    if n <= 20:
        return colormaps["tab20"](i)
    return colormaps["viridis"](i / (n - 1))


def _label(system: dict) -> str:
    return f"{system['rank']}. {system['name']}" if "rank" in system else system["name"]


def _heatmap(rows: list[str], columns: list[str], values: np.ndarray, title: str, colour_label: str):
    """Rows x columns of figures in 0..1, each cell written in it; NaN (no figure) grey, '-'."""
    from matplotlib import colormaps

    figure = _figure(2.4 + 0.8 * len(columns), 1.2 + 0.32 * len(rows))
    axes = figure.add_subplot()
    cmap = colormaps["viridis"].with_extremes(bad="#d9d9d9")
    image = axes.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(len(columns)), labels=columns, rotation=30, ha="right")
    axes.set_yticks(range(len(rows)), labels=rows)
    for (i, j), value in np.ndenumerate(values):
        text = "-" if np.isnan(value) else f"{value:.2f}"
        colour = "black" if np.isnan(value) or value > 0.6 else "white"
        axes.text(j, i, text, ha="center", va="center", fontsize=7, color=colour)
    axes.set_title(title)
    figure.colorbar(image, ax=axes, label=colour_label, shrink=0.8)
    return figure


def _title(board: dict, key: str) -> str:
    return KEYS[key].title if key in KEYS else key


def _domain_heatmap(board: dict):
    key = board["ranked_by"]
    if key is None:
        return None, f"no ranking figure: {board['unranked_reason']}"
    if not board["domains"]:
        return None, "the reference has no domain"
    systems = board["systems"]
    values = np.array([[s["per_domain"].get(d, {}).get(key, np.nan) for d in board["domains"]] for s in systems])
    return _heatmap([_label(s) for s in systems], board["domains"], values,
                    f"{board['subtrack']}: {_title(board, key)} per domain", _title(board, key)), None


def _depth_curves(board: dict):
    key = board["ranked_by"]
    if SUBTRACKS[board["subtrack"]].track != 2:
        return None, "turn depth is a Track 2 breakdown (Track 1 has queries, not conversations)"
    if key is None:
        return None, f"no ranking figure: {board['unranked_reason']}"
    groups = board["depth_groups"]
    if not groups:
        return None, "no reference turn has a depth"
    figure = _figure(6.4, 3.8)
    axes = figure.add_subplot()
    systems = board["systems"]
    for i, system in enumerate(systems):
        values = [system["per_depth"].get(g, {}).get(key, np.nan) for g in groups]
        axes.plot(range(len(groups)), values, marker=_MARKERS[i % len(_MARKERS)], color=_colour(i, len(systems)),
                  linewidth=1.2, markersize=3.5, label=_label(system))
    axes.set_xticks(range(len(groups)), labels=groups)
    axes.set_xlabel("turn depth")
    axes.set_ylabel(_title(board, key))
    axes.set_ylim(*_LIMITS)
    axes.grid(alpha=0.3)
    axes.set_title(f"{board['subtrack']}: {_title(board, key)} by turn depth")
    axes.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return figure, None


def _ndcg_vs_tc(board: dict):
    if not SUBTRACKS[board["subtrack"]].temporal:
        return None, "temporal coverage TC@10 is a Track 1 diagnostic"
    systems = [s for s in board["systems"] if "tc_10" in s and "ndcg_10" in s]
    if not systems:
        return None, f"no ranked system has TC@10 ({KEYS['tc_10'].absent_when})"
    figure = _figure(5.6, 4.2)
    axes = figure.add_subplot()
    x = [s["tc_10"] for s in systems]
    y = [s["ndcg_10"] for s in systems]
    axes.scatter(x, y, s=18, zorder=3)
    labels: dict[tuple[float, float], list[str]] = {}  # systems on the same point share one label
    for system, xi, yi in zip(systems, x, y):
        labels.setdefault((xi, yi), []).append(_label(system))
    for (xi, yi), names in labels.items():
        # Labels right of the point, or left of it near the right edge, so none leaves the figure.
        right = xi < 0.75
        axes.annotate(", ".join(names), (xi, yi), xytext=(4 if right else -4, 3), textcoords="offset points",
                      fontsize=6, ha="left" if right else "right")
    axes.set_xlim(*_LIMITS)
    axes.set_ylim(*_LIMITS)
    axes.set_xlabel(KEYS["tc_10"].title)
    axes.set_ylabel(KEYS["ndcg_10"].title)
    axes.grid(alpha=0.3)
    axes.set_title(f"{board['subtrack']}: nDCG@10 against temporal coverage")
    return figure, None


def _judge_dimensions(board: dict):
    if not SUBTRACKS[board["subtrack"]].judged:
        return None, "the LLM judge scores only the answers of 2b and 2c"
    keys = [*DIMENSIONS, JUDGE_MEAN]
    systems = [s for s in board["systems"] + board["unranked"] if any(k in s for k in keys)]
    if not systems:
        reasons = sorted({s.get("absent", {}).get(JUDGE_MEAN, "") for s in board["systems"] + board["unranked"]} - {""})
        return None, "no system has judge figures" + (f": {'; '.join(reasons)}" if reasons else "")
    values = np.array([[s.get(k, np.nan) for k in keys] for s in systems])
    return _heatmap([_label(s) for s in systems], [_title(board, k) for k in keys], values,
                    f"{board['subtrack']}: judge dimensions, normalized (s - 1) / 4", "judge figure (0-1)"), None


_DRAW = {
    "domain_heatmap": _domain_heatmap,
    "depth_curves": _depth_curves,
    "ndcg_vs_tc": _ndcg_vs_tc,
    "judge_dimensions": _judge_dimensions,
}
