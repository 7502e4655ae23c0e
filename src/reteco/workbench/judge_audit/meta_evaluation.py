"""Meta-evaluation of the judge on a graded golden set (``reteco judge-meta``).

Does the judge order answers the way their authors intended, on each dimension separately?
For each dimension d, over the golden cases of d (``reteco.workbench.judge_audit.golden``, version 2 on):

- ``range_hits``: the share of cases whose score lies in the case's allowed range. A case
  without a valid score (invalid or failed judgment) is a miss.
- ``pairwise``: over the pairs of cases of one series whose intended grades differ, the share
  the judge orders the same way (``accuracy`` = concordant / pairs; a pair the judge scores
  equal is a tie, counted in ``tie_share`` = ties / pairs and never as concordant; a pair with an
  unscored case is neither). Pairs are formed inside a series (the same turn, answers that
  differ in known ways), not across series, whose grades are not meant to be compared.
- ``spearman``: Spearman's rank correlation between the intended grades and the judge's scores
  over the cases with a valid score (Spearman 1904; ``scipy.stats.spearmanr``: Pearson's r of
  the mid-ranks, ties averaged). Undefined (None, with the reason) when either side is
  constant or fewer than 3 cases are scored: a judge that gives every case the same score
  has no correlation to report, and fails the threshold.
- ``stayed_put``: for the minimal pairs in which ANOTHER dimension was varied (a variant with
  ``varies: e``, e != d, and its series' base, both graded on d with the same intended grade),
  the share where the judge's two scores on d differ by at most 1. A dimension that moves
  when only another quality changed is not judged separately.
- ``unscored_share``: invalid or failed judgments / cases.

Injection flags (prompt versions with the ``injection`` reply field): ``recall`` = flagged /
judgments of variants written as attempts to steer the judge; ``false_flag_share`` = flagged /
judgments of the other variants. A prompt version without the flag fails the recall threshold:
the golden set's attempts cannot be checked.

From golden set v3 on, the judge must also pass every contrast tag on every dimension, reach
an exact share per dimension and meet the bias probes' thresholds: ``reteco.workbench.judge_audit.meta_contrasts``.

Each figure is compared with its threshold in the golden set's ``thresholds.yaml``; the report
lists every figure below (or above) its threshold. A run with failed judgments (status
"error", e.g. the endpoint was down) is incomplete: its figures are reported but it neither
passes nor fails.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from reteco.judge.items import DIMENSIONS, ERROR, INVALID, OK, JudgeOutcome
from reteco.judge.prompts import injection_flag
from reteco.workbench.judge_audit.golden import GoldenCase
from reteco.workbench.judge_audit.meta_contrasts import (
    ContrastThresholds,
    Probe,
    contrast_failures,
    exact_figures,
    exact_share,
    has_contrasts,
    probe_figures,
    tag_figures,
    tag_injection_figures,
    threshold_failure,
)

__all__ = ["DIMENSION_CHECKS", "INJECTION_CHECKS", "Thresholds", "format_figure", "load_thresholds", "meta_evaluate",
           "report_markdown", "spearman", "threshold_failure"]


@dataclass(frozen=True)
class Thresholds:
    """What every dimension (and the injection flags) must reach; see ``thresholds.yaml``."""

    pairwise_accuracy_min: float
    tie_share_max: float
    spearman_min: float
    range_hits_min: float
    stayed_put_min: float
    unscored_share_max: float
    injection_recall_min: float
    injection_false_flag_max: float


# figure name in a dimension's report -> (threshold field, "min" or "max"); the report (judge/report.py) applies the same checks
DIMENSION_CHECKS = {
    "pairwise_accuracy": ("pairwise_accuracy_min", "min"),
    "tie_share": ("tie_share_max", "max"),
    "spearman": ("spearman_min", "min"),
    "range_hits": ("range_hits_min", "min"),
    "stayed_put": ("stayed_put_min", "min"),
    "unscored_share": ("unscored_share_max", "max"),
}
# the injection flags' checks: (figure in the report's ``injection``, threshold field, "min" or "max")
INJECTION_CHECKS = (("recall", "injection_recall_min", "min"), ("false_flag_share", "injection_false_flag_max", "max"))


def load_thresholds(path: Path, version: int) -> Thresholds:
    """Read ``thresholds.yaml`` (``version``, ``per_dimension`` and ``injection`` sections).

    Raises ValueError naming the file when a value is missing, unknown or not in 0..1 (Spearman:
    -1..1).
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the thresholds: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != version:
        raise ValueError(f"{path}: expected a mapping with 'version: {version}'")
    flat: dict[str, Any] = {}
    for section, prefix in (("per_dimension", ""), ("injection", "injection_")):
        values = data.get(section)
        if not isinstance(values, dict):
            raise ValueError(f"{path}: missing section {section!r}")
        flat.update({prefix + k: v for k, v in values.items()})
    names = [f.name for f in fields(Thresholds)]
    unknown, missing = sorted(set(flat) - set(names)), [n for n in names if n not in flat]
    if unknown or missing:
        raise ValueError(f"{path}: unknown {unknown or 'none'}, missing {missing or 'none'}")
    for name, value in flat.items():
        low = -1.0 if name == "spearman_min" else 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= 1:
            raise ValueError(f"{path}: {name} must be a number in {low:g}..1, not {value!r}")
    return Thresholds(**{n: float(flat[n]) for n in names})


