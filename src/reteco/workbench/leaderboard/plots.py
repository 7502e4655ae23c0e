"""Plots of a sub-track's leaderboard for the overview paper, each as PNG and SVG.

- ``forest``: the ranking figure of every ranked system with its bootstrap interval, in rank
  order, its rank interval and significance group beside it (the top ``FOREST_ROWS`` when there
  are more);
- ``domain_heatmap``: the ranking figure of the ranked systems (rows, in rank order) in every
  domain (columns);
- ``depth_curves`` (Track 2): the ranking figure per turn-depth group T1..T5+, one line per
  system (the top ``HIGHLIGHTED`` named in colour, the others drawn thin and grey);
- ``ndcg_vs_tc`` (Track 1): nDCG@10 against temporal coverage TC@10, one point per system
  (the top ``HIGHLIGHTED`` labelled, labels moved apart so none overprints another);
- ``judge_dimensions`` (2b, 2c, when the judge ran): the five judge dimensions and their mean
  per system;
- ``official_vs_augmented`` (``reteco leaderboard --round``): the official nDCG@10 against the
  nDCG@10 with the relevance round's labels added to the qrels, one point per system, with the
  diagonal (``reteco.workbench.leaderboard.round_report``).

Readable at 9 and at 180 systems: a heat map shows at most ``HEATMAP_ROWS`` rows (the best
systems; the title says how many of how many, the CSV has every figure), a legend at most
``HIGHLIGHTED`` entries, and no label is drawn over another.

A plot that does not apply is not drawn; ``write_plots`` returns why, and the leaderboard files
say it. Drawing goes through matplotlib's Agg canvas on a ``Figure`` of its own (no pyplot, no
global backend switch, nothing shown), and the files are reproducible byte for byte: the SVG's
ids come from a fixed ``svg.hashsalt``, its text is drawn as paths, and neither file records a
date or the matplotlib version.

matplotlib is an organizers' dependency: the scoring program never imports this module, and
the Codabench bundle does not vendor it (``reteco.workbench.codabench.bundle.vendor.EXCLUDED``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, KEYS, SUBTRACKS

PLOTS_FOLDER = "plots"
FORMATS = ("png", "svg")
PLOTS = ("forest", "domain_heatmap", "depth_curves", "ndcg_vs_tc", "judge_dimensions", "official_vs_augmented")
FOREST_ROWS = 60  # rows of the forest plot at most (0.13 in each: 8 in tall, 6.5 pt labels)
HEATMAP_ROWS = 40  # rows of a heat map at most (a cell stays 0.32 in tall with its figure readable)
HIGHLIGHTED = 10  # systems named (legend, labels) in the curves and the scatter
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


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label(system: dict) -> str:
    """``rank. team/run`` cut to 32 characters (a long label would squeeze the plot)."""
    return _short(f"{system['rank']}. {system['name']}" if "rank" in system else system["name"], 32)


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


def _capped(systems: list[dict], limit: int) -> tuple[list[dict], str]:
    """The first ``limit`` systems, and the words for the title when some were left out."""
    if len(systems) <= limit:
        return systems, ""
    return systems[:limit], f" (top {limit} of {len(systems)})"


def _domain_heatmap(board: dict):
    key = board["ranked_by"]
    if key is None:
        return None, f"no ranking figure: {board['unranked_reason']}"
    if not board["domains"]:
        return None, "the reference has no domain"
    systems, cut = _capped(board["systems"], HEATMAP_ROWS)
    values = np.array([[s["per_domain"].get(d, {}).get(key, np.nan) for d in board["domains"]] for s in systems])
    return _heatmap([_label(s) for s in systems], board["domains"], values,
                    f"{board['subtrack']}: {_title(board, key)} per domain{cut}", _title(board, key)), None


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
    named = min(len(systems), HIGHLIGHTED)
    # The others first, thin and grey, under the named ones; one legend entry for all of them.
    for i, system in enumerate(systems[named:]):
        values = [system["per_depth"].get(g, {}).get(key, np.nan) for g in groups]
        axes.plot(range(len(groups)), values, color="#b0b0b0", linewidth=0.6, alpha=0.6, zorder=1,
                  label=f"ranks {systems[named]['rank']}-{systems[-1]['rank']} ({len(systems) - named} systems)"
                  if i == 0 else None)
    for i, system in enumerate(systems[:named]):
        values = [system["per_depth"].get(g, {}).get(key, np.nan) for g in groups]
        axes.plot(range(len(groups)), values, marker=_MARKERS[i % len(_MARKERS)], color=_colour(i, named),
                  linewidth=1.2, markersize=3.5, label=_label(system), zorder=2)
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
    many = len(systems) > HIGHLIGHTED
    axes.scatter(x, y, s=8 if many else 18, alpha=0.6 if many else 1.0, zorder=3)
    labels: dict[tuple[float, float], list[str]] = {}  # systems on the same point share one label
    for system, xi, yi in zip(systems[:HIGHLIGHTED], x, y):
        labels.setdefault((xi, yi), []).append(_label(system))
    _place_labels(axes, labels)
    if many:
        axes.scatter(x[:HIGHLIGHTED], y[:HIGHLIGHTED], s=18, color="#b03a2e", zorder=4,
                     label=f"top {HIGHLIGHTED} (labelled)")
        axes.legend(fontsize=6, loc="lower right")
    axes.set_xlim(*_LIMITS)
    axes.set_ylim(*_LIMITS)
    axes.set_xlabel(KEYS["tc_10"].title)
    axes.set_ylabel(KEYS["ndcg_10"].title)
    axes.grid(alpha=0.3)
    axes.set_title(f"{board['subtrack']}: nDCG@10 against temporal coverage")
    return figure, None


def _place_labels(axes, labels: dict[tuple[float, float], list[str]]) -> None:
    """One label per point, right of it (left near the right edge), stacked downwards when it
    would overlap a label already placed: labels are moved in steps of one text line (in data
    units, 0.028 of the 0..1 axis at 6 pt on a 4.2 in figure) until their boxes are apart."""
    line = 0.028
    placed: list[tuple[float, float, float, float]] = []  # x0, x1, y0, y1 of each label, data units
    for (xi, yi), names in sorted(labels.items(), key=lambda item: -item[0][1]):
        text = ", ".join(names)
        width = 0.0105 * len(text)  # a 6 pt character is about 1% of the 0..1 axis on a 5.6 in figure
        right = xi < 0.75
        x0, x1 = (xi + 0.01, xi + 0.01 + width) if right else (xi - 0.01 - width, xi - 0.01)
        y = yi
        while any(x0 < b1 and b0 < x1 and abs(y - by) < line for b0, b1, by, _ in placed):
            y -= line
        placed.append((x0, x1, y, 0.0))
        axes.annotate(text, (xi, yi), xytext=(x0 if right else x1, y), textcoords="data", fontsize=6,
                      ha="left" if right else "right", va="center",
                      arrowprops={"arrowstyle": "-", "color": "#888888", "linewidth": 0.4} if y != yi else None)


def _forest(board: dict):
    key = board["ranked_by"]
    if key is None:
        return None, f"no ranking figure: {board['unranked_reason']}"
    tested = [s for s in board["systems"] if "ci_low" in s]
    if not tested:
        return None, "no ranked system has an interval (no per-unit figures)"
    systems, cut = _capped(tested, FOREST_ROWS)
    figure = _figure(6.4, 1.0 + 0.13 * len(systems))
    axes = figure.add_subplot()
    rows = np.arange(len(systems))
    values = np.array([s[key] for s in systems])
    low = values - np.array([s["ci_low"] for s in systems])
    high = np.array([s["ci_high"] for s in systems]) - values
    axes.errorbar(values, rows, xerr=[low, high], fmt="o", markersize=3, color="#3b6ea5", ecolor="#3b6ea5",
                  elinewidth=1.0, capsize=1.5)
    size = 6.5 if len(systems) > 20 else 8
    axes.set_yticks(rows, labels=[_label(s) for s in systems], fontsize=size)
    # Right of the axes, on each system's row: its rank interval and group letters.
    for row, s in zip(rows, systems):
        rank = f"{s['rank_low']}-{s['rank_high']}" if "rank_low" in s else ""
        axes.annotate(f"{rank}  {s.get('letters', '')}", (1.02, row), xycoords=("axes fraction", "data"),
                      fontsize=size, va="center", annotation_clip=False)
    axes.annotate("rank CI  group", (1.02, 1.0), xycoords="axes fraction", fontsize=size, va="bottom",
                  fontweight="bold", annotation_clip=False)
    axes.invert_yaxis()
    lowest = min(s["ci_low"] for s in systems)
    highest = max(s["ci_high"] for s in systems)
    margin = max(0.02, 0.05 * (highest - lowest))
    axes.set_xlim(max(-0.03, lowest - margin), min(1.03, highest + margin))
    axes.set_xlabel(f"{_title(board, key)}, {round(100 * board['method']['interval']['confidence'])}% "
                    "bootstrap interval")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(f"{board['subtrack']}: {_title(board, key)}{cut}", fontsize=9, loc="left")
    return figure, None


def _judge_dimensions(board: dict):
    if not SUBTRACKS[board["subtrack"]].judged:
        return None, "the LLM judge scores only the answers of 2b and 2c"
    keys = [*DIMENSIONS, JUDGE_MEAN]
    systems = [s for s in board["systems"] + board["unranked"] if any(k in s for k in keys)]
    if not systems:
        reasons = sorted({s.get("absent", {}).get(JUDGE_MEAN, "") for s in board["systems"] + board["unranked"]} - {""})
        return None, "no system has judge figures" + (f": {'; '.join(reasons)}" if reasons else "")
    systems, cut = _capped(systems, HEATMAP_ROWS)
    values = np.array([[s.get(k, np.nan) for k in keys] for s in systems])
    return _heatmap([_label(s) for s in systems], [_title(board, k) for k in keys], values,
                    f"{board['subtrack']}: judge dimensions, normalized (s - 1) / 4{cut}", "judge figure (0-1)"), None


def _official_vs_augmented(board: dict):
    rows = [r for r in (board.get("round") or {}).get("systems", []) if "ndcg_10_augmented" in r]
    if not rows:
        return None, "no relevance round (reteco leaderboard --round LABELS)"
    figure = _figure(5.6, 4.2)
    axes = figure.add_subplot()
    x = [r["official"] for r in rows]
    y = [r["ndcg_10_augmented"] for r in rows]
    many = len(rows) > HIGHLIGHTED
    axes.plot(_LIMITS, _LIMITS, color="#888888", linewidth=0.6, zorder=1)  # unchanged by the round
    axes.scatter(x, y, s=8 if many else 18, alpha=0.6 if many else 1.0, zorder=3)
    labels: dict[tuple[float, float], list[str]] = {}
    for row, xi, yi in zip(rows[:HIGHLIGHTED], x, y):  # rows are in official rank order
        labels.setdefault((xi, yi), []).append(_label(row))
    _place_labels(axes, labels)
    axes.set_xlim(*_LIMITS)
    axes.set_ylim(*_LIMITS)
    axes.set_xlabel(f"{KEYS['ndcg_10'].title} (official qrels)")
    axes.set_ylabel(f"{KEYS['ndcg_10'].title} (qrels + the round's labels)")
    axes.grid(alpha=0.3)
    axes.set_title(f"{board['subtrack']}: official against augmented nDCG@10")
    return figure, None


_DRAW = {
    "forest": _forest,
    "domain_heatmap": _domain_heatmap,
    "depth_curves": _depth_curves,
    "ndcg_vs_tc": _ndcg_vs_tc,
    "judge_dimensions": _judge_dimensions,
    "official_vs_augmented": _official_vs_augmented,
}
