"""Human-corrected system scores: the judge's figures with the judge's error inside their intervals.

``reteco leaderboard ... --human-ratings H.csv [H2.csv ...] --key KEY.csv`` (issues 19, 32). The
humans' ratings of ``reteco human-sample``'s blind sample (the ``agreement`` CSV format, keyed
by item code) are joined through the sample's key file (``key.csv``: item code -> submission,
turn, and the item's ``inclusion_probability`` in the sample's design) to the leaderboard's
submissions (the key's ``submission`` is the submission's file or folder name) and turns. Per
system, for each judge dimension and for ``judge_mean``, on the normalised (s - 1) / 4 scale:

- **corrected** (prediction-powered, lambda = 1; ``reteco.metrics.prediction_powered.
  small_sample_means``, the method and why in docs/human_corrected.md): theta = the mean of the
  judge's scores f over the system's judged turns (unanswered turns 0 by rule for judge and humans
  alike) + the weighted (Hajek, weights 1 / inclusion probability) mean over its rated answered
  turns of c (Y - f), c = answered / judged turns (a rated turn stands for the answered ones; the
  unanswered are known). Its interval: t with n - 1 degrees of freedom, the residuals' variance
  floored at its mean over the systems, clipped to [0, 1]; below ``MIN_RATED`` rated turns, or
  when no system's humans ever disagreed with the judge, absent with the reason;
- **judge-only**: the mean of the judge's scores over the same judged turns (the leaderboard's
  figure of that dimension) and its normal interval (``classical_mean``), clipped to [0, 1];
- **human-only**: c * the weighted mean of the rated turns' human scores, t interval, clipped;
- n rated, n judged, lambda (1), the degrees of freedom, whether the variance was floored, and
  the effective sample size c^2 u_Y / se^2.

Several humans' ratings of one item on one dimension enter as their mean; ``judge_mean``'s
human score of an item is the mean of its five dimensions' human scores, so it needs every
dimension rated. A rated turn without a valid judge verdict on that dimension is left out (and
counted). A key without ``inclusion_probability`` (written before issue 32) weighs every item 1.

**Ranking by the corrected figure** (the sub-track ranked by ``judge_mean``: its row has no
official figure). Systems with a corrected ``judge_mean`` are ranked by it (ties as the
leaderboard's, "1224"), beside their judge rank. Every pair gets its **paired difference**
(``paired_differences``: the same estimator on f_a - f_b and on the residuals' differences over
the turns both had rated, as a TREC pool is judged for all runs; its interval and a two-sided t
test), Holm-corrected over all pairs (exact t p-values: no resampling floor, so significance is
reachable at 60-180 systems); the groups are the compact letter display of the pairs not
significant, and a system's rank range runs from 1 + the systems significantly better to the
count minus those significantly worse. "The order differs" is said only of pairs whose corrected
difference is significant and which the judge's ranking orders the other way, among systems
with a corrected figure; with no significant pair, ``note`` says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reteco.formats.ratings import SAMPLE_KEY_COLUMNS, judge_signature, merge_ratings, read_item_key, read_ratings
from reteco.metrics.prediction_powered import (
    MIN_RATED,
    RatedSample,
    classical_mean,
    paired_differences,
    small_sample_means,
    t_quantile,
)
from reteco.metrics.significance import compact_letter_display, holm, letters_text
from reteco.problems import InputError, Problems, quoted
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, SUBTRACKS
from reteco.workbench.leaderboard.standings import Entry, competition_ranks

FIGURES = (*DIMENSIONS, JUDGE_MEAN)


@dataclass(frozen=True)
class HumanScores:
    """The humans' scores of the sample's items, joined to submissions and turns."""

    files: tuple[str, ...]
    key: str
    raters: int
    # (submission, turn) -> figure -> the raters' mean normalized score ((s - 1) / 4)
    scores: dict[tuple[str, str], dict[str, float]]
    # (submission, turn) -> (item code, its line in the key)
    items: dict[tuple[str, str], tuple[str, int]]
    dimensions: tuple[str, ...]  # the dimensions some human rated, in DIMENSIONS order
    # (submission, turn) -> the item's inclusion probability in the sample's design (None: weight 1)
    inclusion: dict[tuple[str, str], float | None]


def read_human_ratings(paths: list[Path], key_path: Path) -> HumanScores:
    """The humans' ratings files (``agreement`` format keyed by item code; several files, one per
    annotator, are one set) joined through the sample's key. InputError (file and line) for a
    bad row, an item the key does not hold, a key without the submission and turn columns, or a
    judge's rater name (``<model>@<signature>``) among the humans."""
    key = read_item_key(key_path)
    lacking = [c for c in SAMPLE_KEY_COLUMNS if not all(getattr(item, c) for item in key.items.values())]
    if lacking:
        raise InputError(f"the key has no {' or '.join(lacking)} for some items: --human-ratings joins items to "
                         f"submissions through the key `reteco human-sample` writes (columns item_id,conversation_id,"
                         f"system,submission,turn,...)", key.file, 1)
    parts = [read_ratings(path, key=key) for path in paths]
    problems = Problems()
    for part in parts:
        row = next((r for r in part.rows if judge_signature(r.rater) is not None), None)
        if row is not None:
            problems.error(part.file, row.line, f"rater {quoted(row.rater)} names a judge (<model>@<signature>): "
                                                "--human-ratings takes the humans' ratings, never a judge's")
    if problems.has_errors:
        raise InputError(problems)
    ratings = merge_ratings(parts)
    by_item: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in ratings.rows:
        by_item[row.item_id][row.dimension].append(row.score)
    scores: dict[tuple[str, str], dict[str, float]] = {}
    items: dict[tuple[str, str], tuple[str, int]] = {}
    inclusion: dict[tuple[str, str], float | None] = {}
    for item_id, dimensions in by_item.items():
        keyed = key.items[item_id]
        where = (keyed.submission, keyed.turn)
        figures = {d: math.fsum((s - 1) / 4 for s in values) / len(values) for d, values in dimensions.items()}
        if all(d in figures for d in DIMENSIONS):
            figures[JUDGE_MEAN] = math.fsum(figures[d] for d in DIMENSIONS) / len(DIMENSIONS)
        scores[where] = figures
        items[where] = (item_id, keyed.line)
        inclusion[where] = keyed.inclusion_probability
    rated = {d for figures in scores.values() for d in figures}
    return HumanScores(tuple(str(p) for p in paths), key.file, len(ratings.raters()), scores, items,
                       tuple(d for d in DIMENSIONS if d in rated), inclusion)


