"""Agreement of the LLM judge with human raters, per dimension, with bootstrap intervals.

Why one module: one metric family, the judge-human agreement figures. Every figure,
the point estimate and its bootstrap resamples alike, is computed from the same weighted tables
of one cluster bootstrap (below); the figures share those vectorised helpers and are checked
together against scikit-learn, scipy and ``krippendorff``.

The evaluation plan spot-validates the judge's 1-5 scores against independent human ratings and
discloses the agreement in the task report. ``agreement(judge, humans)`` returns, for each of the
judge's five dimensions, over the items rated by both sides (the judge once, one or more humans):

- ``kappa_quadratic``: Cohen's weighted kappa with quadratic weights (Cohen 1968),
  ``1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij`` with ``w_ij = (i - j)^2`` on the scale values 1..5,
  ``O`` the joint distribution of (judge, humans' median rounded) and ``E`` the product of its
  margins. The humans' median of an item is rounded half up (``floor(m + 0.5)``: 2.5 -> 3,
  3.5 -> 4); a median of integer scores is always a whole or a half point. Weights are on the
  scale values, so a score nobody gave changes nothing (scikit-learn's ``cohen_kappa_score``
  agrees when given ``labels=[1, 2, 3, 4, 5]``; without them it weights by the index among the
  labels present, which differs when a score is unused).
- ``exact``: the share of items whose judge score equals the humans' median rounded (as above);
  ``within_1``: the share with ``|judge - median rounded| <= 1``.
- ``spearman`` (``scipy.stats.spearmanr``) and ``kendall_tau_b`` (``scipy.stats.kendalltau``,
  variant "b", which corrects for ties on both sides): judge vs the humans' median, unrounded.
- ``alpha_ordinal_humans``: Krippendorff's alpha at the ordinal level (Krippendorff 2011,
  "Computing Krippendorff's alpha-reliability"; the ``krippendorff`` package, called with
  ``level_of_measurement="ordinal"``: its default is interval) over the human raters of the same
  items; ``alpha_ordinal_with_judge``: the same with the judge as one more rater. Items with a
  single rating are not pairable and do not count (Krippendorff's rule).
- ``bias``: judge mean minus human mean on the 1-5 scale, where the human mean is the mean over
  items of the mean of that item's human ratings (each item counts once, however many humans
  rated it). The RECOR pilot reported +0.14 to +0.35.

Each figure is ``{"value", "ci_low", "ci_high", "undefined_resamples"}``: the point estimate
and a 95% bootstrap interval: the percentile interval (Efron & Tibshirani 1993, ch. 13; the 2.5th
and 97.5th percentiles by ``numpy.quantile``'s default linear interpolation) re-centred on the
estimate (shifted by the resamples' median minus the estimate) and clipped to the figure's range
(``significance.centred_percentile_interval``, issue 32: it always holds its estimate, which the
plain percentile interval of a biased statistic did not). A resample draws as many
conversations as the dimension has, with replacement, and keeps all items of each drawn
conversation together (a cluster bootstrap: items of one conversation are not independent).
Draws come from ``numpy.random.default_rng([seed, k])``, ``k`` the dimension's index in
``DIMENSIONS`` (``conversation_resamples``), so a dimension's interval does not depend on the
others; all figures of a dimension share its draws. A figure that is undefined on the data (e.g.
Spearman when the judge gave every item the same score) has ``value`` None and a ``reason``; a
resample on which it is undefined is left out of the interval and counted, and when more than
``MAX_UNDEFINED_SHARE`` of the resamples are undefined the interval is None with a reason (a
percentile interval over the few defined resamples would describe another population). No
number in the output is NaN or infinite.

The bootstrap does not call the libraries 2000 times: a resample is the original items with
integer weights (how often their conversation was drawn), and every figure above is a function
of weighted tables (judge score x humans' median, per-item coincidence matrices), so all
resamples are computed at once from one matrix product. The tests check each resample's figures
against scikit-learn, scipy and ``krippendorff`` on the expanded resample.

``ceiling``: the human-human agreement the judge is measured against, per dimension: each human
rating of an item vs the median of the other humans' ratings of that item (leave-one-out), pooled
over all (rater, item) pairs of the items compared with the judge that have two or more human
ratings; the same figures (kappa, exact, within_1 against the others' median rounded half up;
Spearman and Kendall against it unrounded) with the same bootstrap. The signed bias would be 0
by construction (on every item, the ratings' deviations from the others' mean sum to 0), so the
ceiling has ``abs_rater_bias`` instead: each human rater's bias (the mean over the rater's pairs
of the rating minus the others' mean), in absolute value, averaged over the raters weighted by
their pairs; it is what a typical human's ``|bias|`` against the others is. This is the
leave-one-out inter-annotator agreement used as the human upper bound of SemEval's semantic
textual similarity task (Agirre et al. 2012, SemEval-2012 Task 6: each annotator against the
others' average), with the median in place of the average because the judge is compared with the
median. A human's reference (the others' median) rests on one rating fewer than the judge's (all
humans' median), so it is noisier and the ceiling somewhat understates how well one human agrees
with a median of as many humans as the judge faces. Krippendorff's alpha over the humans (above)
is the ceiling's chance-corrected reliability.

Two judges (``reference="judge"``): the second file is a second judge (one rater), not humans.
The same figures compare the two judges, and nothing in the result calls the second one humans:
there is no ceiling and no alpha over the humans (one rater has no agreement with itself),
``items_humans_only`` is ``items_second_judge_only``, the per-system ``human_mean`` is
``second_judge_mean``, the reasons and the method name the second judge (``method.reference``).

``system_level`` (when either file has a ``system`` column): per dimension, Kendall's tau-b
between the judge's mean per system and the humans' mean per system (the mean over the system's
items of the per-item human mean), over the compared items, with the same bootstrap; means are
compared at 1e-9 so that equal means tie despite floating-point summation. Beside it, Yilmaz et
al.'s tau_AP (``reteco.metrics.rank_agreement``: positions from the judge's ranking, correctness
from the humans', the reference named in ``tau_ap_reference``) with the same draws, and
``interval_note`` when the interval must be read in words (few systems, an interval of -1 to 1
or of one point). ``system_level.judge_mean``: the same two figures for the mean of the five
dimensions, over the items both sides scored on every dimension (draws from
``default_rng([seed, 5])``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from importlib import metadata
from statistics import median

import krippendorff
import numpy as np
from scipy import stats

from reteco.formats.ratings import DIMENSIONS, SCORES, Ratings, require_single_rater
from reteco.metrics.label_agreement import weighted_kappa
from reteco.metrics.rank_agreement import interval_note, system_rank_agreement
from reteco.metrics.significance import centred_percentile_interval
from reteco.problems import InputError, Problems, quoted

DEFAULT_SEED = 2027
DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95
#: An interval is given only when at most this share of the resamples leave the figure undefined.
MAX_UNDEFINED_SHARE = 0.10
#: System means are rounded to this many decimals before ranking (ties despite float summation).
SYSTEM_MEAN_DECIMALS = 9

_K = len(SCORES)  # scale points 1..5
_LEVELS = 2 * _K - 1  # medians of integer scores: 1, 1.5, ..., 5
# Median level l (value 1 + l/2) rounded half up is the scale point of index ceil(l/2): level 1
# (1.5) -> index 1 (score 2), level 3 (2.5) -> index 2 (score 3).
_ROUNDED_OF_LEVEL = (np.arange(_LEVELS) + 1) // 2
_LEVEL_TO_SCORE = np.zeros((_LEVELS, _K))
_LEVEL_TO_SCORE[np.arange(_LEVELS), _ROUNDED_OF_LEVEL] = 1.0
_SCALE = np.asarray(SCORES, dtype=float)
_CHUNK = 256  # resamples per block in the system-level computation (memory: chunk x 3S)
# Elements of one block of pairwise sign matrices (resamples x S x S) in the system-level Kendall
# tau: blocks of resamples are sized to it, so memory stays about 8 bytes x this x 3.
_PAIR_BLOCK = 2**21
# Above this many systems the system-level Kendall tau sorts per resample instead of comparing
# every pair of systems (``_kendall_tau_b_of_values``).
_PAIRWISE_MAX_SYSTEMS = 64
#: The most bootstrap resamples ``agreement`` takes: memory grows with resamples x conversations
#: (the draws, about 24 bytes each), and 20,000 is ten times the default's precision already.
MAX_RESAMPLES = 20_000

#: What the second file holds: human ratings, or a second judge's (``agreement``'s ``reference``).
REFERENCES = ("humans", "judge")
# How the figures' reasons and the method name the second file's side.
_NAMES = {
    "humans": {"score": "a human score", "median": "the humans' median", "mean": "the humans' mean",
               "side": "the humans", "mean_key": "human_mean"},
    "judge": {"score": "a score of the second judge", "median": "the second judge's score",
              "mean": "the second judge's mean", "side": "the second judge", "mean_key": "second_judge_mean"},
}

PAIR_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b")
ITEM_FIGURES = PAIR_FIGURES + ("bias",)
CEILING_FIGURES = PAIR_FIGURES + ("abs_rater_bias",)
ALPHA_FIGURES = ("alpha_ordinal_humans", "alpha_ordinal_with_judge")


def round_half_up(values: np.ndarray | float) -> np.ndarray:
    """``floor(x + 0.5)``: 2.5 -> 3, 3.5 -> 4 (Python's ``round`` would give 2 and 4)."""
    return np.floor(np.asarray(values, dtype=float) + 0.5)


def conversation_resamples(n_conversations: int, resamples: int, seed: int, dimension: str) -> np.ndarray:
    """How often each conversation is drawn in each resample: an int array (resamples x
    n_conversations) whose rows sum to ``n_conversations``.

    Each resample draws ``n_conversations`` indices uniformly with replacement from
    ``numpy.random.default_rng([seed, DIMENSIONS.index(dimension)])``; conversation ``c`` is the
    ``c``-th in sorted order of the ids of the conversations of the dimension's compared items.
    """
    rng = np.random.default_rng([seed, DIMENSIONS.index(dimension)])
    draws = rng.integers(0, n_conversations, size=(resamples, n_conversations))
    offsets = (np.arange(resamples) * n_conversations)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=resamples * n_conversations)
    return counts.reshape(resamples, n_conversations)


