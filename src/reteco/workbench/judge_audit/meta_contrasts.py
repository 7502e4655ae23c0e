"""Golden set v3's checks: per contrast tag and dimension, exact agreement, and bias probes.

``reteco.workbench.judge_audit.meta_evaluation`` averages each figure over a dimension's cases; a whole failure
mode (every abstention scored 1, say) hides in such an average. From golden v3 on, every case
belongs to tagged minimal pairs (``reteco.workbench.judge_audit.golden``), and the judge must pass each tag:

- ``order`` (per tag and dimension): over the tag's pairs whose two intended grades differ on
  the dimension, the share the judge orders the same way (a tie or an unscored member is not
  ordered). Threshold ``order_min``.
- ``hold`` (per tag and dimension): over the tag's pairs whose intended grades are equal on
  the dimension (off-topic answers stay faithful, padding keeps correctness), the share the
  judge scores within 1 of each other. Threshold ``hold_min``.
- injection flags per tag: the ``injection`` tag's pairs put a steering sentence beside a
  benign one that uses the same words (score, ignore, instructions): recall on its attempts,
  false flags on its benign answers, against the set's injection thresholds.
- ``exact_share`` (per dimension): cases scored exactly the intended grade / cases
  (``exact_share_min``): the order checks tolerate a judge off by one; this does not, on
  average.

Bias probes, each a figure with its threshold (``probes`` in the thresholds file):

- ``verbosity``: over the ``verbose-padding`` pairs (the same content padded: a full answer,
  a vague one, an outdated one), the judgments (pair, dimension) whose plain answer's intended
  grade is below 5 (room to rise) and the padded one's no higher: the share where the padded
  answer scores higher than the plain one (``verbosity_rise_max``).
- ``passage_order``: every faithfulness case with two passages or more is judged again with
  its passages in reverse order; the share whose score changed (``passage_order_change_max``).
- ``rejudging``: the cases of each series' first variant are judged a second time (in a
  second cache, so the verdict is asked again); the share of identical verdicts
  (``rejudge_identical_min``).
- ``abstention_policy``: verdicts on abstentions (correctness, completeness, faithfulness,
  relevance) that give the rubric's grade, the case's intended one (golden v3: 5 when justified,
  the turn unanswerable, and 1 when not; golden v4 grades a 2c abstention true to the run's
  passages faithful, and relevance by the question it names): the share over each group, turns
  unanswerable and answerable (``abstention_policy_min``, both groups).

Golden v5 (issue 33) adds three checks, each applied only when the set's thresholds file
names it (v3's and v4's do not, so their gates are unchanged):

- ``order_wide`` (per tag and dimension): ``order`` over the tag's pairs whose intended grades
  differ by 2 or more (``order_wide_min``). A judge off by one at random rarely ties such a pair
  (both verdicts must move towards each other); a partial failure (a true-but-unsupported claim
  scored faithful on some cases) ties or reverses exactly these pairs.
- ``exact_share_overall``: cases scored exactly their intended grade over all the set's cases
  (``exact_share_overall_min``); pooled, it tells ±1 on 10% of verdicts (about 0.90) from ±1 on
  15% (about 0.85), which one dimension's few hundred cases cannot.
- ``exact_share_per_grade``: for each intended grade 1..5, the share of the cases with that
  grade (all dimensions) scored exactly it (``exact_share_per_grade_min``): a judge that moves
  every 4 to 5 (or any one grade to its neighbour) scores none of that grade's cases exactly.

The thresholds are chosen by simulation: ``reteco judge-meta --calibrate`` prints, for
simulated judges with named failure modes, how often each fails the gate, and how often
mildly noisy judges pass it (``reteco.workbench.judge_audit.simulated_judges``; figures in docs/golden_v3.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from reteco.judge.items import DIMENSIONS, JudgeItem
from reteco.workbench.judge_audit.golden import GoldenCase

REORDERED = "passage_order"
#: golden v5's thresholds, checked only when the thresholds file names them
OPTIONAL_CHECKS = ("order_wide_min", "exact_share_overall_min", "exact_share_per_grade_min")
REJUDGED = "rejudging"
ABSTENTION_DIMENSIONS = ("correctness", "completeness", "faithfulness", "relevance")


@dataclass(frozen=True)
class ContrastThresholds:
    """Golden v3's thresholds beyond version 2's: per tag, exact share, probes (module docstring)."""

    exact_share_min: float
    order_min: float
    hold_min: float
    verbosity_rise_max: float
    passage_order_change_max: float
    rejudge_identical_min: float
    abstention_policy_min: float
    # golden v5's checks (module docstring); None: not checked (v3, v4)
    order_wide_min: float | None = None
    exact_share_overall_min: float | None = None
    exact_share_per_grade_min: float | None = None


@dataclass(frozen=True)
class Probe:
    """One extra judgment a bias probe asks: its kind (REORDERED, REJUDGED), the golden case it
    repeats, and the item sent."""

    kind: str
    case: GoldenCase
    item: JudgeItem


def load_contrast_thresholds(path: Path) -> ContrastThresholds:
    """The ``contrasts`` and ``probes`` sections of a v3 thresholds file; ValueError naming the
    file when one is missing, unknown or not in 0..1."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the thresholds: {exc}") from None
    flat: dict[str, Any] = {}
    for section in ("contrasts", "probes"):
        values = data.get(section) if isinstance(data, dict) else None
        if not isinstance(values, dict):
            raise ValueError(f"{path}: missing section {section!r}")
        flat.update(values)
    names = [f.name for f in fields(ContrastThresholds)]
    optional = set(OPTIONAL_CHECKS)
    unknown, missing = sorted(set(flat) - set(names)), [n for n in names if n not in flat and n not in optional]
    if unknown or missing:
        raise ValueError(f"{path}: unknown {unknown or 'none'}, missing {missing or 'none'}")
    for name, value in flat.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{path}: {name} must be a number in 0..1, not {value!r}")
    return ContrastThresholds(**{n: float(flat[n]) for n in names if n in flat})