def check_items(human: HumanScores, entries: list[Entry], unit_keys: list[str], where: str) -> None:
    """InputError (the key's file and line) for a rated item whose submission is not among
    ``entries`` (by file or folder name) or whose turn is not a turn of the reference."""
    names = {entry.path.name for entry in entries}
    turns = set(unit_keys)
    problems = Problems()
    for (submission, turn), (item_id, line) in sorted(human.items.items(), key=lambda kv: kv[1][1]):
        if submission not in names:
            problems.error(human.key, line, f"item {quoted(item_id)}: submission {quoted(submission)} is not among the "
                                            f"submissions scored here ({where})")
        elif turn not in turns:
            problems.error(human.key, line, f"item {quoted(item_id)}: turn {quoted(turn)} is not a turn of this "
                                            "reference (was the sample drawn from another sub-track or split?)")
    if problems.has_errors:
        raise InputError(problems)


# ------------------------------------------------------------------------------- per system


@dataclass(frozen=True)
class _Turns:
    """One system's data for one figure, before the estimate (pooled over the systems)."""

    sample: RatedSample | None
    row: dict  # n_rated, n_judged, ... or absent
    c: float  # answered / judged turns: the known share that is not 0 by rule
    y: np.ndarray  # the humans' scores of the rated turns (unscaled)
    judge: tuple[float, float, float] | None