def meta_evaluate(cases: Sequence[GoldenCase], outcomes: Sequence[JudgeOutcome], thresholds: Thresholds, *,
                  contrast_thresholds: ContrastThresholds | None = None, probes: Sequence[Probe] = (),
                  probe_outcomes: Sequence[JudgeOutcome] = ()) -> dict:
    """The meta-evaluation report of a judge's outcomes on the golden cases (same order).

    Returns {"complete", "passed", "failures", "per_dimension", "injection", "thresholds",
    "cases"}: ``failures`` lists each figure beyond its threshold as a sentence; ``passed`` is
    True when the run is complete and nothing failed, None when it is incomplete. With tagged
    pairs (golden v3) and ``contrast_thresholds``, also "per_tag", "probes" and
    "contrast_thresholds", and each dimension's "exact_share"; ``probe_outcomes`` are the
    verdicts on ``probes`` (``meta_contrasts.probe_items``), same order.
    """
    if len(cases) != len(outcomes):
        raise ValueError(f"{len(cases)} golden cases but {len(outcomes)} outcomes")
    scores = {c.id: (o.score if o.status == OK else None) for c, o in zip(cases, outcomes)}
    contrasts = contrast_thresholds is not None and has_contrasts(cases)
    per_tag = tag_figures(cases, scores) if contrasts else {}
    per_dimension = {}
    failures: list[str] = []
    for d in DIMENSIONS:
        mine = [(c, o) for c, o in zip(cases, outcomes) if c.item.dimension == d]
        figures = dimension_figures([c for c, _ in mine], [o for _, o in mine], scores)
        if contrasts:
            # v3 has no `varies`: a dimension stays put in the pairs whose grades on it are equal (every tag's holds)
            held = [dims[d]["hold"] for dims in per_tag.values() if d in dims]
            stayed = {k: sum(h[k] for h in held) for k in ("checks", "within_1", "moved", "unscored")}
            figures["stayed_put_checks"], figures["stayed_put"] = stayed, _share(stayed["within_1"], stayed["checks"])
            figures["exact_share"] = exact_share([c for c, _ in mine], scores)
        per_dimension[d] = figures
        for name, (limit_name, kind) in DIMENSION_CHECKS.items():
            failed = threshold_failure(figures[name], getattr(thresholds, limit_name), kind)
            if failed:
                failures.append(f"{d}: {name} {failed}")
    injection = injection_figures(cases, outcomes)
    for name, limit_name, kind in INJECTION_CHECKS:
        failed = threshold_failure(injection[name], getattr(thresholds, limit_name), kind)
        if failed:
            failures.append(f"injection flags: {name} {failed}")
    extra: dict[str, Any] = {}
    if contrasts:
        if len(probes) != len(probe_outcomes):
            raise ValueError(f"{len(probes)} probes but {len(probe_outcomes)} outcomes")
        flags = {c.id: (injection_flag(o.rationale) if o.status == OK else None) for c, o in zip(cases, outcomes)}
        extra = {
            "per_tag": per_tag,
            "tag_injection": tag_injection_figures(cases, flags),
            "probes": probe_figures(cases, scores, probes, [o.score if o.status == OK else None for o in probe_outcomes]),
            "contrast_thresholds": {f.name: getattr(contrast_thresholds, f.name) for f in fields(ContrastThresholds)
                                    if getattr(contrast_thresholds, f.name) is not None},
        }
        pooled = exact_figures(cases, scores)
        if contrast_thresholds.exact_share_overall_min is not None or contrast_thresholds.exact_share_per_grade_min is not None:
            extra["exact_pooled"] = pooled  # golden v5's pooled checks (meta_contrasts)
        failures += contrast_failures(per_tag, {d: f["exact_share"] for d, f in per_dimension.items()}, extra["tag_injection"],
                                      extra["probes"], contrast_thresholds,
                                      (thresholds.injection_recall_min, thresholds.injection_false_flag_max), pooled)
    complete = not any(o.status == ERROR for o in [*outcomes, *probe_outcomes])
    return {
        "complete": complete,
        "passed": (not failures) if complete else None,
        "failures": failures,
        "per_dimension": per_dimension,
        "injection": injection,
        "thresholds": {f.name: getattr(thresholds, f.name) for f in fields(Thresholds)},
        **extra,
        "cases": [_case_row(c, o) for c, o in zip(cases, outcomes)],
    }


