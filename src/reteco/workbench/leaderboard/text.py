"""The words and numbers every leaderboard file shares (``reteco.workbench.leaderboard.tables``,
``reteco.workbench.leaderboard.latex``): keys and titles of a board, figures to fixed places,
intervals, the ranking sentence."""

from __future__ import annotations

DECIMALS = 4
SIGNIFICANCE_LEVEL = 0.05  # the level when a board's method does not state one (older boards)


def keys_of(board: dict) -> list[str]:
    """The board's keys, in the sub-track's order."""
    return [k["key"] for k in board["keys"]]


def titles_of(board: dict) -> dict[str, str]:
    """Key -> column title."""
    return {k["key"]: k["title"] for k in board["keys"]}


def alpha_of(board: dict) -> float:
    """The significance level the board's pairs were judged at."""
    return board["method"].get("alpha", SIGNIFICANCE_LEVEL)


def fixed(value: float | None) -> str:
    """A figure to ``DECIMALS`` places (empty for None)."""
    return "" if value is None else f"{value:.{DECIMALS}f}"


def ranking_sentence(board: dict) -> str:
    """What the table is ranked by, in one sentence (or why it is not)."""
    if board["ranked_by"] is None:
        return f"Unranked: {board['unranked_reason']}."
    key = board["ranked_by"]
    official = "the official figure" if key == board["official"] else \
        f"the ranking figure of {board['subtrack']}, which has no official figure"
    return (f"Ranked by {titles_of(board)[key]} ({key}, {official}; {board['unit']}), best first. "
            f"Ties: {board['method'].get('ranking', {}).get('ties', 'shared rank')}.")


def confidence_percent(board: dict) -> int:
    """The intervals' confidence, in percent."""
    return round(100 * board["method"].get("interval", {}).get("confidence", 0.95))


def rank_interval_text(system: dict) -> str:
    """``low-high`` of the rank interval (one number when they agree; empty without one)."""
    if "rank_low" not in system:
        return ""
    low, high = system["rank_low"], system["rank_high"]
    return str(low) if low == high else f"{low}-{high}"


def interval_text(system: dict) -> str:
    """``[low, high]`` of the figure's interval to 3 places (empty without one)."""
    return f"[{system['ci_low']:.3f}, {system['ci_high']:.3f}]" if "ci_low" in system else ""
