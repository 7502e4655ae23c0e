"""Human-corrected system scores: the judge's figures with the judge's error inside their intervals.

``reteco leaderboard ... --human-ratings H.csv [H2.csv ...] --key KEY.csv`` (issue 19). The
humans' ratings of ``reteco human-sample``'s blind sample (the ``agreement`` CSV format, keyed
by item code) are joined through the sample's key file (``key.csv``: item code -> submission,
turn) to the leaderboard's submissions (the key's ``submission`` is the submission's file or
folder name in the submissions folder) and turns. Per system, for each judge dimension and for
``judge_mean``, on the normalised (s - 1) / 4 scale:

- **prediction-powered**: the PPI++ estimate of the system's mean human score with power tuning
  and its 95% interval (``reteco.metrics.prediction_powered.ppi_mean``, equal to
  ``ppi_py.ppi_mean_ci``): the labelled items are the system's rated turns (human score Y, the
  judge's score f of the same turn), the unlabelled items the judge's scores of its other
  answered turns. The rated turns are NOT in the unlabelled set: ppi_py's formulas take the two
  samples as independent, so that is what is passed. Unanswered turns score 0 for judge and
  humans alike (the rule), so they are known, not estimated: with A the answered turns that have
  a judge verdict and U the unanswered ones, the figure over all judged turns is
  c * theta_A with c = |A| / (|A| + |U|), and its interval and standard error scale by c;
- **judge-only**: the mean of the judge's scores over the same judged turns (the leaderboard's
  figure of that dimension) and its normal interval (``classical_mean``);
- **human-only**: c * the mean of the rated turns' human scores, and its normal interval
  (PPI with lambda = 0);
- n rated, n judged (|A| + |U|), lambda, and the effective sample size (``ppi_mean``).

Several humans' ratings of one item on one dimension enter as their mean; ``judge_mean``'s
human score of an item is the mean of its five dimensions' human scores, so it needs every
dimension rated. A rated turn without a valid judge verdict on that dimension is left out (and
counted). A dimension no human rated, or a system with fewer than two usable rated turns or no
unrated answered turn, gets no figure: absent with the reason. Assumption (said in the method
block): the rated turns are treated as a uniform sample of the system's answered turns;
``human-sample`` allocates proportionally to domain x depth within each system, which is close
to that, and the estimate is not re-weighted by stratum.

**Ranking by the corrected figure** (the sub-track ranked by ``judge_mean``: its row has no
official figure). Systems with a prediction-powered ``judge_mean`` are ranked by it (ties as the
leaderboard's, "1224"), beside their judge rank. Rank intervals and groups come from a bootstrap
of the estimator itself, lambda held at its estimate: resample r draws the reference's turns
with replacement with the leaderboard's own stream (``numpy.random.default_rng(seed).integers(0,
n_units, size=(R, n_units))``, the same resampled turns for every system, as the judge's
bootstrap), giving each system's imputed mean over its drawn unrated answered turns and c_r;
and, independently per system in rank order, its rated turns with replacement
(``numpy.random.default_rng(seed + 1).integers(0, n_rated, size=(R, n_rated))``), giving the
rectifier mean(Y - lambda f): theta_r = c_r (lambda imputed_r + rectifier_r). Rank intervals are
``reteco.metrics.significance.rank_intervals`` over those theta_r; every pair gets the two-sided
bootstrap p-value p = min(1, 2 min((1 + #{r: d_r <= 0}) / (1 + R), (1 + #{r: d_r >= 0}) / (1 + R)))
of d_r = theta_a,r - theta_b,r, Holm-corrected over all pairs, and the groups are the compact
letter display of the pairs not significant. The systems whose PPI rank differs from their judge
rank are listed, and every pair of systems the two rankings order differently.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reteco.formats.ratings import SAMPLE_KEY_COLUMNS, judge_signature, merge_ratings, read_item_key, read_ratings
from reteco.metrics.prediction_powered import MIN_LABELLED, classical_mean, ppi_mean
from reteco.metrics.significance import (
    compact_letter_display,
    holm,
    letters_text,
    rank_intervals,
)
from reteco.workbench.leaderboard.standings import Entry, competition_ranks
from reteco.problems import InputError, Problems, quoted
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN, SUBTRACKS

FIGURES = (*DIMENSIONS, JUDGE_MEAN)
_CHUNK_ELEMENTS = 1 << 21  # resampled turn indices held at once in the ranking bootstrap


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
    for item_id, dimensions in by_item.items():
        keyed = key.items[item_id]
        where = (keyed.submission, keyed.turn)
        figures = {d: math.fsum((s - 1) / 4 for s in values) / len(values) for d, values in dimensions.items()}
        if all(d in figures for d in DIMENSIONS):
            figures[JUDGE_MEAN] = math.fsum(figures[d] for d in DIMENSIONS) / len(DIMENSIONS)
        scores[where] = figures
        items[where] = (item_id, keyed.line)
    rated = {d for figures in scores.values() for d in figures}
    return HumanScores(tuple(str(p) for p in paths), key.file, len(ratings.raters()), scores, items,
                       tuple(d for d in DIMENSIONS if d in rated))


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
class _Sample:
    """One system's data for one figure: what the estimate and the bootstrap need."""

    rated: np.ndarray  # turn indices, labelled (rated, answered, judged)
    y: np.ndarray
    f: np.ndarray
    unrated: np.ndarray  # turn indices, answered, judged, not rated
    f_unrated: np.ndarray  # the judge's scores of those
    unanswered: np.ndarray  # turn indices, unanswered (0 by rule for both)
    lam: float


