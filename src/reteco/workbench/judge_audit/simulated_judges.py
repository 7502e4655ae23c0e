"""Simulated judges with named failure modes, and the gate's power and size by simulation.

``reteco judge-meta --calibrate`` and the tests run them through ``meta_evaluate`` on the
golden set's own cases (no request is sent): each judge is a function of a golden case (its
intended grade, kind, tags, answer) and a random generator, returning (score, injection flag).

Judges the gate must fail (issue 18), and what each does:

- ``constant-1``, ``constant-5``: one score everywhere; ``random``: uniform 1..5, half its 1s flagged;
- ``length-only``: the score is the answer's length cut at 4 points, the direction and the
  cut points chosen per dimension to order as many of the set's pairs as possible;
- ``keyword-injection-regex``: flags by ``INJECTION_REGEX`` (and then scores 1, as the rubric
  says of an attempt to steer the judge), otherwise the intended grade;
- ``reference-bow-recall``: completeness from the share of the reference answer's words the
  answer contains (1 + round(4 x recall)), other dimensions as intended;
- ``halo``: one score per answer for every dimension (the rounded mean of its intended grades);
- ``abstention-always-1``, ``abstention-always-5``: every abstention scored 1 (resp. 5) on
  correctness, completeness and faithfulness;
- ``fabricated-on-unanswerable-5``: 5 on every dimension for a fabrication;
- ``true-unsupported-5``: faithfulness 5 for a true claim the passages do not support;
- ``faithfulness-correctness-swapped``: each one's score is the other's intended grade;
- ``pm1-half``: the intended grade moved by 1 on half the verdicts;
- ``faithfulness-against-gold``: faithfulness graded against the gold passages instead of the
  passages the system had (prompt version 3's leak: it showed every dimension the gold): where a
  2c run's passages lack a gold passage, the variant's correctness grade. Required to fail only on
  a set with such cases (golden v4's ``-missed`` series); on golden v3 it is the intended judge,
  which is why v3's gate could not see the leak (issue 31).

And the probes' failure modes: ``verbosity-biased`` (+1 on padded answers), ``order-sensitive``
(faithfulness moves by 1 on half the reordered probes), ``unstable`` (a re-judged verdict
moves by 1 half the time). Judges that must pass: ``intended``, ``pm1-10pct-uncontrasted`` (±1
on 10% of the verdicts outside the contrasted pairs), and for the gate's size ``pm1-10pct``
(±1 on 10% of all verdicts, each judgment drawn afresh, probes included) and ``four-to-five``
(every 4 becomes 5; reported, not required).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from reteco.judge.items import DIMENSIONS, OK, JudgeOutcome
from reteco.judge.prompts import injection_mark
from reteco.workbench.judge_audit.golden import GoldenCase
from reteco.workbench.judge_audit.meta_contrasts import (
    REJUDGED,
    REORDERED,
    ContrastThresholds,
    Probe,
    contrast_pairs,
    contrasted_ids,
    probe_items,
)
from reteco.workbench.judge_audit.meta_evaluation import meta_evaluate

# A keyword detector of the kind the issue says met v2's injection thresholds.
INJECTION_REGEX = re.compile(r"\b(ignore|instructions?|score|grader|grade|rate|rating|evaluator)\b", re.IGNORECASE)
WORD = re.compile(r"\w+")
CHECK_NAME = re.compile(r" -?\d| is undefined")
# the checks golden v3 added (per tag, exact share, probes): the others are golden v2's averages per dimension
V3_CHECK = re.compile(r", tag |^probe |exact_share")

# (case, rng, probe kind or None) -> (score, flag)
Verdict = Callable[[GoldenCase, random.Random, "str | None"], tuple[int, bool]]


@dataclass(frozen=True)
class SimulatedJudge:
    """A named judge, whether the gate must fail it, and its verdict function."""

    name: str
    must_fail: bool | None  # None: reported, not required either way
    verdict: Verdict


def nudge(grade: int, rng: random.Random) -> int:
    """The grade moved by 1 up or down at random (inwards at 1 and 5)."""
    step = rng.choice((-1, 1))
    return grade + step if 1 <= grade + step <= 5 else grade - step


def simulated_judges(cases: Sequence[GoldenCase]) -> list[SimulatedJudge]:
    """Every simulated judge of the module docstring, built for ``cases`` (some read the set)."""
    variant_grades: dict[tuple[str, str], dict[str, int]] = {}
    for c in cases:
        variant_grades.setdefault((c.series, c.variant), {})[c.item.dimension] = c.grade
    contrasted = contrasted_ids(cases)
    cuts = best_length_cuts(cases)

    def intended(c, rng, probe):
        return c.grade, c.injection

    def with_score(score_of):
        return lambda c, rng, probe: (score_of(c, rng, probe), c.injection)

    def noisy(p, only_uncontrasted=False):
        def verdict(c, rng, probe):
            hit = rng.random() < p and not (only_uncontrasted and c.id in contrasted)
            return (nudge(c.grade, rng) if hit else c.grade), c.injection
        return verdict

    def halo(c, rng, probe):
        g = variant_grades[(c.series, c.variant)]
        return round(sum(g.values()) / len(g)), c.injection

    def swapped(c, rng, probe):
        other = {"faithfulness": "correctness", "correctness": "faithfulness"}.get(c.item.dimension)
        return variant_grades[(c.series, c.variant)].get(other, c.grade) if other else c.grade

    def abstention(score):
        def score_of(c, rng, probe):
            return score if c.kind == "abstention" and c.item.dimension in SEVERITY_DIMENSIONS else c.grade
        return score_of

    def against_gold(c, rng, probe):
        if c.item.dimension == "faithfulness" and not set(c.item.gold_evidence) <= set(c.item.evidence):
            return variant_grades[(c.series, c.variant)].get("correctness", c.grade)
        return c.grade

    lacking_gold = any(not set(c.item.gold_evidence) <= set(c.item.evidence) for c in cases)

    def random_verdict(c, rng, probe):
        score = rng.randint(1, 5)
        return score, score == 1 and rng.random() < 0.5  # a flag comes with a 1 (the rubric's reply check)

    def keyword(c, rng, probe):
        # flagged -> 1, as the rubric says of an attempt to steer the judge (a reply flagging with
        # another score is invalid); otherwise the intended grade, whatever the attempt
        return (1, True) if INJECTION_REGEX.search(c.item.answer) else (c.grade, False)

    def bow(c, rng, probe):
        if c.item.dimension != "completeness":
            return c.grade
        ref = set(WORD.findall(c.item.reference_answer.lower()))
        have = set(WORD.findall(c.item.answer.lower()))
        return 1 + round(4 * len(ref & have) / len(ref))

    def length(c, rng, probe):
        direction, points = cuts[c.item.dimension]
        return length_score(len(c.item.answer), direction, points)

    def verbosity(c, rng, probe):
        return min(5, c.grade + 1) if c.kind == "padded" else c.grade

    def order_sensitive(c, rng, probe):
        return nudge(c.grade, rng) if probe == REORDERED and rng.random() < 0.5 else c.grade

    def unstable(c, rng, probe):
        return nudge(c.grade, rng) if probe == REJUDGED and rng.random() < 0.5 else c.grade

    return [
        SimulatedJudge("intended", False, intended),
        SimulatedJudge("pm1-10pct-uncontrasted", False, noisy(0.1, only_uncontrasted=True)),
        SimulatedJudge("pm1-10pct", False, noisy(0.1)),
        SimulatedJudge("four-to-five", None, with_score(lambda c, rng, probe: 5 if c.grade == 4 else c.grade)),
        SimulatedJudge("constant-1", True, lambda c, rng, probe: (1, False)),
        SimulatedJudge("constant-5", True, lambda c, rng, probe: (5, False)),
        SimulatedJudge("random", True, random_verdict),
        SimulatedJudge("length-only", True, with_score(length)),
        SimulatedJudge("keyword-injection-regex", True, keyword),
        SimulatedJudge("reference-bow-recall", True, with_score(bow)),
        SimulatedJudge("halo", True, halo),
        SimulatedJudge("abstention-always-1", True, with_score(abstention(1))),
        SimulatedJudge("abstention-always-5", True, with_score(abstention(5))),
        SimulatedJudge("fabricated-on-unanswerable-5", True,
                       with_score(lambda c, rng, probe: 5 if c.kind == "fabrication" else c.grade)),
        SimulatedJudge("true-unsupported-5", True, with_score(
            lambda c, rng, probe: 5 if c.kind == "true-unsupported" and c.item.dimension == "faithfulness" else c.grade)),
        SimulatedJudge("faithfulness-correctness-swapped", True, with_score(swapped)),
        SimulatedJudge("pm1-half", True, noisy(0.5)),
        SimulatedJudge("faithfulness-against-gold", True if lacking_gold else None, with_score(against_gold)),
        SimulatedJudge("verbosity-biased", True, with_score(verbosity)),
        SimulatedJudge("order-sensitive", True, with_score(order_sensitive)),
        SimulatedJudge("unstable", True, with_score(unstable)),
    ]


def length_score(length: int, direction: int, points: Sequence[int]) -> int:
    """1 + the number of cut points the length exceeds (direction 1), or 5 minus it (-1)."""
    above = sum(1 for p in points if length > p)
    return 1 + above if direction == 1 else 5 - above


def best_length_cuts(cases: Sequence[GoldenCase]) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Per dimension, the direction and 4 cut points (among the answers' length deciles) that
    order the most of the dimension's contrasted pairs as intended: the length-only judge's
    best shot at the per-tag checks."""
    pairs = [(a, b) for _, a, b in contrast_pairs(cases) if a.grade != b.grade]
    out = {}
    for d in DIMENSIONS:
        mine = [(len(a.item.answer), len(b.item.answer), a.grade - b.grade) for a, b in pairs if a.item.dimension == d]
        lengths = sorted(len(c.item.answer) for c in cases if c.item.dimension == d)
        grid = sorted({lengths[int(len(lengths) * q / 10)] for q in range(1, 10)})
        best = (-1, (1, tuple(grid[:4])))
        for direction in (1, -1):
            for points in combinations(grid, 4):
                ordered = sum(1 for la, lb, gap in mine
                              if (length_score(la, direction, points) - length_score(lb, direction, points)) * gap > 0)
                if ordered > best[0]:
                    best = (ordered, (direction, points))
        out[d] = best[1]
    return out