def paired_turns(human: HumanScores) -> dict[str, float] | None:
    """The sampled turns and their inclusion probability when the key records probabilities (a
    sample drawn since issue 32), else None. Whether one system's sample is paired is decided per
    system (``_is_paired``)."""
    if not human.inclusion or any(p is None for p in human.inclusion.values()):
        return None  # a key written before issue 32: human-sample's stratified design
    return {turn: probability for (_, turn), probability in human.inclusion.items()}


def _is_paired(turns: dict, human: HumanScores, submission: str, sampled: dict[str, float] | None) -> bool:
    """A system's sample is paired when every sampled turn it answered is rated for it (``human-sample
    --design paired`` without ``--systems-per-turn``): its unanswered sampled turns then enter as
    rated with Y = f = 0."""
    if sampled is None:
        return False
    answered = {key for key, done in zip(turns["keys"], turns["answered"]) if done and key in sampled}
    rated = {turn for (name, turn) in human.scores if name == submission}
    return bool(answered) and answered == rated


def _turns(turns: dict, human: HumanScores, submission: str, figure: str, confidence: float,
           paired: dict[str, float] | None = None) -> _Turns:
    """One system's sample for one figure. With a paired sample (``paired``: turn -> probability),
    the sampled turns the system left unanswered are rated too, with Y = f = 0 (known by rule), so
    every system's residuals are over the same turns and c is 1; otherwise r = c (Y - f) over the
    answered rated turns."""
    values, answered, keys = turns[figure], turns["answered"], turns["keys"]
    empty = np.zeros(0)
    if figure not in human.dimensions and not (figure == JUDGE_MEAN and len(human.dimensions) == len(DIMENSIONS)):
        reason = (f"{JUDGE_MEAN} needs every dimension rated; the humans rated {', '.join(human.dimensions)}"
                  if figure == JUDGE_MEAN else f"no human rated {figure}")
        return _Turns(None, {"absent": reason}, 1.0, empty, None)
    rated, y, weights, dropped = [], [], [], 0
    for i, key in enumerate(keys):
        if paired is not None and key in paired and not answered[i]:
            rated.append(i)  # sampled, unanswered: 0 for judge and humans by rule
            y.append(0.0)
            weights.append(1.0 / paired[key])
            continue
        score = human.scores.get((submission, key), {}).get(figure)
        if score is None:
            continue
        if values[i] is None or not answered[i]:
            dropped += 1
            continue
        rated.append(i)
        y.append(score)
        probability = human.inclusion.get((submission, key))
        weights.append(1.0 if probability is None else 1.0 / probability)
    n_answered = sum(1 for i, v in enumerate(values) if v is not None and answered[i])
    unanswered = sum(1 for i in range(len(values)) if not answered[i])
    judged = n_answered + unanswered
    extra = {"n_rated_without_judge_verdict": dropped} if dropped else {}
    row = {"n_rated": len(rated), "n_judged": judged, "n_unanswered": unanswered, **extra}
    judged_values = [0.0 if not answered[i] else v for i, v in enumerate(values) if v is not None or not answered[i]]
    judge = classical_mean(judged_values, confidence=confidence) if judged_values else None
    if not rated:
        return _Turns(None, {"absent": "no rated turn with a judge verdict", **row}, 1.0, empty, judge)
    c = n_answered / judged if paired is None else 1.0
    f_all = np.array([np.nan if v is None else (v if answered[i] else 0.0) for i, v in enumerate(values)])
    f = f_all[rated]
    y_array = np.array(y)
    # r = c (Y - f): the residual over the answered turns, scaled to all judged turns (module docstring)
    sample = RatedSample(np.array(rated, dtype=np.int64), f + c * (y_array - f), f, np.array(weights), f_all)
    return _Turns(sample, row, c, y_array, judge)