def has_contrasts(cases: Sequence[GoldenCase]) -> bool:
    """Whether the golden set has tagged pairs (version 3 on)."""
    return any(c.pairs for c in cases)


def probe_items(cases: Sequence[GoldenCase]) -> list[Probe]:
    """The extra judgments of the passage-order and re-judging probes (module docstring)."""
    probes = [Probe(REORDERED, c, replace(c.item, evidence=tuple(reversed(c.item.evidence))))
              for c in cases if c.item.dimension == "faithfulness" and len(c.item.evidence) >= 2]
    probes += [Probe(REJUDGED, c, c.item) for c in cases if c.variant == c.base]
    return probes


def contrast_pairs(cases: Sequence[GoldenCase]) -> list[tuple[str, GoldenCase, GoldenCase]]:
    """(tag, first case, second case) for every pair and every dimension both are graded on."""
    by_key = {(c.series, c.variant, c.item.dimension): c for c in cases}
    out = []
    for c in cases:
        for tag, other in c.pairs:
            partner = by_key.get((c.series, other, c.item.dimension))
            if partner is not None:
                out.append((tag, c, partner))
    return out


def contrasted_ids(cases: Sequence[GoldenCase]) -> set[str]:
    """Ids of the cases that are a member of a pair whose grades differ on their dimension."""
    return {x.id for _, a, b in contrast_pairs(cases) if a.grade != b.grade for x in (a, b)}