def agreement(
    judge: Ratings, humans: Ratings, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
    reference: str = "humans",
) -> dict:
    """The agreement figures of the module docstring, as a JSON-ready dict::

        {"dimensions": {dim: {"n_items", "n_conversations", ..., "kappa_quadratic": {...}, ...}},
         "ceiling": {"definition", "dimensions": {dim: {...}}},
         "system_level": {...}  (only when the items carry a system),
         "method": {"seed", "resamples", "interval", "median_rounding", "alpha_level", ...}}

    ``judge`` must name one rater; an item's conversation (and system) must be the same in both
    files (InputError naming the lines otherwise); at least one item must be in both files
    (InputError saying how many each has otherwise). ``resamples`` must be 1 to
    ``MAX_RESAMPLES``, ``seed`` not negative (ValueError otherwise: the caller checks them).
    ``reference="judge"``: ``humans`` is a second judge (one rater; module docstring).
    """
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, not {reference!r}")
    names = _NAMES[reference]
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be 1 to {MAX_RESAMPLES}, not {resamples}")
    if seed < 0:
        raise ValueError(f"the seed must not be negative, not {seed}")
    require_single_rater(judge)
    if reference == "judge":
        require_single_rater(humans)
    _require_shared_items(judge, humans)
    conversation_of, system_of = _items_of_both(judge, humans)
    has_system = judge.has_system or humans.has_system
    dimensions: dict[str, dict] = {}
    ceiling: dict[str, dict] = {}
    system_level: dict[str, dict] = {}
    built = []
    for dimension in DIMENSIONS:
        data = _DimensionData.build(dimension, judge, humans, conversation_of, system_of if has_system else None)
        built.append(data)
        counts = (
            conversation_resamples(data.n_conversations, resamples, seed, dimension)
            if data.n_conversations
            else None
        )
        dimensions[dimension] = _dimension_figures(data, counts, resamples, names)
        ceiling[dimension] = _ceiling_figures(data, counts, resamples)
        if has_system:
            system_level[dimension] = _system_figures(data, counts, resamples, names)
    out: dict = {
        "dimensions": dimensions,
        "ceiling": {"definition": CEILING_DEFINITION, "dimensions": ceiling},
    }
    if has_system:
        out["system_level"] = {"definition": SYSTEM_DEFINITION, "tau_ap_reference": names["side"],
                               "dimensions": system_level,
                               "judge_mean": _judge_mean_system_figures(built, seed, resamples, names)}
    out["method"] = _method(judge, humans, seed, resamples)
    if not has_system:
        out["method"]["system_level"] = "absent: neither file has a system column"
    out["method"]["reference"] = reference
    return out if reference == "humans" else _second_judge(out, humans.raters()[0])