def _rows(parts: list[_Turns], confidence: float) -> list[dict]:
    """Each system's figure row, the estimate's floor pooled over the systems with a sample."""
    with_sample = [k for k, p in enumerate(parts) if p.sample is not None]
    figures = dict(zip(with_sample, small_sample_means([parts[k].sample for k in with_sample], confidence=confidence)))
    rows = []
    for k, part in enumerate(parts):
        row = dict(part.row)
        figure = figures.get(k)
        if isinstance(figure, str):
            row = {"absent": figure, **row}
        elif figure is not None:
            judge, judge_low, judge_high = part.judge
            n = part.y.size
            big_w = part.sample.weights / part.sample.weights.sum()
            human = float(part.c * (big_w * part.y).sum())
            human_u = float(n * n / (n - 1) * (big_w * big_w * (part.y - (big_w * part.y).sum()) ** 2).sum())
            human_half = t_quantile(n - 1, confidence) * part.c * math.sqrt(human_u / n)
            interval = ({"ci_low": figure.ci_low, "ci_high": figure.ci_high, "standard_error": figure.standard_error}
                        if figure.interval_absent is None else {"ci_absent": figure.interval_absent})
            row = {
                "estimate": figure.estimate, **interval, "lambda": 1.0,
                "judge": judge, "judge_ci_low": max(0.0, judge_low), "judge_ci_high": min(1.0, judge_high),
                "human": human, "human_ci_low": max(0.0, human - human_half), "human_ci_high": min(1.0, human + human_half),
                **row, "degrees_of_freedom": figure.degrees_of_freedom,
                "variance_floored": figure.own_variance < figure.pooled_variance,
            }
            if part.c > 0:  # the judge-human disagreement seen, for the planner (human-sample --plan --residual-sd)
                row["residual_sd"] = math.sqrt(figure.own_variance) / part.c
            if human_u > 0 and figure.standard_error is not None:
                row["effective_sample_size"] = (part.c ** 2 * human_u) / figure.standard_error ** 2
            else:
                row["effective_sample_size_absent"] = ("the humans gave one score to every rated turn" if human_u <= 0
                                                       else "the corrected figure has no interval")
        rows.append(row)
    return rows


def human_corrected(subtrack_id: str, board: dict, entries: list[Entry], outcomes: list[dict], human: HumanScores, *,
                    confidence: float, alpha: float) -> dict:
    """The ``human_corrected`` block of ``leaderboard.json`` (module docstring): per scored
    system its figures (or why absent), the method, and, for the sub-track ranked by
    ``judge_mean``, the ranking by the corrected estimate beside the judge's. The figures need
    no resampling: no unit count, resamples or seed."""
    judge_rank = {s["name"]: s for s in board["systems"]}
    systems, signatures = [], set()
    judged: list[tuple[dict, dict]] = []
    for entry, outcome in zip(entries, outcomes):
        if not outcome.get("ok"):
            continue
        row = {"team": entry.team, "run": entry.run, "name": entry.name, "file": entry.file}
        turns = outcome.get("judge_turns")
        if not turns or outcome.get("judge_reason"):
            row["absent"] = f"the judge did not run: {outcome.get('judge_reason') or 'no judge figures'}"
            systems.append(row)
            continue
        if outcome.get("judge_signature"):
            signatures.add(outcome["judge_signature"])
        row["figures"] = {}
        systems.append(row)
        judged.append((row, {"turns": turns, "submission": entry.path.name}))
    samples: dict[str, RatedSample] = {}
    sampled = paired_turns(human)
    paired = {data["submission"]: _is_paired(data["turns"], human, data["submission"], sampled) for _, data in judged}
    for figure in FIGURES:
        parts = [_turns(data["turns"], human, data["submission"], figure, confidence,
                        sampled if paired[data["submission"]] else None) for _, data in judged]
        for (row, _), part, figure_row in zip(judged, parts, _rows(parts, confidence)):
            row["figures"][figure] = figure_row
            if figure == JUDGE_MEAN and "estimate" in figure_row:
                samples[row["name"]] = part.sample
    block = {
        "ratings": {"files": list(human.files), "key": human.key, "raters": human.raters,
                    "items": len(human.items), "dimensions": list(human.dimensions),
                    "weighted": any(p is not None for p in human.inclusion.values()),
                    "design": ("paired" if paired and all(paired.values()) else
                               "per system (unpaired)" if not any(paired.values()) else
                               f"paired for {sum(paired.values())} of {len(paired)} systems")},
        "judge_signatures": sorted(signatures),
        "confidence": confidence,
        "method": method_description(confidence),
        "systems": systems,
    }
    if SUBTRACKS[subtrack_id].official is None:
        block["ranking"] = corrected_ranking(systems, samples, judge_rank, confidence=confidence, alpha=alpha)
    return block


