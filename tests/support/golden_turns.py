"""Judge items of realistic size from the golden cases' own texts, as 2b and 2c turns.

One item per golden series (its base answer): as 2b sees it (the system had the turn's gold
passages) or as 2c does (five passages: the gold ones, then passages of other series). Used by
the prompt-layout and estimate tests and by bench/bench_judge_cost.py.
"""

from __future__ import annotations

import dataclasses

from reteco.judge import JudgeItem
from reteco.subtracks import DIMENSIONS
from reteco.workbench.judge_audit.golden import load_golden_set


def golden_turns(subtrack: str) -> list[JudgeItem]:
    """One item per golden series, its passages as ``subtrack`` ("2b" or "2c") shows them."""
    bases: dict[str, JudgeItem] = {}
    for case in load_golden_set(2):
        bases.setdefault(case.series, case.item)
    pool = [p for item in bases.values() for p in item.evidence]
    out = []
    for i, item in enumerate(bases.values()):
        if subtrack == "2b":
            out.append(dataclasses.replace(item, evidence=item.gold_evidence))
        else:
            others = [p for p in pool if p not in item.gold_evidence][i:i + 5]
            out.append(dataclasses.replace(item, evidence=(*item.gold_evidence, *others)[:5]))
    return out


def every_dimension(turn_items: list[JudgeItem]) -> list[JudgeItem]:
    """Each turn's item on the five dimensions, a turn's five together (as scoring builds them)."""
    return [dataclasses.replace(i, dimension=d) for i in turn_items for d in DIMENSIONS]