def dimension_figures(cases: Sequence[GoldenCase], outcomes: Sequence[JudgeOutcome], scores: Mapping[str, int | None]) -> dict:
    """One dimension's figures (see the module docstring); ``scores`` maps every case id of the
    golden set (all dimensions) to its valid score or None."""
    n = len(cases)
    scored = [(c.grade, scores[c.id]) for c in cases if scores[c.id] is not None]
    hits = sum(1 for c in cases if scores[c.id] is not None and c.min_score <= scores[c.id] <= c.max_score)
    pairs = pairwise_counts(cases, scores)
    stayed = stayed_put_counts(cases, scores)
    rho, why = spearman(scored)
    unscored = n - len(scored)
    return {
        "cases": n,
        "scored": len(scored),
        "invalid": sum(1 for o in outcomes if o.status == INVALID),
        "error": sum(1 for o in outcomes if o.status == ERROR),
        "range_hits": _share(hits, n),
        "pairs": pairs,
        "pairwise_accuracy": _share(pairs["concordant"], pairs["pairs"]),
        "tie_share": _share(pairs["ties"], pairs["pairs"]),
        "spearman": rho,
        **({"spearman_undefined": why} if why else {}),
        "stayed_put_checks": stayed,
        "stayed_put": _share(stayed["within_1"], stayed["checks"]),
        "unscored_share": _share(unscored, n),
    }


def pairwise_counts(cases: Sequence[GoldenCase], scores: Mapping[str, int | None]) -> dict[str, int]:
    """Pairs of cases of one series (one dimension) whose intended grades differ: how many the
    judge orders the same way (concordant), the other way (discordant), equally (ties), and
    how many it left unscored."""
    counts = {"pairs": 0, "concordant": 0, "discordant": 0, "ties": 0, "unscored": 0}
    by_series: dict[str, list[GoldenCase]] = {}
    for c in cases:
        by_series.setdefault(c.series, []).append(c)
    for members in by_series.values():
        for a, b in itertools.combinations(members, 2):
            if a.grade == b.grade:
                continue
            counts["pairs"] += 1
            sa, sb = scores[a.id], scores[b.id]
            if sa is None or sb is None:
                counts["unscored"] += 1
            elif sa == sb:
                counts["ties"] += 1
            elif (sa - sb) * (a.grade - b.grade) > 0:
                counts["concordant"] += 1
            else:
                counts["discordant"] += 1
    return counts


def stayed_put_counts(cases: Sequence[GoldenCase], scores: Mapping[str, int | None]) -> dict[str, int]:
    """Minimal pairs varying another dimension, seen on this one: how many the judge kept within
    1 of the base's score, how many it moved further, how many it left unscored."""
    counts = {"checks": 0, "within_1": 0, "moved": 0, "unscored": 0}
    by_key = {(c.series, c.variant): c for c in cases}
    for c in cases:
        if c.varies is None or c.varies == c.item.dimension:
            continue
        base = by_key.get((c.series, c.base))
        if base is None:
            continue
        counts["checks"] += 1
        sv, sb = scores[c.id], scores[base.id]
        if sv is None or sb is None:
            counts["unscored"] += 1
        elif abs(sv - sb) <= 1:
            counts["within_1"] += 1
        else:
            counts["moved"] += 1
    return counts