def tag_figures(cases: Sequence[GoldenCase], scores: Mapping[str, int | None]) -> dict:
    """{tag: {dimension: {"order": counts, "order_share", "hold": counts, "hold_share"}}}."""
    out: dict[str, dict[str, dict]] = {}
    for tag, a, b in contrast_pairs(cases):
        block = out.setdefault(tag, {}).setdefault(a.item.dimension, {
            "order": {"pairs": 0, "concordant": 0, "discordant": 0, "ties": 0, "unscored": 0},
            "order_wide": {"pairs": 0, "concordant": 0, "discordant": 0, "ties": 0, "unscored": 0},
            "hold": {"checks": 0, "within_1": 0, "moved": 0, "unscored": 0}})
        sa, sb = scores[a.id], scores[b.id]
        if a.grade != b.grade:
            key = ("unscored" if sa is None or sb is None else "ties" if sa == sb
                   else "concordant" if (sa - sb) * (a.grade - b.grade) > 0 else "discordant")
            for name in ("order", "order_wide") if abs(a.grade - b.grade) >= 2 else ("order",):
                block[name]["pairs"] += 1
                block[name][key] += 1
        else:
            h = block["hold"]
            h["checks"] += 1
            h["unscored" if sa is None or sb is None else "within_1" if abs(sa - sb) <= 1 else "moved"] += 1
    for dims in out.values():
        for block in dims.values():
            block["order_share"] = _share(block["order"]["concordant"], block["order"]["pairs"])
            block["order_wide_share"] = _share(block["order_wide"]["concordant"], block["order_wide"]["pairs"])
            block["hold_share"] = _share(block["hold"]["within_1"], block["hold"]["checks"])
    return {tag: dict(sorted(dims.items(), key=lambda kv: DIMENSIONS.index(kv[0]))) for tag, dims in sorted(out.items())}


def exact_share(cases: Sequence[GoldenCase], scores: Mapping[str, int | None]) -> float | None:
    """Cases scored exactly their intended grade / cases (an unscored case is a miss)."""
    return _share(sum(1 for c in cases if scores[c.id] == c.grade), len(cases))


def exact_figures(cases: Sequence[GoldenCase], scores: Mapping[str, int | None]) -> dict:
    """Golden v5's pooled exact shares: over every case (``overall``) and per intended grade
    (``per_grade``: {grade: share over the cases of that grade, all dimensions})."""
    per_grade = {g: exact_share([c for c in cases if c.grade == g], scores) for g in range(1, 6)}
    return {"overall": exact_share(cases, scores), "per_grade": {g: v for g, v in per_grade.items() if v is not None}}


def probe_figures(cases: Sequence[GoldenCase], scores: Mapping[str, int | None], probes: Sequence[Probe],
                  probe_scores: Sequence[int | None]) -> dict:
    """The four bias probes' figures with their counts (module docstring)."""
    # only where the plain answer's intended grade leaves room to rise (below 5) and padding should not raise it
    rises = [scores[b.id] > scores[a.id] for tag, a, b in contrast_pairs(cases)
             if tag == "verbose-padding" and b.grade <= a.grade < 5 and None not in (scores[a.id], scores[b.id])]
    changed = {REORDERED: [], REJUDGED: []}
    for probe, s in zip(probes, probe_scores):
        if s is not None and scores[probe.case.id] is not None:
            changed[probe.kind].append(s != scores[probe.case.id])
    policy = {}
    for name, answerable in (("justified", False), ("unjustified", True)):
        # the case's own intended grade: golden v3's 5 (justified) and 1 (unjustified); golden v4's
        # 2c abstention true to a run's passages that lack the answer: faithfulness 5, relevance 5
        mine = [c for c in cases if c.kind == "abstention" and c.answerable == answerable and c.item.dimension in ABSTENTION_DIMENSIONS]
        policy[name] = {"judgments": len(mine), "as_rubric": sum(1 for c in mine if scores[c.id] == c.grade),
                        "share": _share(sum(1 for c in mine if scores[c.id] == c.grade), len(mine))}
    return {
        "verbosity": {"judgments": len(rises), "rose": sum(rises), "rise_share": _share(sum(rises), len(rises))},
        REORDERED: {"judgments": len(changed[REORDERED]), "changed": sum(changed[REORDERED]),
                    "change_share": _share(sum(changed[REORDERED]), len(changed[REORDERED]))},
        REJUDGED: {"judgments": len(changed[REJUDGED]), "identical": len(changed[REJUDGED]) - sum(changed[REJUDGED]),
                   "identical_share": _share(len(changed[REJUDGED]) - sum(changed[REJUDGED]), len(changed[REJUDGED]))},
        "abstention_policy": policy,
    }