def method_description(confidence: float) -> dict:
    """How the block's figures are made, in words (the module docstring, shortened)."""
    percent = round(100 * confidence)
    return {
        "estimator": "prediction-powered mean with lambda = 1 (Angelopoulos et al. 2023): theta = mean over the "
                     "judged turns of the judge's score f + the weighted mean over the rated turns of c (Y - f), "
                     "weights 1 / inclusion probability (Hajek), c = answered / judged turns",
        "labelled": "the system's rated answered turns: Y the mean of the humans' (s - 1) / 4 scores of the item, "
                    "f the judge's score of that turn, weighted by the key's inclusion_probability (1 without it)",
        "unlabelled": "the judge's scores of every judged turn of the system (the rated ones included); unanswered "
                      "turns 0 for judge and humans by rule",
        "interval": f"{percent}% t interval with n - 1 degrees of freedom, theta -/+ t se, se^2 = max(u, u_pooled) / n "
                    "+ var1(f) / T + 2 cov(f, r) / T; u the residuals' weighted variance, u_pooled its mean over the "
                    "systems (the judge's error pooled where one system's few ratings show none); the estimate and "
                    "the interval clipped to [0, 1]",
        "minimum": f"{MIN_RATED} rated turns per system: below it no method covers in the simulation "
                   "(docs/human_corrected.md); the figure is absent with that reason",
        "coverage": "chosen by simulation (reteco.metrics.ppi_coverage, 2,000 seeded trials per setting): >= 96% of "
                    "95% intervals cover at 5-40 ratings per system on mild, skewed and very skewed score "
                    "distributions and with a depth-dependent judge bias (docs/human_corrected.md)",
        "judge_only": "mean of the judge's scores over the judged turns, normal interval clipped to [0, 1]",
        "human_only": "weighted mean of the rated turns' human scores scaled by c, t interval, clipped to [0, 1]",
        "effective_sample_size": "c^2 u_Y / se^2: the human ratings a human-only interval as narrow would need",
        "differs_from_ppi_python": "the point estimate is ppi_py.ppi_mean_pointestimate(Y, f, f_all, lam=1) with "
                                   "every judged turn as the unlabelled set (unweighted); the interval is a t "
                                   "interval with the pooled floor, not ppi_py's normal one, and lambda is not tuned",
    }


# ------------------------------------------------------------------------------ the ranking