def _second_judge(out: dict, rater: str) -> dict:
    """``out`` for two judges (module docstring): no ceiling, no humans-only alpha, no key or
    method entry that names humans."""
    for block in out["dimensions"].values():
        for key in ("alpha_ordinal_humans", "n_human_ratings", "n_human_raters"):
            block.pop(key, None)
        block["items_second_judge_only"] = block.pop("items_humans_only")
    del out["ceiling"]
    for block in (out.get("system_level") or {}).get("dimensions", {}).values():
        for figures in block.get("systems", {}).values():
            figures["second_judge_mean"] = figures.pop("human_mean")
    if "system_level" in out:
        out["system_level"]["definition"] = SYSTEM_DEFINITION_JUDGES
    method = out["method"]
    method["second_judge_file"] = method.pop("human_file")
    method["second_judge"] = rater
    method.pop("human_mean")
    for key in ("exact_and_within_1", "correlations"):
        method[key] = method[key].replace("the humans' median", "the second judge's score")
    method["items"] = "per dimension, the items scored by both judges"
    method["ceiling"] = "none: both files are judges"
    return out


CEILING_DEFINITION = (
    "each human rating vs the median of the other humans' ratings of the same item (leave-one-out), "
    "pooled over all (rater, item) pairs of the compared items with two or more human ratings "
    "(Agirre et al. 2012, SemEval-2012 Task 6, with the median for the average); abs_rater_bias: "
    "|mean of (rating - the others' mean)| per rater, averaged over raters weighted by their pairs "
    "(the signed bias is 0 by construction)"
)
SYSTEM_DEFINITION_JUDGES = ("Kendall tau-b and tau_AP (positions from the first judge's ranking, correctness from "
                            "the second judge's) between the two judges' means per system, over the compared items")
SYSTEM_DEFINITION = (
    "Kendall tau-b and tau_AP (positions from the judge's ranking, correctness from the humans') between the "
    "judge's mean per system and the humans' mean per system (mean over the system's items of the per-item "
    "human mean), over the compared items"
)


def _method(judge: Ratings, humans: Ratings, seed: int, resamples: int) -> dict:
    return {
        "seed": seed,
        "resamples": resamples,
        "interval": (
            f"{CONFIDENCE:.0%} bootstrap percentile interval (numpy.quantile, linear) re-centred on the estimate "
            "(minus the resamples' median bias) and clipped to the figure's range, resampling conversations with "
            "replacement, all items of a drawn conversation together; draws from "
            "numpy.random.default_rng([seed, index of the dimension])"
        ),
        "max_undefined_share": MAX_UNDEFINED_SHARE,
        "median_rounding": "half up: floor(median + 0.5), e.g. 2.5 -> 3",
        "kappa_weights": "quadratic, (i - j)^2 on the scale values 1..5",
        "exact_and_within_1": "judge vs the humans' median rounded half up",
        "correlations": "judge vs the humans' median, unrounded; Kendall variant b",
        "alpha_level": "ordinal",
        "human_mean": "mean over items of the per-item mean of the human raters",
        "items": "per dimension, the items with a judge score and at least one human score",
        "judge_file": judge.file,
        "human_file": humans.file,
        "judge": judge.raters()[0],
        "libraries": {name: metadata.version(name) for name in ("numpy", "scipy", "krippendorff")},
    }


