"""HTML pieces of the detailed results page: escaping (every text of a participant's is escaped),
numbers, tables with described rows, figures and facts lists, column titles from the sub-track
table. No section logic: ``page_sections`` and ``detailed_results`` assemble these.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

from reteco.outputs.charts import escape, is_finite, number
from reteco.subtracks import KEYS, SubTrack

# Column titles of the per-topic and per-domain tables for fields that are not score keys
# (score keys take their title from reteco.subtracks).
COLUMN_TITLES = {
    "unit": None,  # the sub-track's unit: "Query" or "Turn"
    "step": "Step",
    "query": "Query",
    "turn": "Turn",
    "domain": "Domain",
    "depth": "Depth",
    "topics": "Steps",
    "units": None,  # "queries" / "turns"
    "turns": "Turns",
    "queries": "Queries",
    "required_periods": "Required periods",
    "covered_periods": "Covered periods",
    "fully_covered": "Fully covered",
    "fully_covered_queries": "Fully covered queries",
    "queries_with_required_periods": "Queries with periods",
    "own_period_covered": "Own period covered",
    "unlabelled_top10": "Unlabelled in top 10",
    "answered": "Answered",
    "answer_line": "Answer line",
    "evidence_passages": "Evidence passages",
}


SKIPPED_COLUMNS = frozenset({"evidence_doc_ids", "judgments"})  # lists and rationales stay in details.json


def absent_notes(reasons: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """Absent keys grouped by their reason: (letter, reason, keys), in key order."""
    grouped: dict[str, list[str]] = {}
    for key, reason in reasons.items():
        grouped.setdefault(reason, []).append(key)
    return [(chr(ord("a") + i), reason, keys) for i, (reason, keys) in enumerate(grouped.items())]


def note_letter(notes, key: str) -> str:
    return next((letter for letter, _, keys in notes if key in keys), "")


def described_table(first: str, second: str, rows: list[tuple[str, str, str]]) -> str:
    """Rows of (name as HTML, its meaning as text, the value's ``<td>``): the meaning under the
    name, so the value column stays beside it at any width."""
    body = "".join(
        f"<tr><td>{name}" + (f"<br><span class='meaning'>{escape(meaning)}</span>" if meaning else "")
        + f"</td>{value}</tr>"
        for name, meaning, value in rows
    )
    return (
        f"<div class='box'><table><thead><tr><th>{escape(first)}</th><th class='n'>{escape(second)}</th></tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def in_groups(key: str, groups: dict) -> bool:
    return any(isinstance(f, dict) and key in f for f in groups.values())


def table_cell(value: Any) -> str:
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, float):
        return f"<td class='n'>{number(value)}</td>"
    if isinstance(value, int):
        return f"<td class='n'>{value}</td>"
    if value is None:
        return "<td class='n muted'>—</td>"
    if isinstance(value, (dict, list)):
        return "<td class='muted'>in details.json</td>"
    return f"<td>{escape(value)}</td>"


def numeric_class(rows: list[dict], name: str) -> str:
    values = [r.get(name) for r in rows if r.get(name) is not None]
    numeric = values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return " class='n'" if numeric else ""


def group_table(
    title: str,
    groups: dict,
    keys: list[str],
    units: str,
    *,
    extra_rows: Iterable[tuple[str, dict]] = (),
    first: str,
) -> str:
    """Figures per group (domain or depth): the group's unit count, then each key's figure."""
    groups = {g: f for g, f in groups.items() if isinstance(f, dict)} if isinstance(groups, dict) else {}
    if not groups or not keys:
        return ""
    count_field = next((c for c in ("units", "turns", "queries") if in_groups(c, groups)), None)
    extras = ["fully_covered_queries"] if in_groups("fully_covered_queries", groups) else []
    head = f"<th>{escape(first)}</th>"
    if count_field:
        head += f"<th class='n'>{escape(units.capitalize())}</th>"
    head += "".join(f"<th class='n'>{escape(key_title(k))}</th>" for k in keys)
    head += "".join(f"<th class='n'>{escape(COLUMN_TITLES[k])}</th>" for k in extras)
    body = []
    for label, figures in [*groups.items(), *extra_rows]:
        cells = f"<td class='group'>{escape(label)}</td>"
        if count_field:
            cells += f"<td class='n'>{escape(figures.get(count_field, ''))}</td>"
        cells += "".join(f"<td class='n'>{number(as_number(figures.get(k)))}</td>" for k in keys)
        cells += "".join(f"<td class='n'>{escape(figures.get(k, ''))}</td>" for k in extras)
        body.append(f"<tr>{cells}</tr>")
    return (
        f"<h3>{escape(title)}</h3><div class='box'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def figure_block(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{escape(caption)}</figcaption>{svg}</figure>"


def facts_list(facts: list[tuple[str, str]]) -> str:
    if not facts:
        return ""
    return "<dl class='facts'>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts) + "</dl>"


def key_title(key: str) -> str:
    return KEYS[key].title if key in KEYS else key


def column_title(row: SubTrack | None, name: str) -> str:
    if name in KEYS:
        return KEYS[name].title
    if name == "unit":
        return "Query" if row is None or row.track == 1 else "Turn"
    return COLUMN_TITLES.get(name) or name


def unit_word(row: SubTrack | None) -> str:
    return "queries" if row is None or row.track == 1 else "turns"


def as_dict(value) -> dict:
    """A section of details that should be an object, or an empty one (a page never fails on details)."""
    return value if isinstance(value, dict) else {}


def as_number(value) -> float | None:
    return float(value) if is_finite(value) else None


def as_int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def escape_text(value: str) -> str:
    return html.escape(value, quote=False)