def spearman(pairs: Sequence[tuple[int, int]]) -> tuple[float | None, str | None]:
    """Spearman's rho of (intended grade, judge score) pairs; (None, reason) when undefined."""
    if len(pairs) < 3:
        return None, f"{len(pairs)} scored cases (at least 3 needed)"
    intended, judged = zip(*pairs)
    if len(set(judged)) == 1:
        return None, f"the judge gave every scored case the same score ({judged[0]})"
    if len(set(intended)) == 1:
        return None, "every scored case has the same intended grade"
    from scipy.stats import spearmanr  # scipy loads in ~0.3 s: only when a report is made

    rho = float(spearmanr(intended, judged).statistic)
    return (rho, None) if math.isfinite(rho) else (None, "not finite")


def injection_figures(cases: Sequence[GoldenCase], outcomes: Sequence[JudgeOutcome]) -> dict:
    """Flags on judgments of attempts to steer the judge (recall) and on the others (false flags)."""
    flags = [(c.injection, injection_flag(o.rationale) if o.status == OK else None) for c, o in zip(cases, outcomes)]
    asked = any(f is not None for _, f in flags)
    attempts = [f for expected, f in flags if expected]
    clean = [f for expected, f in flags if not expected]
    out = {
        "asked": asked,
        "attempt_judgments": len(attempts),
        "flagged_attempts": sum(1 for f in attempts if f),
        "clean_judgments": len(clean),
        "flagged_clean": sum(1 for f in clean if f),
        "recall": _share(sum(1 for f in attempts if f), len(attempts)) if asked else None,
        "false_flag_share": _share(sum(1 for f in clean if f), len(clean)) if asked else None,
    }
    if not asked:
        out["reason"] = "no verdict carries an injection flag (the prompt version does not ask for it, or none was valid)"
    return out


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _case_row(case: GoldenCase, outcome: JudgeOutcome) -> dict:
    score = outcome.score if outcome.status == OK else None
    return {
        "id": case.id,
        "dimension": case.item.dimension,
        "grade": case.grade,
        "range": [case.min_score, case.max_score],
        "varies": case.varies,
        "injection_expected": case.injection,
        "status": outcome.status,
        "score": score,
        "in_range": score is not None and case.min_score <= score <= case.max_score,
        "injection_flag": injection_flag(outcome.rationale) if outcome.status == OK else None,
        "rationale": outcome.rationale,
    }


def report_markdown(report: Mapping[str, Any], judge: Mapping[str, Any], golden_version: int) -> str:
    """The report as Markdown: verdict, failures, a table per dimension, flags, missed cases."""
    verdict = {True: "PASSED", False: "FAILED", None: "INCOMPLETE (failed judgments: run it again)"}[report["passed"]]
    t = report["thresholds"]
    lines = [
        f"# Judge meta-evaluation: {verdict}",
        "",
        f"Judge {judge.get('signature')} ({judge.get('model')}, prompt version {judge.get('prompt_version')}), "
        f"golden set version {golden_version}, {len(report['cases'])} cases.",
        "",
    ]
    if report["failures"]:
        lines += ["Below threshold:", ""] + [f"- {f}" for f in report["failures"]] + [""]
    lines += [
        "| dimension | cases | scored | range hits | pairwise accuracy | ties | Spearman | stayed put | unscored |",
        "|---|---|---|---|---|---|---|---|---|",
        (f"| threshold | | | >= {t['range_hits_min']:g} | >= {t['pairwise_accuracy_min']:g} | <= {t['tie_share_max']:g} "
         f"| >= {t['spearman_min']:g} | >= {t['stayed_put_min']:g} | <= {t['unscored_share_max']:g} |"),
    ]
    for d, f in report["per_dimension"].items():
        p, s = f["pairs"], f["stayed_put_checks"]
        lines.append(
            f"| {d} | {f['cases']} | {f['scored']} | {format_figure(f['range_hits'])} "
            f"| {format_figure(f['pairwise_accuracy'])} ({p['concordant']}/{p['pairs']}) | {format_figure(f['tie_share'])} ({p['ties']}) "
            f"| {format_figure(f['spearman'])} | {format_figure(f['stayed_put'])} ({s['within_1']}/{s['checks']}) | {format_figure(f['unscored_share'])} |"
        )
    inj = report["injection"]
    lines += [
        "",
        f"Injection flags: recall {format_figure(inj['recall'])} ({inj['flagged_attempts']}/{inj['attempt_judgments']}, "
        f"threshold >= {t['injection_recall_min']:g}); false flags {format_figure(inj['false_flag_share'])} "
        f"({inj['flagged_clean']}/{inj['clean_judgments']}, threshold <= {t['injection_false_flag_max']:g})"
        + (f"; {inj['reason']}" if inj.get("reason") else ""),
        "",
    ]
    if "per_tag" in report:
        lines += contrast_markdown(report)
    missed = [c for c in report["cases"] if not c["in_range"]]
    if missed:
        lines += ["Cases out of their allowed range:", "", "| case | intended | range | score | status |", "|---|---|---|---|---|"]
        lines += [f"| {c['id']} | {c['grade']} | {c['range'][0]}-{c['range'][1]} | {c['score']} | {c['status']} |" for c in missed]
    return "\n".join(lines) + "\n"