def corrected_ranking(systems: list[dict], samples: dict[str, RatedSample], judge_rank: dict[str, dict], *,
                      confidence: float, alpha: float) -> dict:
    """The systems ranked by the corrected judge_mean, every pair's paired difference with its
    interval and t test, Holm over the pairs, groups, rank ranges, and the pairs whose significant
    corrected difference the judge orders the other way (module docstring)."""
    rows = [s for s in systems if s["name"] in samples and s["name"] in judge_rank]
    rows.sort(key=lambda s: (-s["figures"][JUDGE_MEAN]["estimate"], s["team"].casefold(), s["run"].casefold()))
    not_ranked = [{"name": s["name"], "reason": s.get("absent") or s["figures"][JUDGE_MEAN].get("absent", "")}
                  for s in systems if s["name"] not in {r["name"] for r in rows}]
    if len(rows) < 2:
        return {"absent": f"{len(rows)} ranked system(s) have a corrected {JUDGE_MEAN}: nothing to rank",
                "not_ranked": not_ranked}
    names = [s["name"] for s in rows]
    estimates = [s["figures"][JUDGE_MEAN]["estimate"] for s in rows]
    ranks = competition_ranks(estimates)
    first, second = np.triu_indices(len(names), k=1)
    pairs = list(zip(first.tolist(), second.tolist()))
    differences = paired_differences([samples[n] for n in names], pairs, confidence=confidence)
    tested = [k for k, d in enumerate(differences) if not isinstance(d, str) and d.p_value is not None]
    adjusted = np.ones(len(pairs))
    if tested:
        adjusted[tested] = holm(np.array([differences[k].p_value for k in tested]))
    significant_k = [k for k in tested if adjusted[k] <= alpha]
    significant = [pairs[k] for k in significant_k]
    better = np.zeros(len(names), dtype=int)
    worse = np.zeros(len(names), dtype=int)
    for k in significant_k:  # a significant pair: the sign of its difference says which is better
        i, j = pairs[k]
        d = differences[k].estimate
        high, low = (i, j) if d > 0 else (j, i)
        better[low] += 1
        worse[high] += 1
    letters = [letters_text(c) for c in compact_letter_display(len(names), significant)]
    table = []
    for k, name in enumerate(names):
        judge = judge_rank[name]
        table.append({"name": name, "rank": ranks[k], "estimate": estimates[k],
                      "rank_low": int(1 + better[k]), "rank_high": int(len(names) - worse[k]), "letters": letters[k],
                      "judge_rank": judge["rank"], "judge_mean": judge.get(JUDGE_MEAN),
                      **{f"judge_{x}": judge[x] for x in ("rank_low", "rank_high", "letters") if x in judge}})
    pair_rows, swapped = [], []
    significant_set = set(significant)
    for k, (i, j) in enumerate(pairs):
        d = differences[k]
        row = {"a": names[i], "b": names[j]}
        if isinstance(d, str):
            pair_rows.append({**row, "absent": d})
            continue
        interval = ({"ci_low": d.ci_low, "ci_high": d.ci_high, "standard_error": d.standard_error}
                    if d.interval_absent is None else {"ci_absent": d.interval_absent})
        test = ({"p_value": d.p_value, "p_adjusted": float(adjusted[k])} if d.p_value is not None
                else {"test_absent": d.interval_absent})
        pair_rows.append({**row, "delta": d.estimate, **interval, "degrees_of_freedom": d.degrees_of_freedom,
                          "paired": d.own_variance is not None, **test, "significant": (i, j) in significant_set})
        if (i, j) in significant_set and d.estimate != 0:
            judge_a, judge_b = judge_rank[names[i]]["rank"], judge_rank[names[j]]["rank"]
            if (d.estimate > 0 and judge_a > judge_b) or (d.estimate < 0 and judge_a < judge_b):
                swapped.append(row)
    differs = sorted({n for row in swapped for n in (row["a"], row["b"])}, key=names.index)
    block = {
        "figure": JUDGE_MEAN,
        "systems": table,
        "order_differs": differs,
        "pairs_ordered_differently": swapped,
        "pairs": pair_rows,
        "significant_pairs": len(significant),
        "not_ranked": not_ranked,
        "method": {
            "alpha": alpha,
            "difference": "paired: theta_a - theta_b by the estimator on f_a - f_b over the turns both have and "
                          "c_a (Y_a - f_a) - c_b (Y_b - f_b) over the turns both had rated, the residual variance "
                          "floored at its mean over the pairs; t interval with n - 1 degrees of freedom (a pair "
                          "rated on fewer than 5 common turns: the two estimates as independent)",
            "test": "two-sided t test of no difference (p exact, no resampling floor), Holm-corrected over all pairs",
            "groups": f"compact letter display (Piepho 2004): systems sharing a letter are not significantly different "
                      f"(p_adjusted > {alpha})",
            "rank_interval": "rank range consistent with the tests: from 1 + the systems significantly better to "
                             "the systems' count - those significantly worse",
            "order_differs": "only pairs whose corrected difference is significant and which the judge's ranking "
                             "orders the other way; systems without a corrected figure never enter",
            "rank_interval_note": "the judge's rank intervals and groups come from the judge-only bootstrap and "
                                  "tests of the leaderboard (treating every verdict as the truth)",
        },
    }
    if not significant:
        block["note"] = (f"no pair of the {len(names)} systems differs significantly (Holm over {len(tested)} pairs at "
                         f"alpha {alpha}): every system shares one group")
    return block
