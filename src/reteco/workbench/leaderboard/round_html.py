"""The leaderboard page's section on a relevance round (``reteco leaderboard --round``): per
ranked system the official nDCG@10 beside the augmented and condensed ones with their intervals
and ranks, the share of its top 10 nobody judged and the share the round labelled; then Kendall's
tau-b and tau_AP per figure and the systems that moved outside their official rank interval. The figures are
``leaderboard.json``'s ``round`` section (``reteco.workbench.leaderboard.round_report``); nothing of the
round's labels is in it."""

from __future__ import annotations

from reteco.outputs.charts import escape
from reteco.workbench.leaderboard.text import fixed

_FIGURES = (("ndcg_10_augmented", "nDCG@10 augmented"), ("ndcg_10_condensed", "nDCG@10 condensed"))


def html_round(board: dict) -> str:
    """The section, or "" when the board has no round."""
    section = board.get("round")
    if not section:
        return ""
    e = escape
    out = ["<h2>Holes in the qrels: the relevance round</h2>"]
    if "absent" in section:
        return out[0] + f"<p class='absent'>{e(section['absent'])}.</p>"
    info = section.get("round") or {}
    out.append(f"<p class='small'>Round {e(info.get('file', '?'))} (sha256 {e(str(info.get('fingerprint', '?'))[:16])}...), "
               f"{e(str(info.get('labels_of_reference_topics', '?')))} labels, threshold {e(str(info.get('threshold', '?')))}. "
               "The official ranking is unchanged; these figures say what the holes change.</p>")
    head = "".join(f"<th>{e(title)}</th><th>CI</th><th>Rank</th>" for _, title in _FIGURES)
    out.append("<div class='scroll'><table><tr><th class='pin pin1'>Rank</th><th class='pin pin2'>Team / run</th>"
               f"<th>nDCG@10</th>{head}<th>Unjudged@10</th><th>Labelled by the round@10</th></tr>")
    for row in section["systems"]:
        cells = [f"<td class='n pin pin1'>{row['rank']}</td>", f"<td class='pin pin2'>{e(row['name'])}</td>",
                 f"<td class='n'>{fixed(row['official'])}</td>"]
        for key, _ in _FIGURES:
            cells.append(f"<td class='n'>{fixed(row.get(key))}</td>"
                         f"<td class='n'>[{fixed(row.get(key + '_ci_low'))}, {fixed(row.get(key + '_ci_high'))}]</td>"
                         f"<td class='n'>{row.get(key + '_rank', '')}</td>")
        cells += [f"<td class='n'>{fixed(row.get('unjudged_10'))}</td>", f"<td class='n'>{fixed(row.get('round_labelled_10'))}</td>"]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    for key, title in _FIGURES:
        agreement = section["agreement"].get(key, {})
        tau = agreement.get("kendall_tau_b")
        tau_text = fixed(tau) if tau is not None else agreement.get("kendall_tau_b_absent", agreement.get("absent", ""))
        ap = agreement.get("tau_ap")
        ap_text = fixed(ap) if ap is not None else agreement.get("tau_ap_absent", agreement.get("absent", ""))
        moved = section["moved"].get(key, [])
        moved_text = "; ".join(f"{m['name']} {m['official_rank']} -> {m['rank']}" for m in moved) or "none"
        out.append(f"<p>{e(title)}: Kendall's tau-b against the official ranking {e(tau_text)}, tau_AP {e(ap_text)}; moved outside the "
                   f"official rank interval: {e(moved_text)}.</p>")
    if section.get("absent_systems"):
        out.append(f"<p class='absent'>Without the round's figures: {e(', '.join(section['absent_systems']))}.</p>")
    if section.get("validation"):
        out.append(html_validation(section["validation"]))
    return "".join(out)


def html_validation(validation: dict) -> str:
    """One paragraph of the blind validation's figures (``round_validation``)."""
    e = escape

    def interval(figure: dict) -> str:
        if figure.get("value") is None:
            return figure.get("reason", figure.get("absent", "undefined"))
        return f"{fixed(figure['value'])} [{fixed(figure.get('ci_low'))}, {fixed(figure.get('ci_high'))}]"

    agreement, recall, ranks = validation["agreement"], validation["recall_known"], validation["rankings"]
    parts = [f"{validation['items']['sample_rated']} of {validation['items']['sample']} sampled pairs rated blind"]
    if "absent" not in agreement:
        parts.append(f"weighted kappa 0-3 {interval(agreement['kappa_quadratic'])}, kappa at "
                     f"{validation['threshold']}+ {interval(agreement['kappa_binary'])}")
    if "absent" not in recall.get("llm", {"absent": ""}):
        parts.append(f"the LLM's recall on {recall['llm']['pairs']} known-relevant pairs {interval(recall['llm'])}")
    if "absent" not in ranks:
        parts.append(f"systems by {ranks['figure']} under human vs LLM labels: tau-b {fixed(ranks['kendall_tau_b'])}, "
                     f"tau_AP {fixed(ranks['tau_ap'])}")
    return f"<p>Blind validation: {e('; '.join(parts))}.</p>"


__all__ = ["html_round"]