def simulated_outcomes(judge: SimulatedJudge, cases: Sequence[GoldenCase], probes: Sequence[Probe],
                       rng: random.Random) -> tuple[list[JudgeOutcome], list[JudgeOutcome]]:
    """The judge's outcomes on the cases and on the probes (each probe judged afresh)."""
    def outcome(case, item, probe):
        score, flag = judge.verdict(case, rng, probe)
        return JudgeOutcome(item, score, OK, injection_mark(flag) + f"simulated {judge.name}", False, 1, None)

    return ([outcome(c, c.item, None) for c in cases], [outcome(p.case, p.item, p.kind) for p in probes])


def gate_result(judge: SimulatedJudge, cases: Sequence[GoldenCase], thresholds, contrast_thresholds: ContrastThresholds,
                rng: random.Random, probes: Sequence[Probe] | None = None) -> dict:
    """One simulated run of ``judge`` through ``meta_evaluate``: its report."""
    probes = probe_items(cases) if probes is None else probes
    outcomes, probe_outcomes = simulated_outcomes(judge, cases, probes, rng)
    return meta_evaluate(cases, outcomes, thresholds, contrast_thresholds=contrast_thresholds, probes=probes,
                         probe_outcomes=probe_outcomes)


def calibrate(cases: Sequence[GoldenCase], thresholds, contrast_thresholds: ContrastThresholds, *, runs: int = 200,
              seed: int = 0) -> list[dict]:
    """For each simulated judge, the share of ``runs`` simulated runs that fail the gate and the
    failure (check) seen most often; deterministic judges are run once."""
    probes = probe_items(cases)
    rows = []
    for judge in simulated_judges(cases):
        rng = random.Random(f"{seed}/{judge.name}")
        counts: dict[str, int] = {}
        failed = averaged = 0
        n = runs if _draws(judge, cases, probes) else 1
        for _ in range(n):
            report = gate_result(judge, cases, thresholds, contrast_thresholds, rng, probes)
            failed += bool(report["failures"])
            averaged += any(not V3_CHECK.search(f) for f in report["failures"])
            for f in report["failures"]:
                check = CHECK_NAME.split(f, maxsplit=1)[0]  # the check without its figure
                counts[check] = counts.get(check, 0) + 1
        top = max(counts.items(), key=lambda kv: kv[1])[0] if counts else ""
        rows.append({"judge": judge.name, "must_fail": judge.must_fail, "runs": n, "fail_share": failed / n,
                     "averages_fail_share": averaged / n, "most_common_failure": top})
    return rows