def _figure(turns: dict, human: HumanScores, submission: str, figure: str, confidence: float
            ) -> tuple[dict, _Sample | None]:
    values, answered, keys = turns[figure], turns["answered"], turns["keys"]
    if figure not in human.dimensions and not (figure == JUDGE_MEAN and len(human.dimensions) == len(DIMENSIONS)):
        reason = (f"{JUDGE_MEAN} needs every dimension rated; the humans rated {', '.join(human.dimensions)}"
                  if figure == JUDGE_MEAN else f"no human rated {figure}")
        return {"absent": reason}, None
    rated, y, dropped = [], [], 0
    for i, key in enumerate(keys):
        score = human.scores.get((submission, key), {}).get(figure)
        if score is None:
            continue
        if values[i] is None or not answered[i]:
            dropped += 1
            continue
        rated.append(i)
        y.append(score)
    rated_set = set(rated)
    unrated = [i for i, v in enumerate(values) if v is not None and answered[i] and i not in rated_set]
    unanswered = [i for i, v in enumerate(values) if not answered[i]]
    judged = len(rated) + len(unrated) + len(unanswered)
    extra = {"n_rated_without_judge_verdict": dropped} if dropped else {}
    if len(rated) < MIN_LABELLED:
        return {"absent": f"{len(rated)} rated turn(s) with a judge verdict: at least {MIN_LABELLED} are needed for an "
                          "interval", "n_rated": len(rated), "n_judged": judged, **extra}, None
    if not unrated:
        return {"absent": "every answered turn with a judge verdict is rated: nothing left for the judge to add",
                "n_rated": len(rated), "n_judged": judged, **extra}, None
    f = np.array([values[i] for i in rated])
    y_array = np.array(y)
    result = ppi_mean(y_array, f, np.array([values[i] for i in unrated]), confidence=confidence)
    c = (len(rated) + len(unrated)) / judged
    judge, judge_low, judge_high = classical_mean([values[i] for i in range(len(values)) if values[i] is not None],
                                                  confidence=confidence)
    human_mean, human_low, human_high = classical_mean(y_array, confidence=confidence)
    row = {
        "estimate": c * result.estimate, "ci_low": c * result.ci_low, "ci_high": c * result.ci_high,
        "standard_error": c * result.standard_error, "lambda": result.lam,
        "judge": judge, "judge_ci_low": judge_low, "judge_ci_high": judge_high,
        "human": c * human_mean, "human_ci_low": c * human_low, "human_ci_high": c * human_high,
        "n_rated": len(rated), "n_judged": judged, "n_unanswered": len(unanswered), **extra,
    }
    if result.effective_sample_size is not None:
        row["effective_sample_size"] = result.effective_sample_size
    else:
        row["effective_sample_size_absent"] = "the interval has width 0 (no variation in the scores)"
    return row, _Sample(np.array(rated), y_array, f, np.array(unrated, dtype=np.int64),
                        np.array([values[i] for i in unrated]), np.array(unanswered, dtype=np.int64), result.lam)


