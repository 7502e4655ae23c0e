"""The disclosure's figures of how stable the judge's ranking is (``reteco judge-report``):
the system rankings' agreement of an ``agreement.json`` (judge vs humans, or two judges) and the
re-judging or second judge of ``reteco judge-submissions`` (``rejudging_<sub>.json``,
``second_judge_<sub>.json``), each under the judge signature it belongs to.

The figures are Kendall's tau-b and tau_AP (``reteco.metrics.rank_agreement``) per dimension and
for judge_mean, with their intervals, or the point alone and the note in words where the
interval says nothing (few systems, -1 to 1, one point); per-item exact agreement per dimension
for the re-judging and the second judge. ``reteco.workbench.judge_audit.report`` places them in the report.
"""

from __future__ import annotations

from typing import Any

from reteco.metrics.rank_agreement import figure_text

_KEPT = ("value", "ci_low", "ci_high", "reason")


def _figure(figure: dict | None) -> dict:
    return {k: v for k, v in (figure or {}).items() if k in _KEPT}


def system_rankings(result: dict) -> dict[str, dict]:
    """Per dimension and judge_mean: systems, tau-b, tau_AP and the interval's note."""
    level = result.get("system_level") or {}
    blocks = {**(level.get("dimensions") or {}), **({"judge_mean": level["judge_mean"]} if "judge_mean" in level else {})}
    return {name: {"n_systems": block.get("n_systems"), "kendall_tau_b": _figure(block.get("kendall_tau_b")),
                   "tau_ap": _figure(block.get("tau_ap")), "interval_note": block.get("interval_note")}
            for name, block in blocks.items()}


def rank_agreement(result: dict, configured_signature: str) -> dict[str, Any] | None:
    """The rank agreement of an agreement.json, under its judge; None without a system level."""
    if not result.get("system_level"):
        return None
    method = result.get("method", {})
    signature = method.get("judge_signature")
    reference = method.get("reference", "humans")
    return {"judge_signature": signature, "same_judge": signature == configured_signature if signature else None,
            "against": "the humans" if reference == "humans" else "a second judge",
            "tau_ap_reference": result["system_level"].get("tau_ap_reference"),
            "systems": system_rankings(result)}


def stability(name: str, result: dict, configured_signature: str) -> dict[str, Any]:
    """One re-judging or second judge result, under both signatures."""
    method = result.get("method", {})
    signature = method.get("judge_signature")
    return {
        "file": name,
        "kind": result.get("kind"),
        "judge_signature": signature,
        "second_judge_signature": method.get("second_judge_signature"),
        "same_judge": signature == configured_signature if signature else None,
        "repeat_seed": method.get("repeat_seed"),
        "subset": method.get("subset"),
        "exact": {d: _figure(block.get("exact")) for d, block in (result.get("dimensions") or {}).items()},
        "systems": system_rankings(result),
    }


def _ranking_rows(systems: dict[str, dict]) -> list[list[str]]:
    return [[name, str(block["n_systems"]), figure_text(block["kendall_tau_b"], block["interval_note"]),
             figure_text(block["tau_ap"], block["interval_note"]), block["interval_note"] or ""]
            for name, block in systems.items()]


RANKING_HEAD = ["figure", "systems", "Kendall tau-b", "tau_AP", "note"]


def rank_agreement_markdown(section: dict, table) -> list[str]:
    """The rank agreement under its judge; ``table`` is the report's Markdown table writer."""
    out = ["## System rankings: the judge against " + section["against"], ""]
    out += [f"Judge signature `{section['judge_signature']}`; tau_AP takes its positions from the judge's ranking and "
            f"its correctness from {section['tau_ap_reference']}'s (Yilmaz et al. 2008).", ""]
    if section["same_judge"] is False:
        out += ["> **Warning:** not the signature of the judge configured for this report.", ""]
    return out + table(RANKING_HEAD, _ranking_rows(section["systems"]), "No ranking to compare.")


def stability_markdown(sections: list[dict], table) -> list[str]:
    """Each re-judging and second judge, under both signatures."""
    out = ["## Re-judging and second judges", ""]
    for s in sections:
        what = ("the same judge with another sampling seed" + (f" ({s['repeat_seed']})" if s["repeat_seed"] is not None
                                                               else "")) if s["kind"] == "rejudging" else "a second judge"
        out += [f"### {s['file']}: {what}", "",
                f"Judge signature `{s['judge_signature']}` against `{s['second_judge_signature']}` (two judges, "
                f"no human); {s['subset']}.", ""]
        if s["same_judge"] is False:
            out += ["> **Warning:** the first judge is not the judge configured for this report.", ""]
        out += table(["dimension", "exact agreement"], [[d, figure_text(f)] for d, f in s["exact"].items()],
                     "No dimension was judged twice.")
        out += [""] + table(RANKING_HEAD, _ranking_rows(s["systems"]), "No ranking to compare.") + [""]
    return out