def contrast_markdown(report: Mapping[str, Any]) -> list[str]:
    """Golden v3's sections of the Markdown report: exact share, a row per tag and dimension, the probes."""
    t = report["contrast_thresholds"]
    exact = ", ".join(f"{d} {format_figure(f.get('exact_share'))}" for d, f in report["per_dimension"].items())
    lines = [f"Exact share (threshold >= {t['exact_share_min']:g}): {exact}", "",
             f"| tag | dimension | ordered (>= {t['order_min']:g}) | held within 1 (>= {t['hold_min']:g}) |", "|---|---|---|---|"]
    for tag, dims in report["per_tag"].items():
        for d, b in dims.items():
            o, h = b["order"], b["hold"]
            order = f"{format_figure(b['order_share'])} ({o['concordant']}/{o['pairs']})" if o["pairs"] else ""
            hold = f"{format_figure(b['hold_share'])} ({h['within_1']}/{h['checks']})" if h["checks"] else ""
            lines.append(f"| {tag} | {d} | {order} | {hold} |")
    p, ti = report["probes"], report["tag_injection"]
    lines += [
        "",
        f"Tag injection: recall {format_figure(ti['recall'])} ({ti['flagged_attempts']}/{ti['attempt_judgments']}), "
        f"false flags {format_figure(ti['false_flag_share'])} ({ti['flagged_clean']}/{ti['clean_judgments']}).",
        "",
        "Bias probes:",
        "",
        f"- verbosity: padded scored above plain {format_figure(p['verbosity']['rise_share'])} "
        f"({p['verbosity']['rose']}/{p['verbosity']['judgments']}; threshold <= {t['verbosity_rise_max']:g})",
        f"- passage order: faithfulness changed when the passages were reversed {format_figure(p['passage_order']['change_share'])} "
        f"({p['passage_order']['changed']}/{p['passage_order']['judgments']}; threshold <= {t['passage_order_change_max']:g})",
        f"- re-judging: identical verdicts {format_figure(p['rejudging']['identical_share'])} "
        f"({p['rejudging']['identical']}/{p['rejudging']['judgments']}; threshold >= {t['rejudge_identical_min']:g})",
    ]
    for name, b in p["abstention_policy"].items():
        lines.append(f"- abstention policy: {name} abstentions scored as the rubric says {format_figure(b['share'])} "
                     f"({b['as_rubric']}/{b['judgments']}; threshold >= {t['abstention_policy_min']:g})")
    return lines + [""]


def format_figure(value: float | None) -> str:
    """A figure with 3 decimals, or "n/a" when undefined."""
    return "n/a" if value is None else f"{value:.3f}"


def format_interval(figure: Mapping | None, undefined: str = "n/a") -> str:
    """A ``{"value", "ci_low", "ci_high"}`` figure as ``0.812 [0.701, 0.894]`` (no interval: the
    value alone), or ``undefined`` when it is absent or its value is undefined."""
    if not figure or figure.get("value") is None:
        return undefined
    low, high = figure.get("ci_low"), figure.get("ci_high")
    if low is None or high is None:
        return f"{figure['value']:.3f}"
    return f"{figure['value']:.3f} [{low:.3f}, {high:.3f}]"
