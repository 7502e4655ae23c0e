"""From per-topic values to the reported figures: units, domains, domain macro, turn depth.

A *unit* is what the official figure averages over: a query for 1a, a query for 1b (after
averaging that query's step values), a target turn for 2a/2c (evaluation plan, "Aggregation").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reteco.formats.reference import Reference
from reteco.formats.topic_ids import DEPTH_GROUPS, depth_group


@dataclass(frozen=True)
class Units:
    """Reference topics grouped into units: ``unit_of_topic[i]`` is topic i's unit index."""

    keys: list[str]
    domain: list[str]
    depth: list[int | None]
    unit_of_topic: np.ndarray
    topics_per_unit: np.ndarray

    @classmethod
    def of(cls, reference: Reference) -> "Units":
        index: dict[str, int] = {}
        keys: list[str] = []
        domain: list[str] = []
        depth: list[int | None] = []
        unit_of_topic = np.empty(len(reference.topics), dtype=np.int64)
        for i, topic in enumerate(reference.topics):
            if topic.unit not in index:
                index[topic.unit] = len(keys)
                keys.append(topic.unit)
                domain.append(topic.domain)
                depth.append(topic.depth)
            unit_of_topic[i] = index[topic.unit]
        counts = np.bincount(unit_of_topic, minlength=len(keys))
        return cls(keys, domain, depth, unit_of_topic, counts)

    def mean_per_unit(self, per_topic: np.ndarray) -> np.ndarray:
        """Mean of the topic values of each unit (a 1b query's mean over its steps)."""
        sums = np.bincount(self.unit_of_topic, weights=per_topic, minlength=len(self.keys))
        return sums / self.topics_per_unit


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def summarize(reference: Reference, per_topic: dict[str, np.ndarray]) -> dict:
    """Overall (mean over units), per-domain, domain-macro and turn-depth figures, plus per-unit values.

    Figures that have no unit to average (a depth group no turn falls in) are left out, never 0.
    """
    units = Units.of(reference)
    stepwise = reference.row is not None and reference.row.step_topics  # 1b: a query's figure is the mean of its steps
    per_unit = {metric: units.mean_per_unit(values) for metric, values in per_topic.items()}
    domain = np.array(units.domain, dtype=object)
    domains = sorted(set(units.domain))

    overall = {metric: _mean(values) for metric, values in per_unit.items()}
    per_domain = {}
    for d in domains:
        selected = domain == d
        per_domain[d] = {"units": int(selected.sum())} | {m: _mean(v[selected]) for m, v in per_unit.items()}
    domain_macro = {m: float(np.mean([per_domain[d][m] for d in domains])) for m in per_unit}

    summary = {
        "units": len(units.keys),
        "topics": len(reference.topics),
        "overall": overall,
        "domain_macro": domain_macro,
        "per_domain": per_domain,
    }
    if any(d is not None for d in units.depth):
        group = np.array([depth_group(d) if d is not None else "" for d in units.depth], dtype=object)
        summary["per_depth"] = {
            g: {"units": int((group == g).sum())} | {m: _mean(v[group == g]) for m, v in per_unit.items()}
            for g in DEPTH_GROUPS
            if (group == g).any()
        }
    summary["per_unit"] = [
        {"unit": key, "domain": units.domain[i]}
        | ({"depth": units.depth[i]} if units.depth[i] is not None else {})
        | ({"topics": int(units.topics_per_unit[i])} if stepwise else {})
        | {m: float(v[i]) for m, v in per_unit.items()}
        for i, key in enumerate(units.keys)
    ]
    if stepwise:
        summary["step_mean"] = {m: _mean(v) for m, v in per_topic.items()}
        summary["per_step"] = [
            {"step": t.key, "query": t.unit} | {m: float(v[i]) for m, v in per_topic.items()}
            for i, t in enumerate(reference.topics)
        ]
    return summary