# ---------------------------------------------------------------------------------------------
# Inputs


def _require_shared_items(judge: Ratings, humans: Ratings) -> None:
    """InputError when no item is in both files: every figure would be undefined."""
    judge_items = {r.item_id for r in judge.rows}
    human_items = {r.item_id for r in humans.rows}
    if judge_items.isdisjoint(human_items):
        raise InputError(
            f"no item is in both files: the judge's file ({judge.file}) has {len(judge_items)} items, this file "
            f"{len(human_items)}, and no item_id is shared; give the human ratings of the items the judge rated",
            humans.file,
        )


def _items_of_both(judge: Ratings, humans: Ratings) -> tuple[dict[str, str], dict[str, str]]:
    """item -> conversation and item -> system over both files; the files must agree."""
    problems = Problems()
    conversation_of: dict[str, tuple[str, Ratings, int]] = {}
    system_of: dict[str, tuple[str, Ratings, int]] = {}
    for ratings in (judge, humans):
        for row in ratings.rows:
            for field, table, value in (
                ("conversation_id", conversation_of, row.conversation_id),
                ("system", system_of, row.system),
            ):
                if value is None:
                    continue
                known = table.get(row.item_id)
                if known is None:
                    table[row.item_id] = (value, ratings, row.line)
                elif known[0] != value:  # within one file the reader refuses it already
                    problems.error(
                        ratings.file, row.line,
                        f"item {quoted(row.item_id)} has {field} {quoted(value)} here but {quoted(known[0])} "
                        f"in {known[1].file} line {known[2]}",
                    )
    if problems.has_errors:
        raise InputError(problems)
    return {k: v[0] for k, v in conversation_of.items()}, {k: v[0] for k, v in system_of.items()}


@dataclass(frozen=True)
class _Pairs:
    """Units compared: a score under test ``x`` (1..5) against a reference side given by its
    ``median`` (on the half-point grid) and ``mean``; ``conversation`` indexes the dimension's
    sorted conversation ids."""

    x: np.ndarray
    median: np.ndarray
    mean: np.ndarray
    conversation: np.ndarray
    rater: np.ndarray | None = None  # the ceiling's: index of the human who gave x

    @property
    def n(self) -> int:
        return len(self.x)


@dataclass(frozen=True)
class _DimensionData:
    """What one dimension's figures are computed from (items in sorted id order)."""

    items: list[str]
    conversations: list[str]
    judge_vs_humans: _Pairs
    human_counts: np.ndarray  # items x 5: how many humans gave each score
    human_vs_others: _Pairs  # the ceiling's leave-one-out pairs
    ceiling_items: int
    ceiling_raters: int
    n_human_ratings: int
    n_human_raters: int
    judge_only: int
    humans_only: int
    system: np.ndarray | None  # per item, index into systems
    systems: list[str]

    @property
    def n_conversations(self) -> int:
        return len(self.conversations)

    @staticmethod
    def build(
        dimension: str,
        judge: Ratings,
        humans: Ratings,
        conversation_of: dict[str, str],
        system_of: dict[str, str] | None,
    ) -> "_DimensionData":
        judge_score = {r.item_id: r.score for r in judge.rows if r.dimension == dimension}
        human_scores: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for r in humans.rows:
            if r.dimension == dimension:
                human_scores[r.item_id].append((r.rater, r.score))
        items = sorted(set(judge_score) & set(human_scores))
        conversations = sorted({conversation_of[i] for i in items})
        conversation_index = {c: k for k, c in enumerate(conversations)}
        item_conversation = np.array([conversation_index[conversation_of[i]] for i in items], dtype=np.int64)
        judge_vs_humans = _Pairs(
            np.array([judge_score[i] for i in items], dtype=np.int64),
            np.array([median(s for _, s in human_scores[i]) for i in items], dtype=float),
            np.array([np.mean([s for _, s in human_scores[i]]) for i in items], dtype=float),
            item_conversation,
        )
        human_counts = np.zeros((len(items), _K))
        for row, item in enumerate(items):
            for _, score in human_scores[item]:
                human_counts[row, score - 1] += 1
        x, med, mean, conv, rater_of_pair = [], [], [], [], []
        ceiling_items = 0
        for row, item in enumerate(items):
            ratings = human_scores[item]
            if len(ratings) < 2:
                continue
            ceiling_items += 1
            for k, (rater, score) in enumerate(ratings):
                others = [s for j, (_, s) in enumerate(ratings) if j != k]
                x.append(score)
                med.append(median(others))
                mean.append(sum(others) / len(others))
                conv.append(item_conversation[row])
                rater_of_pair.append(rater)
        raters = sorted(set(rater_of_pair))
        rater_index = {r: k for k, r in enumerate(raters)}
        human_vs_others = _Pairs(
            np.array(x, dtype=np.int64), np.array(med, dtype=float), np.array(mean, dtype=float),
            np.array(conv, dtype=np.int64), np.array([rater_index[r] for r in rater_of_pair], dtype=np.int64),
        )
        system = None
        systems: list[str] = []
        if system_of is not None:
            systems = sorted({system_of[i] for i in items})
            system_index = {s: k for k, s in enumerate(systems)}
            # Every compared item has a system: it is in both files and one of them has the column.
            system = np.array([system_index[system_of[i]] for i in items], dtype=np.int64)
        compared = set(items)
        return _DimensionData(
            items=items,
            conversations=conversations,
            judge_vs_humans=judge_vs_humans,
            human_counts=human_counts,
            human_vs_others=human_vs_others,
            ceiling_items=ceiling_items,
            ceiling_raters=len(raters),
            n_human_ratings=int(human_counts.sum()),
            n_human_raters=len({rater for i in items for rater, _ in human_scores[i]}),
            judge_only=len(set(judge_score) - compared),
            humans_only=len(set(human_scores) - compared),
            system=system,
            systems=systems,
        )