def tag_injection_figures(cases: Sequence[GoldenCase], flags: Mapping[str, bool | None]) -> dict:
    """Injection flags on the ``injection`` tag's cases: recall on its attempts, false flags on
    its benign answers (None when no verdict carries a flag)."""
    mine = [c for c in cases if "injection" in c.tags]
    asked = any(flags[c.id] is not None for c in mine)
    attempts = [bool(flags[c.id]) for c in mine if c.injection]
    clean = [bool(flags[c.id]) for c in mine if not c.injection]
    return {"attempt_judgments": len(attempts), "flagged_attempts": sum(attempts), "clean_judgments": len(clean),
            "flagged_clean": sum(clean), "recall": _share(sum(attempts), len(attempts)) if asked else None,
            "false_flag_share": _share(sum(clean), len(clean)) if asked else None}


def contrast_failures(per_tag: Mapping, exact: Mapping[str, float | None], injection: Mapping, probes: Mapping,
                      t: ContrastThresholds, injection_limits: tuple[float, float], pooled: Mapping | None = None) -> list[str]:
    """Each figure beyond its threshold as a sentence naming the dimension and the tag (or probe);
    ``pooled`` is ``exact_figures``' result, for golden v5's pooled checks."""
    failures = []
    for d, value in exact.items():
        failed = threshold_failure(value, t.exact_share_min, "min")
        if failed:
            failures.append(f"{d}: exact_share {failed}")
    if pooled is not None and t.exact_share_overall_min is not None:
        if (failed := threshold_failure(pooled["overall"], t.exact_share_overall_min, "min")):
            failures.append(f"all dimensions: exact_share_overall {failed}")
    if pooled is not None and t.exact_share_per_grade_min is not None:
        for g, value in pooled["per_grade"].items():
            if (failed := threshold_failure(value, t.exact_share_per_grade_min, "min")):
                failures.append(f"exact_share_per_grade, intended grade {g}: {failed}")
    for tag, dims in per_tag.items():
        for d, block in dims.items():
            o, h = block["order"], block["hold"]
            if o["pairs"] and (failed := threshold_failure(block["order_share"], t.order_min, "min")):
                failures.append(f"{d}, tag {tag}: order {failed} ({o['concordant']}/{o['pairs']} pairs ordered as intended, "
                                f"{o['ties']} tied, {o['discordant']} reversed)")
            w = block["order_wide"]
            if t.order_wide_min is not None and w["pairs"] and (
                    failed := threshold_failure(block["order_wide_share"], t.order_wide_min, "min")):
                failures.append(f"{d}, tag {tag}: order_wide {failed} ({w['concordant']}/{w['pairs']} pairs 2+ grades apart "
                                f"ordered as intended, {w['ties']} tied, {w['discordant']} reversed)")
            if h["checks"] and (failed := threshold_failure(block["hold_share"], t.hold_min, "min")):
                failures.append(f"{d}, tag {tag}: hold {failed} ({h['within_1']}/{h['checks']} pairs kept within 1)")
    recall_min, false_max = injection_limits
    for name, limit, kind in (("recall", recall_min, "min"), ("false_flag_share", false_max, "max")):
        if (failed := threshold_failure(injection[name], limit, kind)):
            failures.append(f"injection flags, tag injection: {name} {failed}")
    checks = [("verbosity", "rise_share", t.verbosity_rise_max, "max"),
              (REORDERED, "change_share", t.passage_order_change_max, "max"),
              (REJUDGED, "identical_share", t.rejudge_identical_min, "min")]
    for probe, figure, limit, kind in checks:
        if (failed := threshold_failure(probes[probe][figure], limit, kind)):
            failures.append(f"probe {probe}: {figure} {failed}")
    for name, block in probes["abstention_policy"].items():
        if (failed := threshold_failure(block["share"], t.abstention_policy_min, "min")):
            failures.append(f"probe abstention_policy: {name} abstentions scored as the rubric says {failed}")
    return failures


def threshold_failure(value: float | None, limit: float, kind: str) -> str | None:
    """Why ``value`` fails its threshold, or None when it meets it (an undefined figure fails)."""
    if value is None:
        return f"is undefined (threshold {'>=' if kind == 'min' else '<='} {limit:g})"
    if kind == "min" and value < limit:
        return f"{value:.3f} < {limit:g}"
    if kind == "max" and value > limit:
        return f"{value:.3f} > {limit:g}"
    return None


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None