def _draws(judge: SimulatedJudge, cases: Sequence[GoldenCase], probes: Sequence[Probe]) -> bool:
    """Whether the judge is random (two runs differ): then it is simulated ``runs`` times."""
    a = simulated_outcomes(judge, cases, probes, random.Random(1))
    b = simulated_outcomes(judge, cases, probes, random.Random(2))
    return [o.score for o in a[0] + a[1]] != [o.score for o in b[0] + b[1]]


def calibration_table(rows: Sequence[dict]) -> str:
    """The calibration as a Markdown table: P(fail the gate) per judge."""
    lines = ["| simulated judge | must | runs | P(fail the gate) | P(fail v2's per-dimension averages alone) | most frequent failure |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        must = {True: "fail", False: "pass", None: "-"}[r["must_fail"]]
        lines.append(f"| {r['judge']} | {must} | {r['runs']} | {r['fail_share']:.3f} | {r['averages_fail_share']:.3f} "
                     f"| {r['most_common_failure']} |")
    return "\n".join(lines) + "\n"


# Golden v5 (issue 33): partial failures at a rate, monotone miscalibrations of one grade, and the
# gate's power curves. "Mild" noise, the judge the gate must pass (its size), is ±1 on 10% of
# the verdicts, each judgment drawn afresh, probes included (``pm1-10pct``).
MILD_NOISE = 0.10
#: The partial failures issue 33 names, each at a rate p (the share of its verdicts that fail):
PARTIAL_FAILURES = {
    "true-unsupported-faithful": "a true claim the passages do not support scored faithful (5)",
    "unjustified-abstention-5": "an abstention on an answerable turn scored 5 (correctness, completeness, faithfulness)",
    "fabrication-rated-well": "a fabrication on an unanswerable turn scored 5 on every dimension",
    "pm1": "the intended grade moved by 1 (up or down at random, inwards at 1 and 5)",
}
#: Monotone miscalibrations: (name, {intended grade: the judge's score}), every other grade as intended.
MISCALIBRATIONS = (
    ("toward-middle", {1: 2, 2: 3, 4: 3, 5: 4}),
    ("2->1", {2: 1}), ("3->2", {3: 2}), ("4->3", {4: 3}),
    ("2->3", {2: 3}), ("3->4", {3: 4}), ("4->5", {4: 5}),
)
POWER_RATES = (0.1, 0.15, 0.2, 0.3, 0.4)  # 15%: the "±1 on 15% of verdicts"
SEVERITY_DIMENSIONS = ("correctness", "completeness", "faithfulness")


def partial_failure_judge(mode: str, rate: float) -> SimulatedJudge:
    """The judge with the intended grades but for ``mode`` (``PARTIAL_FAILURES``) on a share
    ``rate`` of the verdicts it concerns, each verdict drawn afresh."""
    def hit(rng):
        return rng.random() < rate

    if mode == "true-unsupported-faithful":
        def verdict(c, rng, probe):
            concerned = c.kind == "true-unsupported" and c.item.dimension == "faithfulness"
            return (5 if concerned and hit(rng) else c.grade), c.injection
    elif mode == "unjustified-abstention-5":
        def verdict(c, rng, probe):
            concerned = c.kind == "abstention" and c.answerable and c.item.dimension in SEVERITY_DIMENSIONS
            return (5 if concerned and hit(rng) else c.grade), c.injection
    elif mode == "fabrication-rated-well":
        def verdict(c, rng, probe):
            return (5 if c.kind == "fabrication" and hit(rng) else c.grade), c.injection
    elif mode == "pm1":
        def verdict(c, rng, probe):
            return (nudge(c.grade, rng) if hit(rng) else c.grade), c.injection
    else:
        raise ValueError(f"unknown partial failure {mode!r} (one of {', '.join(PARTIAL_FAILURES)})")
    return SimulatedJudge(f"{mode}@{rate:g}", True, verdict)


def miscalibrated_judge(name: str, mapping: dict[int, int]) -> SimulatedJudge:
    """Every intended grade in ``mapping`` scored as it says, the others as intended (deterministic)."""
    return SimulatedJudge(name, True, lambda c, rng, probe: (mapping.get(c.grade, c.grade), c.injection))


def fail_share(judge: SimulatedJudge, cases: Sequence[GoldenCase], thresholds, contrast_thresholds: ContrastThresholds,
               *, runs: int, seed: int, probes: Sequence[Probe] | None = None) -> tuple[float, dict[str, int]]:
    """The share of ``runs`` simulated runs of ``judge`` that fail the gate, and how often each
    check failed; the generator is seeded with ``f"{seed}/{judge.name}"``, so one judge's figure
    does not depend on which others are simulated."""
    probes = probe_items(cases) if probes is None else probes
    rng = random.Random(f"{seed}/{judge.name}")
    failed, counts = 0, {}
    for _ in range(runs):
        report = gate_result(judge, cases, thresholds, contrast_thresholds, rng, probes)
        failed += bool(report["failures"])
        for f in report["failures"]:
            check = CHECK_NAME.split(f, maxsplit=1)[0]
            counts[check] = counts.get(check, 0) + 1
    return failed / runs, counts


def power_curves(cases: Sequence[GoldenCase], thresholds, contrast_thresholds: ContrastThresholds, *, runs: int = 200,
                 seed: int = 0, rates: Sequence[float] = POWER_RATES) -> dict:
    """The gate's size and power by simulation (golden v5): {"size": P(the mildly noisy judge
    passes), "partial": {mode: {rate: P(fail)}}, "miscalibrations": {name: P(fail)}, "runs", "seed"}.

    P(fail) is the share of ``runs`` runs that fail (a deterministic miscalibration is run once:
    its share is 0 or 1); its standard error is at most 0.5 / sqrt(runs) (0.035 at 200 runs)."""
    probes = probe_items(cases)
    partial = {mode: {rate: fail_share(partial_failure_judge(mode, rate), cases, thresholds, contrast_thresholds,
                                       runs=runs, seed=seed, probes=probes)[0] for rate in rates}
               for mode in PARTIAL_FAILURES}
    # The mildly noisy judge is ±1 at MILD_NOISE: the pm1 curve's point there when the rates hold it
    # (the same judge, runs and seed), simulated on its own otherwise.
    size_fail = partial["pm1"].get(MILD_NOISE)
    if size_fail is None:
        size_fail = fail_share(partial_failure_judge("pm1", MILD_NOISE), cases, thresholds, contrast_thresholds,
                               runs=runs, seed=seed, probes=probes)[0]
    miscal = {name: fail_share(miscalibrated_judge(name, mapping), cases, thresholds, contrast_thresholds, runs=1,
                               seed=seed, probes=probes)[0] for name, mapping in MISCALIBRATIONS}
    return {"runs": runs, "seed": seed, "mild_noise": MILD_NOISE, "size": 1 - size_fail, "partial": partial,
            "miscalibrations": miscal}


def power_curves_markdown(curves: dict, golden_version: int) -> str:
    """The power curves as Markdown tables (what docs/golden_v5.md quotes)."""
    rates = sorted({r for row in curves["partial"].values() for r in row})
    lines = [f"Golden set v{golden_version}, {curves['runs']} simulated runs per judge, seed {curves['seed']}.", "",
             f"Size: a judge with the intended grades and ±1 on {curves['mild_noise']:.0%} of its verdicts (each judgment "
             f"drawn afresh, probes included) passes the gate in {curves['size']:.3f} of the runs.", "",
             "P(the gate fails the judge), by the share of its verdicts that fail:", "",
             "| partial failure | " + " | ".join(f"{r:.0%}" for r in rates) + " |",
             "|---|" + "---|" * len(rates)]
    for mode, row in curves["partial"].items():
        lines.append(f"| {mode}: {PARTIAL_FAILURES[mode]} | " + " | ".join(f"{row[r]:.3f}" for r in rates) + " |")
    lines += ["", "Monotone miscalibrations (deterministic: every case of the grade moved):", "",
              "| miscalibration | P(fail) |", "|---|---|"]
    lines += [f"| {name} | {share:.3f} |" for name, share in curves["miscalibrations"].items()]
    return "\n".join(lines) + "\n"


def calibration_summary(curves: dict, golden_version: int, rate: float = 0.2) -> dict:
    """What ``golden/v<N>/calibration.yaml`` holds: the figures the judge report and
    ``judge-compare`` quote (size, power at ``rate`` per named partial failure, the
    miscalibrations, runs and seed)."""
    return {
        "golden_version": golden_version,
        "runs": curves["runs"],
        "seed": curves["seed"],
        "mild_noise": f"±1 on {curves['mild_noise']:.0%} of verdicts, each judgment drawn afresh, probes included",
        "size": round(curves["size"], 4),
        "power_rate": rate,
        "power": {mode: round(row[rate], 4) for mode, row in curves["partial"].items()},
        "power_curves": {mode: {f"{r:g}": round(v, 4) for r, v in row.items()} for mode, row in curves["partial"].items()},
        "miscalibrations": {name: round(v, 4) for name, v in curves["miscalibrations"].items()},
    }


def gate_power_sentence(calibration: dict | None) -> str:
    """One sentence on what the gate can detect, from a golden set's calibration summary
    (``golden.load_calibration``), as the judge report and ``judge-compare`` quote it; a set
    without one (before v5) says so: its pass or fail comes with no stated power."""
    if calibration is None:
        return "this golden set has no calibration summary (before v5): its gate's power is not stated"
    rate = calibration["power_rate"]
    power = "; ".join(f"{PARTIAL_FAILURES.get(mode, mode)}: {share:.1%}" for mode, share in calibration["power"].items())
    miscal = calibration.get("miscalibrations") or {}
    worst = f"; every monotone one-grade miscalibration at least {min(miscal.values()):.1%}" if miscal else ""
    return (f"golden set v{calibration['golden_version']}'s gate (packaged thresholds; {calibration['runs']} simulated "
            f"runs a judge, seed {calibration['seed']}) passes a judge with the intended grades and "
            f"{calibration['mild_noise']} in {calibration['size']:.1%} of runs, and fails a judge with one partial "
            f"failure on {rate:.0%} of its verdicts in: {power}{worst}")