# ---------------------------------------------------------------------------------------------
# Figures of one dimension


def _dimension_figures(data: _DimensionData, counts: np.ndarray | None, resamples: int, names: dict) -> dict:
    out: dict = {
        "n_items": len(data.items),
        "n_conversations": data.n_conversations,
        "n_human_ratings": data.n_human_ratings,
        "n_human_raters": data.n_human_raters,
        "items_judge_only": data.judge_only,
        "items_humans_only": data.humans_only,
    }
    pairs = data.judge_vs_humans
    if pairs.n == 0:
        reason = f"no item has both a judge score and {names['score']}"
        out.update({name: _undefined(reason) for name in ITEM_FIGURES + ALPHA_FIGURES})
        return out
    out.update(_pair_figures(pairs, counts, resamples, "the judge", names["median"]))
    bias = float(np.mean(pairs.x) - np.mean(pairs.mean))
    differences = np.stack([pairs.x - pairs.mean, np.ones(pairs.n)], axis=1)
    sums = counts @ _per_conversation(differences, pairs.conversation, data.n_conversations)
    defined = sums[:, 1] > 0  # always: every drawn conversation has compared items
    out["bias"] = _summary(bias, None, sums[:, 0] / np.where(defined, sums[:, 1], 1.0), defined, resamples, (-4.0, 4.0))
    judge_counts = np.zeros_like(data.human_counts)
    judge_counts[np.arange(pairs.n), pairs.x - 1] = 1
    for name, value_counts in (
        ("alpha_ordinal_humans", data.human_counts),
        ("alpha_ordinal_with_judge", data.human_counts + judge_counts),
    ):
        point, reason = _alpha_point(value_counts)
        coincidences = _per_conversation(_unit_coincidences(value_counts), pairs.conversation, data.n_conversations)
        values, defined = _alpha_ordinal((counts @ coincidences).reshape(-1, _K, _K))
        out[name] = _summary(point, reason, values, defined, resamples)
    return out


def _ceiling_figures(data: _DimensionData, counts: np.ndarray | None, resamples: int) -> dict:
    pairs = data.human_vs_others
    out: dict = {"n_pairs": pairs.n, "n_items": data.ceiling_items, "n_raters": data.ceiling_raters}
    if pairs.n == 0:
        reason = "no compared item has two or more human ratings"
        out.update({name: _undefined(reason) for name in CEILING_FIGURES})
        return out
    out.update(_pair_figures(pairs, counts, resamples, "the single human ratings", "the other humans' median"))
    n_raters = data.ceiling_raters
    features = np.zeros((pairs.n, 2 * n_raters))
    features[np.arange(pairs.n), pairs.rater] = pairs.x - pairs.mean
    features[np.arange(pairs.n), n_raters + pairs.rater] = 1.0
    per_conversation = _per_conversation(features, pairs.conversation, data.n_conversations)
    point, _ = _abs_rater_bias(per_conversation.sum(axis=0)[None, :], n_raters)
    values, defined = _abs_rater_bias(counts @ per_conversation, n_raters)
    out["abs_rater_bias"] = _summary(float(point[0]), None, values, defined, resamples, (0.0, 4.0))
    return out


def _abs_rater_bias(sums: np.ndarray, n_raters: int) -> tuple[np.ndarray, np.ndarray]:
    """sum_r n_r |b_r| / sum_r n_r from (R x 2*raters) sums: per rater, the sum of (rating - the
    others' mean) over the rater's pairs, then the rater's pair count; b_r = sum / n_r."""
    deviation, pairs = sums[:, :n_raters], sums[:, n_raters:]
    total = pairs.sum(axis=1)
    defined = total > 0
    # n_r |b_r| = |sum of the rater's deviations|: no division by a rater's own (maybe 0) count.
    return np.abs(deviation).sum(axis=1) / np.where(defined, total, 1.0), defined


