"""The topic-set stability of a leaderboard (``leaderboard.json``'s ``topic_stability``,
``reteco.workbench.leaderboard.topic_stability``) as tables: one per metric, a row per bin of the pairs'
difference on a topic set, a column per topic-set size holding the swap rate in percent, and the smallest size
at which the rate is 5% or less. ``rows`` feeds the text file, the page and the LaTeX file
(``reteco.workbench.leaderboard.tables``, ``reteco.workbench.leaderboard.latex``)."""

from __future__ import annotations

from html import escape

TEXT_FILE = "topic_stability.txt"
INTRO = ("Topic-set stability (Voorhees & Buckley 2002): the share of system pairs that two disjoint random sets of "
         "n topics order oppositely, per bin of the difference the pair shows on the first set")


def bin_label(block: dict) -> str:
    """``0.010-0.020`` or ``>= 0.200``."""
    return f">= {block['low']:.3f}" if block["high"] is None else f"{block['low']:.3f}-{block['high']:.3f}"


def rows(metric: dict) -> tuple[list[str], list[list[str]]]:
    """(head, body) of one metric's table: difference bin, swap % per size (-- without a
    comparison), the smallest size at 5% or less."""
    sizes = [str(n) for n in metric["sizes"]]
    head = ["|difference|", *(f"n={n}" for n in sizes), "n for <=5%"]
    body = [[bin_label(b), *(f"{100 * b['swap_rate'][n]:.1f}" if b["swap_rate"][n] is not None else "--" for n in sizes),
             str(b["topics_for_5_percent"]) if b["topics_for_5_percent"] is not None else "--"]
            for b in metric["bins"]]
    return head, body


def method_sentence(stability: dict) -> str:
    """How the figures were drawn, in one sentence."""
    method = stability["method"]
    return (f"{INTRO}; {method['splits']} random splits, seed {method['seed']}; a tie on either set counts half a "
            "swap; swap rates in percent.")


def render_text(stability: dict, title: str) -> str:
    """``topic_stability.txt``: the method sentence, then a fixed-width table per metric."""
    out = [f"{title}", method_sentence(stability), ""]
    if "absent" in stability:
        return "\n".join(out + [f"absent: {stability['absent']}"]) + "\n"
    for metric, block in stability["metrics"].items():
        if "absent" in block:
            out += [f"{metric}: absent: {block['absent']}", ""]
            continue
        head, body = rows(block)
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        out.append(f"{metric} ({block['systems']} systems, {block['topics']} topics, {block['pairs']} pairs)")
        out += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                for r in [head, *body]]
        out.append("")
    return "\n".join(out)


def render_html(stability: dict) -> str:
    """The page's section (empty when the board has none)."""
    parts = [f"<h2>Topic-set stability</h2><p class='small'>{escape(method_sentence(stability))}</p>"]
    if "absent" in stability:
        return parts[0] + f"<p class='absent'>Absent: {escape(stability['absent'])}.</p>"
    for metric, block in stability["metrics"].items():
        if "absent" in block:
            parts.append(f"<p class='absent'>{escape(metric)}: absent: {escape(block['absent'])}.</p>")
            continue
        head, body = rows(block)
        parts.append(f"<h3>{escape(metric)}</h3><div class='scroll'><table><tr>"
                     + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
                     + "".join("<tr>" + "".join(f"<td class='n'>{escape(c)}</td>" for c in r) + "</tr>" for r in body)
                     + "</table></div>")
    return "".join(parts)