def human_corrected(subtrack_id: str, board: dict, entries: list[Entry], outcomes: list[dict], human: HumanScores, *,
                    n_units: int, confidence: float, resamples: int, seed: int, alpha: float) -> dict:
    """The ``human_corrected`` block of ``leaderboard.json`` (module docstring): per scored
    system its figures (or why absent), the method, and, for the sub-track ranked by
    ``judge_mean``, the ranking by the prediction-powered estimate beside the judge's."""
    judge_rank = {s["name"]: s for s in board["systems"]}
    systems, samples, signatures = [], {}, set()
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
        figures = {}
        for figure in FIGURES:
            figures[figure], sample = _figure(turns, human, entry.path.name, figure, confidence)
            if sample is not None and figure == JUDGE_MEAN:
                samples[entry.name] = sample
        row["figures"] = figures
        systems.append(row)
    block = {
        "ratings": {"files": list(human.files), "key": human.key, "raters": human.raters,
                    "items": len(human.items), "dimensions": list(human.dimensions)},
        "judge_signatures": sorted(signatures),
        "confidence": confidence,
        "method": method_description(confidence),
        "systems": systems,
    }
    if SUBTRACKS[subtrack_id].official is None:
        block["ranking"] = corrected_ranking(systems, samples, judge_rank, n_units=n_units, resamples=resamples,
                                             seed=seed, confidence=confidence, alpha=alpha)
    return block


def method_description(confidence: float) -> dict:
    """How the block's figures are made, in words (the module docstring, shortened)."""
    return {
        "estimator": "PPI++ mean with power tuning (Angelopoulos, Duchi and Zrnic 2023, arXiv:2311.01453), as "
                     "ppi_py.ppi_mean_ci: theta = lambda mean(f~) + mean(Y - lambda f), lambda = cov(Y, f) / "
                     "((1 + n/N) var(f, f~)) clipped to [0, 1]",
        "labelled": "the system's rated answered turns: Y the mean of the humans' (s - 1) / 4 scores of the item, "
                    "f the judge's score of that turn",
        "unlabelled": "the judge's scores of the system's other answered turns (the rated ones are not included: "
                      "ppi_py takes the two samples as independent)",
        "unanswered": "0 for judge and humans by rule: the answered-turn estimate and its interval are scaled by "
                      "answered / judged turns",
        "interval": f"{round(100 * confidence)}% normal approximation, theta -/+ z se, se^2 = var0(lambda f~)/N + "
                    "var0(Y - lambda f)/n",
        "judge_only": "mean of the judge's scores over the judged turns, normal interval",
        "human_only": "mean of the rated turns' human scores (PPI with lambda = 0), scaled as above, normal interval",
        "effective_sample_size": "var0(Y) / se^2: the human ratings a human-only interval as narrow would need",
        "assumption": "the rated turns are taken as a uniform sample of the system's answered turns (human-sample "
                      "allocates proportionally to domain x depth within a system; no re-weighting by stratum)",
    }


# ------------------------------------------------------------------------------ the ranking


def corrected_ranking(systems: list[dict], samples: dict[str, _Sample], judge_rank: dict[str, dict], *,
                      n_units: int, resamples: int, seed: int, confidence: float, alpha: float) -> dict:
    """The systems ranked by the prediction-powered judge_mean, with rank intervals, groups and
    the order compared with the judge's (module docstring)."""
    rows = [s for s in systems if s["name"] in samples and s["name"] in judge_rank]
    rows.sort(key=lambda s: (-s["figures"][JUDGE_MEAN]["estimate"], s["team"].casefold(), s["run"].casefold()))
    if len(rows) < 2:
        return {"absent": f"{len(rows)} ranked system(s) have a prediction-powered {JUDGE_MEAN}: nothing to rank"}
    names = [s["name"] for s in rows]
    estimates = [s["figures"][JUDGE_MEAN]["estimate"] for s in rows]
    ranks = competition_ranks(estimates)
    theta = bootstrap_estimates([samples[n] for n in names], n_units=n_units, resamples=resamples, seed=seed)
    rank_low, rank_high = rank_intervals(theta, confidence)
    first, second = np.triu_indices(len(names), k=1)
    p_values = np.array([_bootstrap_p(theta[i] - theta[j]) for i, j in zip(first, second)])
    adjusted = holm(p_values)
    significant = [(int(i), int(j)) for i, j, p in zip(first, second, adjusted) if p <= alpha]
    letters = [letters_text(c) for c in compact_letter_display(len(names), significant)]
    table = []
    for k, name in enumerate(names):
        judge = judge_rank[name]
        table.append({"name": name, "rank": ranks[k], "estimate": estimates[k],
                      "rank_low": int(rank_low[k]), "rank_high": int(rank_high[k]), "letters": letters[k],
                      "judge_rank": judge["rank"], "judge_mean": judge.get(JUDGE_MEAN),
                      **{f"judge_{x}": judge[x] for x in ("rank_low", "rank_high", "letters") if x in judge}})
    judge_order = {name: judge_rank[name]["rank"] for name in names}
    swapped = [{"a": names[i], "b": names[j]} for i, j in zip(first, second)
               if ranks[i] < ranks[j] and judge_order[names[i]] > judge_order[names[j]]
               or ranks[i] > ranks[j] and judge_order[names[i]] < judge_order[names[j]]]
    pairs = [{"a": names[i], "b": names[j], "delta": estimates[i] - estimates[j], "p_value": float(p),
              "p_adjusted": float(q)} for i, j, p, q in zip(first, second, p_values, adjusted)]
    return {
        "figure": JUDGE_MEAN,
        "systems": table,
        "order_differs": [row["name"] for row in table if row["rank"] != row["judge_rank"]],
        "pairs_ordered_differently": swapped,
        "pairs": pairs,
        "not_ranked": [{"name": s["name"], "reason": s.get("absent") or s["figures"][JUDGE_MEAN].get("absent", "")}
                       for s in systems if s["name"] not in names],
        "method": {
            "resamples": resamples, "seed": seed, "alpha": alpha,
            "bootstrap": "turns resampled with the leaderboard's stream default_rng(seed).integers(0, n_units, "
                         "(R, n_units)) (the imputed mean and the answered share), each system's rated turns "
                         "resampled independently with default_rng(seed + 1).integers(0, n_rated, (R, n_rated)) in "
                         "rank order (the rectifier); lambda held at its estimate",
            "rank_interval": "per resample, 1 + the number of systems with a larger estimate; the "
                             f"{round(100 * confidence)}% interval of those ranks (order statistics outwards)",
            "test": "two-sided bootstrap p-value of the difference, min(1, 2 min((1 + #{d_r <= 0}) / (1 + R), "
                    "(1 + #{d_r >= 0}) / (1 + R))), Holm-corrected over all pairs",
            "groups": f"compact letter display (Piepho 2004): systems sharing a letter are not significantly different "
                      f"(p_adjusted > {alpha})",
            "rank_interval_note": "the judge's rank intervals and groups come from the judge-only bootstrap and "
                                  "tests of the leaderboard (treating every verdict as the truth)",
        },
    }