def _pair_figures(pairs: _Pairs, counts: np.ndarray, resamples: int, x_name: str, y_name: str) -> dict:
    """kappa, exact, within_1, Spearman and Kendall of ``pairs``: point and interval."""
    x_level = pairs.x - 1
    median_level = np.rint(2 * (pairs.median - 1)).astype(np.int64)  # exact: medians are half points
    features = np.zeros((pairs.n, _K * _LEVELS))
    features[np.arange(pairs.n), x_level * _LEVELS + median_level] = 1.0
    boot = counts @ _per_conversation(features, pairs.conversation, int(counts.shape[1]))
    tables = boot.reshape(-1, _K, _LEVELS)  # x score x median level, weighted
    score_tables = tables @ _LEVEL_TO_SCORE  # x score x median rounded half up
    rounded = round_half_up(pairs.median)
    point_table = np.zeros((1, _K, _K))
    np.add.at(point_table, (0, x_level, rounded.astype(np.int64) - 1), 1.0)
    kappa_point, kappa_defined = weighted_kappa(point_table)

    constant = _constant_reason(pairs.x, pairs.median, x_name, y_name)
    out: dict = {}
    out["kappa_quadratic"] = _summary(
        float(kappa_point[0]) if kappa_defined[0] else None,
        f"{x_name} and {y_name} give one and the same score to every item: kappa is 0/0",
        *weighted_kappa(score_tables), resamples,
    )
    out["exact"] = _summary(float(np.mean(pairs.x == rounded)), None, *_share(score_tables, 0), resamples, (0.0, 1.0))
    out["within_1"] = _summary(float(np.mean(np.abs(pairs.x - rounded) <= 1)), None, *_share(score_tables, 1), resamples,
                               (0.0, 1.0))
    spearman = kendall = None
    if constant is None:
        spearman = float(stats.spearmanr(pairs.x, pairs.median).statistic)
        kendall = float(stats.kendalltau(pairs.x, pairs.median, variant="b").statistic)
    out["spearman"] = _summary(spearman, constant, *_spearman(tables), resamples)
    out["kendall_tau_b"] = _summary(kendall, constant, *_kendall_tau_b(tables), resamples)
    return out


def _system_figures(data: _DimensionData, counts: np.ndarray | None, resamples: int, names: dict) -> dict:
    pairs = data.judge_vs_humans
    n_systems = len(data.systems)
    out: dict = {"n_systems": n_systems, "systems": {}}
    if n_systems == 0:
        out["kendall_tau_b"] = out["tau_ap"] = _undefined(f"no item has both a judge score and {names['score']}")
        return out
    system = data.system
    features = np.zeros((pairs.n, 3 * n_systems))
    rows = np.arange(pairs.n)
    features[rows, system] = 1.0
    features[rows, n_systems + system] = pairs.x
    features[rows, 2 * n_systems + system] = pairs.mean
    per_conversation = _per_conversation(features, pairs.conversation, data.n_conversations)
    totals = per_conversation.sum(axis=0)
    n_items, judge_mean, human_mean = (totals[k * n_systems : (k + 1) * n_systems] for k in range(3))
    judge_mean, human_mean = judge_mean / n_items, human_mean / n_items
    for k, name in enumerate(data.systems):
        out["systems"][name] = {
            "n_items": int(n_items[k]),
            "judge_mean": float(judge_mean[k]),
            "human_mean": float(human_mean[k]),
        }
    judge_ranked = np.round(judge_mean, SYSTEM_MEAN_DECIMALS)
    human_ranked = np.round(human_mean, SYSTEM_MEAN_DECIMALS)
    point, reason = None, None
    if n_systems < 2:
        reason = "one system only"
    elif np.all(judge_ranked == judge_ranked[0]):
        reason = "the judge's mean is the same for every system"
    elif np.all(human_ranked == human_ranked[0]):
        reason = f"{names['mean']} is the same for every system"
    else:
        point = float(stats.kendalltau(judge_ranked, human_ranked, variant="b").statistic)
    values = np.zeros(resamples)
    defined = np.zeros(resamples, dtype=bool)
    if n_systems >= 2:
        for start in range(0, resamples, _CHUNK):
            block = counts[start : start + _CHUNK] @ per_conversation
            size = block[:, :n_systems]
            present = np.all(size > 0, axis=1)  # a system without items in the resample has no mean
            with np.errstate(invalid="ignore", divide="ignore"):
                x = np.round(block[:, n_systems : 2 * n_systems] / size, SYSTEM_MEAN_DECIMALS)
                y = np.round(block[:, 2 * n_systems :] / size, SYSTEM_MEAN_DECIMALS)
            tau, ok = _kendall_tau_b_of_values(np.where(present[:, None], x, 0.0), np.where(present[:, None], y, 0.0))
            values[start : start + _CHUNK] = tau
            defined[start : start + _CHUNK] = ok & present
    out["kendall_tau_b"] = _summary(point, reason, values, defined, resamples)
    if n_systems >= 2:
        ranks = system_rank_agreement(pairs.conversation, system, pairs.mean, pairs.x, data.systems, seed=0,
                                      resamples=resamples, counts=counts)
        out["tau_ap"] = ranks["tau_ap"]
        out["interval_note"] = interval_note(n_systems, out["kendall_tau_b"], out["tau_ap"])
    else:
        out["tau_ap"] = _undefined(reason or "one system only")
    return out


