"""``detailed_results.html``: what Codabench shows under a submission (``enable_detailed_results``).

A self-contained page (no script, no external resource; every text escaped): the phase and
its per-topic policy, every leaderboard key with its value or the reason it is absent, the
warnings, the counts, the per-domain and turn-depth figures, and the per-topic figures only
when the phase allows them. Once the competition is published the page may be public, so it
holds nothing the participant did not submit beyond what the phase allows.
"""

from __future__ import annotations

import html
import math
from typing import Any

from reteco.subtracks import KEYS, SUBTRACKS

MAX_ROWS = 5000  # per-topic rows shown; the full list stays in details.json

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#f3f3f3}"
    "td.n{text-align:right;font-family:monospace}.absent{color:#a15c00}.error{color:#b00020}"
)


def render(
    *,
    subtrack: str | None,
    phase: dict,
    scores: dict[str, float] | None = None,
    details: dict | None = None,
    absent: dict[str, str] | None = None,
    messages: list[str] | None = None,
    failed: bool = False,
) -> str:
    """The page for a scored submission, or (``failed``) for one that could not be scored."""
    details = details or {}
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>RETECO detailed results</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>RETECO: {_e(SUBTRACKS[subtrack].name if subtrack in SUBTRACKS else subtrack or 'unknown sub-track')}</h1>",
        f"<p>Phase: <b>{_e(phase.get('name', phase.get('phase', 'unknown')))}</b> "
        f"({_e(phase.get('split', '?'))} split). "
        + (
            "Per-topic figures are shown below."
            if phase.get("per_topic")
            else "Per-topic figures are withheld in this phase: on hidden labels they would reveal them "
            "through repeated submissions."
        )
        + "</p>",
    ]
    if failed:
        out.append("<h2 class='error'>The submission could not be scored</h2><ul>")
        out += [f"<li class='error'>{_e(m)}</li>" for m in messages or []]
        out.append("</ul><p>Fix the errors above and submit again.</p></body></html>")
        return "".join(out)

    out.append("<h2>Leaderboard figures</h2><table><tr><th>key</th><th>column</th><th>value</th></tr>")
    own_keys = SUBTRACKS[subtrack].keys if subtrack in SUBTRACKS else ()
    for key in own_keys:
        if scores and key in scores:
            value = f"<td class='n'>{scores[key]:.4f}</td>"
        else:
            reason = (absent or {}).get(key) or "not computed"
            value = f"<td class='absent'>absent: {_e(reason)}</td>"
        out.append(f"<tr><td>{_e(key)}</td><td>{_e(KEYS[key].title if key in KEYS else key)}</td>{value}</tr>")
    extra = sorted(set(scores or {}) - set(own_keys))
    for key in extra:
        out.append(f"<tr><td>{_e(key)}</td><td>(not a column)</td><td class='n'>{scores[key]:.4f}</td></tr>")
    out.append("</table>")

    if messages:
        out.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{_e(m)}</li>" for m in messages) + "</ul>")
    if isinstance(details.get("counts"), dict):
        # One row per count: a single wide row overflows the page.
        counts = [{"count": name, "value": value} for name, value in details["counts"].items()]
        out.append("<h2>Counts</h2>" + _table(counts, ["count", "value"]))
    for name, title in (("per_domain", "Per domain"), ("per_depth", "Per turn depth")):
        groups = details.get(name)
        if isinstance(groups, dict) and groups:
            rows = [{"group": g, **v} if isinstance(v, dict) else {"group": g, "value": v} for g, v in groups.items()]
            out.append(f"<h2>{title}</h2>" + _table(rows, _columns(rows)))
    if phase.get("per_topic"):
        for name, title in (("per_unit", "Per query / turn"), ("per_step", "Per step")):
            rows = details.get(name)
            if isinstance(rows, list) and rows:
                shown = rows[:MAX_ROWS]
                note = f" (first {MAX_ROWS} of {len(rows)}; all in details.json)" if len(rows) > MAX_ROWS else ""
                out.append(f"<h2>{title}{note}</h2>" + _table(shown, _columns(shown)))
    scorer = details.get("scorer", {})
    reference = details.get("reference", {})
    out.append(
        f"<p><small>reteco {_e(scorer.get('version', '?'))}, reference {_e(reference.get('fingerprint', '?'))}"
        "</small></p></body></html>"
    )
    return "".join(out)


def _columns(rows: list[dict]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for key in row:
            if key not in names:
                names.append(key)
    return names


def _table(rows: list[dict], names: list[str]) -> str:
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    body = []
    for row in rows:
        cells = []
        for n in names:
            value = row.get(n, "")
            if isinstance(value, float):
                text = f"{value:.4f}" if math.isfinite(value) else "n/a"
                cells.append(f"<td class='n'>{text}</td>")
            elif isinstance(value, (dict, list)):
                cells.append(f"<td>{_e(str(value))}</td>")
            else:
                cells.append(f"<td>{_e(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
