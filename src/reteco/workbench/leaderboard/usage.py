"""What the judge's verdicts cost, in the leaderboard's CSV and HTML (issue 20): per submission,
per team and for the phase, the calls, input (prompt) tokens, cached input tokens and output
(completion) tokens the server reported, and the money at the judge config's prices.

Each system row of a judged sub-track carries ``judge_usage``: the ``usage_of_verdicts`` of its
details.json (``reteco.llm.usage.TokenUsage.as_dict``: each distinct verdict's calls once). A
team's and the phase's figures are sums over their submissions; each submission is judged on
its own, so a verdict two submissions share (the same answer to the same turn) counts in both,
as each run's details.json says. Money is a sum only when every submission has one: without
prices in the judge config (``price_per_million``) the tables give tokens only, never a made-up
price. A call whose usage the cache did not record (rows of an older reteco) is counted in
``calls_usage_not_recorded``; a submission without the figure (judge not run, details.json of an
older reteco) is "not recorded". The LaTeX tables are unchanged (``--latex-columns`` chooses
theirs).
"""

from __future__ import annotations

from reteco.llm.usage import this_run_line
from reteco.outputs.charts import escape
from reteco.subtracks import SUBTRACKS

#: The figures of a usage record, in the tables' order.
USAGE_COLUMNS = ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "calls_usage_not_recorded",
                 "money_usd")
TITLES = {"calls": "Judge calls", "prompt_tokens": "Input tokens", "cached_tokens": "Cached input tokens",
          "completion_tokens": "Output tokens", "calls_usage_not_recorded": "Calls, usage not recorded",
          "money_usd": "Money (USD)"}
NOT_RECORDED = "not recorded"
# The CSV's columns: judge_<figure>, beside the scores.
CSV_COLUMNS = tuple(f"judge_{c}" for c in USAGE_COLUMNS)


def shows_usage(board: dict) -> bool:
    """Whether the board's sub-track is judged, so its tables give the judge's usage."""
    return SUBTRACKS[board["subtrack"]].judged


def summed(usages: list[dict | None]) -> dict | None:
    """The sum of usage records; None when none is recorded. ``money_usd`` None unless every
    record has one; ``submissions_not_recorded`` counts the records that are absent."""
    recorded = [u for u in usages if u]
    if not recorded:
        return None
    out = {c: sum(u.get(c) or 0 for u in recorded) for c in USAGE_COLUMNS if c != "money_usd"}
    priced = all(u.get("money_usd") is not None for u in recorded)
    out["money_usd"] = round(sum(u["money_usd"] for u in recorded), 6) if priced else None
    out["submissions_not_recorded"] = len(usages) - len(recorded)
    return out


def run_usage(outcomes: list[dict]) -> dict:
    """What this command's judge runs sent and paid, summed over the submissions scored now:
    ``http_requests`` and the server's usage of the answered ones (``usage``: a usage record,
    ``money_usd`` None without prices). Unlike the per-submission attribution, a verdict is paid
    once, by the run that asked for it; a rerun from the cache is 0 requests and $0."""
    runs = [o.get("judge_run") for o in outcomes if o and o.get("judge_run")]
    requests = sum(r["http_requests"] for r in runs)
    usage = summed([r.get("usage") for r in runs]) or {}
    usage.pop("submissions_not_recorded", None)
    return {"http_requests": requests, "usage": usage or None}


def run_text(run: dict) -> str:
    """``run_usage``'s line: "this run: N requests, T tokens (cached C), $X"."""
    return this_run_line(run["http_requests"], run["usage"])


def _scored(board: dict) -> list[dict]:
    return [*board["systems"], *board["unranked"]]


def per_team(board: dict) -> list[tuple[str, dict | None]]:
    """(team, its submissions' summed usage), teams in the order of their first row."""
    teams: dict[str, list[dict | None]] = {}
    for system in _scored(board):
        teams.setdefault(system["team"], []).append(system.get("judge_usage"))
    return [(team, summed(usages)) for team, usages in teams.items()]


def phase_usage(board: dict) -> dict | None:
    """Every scored submission's usage, summed."""
    return summed([s.get("judge_usage") for s in _scored(board)])


def csv_cells(system: dict) -> list:
    """A system's usage cells (empty: not recorded, or no price)."""
    usage = system.get("judge_usage") or {}
    return ["" if usage.get(c) is None else usage[c] for c in USAGE_COLUMNS]


def _cells(usage: dict | None) -> str:
    if usage is None:
        return f"<td class='absent' colspan='{len(USAGE_COLUMNS)}'>{NOT_RECORDED}</td>"
    cells = []
    for c in USAGE_COLUMNS:
        value = usage.get(c)
        if c == "money_usd":
            cells.append("<td class='absent'>no prices</td>" if value is None else f"<td class='n'>${value:,.2f}</td>")
        else:
            cells.append(f"<td class='n'>{value:,}</td>")
    return "".join(cells)


def _missing(usage: dict | None) -> str:
    n = (usage or {}).get("submissions_not_recorded")
    return f" ({n} submission{'s' if n > 1 else ''} {NOT_RECORDED})" if n else ""


def render_html(board: dict) -> str:
    """The page's section: one row per submission, per team and for the phase."""
    if not shows_usage(board) or not _scored(board):
        return ""
    e = escape
    head = "".join(f"<th>{e(TITLES[c])}</th>" for c in USAGE_COLUMNS)
    run = board.get("judge_this_run")
    paid = f"<p>Judge, {e(run_text(run))} (the requests this leaderboard's run sent).</p>" if run else ""
    out = [f"<h2>What the judge cost</h2>{paid}<p class='small'>Per-team attribution, not the spend: tokens as the "
           "judge's server reported them; money at the judge config's prices (none: tokens only). A submission's "
           "figures count each of its verdicts once, whichever run paid for it; a verdict several submissions share "
           "counts in each; a team's and the phase's are sums over submissions.</p><div class='scroll'><table>"
           f"<tr><th class='pin pin1'>Submission</th>{head}</tr>"]
    for system in _scored(board):
        out.append(f"<tr><td class='pin pin1'>{e(system['name'])}</td>{_cells(system.get('judge_usage'))}</tr>")
    for team, usage in per_team(board):
        out.append(f"<tr><td class='pin pin1'>team {e(team)}{_missing(usage)}</td>{_cells(usage)}</tr>")
    phase = phase_usage(board)
    out.append(f"<tr><th class='pin pin1'>phase{_missing(phase)}</th>{_cells(phase)}</tr></table></div>")
    return "".join(out)