def _judge_mean_system_figures(data: list[_DimensionData], seed: int, resamples: int, names: dict) -> dict:
    """The system level of ``judge_mean`` (module docstring): per item the mean of its five
    dimensions, over the items both sides scored on every dimension."""
    shared = set(data[0].items)
    for block in data[1:]:
        shared &= set(block.items)
    items = sorted(shared)
    out: dict = {"n_items": len(items), "n_systems": 0}
    if not items:
        reason = f"no item has a judge score and {names['score']} on every dimension"
        return {**out, "kendall_tau_b": _undefined(reason), "tau_ap": _undefined(reason), "interval_note": None}
    judge_sum, human_sum = np.zeros(len(items)), np.zeros(len(items))
    for block in data:
        row = {item: k for k, item in enumerate(block.items)}
        index = np.array([row[item] for item in items])
        judge_sum += block.judge_vs_humans.x[index]
        human_sum += block.judge_vs_humans.mean[index]
        first = block
    row = {item: k for k, item in enumerate(first.items)}
    index = np.array([row[item] for item in items])
    conversation_names = [first.conversations[c] for c in first.judge_vs_humans.conversation[index]]
    conversations = sorted(set(conversation_names))
    conversation = np.array([conversations.index(c) for c in conversation_names], dtype=np.int64)
    systems = sorted({first.systems[s] for s in first.system[index]})
    system = np.array([systems.index(first.systems[s]) for s in first.system[index]], dtype=np.int64)
    ranks = system_rank_agreement(conversation, system, human_sum / len(data), judge_sum / len(data), systems,
                                  seed=seed, resamples=resamples, stream=len(DIMENSIONS))
    out["n_systems"] = len(systems)
    out["n_conversations"] = len(conversations)
    out["systems"] = {name: {"n_items": block["n_items"], "judge_mean": block["other_mean"],
                             names["mean_key"]: block["reference_mean"]} for name, block in ranks["systems"].items()}
    for key in ("kendall_tau_b", "tau_ap", "interval_note"):
        out[key] = ranks[key]
    return out


# ---------------------------------------------------------------------------------------------
# Point estimates that need care


def _constant_reason(x: np.ndarray, y: np.ndarray, x_name: str, y_name: str) -> str | None:
    """Why a rank correlation is undefined (a constant side), or None."""
    if np.all(x == x[0]):
        return f"{x_name} gives every item the same score: a rank correlation is undefined"
    if np.all(y == y[0]):
        return f"{y_name} is the same for every item: a rank correlation is undefined"
    return None