def bootstrap_estimates(samples: list[_Sample], *, n_units: int, resamples: int, seed: int) -> np.ndarray:
    """theta[system, r]: the prediction-powered estimate in bootstrap resample r (module docstring)."""
    n_systems = len(samples)
    imputed_values = np.zeros((n_systems, n_units))
    imputed_mask = np.zeros((n_systems, n_units))
    answered_mask = np.zeros((n_systems, n_units))
    for s, sample in enumerate(samples):
        imputed_values[s, sample.unrated] = sample.f_unrated
        imputed_mask[s, sample.unrated] = 1.0
        answered_mask[s, sample.unrated] = 1.0
        answered_mask[s, sample.rated] = 1.0
    judged_mask = answered_mask.copy()
    for s, sample in enumerate(samples):
        judged_mask[s, sample.unanswered] = 1.0
    lam = np.array([s.lam for s in samples])
    full = np.array([s.f_unrated.mean() for s in samples])
    imputed = np.empty((n_systems, resamples))
    share = np.empty((n_systems, resamples))
    rng = np.random.default_rng(seed)
    step = max(1, _CHUNK_ELEMENTS // max(1, n_units))
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        draws = rng.integers(0, n_units, size=(rows, n_units))
        counts = np.bincount((draws + n_units * np.arange(rows)[:, None]).ravel(),
                             minlength=rows * n_units).reshape(rows, n_units).astype(np.float64)
        total, drawn = counts @ imputed_values.T, counts @ imputed_mask.T
        # A resample that draws none of a system's unrated turns keeps its full-sample imputed mean.
        imputed[:, start:start + rows] = np.where(drawn > 0, total / np.maximum(drawn, 1.0), full[None, :]).T
        share[:, start:start + rows] = ((counts @ answered_mask.T) / np.maximum(counts @ judged_mask.T, 1.0)).T
    rectifier = np.empty((n_systems, resamples))
    rng_rated = np.random.default_rng(seed + 1)
    for s, sample in enumerate(samples):
        residual = sample.y - sample.lam * sample.f
        n = residual.size
        step = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, resamples, step):
            rows = min(step, resamples - start)
            rectifier[s, start:start + rows] = residual[rng_rated.integers(0, n, size=(rows, n))].mean(axis=1)
    return share * (lam[:, None] * imputed + rectifier)


def _bootstrap_p(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value that a difference is 0 (module docstring)."""
    r = differences.size
    below = (1 + int(np.count_nonzero(differences <= 0))) / (1 + r)
    above = (1 + int(np.count_nonzero(differences >= 0))) / (1 + r)
    return min(1.0, 2 * min(below, above))
