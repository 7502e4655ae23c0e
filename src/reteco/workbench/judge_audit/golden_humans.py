"""The humans' blind grades of a golden set against each other and against the intended grades
(``reteco judge-meta --human-grades``), and the golden set re-graded by their consensus for the
gate (``--gate-against consensus``).

The grades are read by ``golden_sheet.read_grade_sheets`` (keyed by case id). Per dimension, and
per contrast tag and dimension (golden v3 on; a case counts under each tag it carries), over the
cases at least one annotator graded:

- ``inter_annotator``: the annotators' mean pairwise quadratic-weighted kappa,
  ``(1 / |P|) sum_{(a, b)} kappa_w(a, b)`` over the annotator pairs P, each pair on the cases both
  graded (Light 1971's average of pairwise kappas, with Cohen's 1968 quadratic weights in each
  pair; ``metrics.label_agreement.mean_pairwise_kappa_with_interval``). Chosen over Krippendorff's
  alpha because it is the same statistic as the figures below (so the humans' agreement with
  each other and with the intended grades read on one scale) and, with two annotators, it is
  their Cohen's weighted kappa. Undefined with fewer than two annotators.
- ``annotators``: each annotator's quadratic-weighted kappa with the intended grades, on the cases
  they graded; ``consensus``: the same for the consensus grade
  (``metrics.label_agreement.kappa_with_interval``: ``1 - sum w O / sum w E``, ``w_ij = (i - j)^2``
  on the grades 1..5).
- ``consensus_in_range``: the share of cases whose consensus lies in the intended grade's
  allowed range; ``consensus_exact``: the share equal to the intended grade.

Every kappa has a 95% bootstrap interval: ``resamples`` draws of the group's cases with
replacement (each case its own cluster), from ``numpy.random.default_rng(seed)``; the 2.5th and
97.5th percentiles of the resampled kappas (``numpy.quantile``, linear) re-centred on the
estimate and clipped to [-1, 1] (``metrics.significance.centred_percentile_interval``, the
project's rule for every agreement interval). A kappa is undefined (None, with the reason) when
its expected disagreement is 0, e.g. both sides one grade throughout. On a group whose intended
grades are all one grade (many tags on one dimension), kappa with the intended grades is 0 or
undefined whatever the humans do: there the in-range and exact shares are the figures to read.

**Consensus** (``CONSENSUS_RULE``): the median of the case's grades; with an even number of grades
whose middle two differ by an odd amount the median is a half point, rounded half up
(``floor(m + 0.5)``: 3.5 -> 4), as ``reteco agreement`` rounds the humans' median. A case graded by
one annotator has that grade as its consensus.

``disagreements`` lists every case whose consensus falls outside its intended grade's allowed
range: its id, dimension, tags, intended grade and range, every annotator's grade.

``consensus_cases`` re-grades the golden set for ``--gate-against consensus``: each graded case
takes its consensus as its grade and that grade's allowed range by the golden rule
(``golden.allowed_range``: N-1..N+1 within 1..5). A case no annotator graded keeps its intended
grade and range: the gate's pairs, tags and probes stay whole (a case left out would drop every
pair it is in, and an undefined figure fails the gate), and the report counts such cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import median

import numpy as np

from reteco.judge.items import DIMENSIONS
from reteco.metrics.agreement import DEFAULT_RESAMPLES, round_half_up
from reteco.metrics.label_agreement import kappa_with_interval, mean_pairwise_kappa_with_interval
from reteco.workbench.judge_audit.golden import GoldenCase, allowed_range
from reteco.workbench.judge_audit.golden_sheet import HumanGrades
from reteco.workbench.judge_audit.meta_evaluation import format_interval

LEVELS = 5  # grades 1..5 as kappa's levels 0..4
CONSENSUS_RULE = ("the median of the case's grades; a half-point median (an even number of grades) rounded half up "
                  "(floor(m + 0.5)), as `reteco agreement` rounds the humans' median")
INTERVAL_RULE = ("95% bootstrap over the group's cases (each case its own cluster), numpy.random.default_rng(seed): "
                 "the 2.5th and 97.5th percentiles of the resampled kappas re-centred on the estimate, clipped to [-1, 1]")
INTER_ANNOTATOR_RULE = ("mean over annotator pairs of the quadratic-weighted kappa on the cases both graded "
                        "(Light 1971; Cohen 1968's weights)")


def consensus_grade(grades: Sequence[int]) -> int:
    """The consensus of one case's grades (``CONSENSUS_RULE``)."""
    return int(round_half_up(median(grades)))


def consensus_grades(human: HumanGrades) -> dict[str, int]:
    """Case id -> the consensus of its grades, for every case graded at least once."""
    return {case: consensus_grade(list(by.values())) for case, by in human.grades.items()}