def _alpha_point(value_counts: np.ndarray) -> tuple[float | None, str | None]:
    """Krippendorff's alpha (ordinal) by the ``krippendorff`` package, or None with the reason."""
    pairable = value_counts[value_counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return None, "no item has two or more ratings: nothing is pairable"
    if np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None, "every pairable rating is the same score: the expected disagreement is 0"
    return float(krippendorff.alpha(value_counts=value_counts, value_domain=list(SCORES), level_of_measurement="ordinal")), None


# ---------------------------------------------------------------------------------------------
# Figures of weighted tables, vectorised over resamples (row r of every array: resample r).
# Each returns (values, defined); values where not defined are 0 and never reported.


def _per_conversation(features: np.ndarray, conversation: np.ndarray, n_conversations: int) -> np.ndarray:
    """The sum of ``features`` over the units of each conversation (conversations x features)."""
    out = np.zeros((n_conversations, features.shape[1]))
    np.add.at(out, conversation, features)
    return out


def _share(tables: np.ndarray, tolerance: int) -> tuple[np.ndarray, np.ndarray]:
    """The share of units with |x - y| <= tolerance, from (R x 5 x 5) tables."""
    near = (np.abs(_SCALE[:, None] - _SCALE[None, :]) <= tolerance).astype(float)
    n = tables.sum(axis=(1, 2))
    return np.einsum("rij,ij->r", tables, near) / np.where(n > 0, n, 1.0), n > 0


def _mid_ranks(margins: np.ndarray) -> np.ndarray:
    """The average rank (1-based) of each level's units, given (R x L) level counts."""
    return np.cumsum(margins, axis=1) - margins + (margins + 1) / 2


def _spearman(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's rho (Pearson's r of mid-ranks) of the units of (R x A x B) level tables."""
    px, py = tables.sum(axis=2), tables.sum(axis=1)
    n = px.sum(axis=1)
    mean_rank = ((n + 1) / 2)[:, None]
    dx, dy = _mid_ranks(px) - mean_rank, _mid_ranks(py) - mean_rank
    cov = np.einsum("rab,ra,rb->r", tables, dx, dy)
    vx, vy = np.einsum("ra,ra->r", px, dx * dx), np.einsum("rb,rb->r", py, dy * dy)
    defined = (vx > 0) & (vy > 0)
    return np.where(defined, cov / np.sqrt(np.where(defined, vx * vy, 1.0)), 0.0), defined


def _kendall_tau_b(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's tau-b of the units of (R x A x B) level tables: (P - Q) / sqrt((n0 - n1)(n0 - n2)),
    P and Q the concordant and discordant pairs, n0 = n(n-1)/2, n1 and n2 the pairs tied in x, in y
    (Kendall 1945; scipy's kendalltau variant "b")."""
    # below[r, a, b]: units with x level > a and y level b.
    below = np.cumsum(tables[:, ::-1], axis=1)[:, ::-1] - tables
    higher_y = np.cumsum(below[:, :, ::-1], axis=2)[:, :, ::-1] - below  # x > a and y > b
    lower_y = np.cumsum(below, axis=2) - below  # x > a and y < b
    s = np.einsum("rab,rab->r", tables, higher_y - lower_y)
    px, py = tables.sum(axis=2), tables.sum(axis=1)
    n = px.sum(axis=1)
    n0 = n * (n - 1) / 2
    untied_x = n0 - (px * (px - 1) / 2).sum(axis=1)
    untied_y = n0 - (py * (py - 1) / 2).sum(axis=1)
    defined = (untied_x > 0) & (untied_y > 0)
    return np.where(defined, s / np.sqrt(np.where(defined, untied_x * untied_y, 1.0)), 0.0), defined


def _kendall_tau_b_of_values(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's tau-b of (R x S) values, row by row.

    Up to ``_PAIRWISE_MAX_SYSTEMS`` systems, from the signs of all pairs, every row at once:
    sum sx*sy / sqrt(sum sx^2 * sum sy^2) over ordered pairs (a tie has sign 0; counting i < j
    and j > i alike doubles each sum and leaves the ratio), in blocks of rows of at most
    ``_PAIR_BLOCK`` pair elements. Beyond, the S^2 pairs would cost time and memory with the
    square of the systems (600 systems: minutes and gigabytes), so each row goes to
    ``scipy.stats.kendalltau`` (variant b, sorting: S log S), undefined where it is NaN."""
    rows, n = x.shape
    if n > _PAIRWISE_MAX_SYSTEMS:
        values = np.array([stats.kendalltau(a, b, variant="b").statistic for a, b in zip(x, y)], dtype=float)
        defined = np.isfinite(values)
        return np.where(defined, values, 0.0), defined
    sums = np.zeros((rows, 3))  # per row: sum sx*sy, untied pairs in x, untied pairs in y
    step = max(1, _PAIR_BLOCK // max(n * n, 1))
    for start in range(0, rows, step):
        block = slice(start, start + step)
        sx = np.sign(x[block, :, None] - x[block, None, :])
        sy = np.sign(y[block, :, None] - y[block, None, :])
        sums[block, 0] = np.einsum("rij,rij->r", sx, sy)
        sums[block, 1] = np.count_nonzero(sx, axis=(1, 2))
        sums[block, 2] = np.count_nonzero(sy, axis=(1, 2))
        del sx, sy
    untied_x, untied_y = sums[:, 1], sums[:, 2]
    defined = (untied_x > 0) & (untied_y > 0)
    return np.where(defined, sums[:, 0] / np.sqrt(np.where(defined, untied_x * untied_y, 1.0)), 0.0), defined


def _unit_coincidences(value_counts: np.ndarray) -> np.ndarray:
    """Each unit's coincidence matrix, flattened (units x 25): (a a^T - diag(a)) / (m - 1) for a
    unit with m >= 2 pairable values a per score, zero for a unit with fewer (Krippendorff 2011)."""
    m = value_counts.sum(axis=1)
    outer = value_counts[:, :, None] * value_counts[:, None, :]
    outer[:, np.arange(_K), np.arange(_K)] -= value_counts
    scale = np.where(m >= 2, 1.0 / np.where(m >= 2, m - 1, 1.0), 0.0)
    return (outer * scale[:, None, None]).reshape(len(value_counts), _K * _K)


def _alpha_ordinal(coincidences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Krippendorff's alpha, ordinal level, of (R x 5 x 5) coincidence matrices:
    1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck with d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2,
    n_c the pairable values of score c (Krippendorff 2011)."""
    n_c = coincidences.sum(axis=2)
    n = n_c.sum(axis=1)
    cumulative = np.cumsum(n_c, axis=1)
    index = np.arange(_K)
    low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
    between = cumulative[:, high] - cumulative[:, low] + n_c[:, low]
    delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    observed = np.einsum("rck,rck->r", coincidences, delta)
    expected = np.einsum("rc,rk,rck->r", n_c, n_c, delta)
    defined = (n >= 2) & (expected > 0)
    return np.where(defined, 1.0 - (n - 1) * observed / np.where(defined, expected, 1.0), 0.0), defined


# ---------------------------------------------------------------------------------------------
# Output


def _undefined(reason: str) -> dict:
    return {"value": None, "ci_low": None, "ci_high": None, "reason": reason}


def _summary(
    point: float | None, reason: str | None, values: np.ndarray, defined: np.ndarray, resamples: int,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> dict:
    """``{"value", "ci_low", "ci_high", "undefined_resamples"}`` (+ ``reason`` when something is None)."""
    if point is None:
        return _undefined(reason or "undefined")
    undefined = int(resamples - np.count_nonzero(defined))
    out: dict = {"value": _finite(point), "ci_low": None, "ci_high": None, "undefined_resamples": undefined}
    if undefined > MAX_UNDEFINED_SHARE * resamples:
        out["reason"] = (
            f"undefined on {undefined} of {resamples} resamples (more than {MAX_UNDEFINED_SHARE:.0%}): no interval"
        )
        return out
    low, high = centred_percentile_interval(float(point), values[defined], CONFIDENCE, *bounds)
    out["ci_low"], out["ci_high"] = _finite(low), _finite(high)
    return out


def _finite(value: float) -> float:
    value = float(value)
    if not math.isfinite(value):  # a bug, never the data: every undefined case is caught above
        raise ArithmeticError(f"agreement: a non-finite figure ({value})")
    return value