def human_figures(cases: Sequence[GoldenCase], human: HumanGrades, *, resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0) -> dict:
    """The report (module docstring): ``{"annotators", "cases", "graded_cases", "method",
    "per_dimension", "per_tag", "disagreements"}``."""
    consensus = consensus_grades(human)
    graded = [c for c in cases if c.id in consensus]
    per_dimension = {}
    for d in DIMENSIONS:
        mine = [c for c in graded if c.item.dimension == d]
        if mine:
            per_dimension[d] = group_figures(mine, human, consensus, resamples=resamples, seed=seed)
    per_tag: dict[str, dict[str, dict]] = {}
    for tag in sorted({t for c in graded for t in c.tags}):
        for d in DIMENSIONS:
            mine = [c for c in graded if tag in c.tags and c.item.dimension == d]
            if mine:
                per_tag.setdefault(tag, {})[d] = group_figures(mine, human, consensus, resamples=resamples, seed=seed)
    disagreements = [
        {"id": c.id, "dimension": c.item.dimension, "tags": list(c.tags), "intended": c.grade,
         "range": [c.min_score, c.max_score], "grades": dict(sorted(human.grades[c.id].items())),
         "consensus": consensus[c.id]}
        for c in graded if not c.min_score <= consensus[c.id] <= c.max_score
    ]
    return {
        "annotators": list(human.annotators),
        "cases": len(cases),
        "graded_cases": len(graded),
        "ungraded_cases": len(cases) - len(graded),
        "rows_read": human.rows,
        "blank_grades": human.blank,
        "method": {"kappa": "quadratic-weighted (Cohen 1968) on grades 1..5", "inter_annotator": INTER_ANNOTATOR_RULE,
                   "consensus": CONSENSUS_RULE, "interval": INTERVAL_RULE, "resamples": resamples, "seed": seed},
        "per_dimension": per_dimension,
        "per_tag": per_tag,
        "disagreements": disagreements,
    }


def group_figures(group: Sequence[GoldenCase], human: HumanGrades, consensus: Mapping[str, int], *,
                  resamples: int, seed: int) -> dict:
    """One group's figures (one dimension, or one tag and dimension): module docstring."""
    annotators = human.annotators
    matrix = np.full((len(group), len(annotators)), -1, dtype=np.int64)
    for u, case in enumerate(group):
        for a, name in enumerate(annotators):
            if name in human.grades[case.id]:
                matrix[u, a] = human.grades[case.id][name] - 1
    inter = mean_pairwise_kappa_with_interval(matrix, LEVELS, resamples=resamples, seed=seed)
    for pair in inter["pairs"]:
        pair["raters"] = [annotators[i] for i in pair["raters"]]
    intended = np.array([c.grade - 1 for c in group])
    ids = [c.id for c in group]
    each = {}
    for a, name in enumerate(annotators):
        rows = np.flatnonzero(matrix[:, a] >= 0)
        if len(rows):
            each[name] = kappa_with_interval(matrix[rows, a], intended[rows], [ids[i] for i in rows], LEVELS,
                                             resamples=resamples, seed=seed)
    agreed = [consensus[c.id] for c in group]
    return {
        "cases": len(group),
        "inter_annotator": inter,
        "annotators": each,
        "consensus": kappa_with_interval(np.array(agreed) - 1, intended, ids, LEVELS, resamples=resamples, seed=seed),
        "consensus_in_range": sum(c.min_score <= g <= c.max_score for c, g in zip(group, agreed)) / len(group),
        "consensus_exact": sum(g == c.grade for c, g in zip(group, agreed)) / len(group),
    }


def consensus_cases(cases: Sequence[GoldenCase], consensus: Mapping[str, int]) -> list[GoldenCase]:
    """The golden cases re-graded by the humans' consensus (module docstring): a graded case's
    grade is its consensus, its range ``allowed_range`` of it; an ungraded case is unchanged."""
    out = []
    for c in cases:
        if c.id in consensus:
            low, high = allowed_range(consensus[c.id])
            c = replace(c, grade=consensus[c.id], min_score=low, max_score=high)
        out.append(c)
    return out


def human_markdown(report: Mapping, golden_version: int) -> str:
    """The report as Markdown: the method, a table per dimension and per tag, the disagreements."""
    names = report["annotators"]
    m = report["method"]
    lines = [
        f"# Golden set {golden_version}: blind human grades",
        "",
        f"{len(names)} annotator(s) ({', '.join(names)}); {report['graded_cases']} of {report['cases']} cases graded "
        f"({report['ungraded_cases']} not graded; {report['blank_grades']} blank grades in {report['rows_read']} rows).",
        "",
        f"Kappa: {m['kappa']}. Between annotators: {m['inter_annotator']}. Consensus: {m['consensus']}. "
        f"Intervals: {m['interval']}; {m['resamples']} resamples, seed {m['seed']}.",
        "",
        "## Per dimension",
        "",
    ]
    header = ["cases", "annotators' kappa", *(f"{n} vs intended" for n in names), "consensus vs intended",
              "consensus in range", "consensus exact"]
    lines += ["| dimension | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    lines += [f"| {d} | {_cells(f, names)} |" for d, f in report["per_dimension"].items()]
    if report["per_tag"]:
        lines += ["", "## Per contrast tag", "", "| tag | dimension | " + " | ".join(header) + " |",
                  "|---" * (len(header) + 2) + "|"]
        lines += [f"| {tag} | {d} | {_cells(f, names)} |" for tag, dims in report["per_tag"].items() for d, f in dims.items()]
    lines += ["", "## Cases whose consensus is outside the intended grade's allowed range", ""]
    if report["disagreements"]:
        lines += ["| case | dimension | tags | intended | range | grades | consensus |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {x['id']} | {x['dimension']} | {', '.join(x['tags'])} | {x['intended']} | {x['range'][0]}-{x['range'][1]} "
                  f"| {', '.join(f'{a} {g}' for a, g in x['grades'].items())} | {x['consensus']} |"
                  for x in report["disagreements"]]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _cells(f: Mapping, names: Sequence[str]) -> str:
    each = [format_interval(f["annotators"].get(n)) for n in names]
    return " | ".join([str(f["cases"]), format_interval(f["inter_annotator"]), *each, format_interval(f["consensus"]),
                       f"{f['consensus_in_range']:.3f}", f"{f['consensus_exact']:.3f}"])
