"""Judge-human agreement: the ratings reader and the statistics (reteco.metrics.agreement).

Hand-computed small cases, then every figure against scikit-learn, scipy and the krippendorff
package on a seeded synthetic data set (and on expanded bootstrap resamples), then the
bootstrap's properties, then the reader's errors.
"""

from __future__ import annotations

import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from statistics import median

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from support.intervals import centred

from reteco.formats.ratings import DIMENSIONS, Rating, Ratings, read_ratings
from reteco.metrics.agreement import agreement, conversation_resamples, round_half_up
from reteco.problems import InputError
from reteco.workbench.judge_audit.agreement_page import render

HEADER = "item_id,conversation_id,dimension,rater,score"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def csv_ratings(tmp_path: Path, name: str, rows: list[str], header: str = HEADER, single_rater: bool = False) -> Ratings:
    return read_ratings(write(tmp_path, name, header + "\n" + "\n".join(rows) + "\n"), single_rater=single_rater)


def judge_and_humans(tmp_path: Path, dimension: str, items: list[tuple[str, int, list[int]]]):
    """(conversation, judge score, human scores) per item -> the two files' ratings."""
    judge = [f"i{k},{conv},{dimension},gpt,{j}" for k, (conv, j, _) in enumerate(items)]
    humans = [f"i{k},{conv},{dimension},h{r},{s}" for k, (conv, _, hs) in enumerate(items) for r, s in enumerate(hs)]
    return csv_ratings(tmp_path, "judge.csv", judge, single_rater=True), csv_ratings(tmp_path, "human.csv", humans)


def all_numbers_finite(value) -> bool:
    json.dumps(value, allow_nan=False)  # raises on NaN or infinity
    return True


# ---------------------------------------------------------------------------------------------
# Hand-computed cases

# Five items, one per conversation, two humans each:
#   item  humans  median  rounded half up  human mean  judge
#   i0    2,3     2.5     3                2.5         3
#   i1    4,4     4       4                4.0         5
#   i2    1,2     1.5     2                1.5         1
#   i3    5,5     5       5                5.0         5
#   i4    3,4     3.5     4                3.5         2
CASE_A = [("c0", 3, [2, 3]), ("c1", 5, [4, 4]), ("c2", 1, [1, 2]), ("c3", 5, [5, 5]), ("c4", 2, [3, 4])]


def test_hand_computed_kappa_exact_within_1_bias(tmp_path):
    judge, humans = judge_and_humans(tmp_path, "correctness", CASE_A)
    out = agreement(judge, humans, resamples=50)["dimensions"]["correctness"]
    assert out["n_items"] == 5 and out["n_conversations"] == 5 and out["n_human_ratings"] == 10
    # judge J = 3,5,1,5,2; rounded median H = 3,4,2,5,4.
    # exact: i0 and i3 -> 2/5. (Python's round(2.5) == 2 would make i0 a miss: 1/5.)
    assert out["exact"]["value"] == pytest.approx(0.4, abs=1e-12)
    # within_1: |J - H| = 0,1,1,0,2 -> 4/5.
    assert out["within_1"]["value"] == pytest.approx(0.8, abs=1e-12)
    # bias: mean J = 16/5 = 3.2; human mean = (2.5 + 4 + 1.5 + 5 + 3.5)/5 = 3.3 -> -0.1.
    assert out["bias"]["value"] == pytest.approx(-0.1, abs=1e-12)
    # kappa: observed sum w*O = mean (J - H)^2 = (0+1+1+0+4)/5 = 1.2;
    # expected sum w*E = (1/25) sum over all (judge score, human score) pairs of (a - b)^2
    #   a=3: 0+1+1+4+1 = 7; a=5: 4+1+9+0+1 = 15 (twice); a=1: 4+9+1+16+9 = 39; a=2: 1+4+0+9+4 = 18
    #   -> 94/25 = 3.76; kappa = 1 - 1.2/3.76 = 1 - 15/47 = 32/47.
    assert out["kappa_quadratic"]["value"] == pytest.approx(32 / 47, abs=1e-12)


def test_hand_computed_ceiling_is_each_human_against_the_others(tmp_path):
    judge, humans = judge_and_humans(tmp_path, "correctness", CASE_A)
    ceiling = agreement(judge, humans, resamples=50)["ceiling"]["dimensions"]["correctness"]
    # With two humans an item gives two pairs, each human against the other:
    #   x = 2,3, 4,4, 1,2, 5,5, 3,4 and y = 3,2, 4,4, 2,1, 5,5, 4,3.
    assert (ceiling["n_pairs"], ceiling["n_items"], ceiling["n_raters"]) == (10, 5, 2)
    # exact: the pairs of i1 and i3 -> 4/10; within_1: every pair -> 1.
    assert ceiling["exact"]["value"] == pytest.approx(0.4, abs=1e-12)
    assert ceiling["within_1"]["value"] == pytest.approx(1.0, abs=1e-12)
    # Rater bias: h0 - h1 = -1,0,-1,0,-1 -> -0.6; h1: +0.6; weighted by 5 pairs each: 0.6.
    # (The signed bias pooled over raters is 0 by construction: not reported.)
    assert ceiling["abs_rater_bias"]["value"] == pytest.approx(0.6, abs=1e-12)
    assert "bias" not in ceiling
    # kappa: mean (x - y)^2 = 6/10 = 0.6; x and y have the same margins, mean 3.3 and variance
    # (4+9+16+16+1+4+25+25+9+16)/10 - 3.3^2 = 12.5 - 10.89 = 1.61, so sum w*E = 1.61 + 1.61 + 0 = 3.22;
    # kappa = 1 - 0.6/3.22 = 131/161.
    assert ceiling["kappa_quadratic"]["value"] == pytest.approx(131 / 161, abs=1e-12)


def test_median_is_rounded_half_up():
    assert list(round_half_up([1.5, 2.5, 3.5, 4.5, 2.0, 3.0])) == [2, 3, 4, 5, 2, 3]


# Three items, two humans each, and the judge:
#   u0: humans 1,1  judge 1;  u1: humans 2,3  judge 3;  u2: humans 3,3  judge 2
CASE_ALPHA = [("c0", 1, [1, 1]), ("c1", 3, [2, 3]), ("c2", 2, [3, 3])]


def test_hand_computed_ordinal_alpha(tmp_path):
    judge, humans = judge_and_humans(tmp_path, "coherence", CASE_ALPHA)
    out = agreement(judge, humans, resamples=50)["dimensions"]["coherence"]
    # Humans: coincidences o11 = 2, o23 = o32 = 1, o33 = 2; n1 = 2, n2 = 1, n3 = 3, n = 6.
    # Ordinal d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2: d12 = (3 - 1.5)^2 = 2.25,
    # d13 = (6 - 2.5)^2 = 12.25, d23 = (4 - 2)^2 = 4.
    # sum o*d = 2 * 4 = 8; sum n_c n_k d_ck = 2 * (2*1*2.25 + 2*3*12.25 + 1*3*4) = 180;
    # alpha = 1 - (n - 1) * 8 / 180 = 1 - 40/180 = 7/9.
    # (The interval metric d = (c - k)^2 would give 1 - 5*2/58 = 24/29: a different number.)
    assert out["alpha_ordinal_humans"]["value"] == pytest.approx(7 / 9, abs=1e-12)
    # With the judge as a third rater: u0 = 1,1,1 -> o11 = (9 - 3)/2 = 3; u1 = 2,3,3 and
    # u2 = 3,3,2 -> o23 = o32 = 1 and o33 = 1 each. n1 = 3, n2 = 2, n3 = 4, n = 9.
    # d12 = (5 - 2.5)^2 = 6.25, d13 = (9 - 3.5)^2 = 30.25, d23 = (6 - 3)^2 = 9.
    # sum o*d = 2*9 + 2*9 = 36; sum n n d = 2 * (3*2*6.25 + 3*4*30.25 + 2*4*9) = 945;
    # alpha = 1 - 8 * 36 / 945 = 73/105.
    assert out["alpha_ordinal_with_judge"]["value"] == pytest.approx(73 / 105, abs=1e-12)


def test_hand_computed_system_level_kendall(tmp_path):
    rows = [  # item, conversation, judge, humans, system
        ("i0", "c0", 2, [2, 3], "s1"), ("i1", "c1", 2, [3, 2], "s1"),   # judge 2, humans 2.5
        ("i2", "c0", 3, [2, 2], "s2"), ("i3", "c1", 3, [2, 2], "s2"),   # judge 3, humans 2.0
        ("i4", "c0", 4, [4, 5], "s3"), ("i5", "c1", 4, [5, 4], "s3"),   # judge 4, humans 4.5
    ]
    judge = csv_ratings(
        tmp_path, "j.csv", [f"{i},{c},relevance,gpt,{j},{s}" for i, c, j, _, s in rows], HEADER + ",system"
    )
    humans = csv_ratings(tmp_path, "h.csv", [f"{i},{c},relevance,h{r},{v}" for i, c, _, hs, _ in rows for r, v in enumerate(hs)])
    level = agreement(judge, humans, resamples=50)["system_level"]["dimensions"]["relevance"]
    assert level["systems"] == {
        "s1": {"n_items": 2, "judge_mean": 2.0, "human_mean": 2.5},
        "s2": {"n_items": 2, "judge_mean": 3.0, "human_mean": 2.0},
        "s3": {"n_items": 2, "judge_mean": 4.0, "human_mean": 4.5},
    }
    # Pairs (s1,s2) discordant, (s1,s3) and (s2,s3) concordant, no ties: (2 - 1)/3.
    assert level["kendall_tau_b"]["value"] == pytest.approx(1 / 3, abs=1e-12)
    # tau_AP, positions from the judge (s3, s2, s1), correctness from the humans (s3, s1, s2):
    # s2 under s3 right (1/1); s1 under s3 right, under s2 wrong (1/2): 2/2 * (1 + 1/2) - 1 = 1/2.
    assert level["tau_ap"]["value"] == pytest.approx(0.5, abs=1e-12)
    assert "only 3 systems" in level["interval_note"]
    result = agreement(judge, humans, resamples=50)
    assert result["system_level"]["tau_ap_reference"] == "the humans"
    # Only relevance is rated: no item has all five dimensions, so judge_mean has no ranking.
    assert "every dimension" in result["system_level"]["judge_mean"]["tau_ap"]["reason"]


def test_system_level_judge_mean_ranks_the_mean_of_the_five_dimensions(synthetic_result):
    judge, humans, out = synthetic_result
    level = out["system_level"]["judge_mean"]
    scored = defaultdict(dict)
    for r in judge.rows:
        scored[r.item_id].setdefault("judge", {})[r.dimension] = r.score
        scored[r.item_id]["system"] = r.system
    for r in humans.rows:
        scored[r.item_id].setdefault("humans", defaultdict(list))[r.dimension].append(r.score)
    full = {i: v for i, v in scored.items() if len(v.get("judge", {})) == 5 and len(v.get("humans", {})) == 5}
    systems = sorted({v["system"] for v in full.values()})
    judge_means = [np.mean([np.mean(list(v["judge"].values())) for v in full.values() if v["system"] == s])
                   for s in systems]
    human_means = [np.mean([np.mean([np.mean(h) for h in v["humans"].values()]) for v in full.values()
                            if v["system"] == s]) for s in systems]
    assert level["n_items"] == len(full) and level["n_systems"] == len(systems)
    assert level["kendall_tau_b"]["value"] == pytest.approx(
        stats.kendalltau(judge_means, human_means, variant="b").statistic, abs=1e-9)
    assert level["kendall_tau_b"]["ci_low"] <= level["kendall_tau_b"]["value"] <= level["kendall_tau_b"]["ci_high"]
    assert level["tau_ap"]["value"] is not None and level["tau_ap"]["ci_low"] is not None


def test_kappa_weights_are_on_the_scale_not_on_the_labels_present(tmp_path):
    # Nobody uses score 3: scikit-learn without labels=[1..5] would treat 2 and 4 as neighbours.
    items = [("c0", 1, [1, 2]), ("c1", 2, [4, 4]), ("c2", 4, [4, 5]), ("c3", 5, [5, 5]), ("c4", 2, [2, 1])]
    judge, humans = judge_and_humans(tmp_path, "correctness", items)
    value = agreement(judge, humans, resamples=50)["dimensions"]["correctness"]["kappa_quadratic"]["value"]
    x = [1, 2, 4, 5, 2]
    y = [2, 4, 5, 5, 2]  # medians 1.5, 4, 4.5, 5, 1.5 rounded half up
    on_scale = cohen_kappa_score(x, y, weights="quadratic", labels=[1, 2, 3, 4, 5])
    on_labels_present = cohen_kappa_score(x, y, weights="quadratic")
    assert value == pytest.approx(on_scale, abs=1e-12)
    assert abs(on_scale - on_labels_present) > 1e-3


# ---------------------------------------------------------------------------------------------
# Against the libraries on a synthetic data set


def synthetic(n_items=200, n_conversations=60, n_humans=3, seed=7, missing=0.15, n_systems=6):
    """Items spread over conversations and systems; humans and a judge noisy around a latent
    quality (the judge a little lenient); some human ratings missing, a few items unrated by
    the judge or by the humans."""
    rng = np.random.default_rng(seed)
    judge, humans = [], []
    for i in range(n_items):
        conversation = f"conv{rng.integers(n_conversations):03d}"
        system = f"sys{i % n_systems}"
        for d, dimension in enumerate(DIMENSIONS):
            quality = rng.normal(2.6 + 0.25 * (i % n_systems) + 0.1 * d, 1.0)
            if rng.random() > 0.02:
                score = int(np.clip(np.rint(quality + 0.3 + rng.normal(0, 0.8)), 1, 5))
                judge.append(Rating(f"item{i}", conversation, dimension, "gpt-judge", score, system, len(judge) + 2))
            if rng.random() > 0.02:
                for h in range(n_humans):
                    if h > 0 and rng.random() < missing:
                        continue
                    score = int(np.clip(np.rint(quality + rng.normal(0, 0.7)), 1, 5))
                    humans.append(Rating(f"item{i}", conversation, dimension, f"human{h}", score, None, len(humans) + 2))
    return Ratings("judge.csv", tuple(judge), True), Ratings("human.csv", tuple(humans), False)


def library_figures(judge: Ratings, humans: Ratings, dimension: str, weight: dict[str, int] | None = None) -> dict:
    """Every figure computed from the raw rows with the libraries. ``weight``: how many copies of
    each conversation (a bootstrap resample expanded; every copy is a separate unit)."""
    judge_score = {r.item_id: r.score for r in judge.rows if r.dimension == dimension}
    system_of = {r.item_id: r.system for r in judge.rows}
    by_item: dict[str, dict[str, int]] = defaultdict(dict)
    conversation_of = {}
    for r in humans.rows:
        if r.dimension == dimension:
            by_item[r.item_id][r.rater] = r.score
            conversation_of[r.item_id] = r.conversation_id
    units = [i for i in sorted(judge_score) if i in by_item]
    if weight is not None:
        units = [i for i in units for _ in range(weight.get(conversation_of[i], 0))]
    x = np.array([judge_score[i] for i in units])
    med = np.array([median(by_item[i].values()) for i in units])
    mean = np.array([np.mean(list(by_item[i].values())) for i in units])
    rounded = np.floor(med + 0.5)
    raters = sorted({r.rater for r in humans.rows})
    matrix = np.array([[by_item[i].get(r, np.nan) for i in units] for r in raters], dtype=float)
    out = {
        "kappa_quadratic": cohen_kappa_score(x, rounded, weights="quadratic", labels=[1, 2, 3, 4, 5]),
        "exact": np.mean(x == rounded),
        "within_1": np.mean(np.abs(x - rounded) <= 1),
        "spearman": stats.spearmanr(x, med).statistic,
        "kendall_tau_b": stats.kendalltau(x, med, variant="b").statistic,
        "bias": np.mean(x) - np.mean(mean),
        "alpha_ordinal_humans": krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal"),
        "alpha_ordinal_with_judge": krippendorff.alpha(
            reliability_data=np.vstack([matrix, x[None, :].astype(float)]), level_of_measurement="ordinal"
        ),
        "alpha_interval_humans": krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"),
    }
    # The ceiling: each human rating against the median of the other humans' ratings.
    cx, cmed, deviations = [], [], defaultdict(list)
    for i in units:
        scores = by_item[i]
        if len(scores) < 2:
            continue
        for rater, score in scores.items():
            others = [s for r, s in scores.items() if r != rater]
            cx.append(score)
            cmed.append(median(others))
            deviations[rater].append(score - np.mean(others))
    cx, cmed, cround = np.array(cx), np.array(cmed), np.floor(np.array(cmed) + 0.5)
    out["ceiling"] = {
        "kappa_quadratic": cohen_kappa_score(cx, cround, weights="quadratic", labels=[1, 2, 3, 4, 5]),
        "exact": np.mean(cx == cround),
        "within_1": np.mean(np.abs(cx - cround) <= 1),
        "spearman": stats.spearmanr(cx, cmed).statistic,
        "kendall_tau_b": stats.kendalltau(cx, cmed, variant="b").statistic,
        "abs_rater_bias": np.average(
            [abs(np.mean(d)) for d in deviations.values()], weights=[len(d) for d in deviations.values()]
        ),
    }
    # System means in exact arithmetic: float sums would make equal means (e.g. 29/9 reached
    # through different items) differ in the last bit and break their tie.
    systems = sorted({system_of[i] for i in units})
    judge_means, human_means = [], []
    for s in systems:
        mine = [i for i in units if system_of[i] == s]
        judge_means.append(float(sum(Fraction(judge_score[i]) for i in mine) / len(mine)))
        item_means = [Fraction(sum(by_item[i].values()), len(by_item[i])) for i in mine]
        human_means.append(float(sum(item_means) / len(mine)))
    out["system_tau"] = stats.kendalltau(judge_means, human_means, variant="b").statistic
    return out


def compared_conversations(judge: Ratings, humans: Ratings, dimension: str) -> list[str]:
    """The sorted conversations of the items rated by both sides on ``dimension``."""
    judged = {r.item_id for r in judge.rows if r.dimension == dimension}
    return sorted({r.conversation_id for r in humans.rows if r.dimension == dimension and r.item_id in judged})


ITEM_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "bias")
CEILING_FIGURES = ("kappa_quadratic", "exact", "within_1", "spearman", "kendall_tau_b", "abs_rater_bias")


@pytest.fixture(scope="module")
def synthetic_result():
    judge, humans = synthetic()
    return judge, humans, agreement(judge, humans, resamples=400)


def test_every_figure_equals_the_libraries(synthetic_result):
    judge, humans, out = synthetic_result
    for dimension in DIMENSIONS:
        expected = library_figures(judge, humans, dimension)
        got = out["dimensions"][dimension]
        for name in ITEM_FIGURES + ("alpha_ordinal_humans", "alpha_ordinal_with_judge"):
            assert got[name]["value"] == pytest.approx(expected[name], abs=1e-9), (dimension, name)
        for name in CEILING_FIGURES:
            assert out["ceiling"]["dimensions"][dimension][name]["value"] == pytest.approx(
                expected["ceiling"][name], abs=1e-9
            ), (dimension, "ceiling", name)
        level = out["system_level"]["dimensions"][dimension]
        assert level["kendall_tau_b"]["value"] == pytest.approx(expected["system_tau"], abs=1e-9)
        # The wiring: ordinal, not the package's default interval level, on data where they differ.
        assert abs(expected["alpha_ordinal_humans"] - expected["alpha_interval_humans"]) > 1e-3


def test_synthetic_data_exercise_what_they_should(synthetic_result):
    judge, humans, out = synthetic_result
    got = out["dimensions"]["correctness"]
    # Some items lack a judge or a human score, some lack a human: missing data is exercised.
    assert got["items_judge_only"] > 0 and got["items_humans_only"] > 0
    assert 160 < got["n_items"] < 200 and got["n_conversations"] > 50 and got["n_human_raters"] == 3
    assert got["n_human_ratings"] < 3 * got["n_items"]
    # The judge is lenient by construction (+0.3) and correlated with the humans.
    assert 0.1 < got["bias"]["value"] < 0.5 and got["spearman"]["value"] > 0.5
    assert all_numbers_finite(out)


RANGES = {"bias": (-4.0, 4.0), "abs_rater_bias": (0.0, 4.0), "exact": (0.0, 1.0), "within_1": (0.0, 1.0)}


def test_each_bootstrap_resample_equals_the_libraries_on_the_expanded_resample():
    judge, humans = synthetic(n_items=60, n_conversations=15, seed=11)
    resamples = 40
    out = agreement(judge, humans, seed=5, resamples=resamples)
    for dimension in ("correctness", "faithfulness"):
        conversations = compared_conversations(judge, humans, dimension)
        counts = conversation_resamples(len(conversations), resamples, 5, dimension)
        assert counts.shape == (resamples, len(conversations)) and (counts.sum(axis=1) == len(conversations)).all()
        per_resample = [library_figures(judge, humans, dimension, dict(zip(conversations, row))) for row in counts]
        got = out["dimensions"][dimension]
        for name in ITEM_FIGURES + ("alpha_ordinal_humans", "alpha_ordinal_with_judge"):
            low, high = centred(got[name]["value"], [figures[name] for figures in per_resample], *RANGES.get(name, (-1, 1)))
            assert (got[name]["ci_low"], got[name]["ci_high"]) == pytest.approx((low, high), abs=1e-9), (dimension, name)
            assert got[name]["ci_low"] <= got[name]["value"] <= got[name]["ci_high"]
        for name in CEILING_FIGURES:
            ceiling = out["ceiling"]["dimensions"][dimension][name]
            low, high = centred(ceiling["value"], [figures["ceiling"][name] for figures in per_resample],
                                 *RANGES.get(name, (-1, 1)))
            assert (ceiling["ci_low"], ceiling["ci_high"]) == pytest.approx((low, high), abs=1e-9), (dimension, name)
        level = out["system_level"]["dimensions"][dimension]["kendall_tau_b"]
        low, high = centred(level["value"], [figures["system_tau"] for figures in per_resample])
        assert (level["ci_low"], level["ci_high"]) == pytest.approx((low, high), abs=1e-9)


# ---------------------------------------------------------------------------------------------
# The bootstrap


def test_same_seed_same_result_and_another_seed_another_interval():
    judge, humans = synthetic(n_items=80, n_conversations=25, seed=3)
    first = agreement(judge, humans, seed=2027, resamples=300)
    assert agreement(judge, humans, seed=2027, resamples=300) == first
    other = agreement(judge, humans, seed=2028, resamples=300)
    assert other["dimensions"]["correctness"]["kappa_quadratic"]["value"] == first["dimensions"]["correctness"]["kappa_quadratic"]["value"]
    assert other["dimensions"]["correctness"]["kappa_quadratic"]["ci_low"] != first["dimensions"]["correctness"]["kappa_quadratic"]["ci_low"]
    assert first["method"]["seed"] == 2027 and first["method"]["resamples"] == 300
    assert first["method"]["alpha_level"] == "ordinal" and "half up" in first["method"]["median_rounding"]


def test_intervals_contain_the_point_estimate_on_well_behaved_data(synthetic_result):
    _, _, out = synthetic_result
    sections = [out["dimensions"], out["ceiling"]["dimensions"]]
    for section in sections:
        for dimension, figures in section.items():
            for name, figure in figures.items():
                if isinstance(figure, dict):
                    assert figure["undefined_resamples"] == 0, (dimension, name)
                    assert figure["ci_low"] <= figure["value"] <= figure["ci_high"], (dimension, name)
                    assert figure["ci_low"] < figure["ci_high"], (dimension, name)


def test_resampling_is_by_conversation():
    # 10 conversations of 20 items: in half of them the judge always matches the humans, in the
    # other half never. Drawing conversations, the exact share of a resample is (matching
    # conversations drawn)/10, with a standard deviation of 0.5/sqrt(10) = 0.16: the interval
    # spans about 0.2..0.8. Drawing items, it would be 0.5/sqrt(200) = 0.035: about 0.43..0.57.
    judge, humans = [], []
    for c in range(10):
        for k in range(20):
            item = f"c{c}-i{k}"
            judge.append(Rating(item, f"c{c}", "relevance", "gpt", 4 if c % 2 else 2, None, 0))
            for h in range(3):
                humans.append(Rating(item, f"c{c}", "relevance", f"h{h}", 4, None, 0))
    out = agreement(Ratings("j", tuple(judge), False), Ratings("h", tuple(humans), False), resamples=2000)
    exact = out["dimensions"]["relevance"]["exact"]
    assert exact["value"] == 0.5
    assert exact["ci_low"] <= 0.3 and exact["ci_high"] >= 0.7


def test_undefined_figures_and_resamples_are_none_with_a_reason_never_nan(tmp_path):
    # The judge gives 3 everywhere: rank correlations are undefined, kappa is not.
    items = [(f"c{k % 4}", 3, [1 + k % 5, 1 + (k + 1) % 5]) for k in range(12)]
    judge, humans = judge_and_humans(tmp_path, "completeness", items)
    out = agreement(judge, humans, resamples=200)
    got = out["dimensions"]["completeness"]
    for name in ("spearman", "kendall_tau_b"):
        assert got[name]["value"] is None and "same score" in got[name]["reason"]
    assert got["kappa_quadratic"]["value"] is not None
    # Dimensions nobody rated are there, with n_items 0 and reasons.
    assert out["dimensions"]["coherence"]["n_items"] == 0
    assert out["dimensions"]["coherence"]["kappa_quadratic"] == {
        "value": None, "ci_low": None, "ci_high": None,
        "reason": "no item has both a judge score and a human score",
    }
    assert "system_level" not in out  # no system column
    assert all_numbers_finite(out)


def test_a_human_file_with_one_rater_has_no_ceiling_and_no_human_alpha(tmp_path):
    judge, humans = judge_and_humans(tmp_path, "correctness", [(c, j, hs[:1]) for c, j, hs in CASE_A])
    out = agreement(judge, humans, resamples=50)
    assert out["dimensions"]["correctness"]["alpha_ordinal_humans"]["value"] is None
    assert "pairable" in out["dimensions"]["correctness"]["alpha_ordinal_humans"]["reason"]
    assert out["dimensions"]["correctness"]["alpha_ordinal_with_judge"]["value"] is not None
    assert out["ceiling"]["dimensions"]["correctness"]["n_pairs"] == 0
    assert out["ceiling"]["dimensions"]["correctness"]["kappa_quadratic"]["value"] is None


def _judge_varies_only_in(conversations_with_variation: int, n_conversations: int):
    judge, humans = [], []
    for c in range(n_conversations):
        for k in range(4):
            item = f"c{c}-{k}"
            score = 1 + k if c < conversations_with_variation else 3
            judge.append(Rating(item, f"c{c:02d}", "correctness", "gpt", score, None, 0))
            for h in range(2):
                humans.append(Rating(item, f"c{c:02d}", "correctness", f"h{h}", 1 + (k + h + c) % 5, None, 0))
    return Ratings("j", tuple(judge), False), Ratings("h", tuple(humans), False)


def test_a_few_undefined_resamples_are_counted_and_left_out():
    # The judge varies in 3 of 30 conversations: a resample misses all three with probability
    # (27/30)^30 = 4.2%, and then Spearman is undefined on it.
    out = agreement(*_judge_varies_only_in(3, 30), resamples=2000)
    spearman = out["dimensions"]["correctness"]["spearman"]
    assert 40 < spearman["undefined_resamples"] < 140
    assert spearman["ci_low"] is not None and spearman["ci_low"] <= spearman["value"] <= spearman["ci_high"]


def test_many_undefined_resamples_give_no_interval():
    # One conversation of 30 carries all the judge's variation: (29/30)^30 = 36% undefined.
    out = agreement(*_judge_varies_only_in(1, 30), resamples=2000)
    spearman = out["dimensions"]["correctness"]["spearman"]
    assert spearman["value"] is not None and spearman["ci_low"] is None and spearman["ci_high"] is None
    assert spearman["undefined_resamples"] > 500 and "no interval" in spearman["reason"]
    assert all_numbers_finite(out)


def test_resamples_must_be_positive():
    judge, humans = _judge_varies_only_in(3, 5)
    with pytest.raises(ValueError, match="resamples"):
        agreement(judge, humans, resamples=0)


def test_an_item_in_two_conversations_across_the_files_is_refused(tmp_path):
    judge = csv_ratings(tmp_path, "j.csv", ["a,c1,correctness,gpt,3"])
    humans = csv_ratings(tmp_path, "h.csv", ["a,c1,correctness,h1,3", "b,c1,correctness,h1,3"])
    agreement(judge, humans, resamples=10)  # consistent: fine
    humans = csv_ratings(tmp_path, "h2.csv", ["x,c9,coherence,h1,3", "a,c2,correctness,h1,3"])
    with pytest.raises(InputError) as caught:
        agreement(judge, humans, resamples=10)
    assert str(caught.value) == (
        f"{tmp_path / 'h2.csv'}:3: error: item 'a' has conversation_id 'c2' here but 'c1' in {tmp_path / 'j.csv'} line 2"
    )


def test_a_judge_with_two_raters_is_refused_by_agreement_too():
    judge = Ratings("j.csv", (Rating("a", "c", "correctness", "gpt", 3, None, 2),
                              Rating("b", "c", "correctness", "claude", 3, None, 3)), False)
    humans = Ratings("h.csv", (Rating("a", "c", "correctness", "h", 3, None, 2),), False)
    with pytest.raises(InputError, match=r"^j\.csv:3: error: rater 'claude' here but 'gpt' on line 2"):
        agreement(judge, humans)


# ---------------------------------------------------------------------------------------------
# The reader


def read_error(tmp_path: Path, text: str | bytes, single_rater: bool = False) -> str:
    path = tmp_path / "ratings.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(InputError) as caught:
        read_ratings(path, single_rater=single_rater)
    return str(caught.value).replace(str(path), "F")


def test_reader_reads_a_valid_file(tmp_path):
    text = (
        "\ufeffscore,rater,dimension,conversation_id,item_id,system\r\n"
        "3,h1,correctness,c1,i1,sysA\r\n"
        "\r\n"
        ' 5 ,h2,correctness,c1,"i1",sysA\r\n'
        "1,h1,faithfulness,c2,i2,sysB\r\n"
    )
    ratings = read_ratings(write(tmp_path, "r.csv", text))
    assert ratings.has_system and ratings.raters() == ["h1", "h2"]
    assert ratings.rows == (
        Rating("i1", "c1", "correctness", "h1", 3, "sysA", 2),
        Rating("i1", "c1", "correctness", "h2", 5, "sysA", 4),
        Rating("i2", "c2", "faithfulness", "h1", 1, "sysB", 5),
    )
    assert read_ratings(write(tmp_path, "s.csv", HEADER + "\ni,c,coherence,r,2")).rows[0].system is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "F:1: error: the file is empty; the header must be"),
        ("\n  \n", "F:1: error: the file is empty; the header must be"),
        (HEADER + "\n", "F:1: error: no ratings: the file holds only its header"),
        ("item_id,dimension,rater,score\ni,correctness,r,3\n", "F:1: error: missing column conversation_id; the header must be"),
        ("item_id,dimension,rater\n", "F:1: error: missing columns conversation_id, score;"),
        (HEADER + ",systme\n", "F:1: error: unknown column 'systme'; the header must be"),
        (HEADER + ",score\n", "F:1: error: column 'score' appears twice"),
        (HEADER + "\ni,c,correctness,r,3\ni,c,Correctness,r,3\n",
         "F:3: error: unknown dimension 'Correctness'; expected one of correctness, completeness, relevance, coherence, faithfulness"),
        (HEADER + "\ni,c,correctness,r,6\n", "F:2: error: score '6' is not an integer 1..5"),
        (HEADER + "\ni,c,correctness,r,3.0\n", "F:2: error: score '3.0' is not an integer 1..5"),
        (HEADER + "\ni,c,correctness,r,0\n", "F:2: error: score '0' is not an integer 1..5"),
        (HEADER + "\ni,c,correctness,r,three\x1b\n", "F:2: error: score 'three\\x1b' is not an integer 1..5"),
        (HEADER + "\ni,c,correctness,r,3\n\ni,c,correctness,r,4\n",
         "F:4: error: item 'i' already has a correctness score by rater 'r' (line 2)"),
        (HEADER + "\ni,c1,correctness,r,3\ni,c2,relevance,r,4\n",
         "F:3: error: item 'i' has conversation_id 'c2' here but 'c1' on line 2; an item belongs to one conversation"),
        (HEADER + ",system\ni,c,correctness,r,3,s1\ni,c,relevance,r,4,s2\n",
         "F:3: error: item 'i' has system 's2' here but 's1' on line 2; an item comes from one system"),
        (HEADER + ",system\ni,c,correctness,r,3,\n", "F:2: error: empty system"),
        (HEADER + "\ni,,correctness,,3\n", "F:2: error: empty conversation_id, rater"),
        (HEADER + "\ni,c,correctness,r\n",
         "F:2: error: expected 5 fields (item_id,conversation_id,dimension,rater,score), found 4"),
        (HEADER + '\n"i\nj",c,correctness,r,3\n"k\nl",c,correctness,r,9\n', "F:4: error: score '9' is not an integer 1..5"),
        (HEADER.encode() + b"\ni,c,correctness,r,3\ni\xff,c,correctness,r,3\n", "F:3: error: not UTF-8 text; save the CSV as UTF-8"),
    ],
)
def test_reader_errors_name_the_line(tmp_path, text, message):
    assert read_error(tmp_path, text).startswith(message)


def test_reader_lists_every_bad_line(tmp_path):
    text = HEADER + "\ni,c,correctness,r,7\nj,c,nope,r,3\nk,c,coherence,r,2\n"
    assert read_error(tmp_path, text).splitlines() == [
        "F:2: error: score '7' is not an integer 1..5",
        "F:3: error: unknown dimension 'nope'; expected one of correctness, completeness, relevance, coherence, faithfulness",
    ]


def test_a_judge_file_names_one_rater(tmp_path):
    text = HEADER + "\ni,c,correctness,gpt,3\nj,c,correctness,gpt,3\nk,c,correctness,claude,3\nl,c,correctness,x,3\n"
    assert read_error(tmp_path, text, single_rater=True) == (
        "F:4: error: rater 'claude' here but 'gpt' on line 2; the judge's file has one rater, the judge"
    )
    assert len(read_ratings(write(tmp_path, "h.csv", text)).raters()) == 3  # a humans' file may have many


@pytest.mark.parametrize("systems", [40, 600])
def test_system_level_kendall_is_scipys_whatever_the_block_and_the_systems(monkeypatch, systems):
    """The pairwise signs go in blocks of resamples sized to the systems, and many systems (600
    took 101 s and 1.97 GB) go row by row through scipy; each row is scipy's tau-b, with ties,
    whatever the block size or the way."""
    from reteco.metrics import agreement as module

    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, size=(7, systems)).astype(float)
    y = rng.integers(0, 6, size=(7, systems)).astype(float)
    y[2] = 1.0  # a constant row: undefined
    expected = [stats.kendalltau(a, b, variant="b").statistic for a, b in zip(x, y)]
    for block, pairwise_max in ((1, 1000), (systems * systems * 3, 1000), (2**21, 1000), (2**21, 10)):
        monkeypatch.setattr(module, "_PAIR_BLOCK", block)
        monkeypatch.setattr(module, "_PAIRWISE_MAX_SYSTEMS", pairwise_max)
        values, defined = module._kendall_tau_b_of_values(x, y)
        assert list(defined) == [True, True, False, True, True, True, True]
        assert values[defined] == pytest.approx(np.array(expected)[defined], abs=1e-12)
        assert values[2] == 0.0


def test_the_page_prints_no_bare_interval_where_few_systems_make_it_meaningless(tmp_path):
    rows = [("i0", "c0", 2, [2, 3], "s1"), ("i1", "c1", 3, [2, 2], "s2"), ("i2", "c0", 4, [4, 5], "s3"),
            ("i3", "c1", 2, [3, 2], "s1"), ("i4", "c0", 3, [2, 2], "s2"), ("i5", "c1", 4, [5, 4], "s3")]
    judge = csv_ratings(tmp_path, "j.csv", [f"{i},{c},relevance,gpt,{j},{s}" for i, c, j, _, s in rows], HEADER + ",system")
    humans = csv_ratings(tmp_path, "h.csv", [f"{i},{c},relevance,h{r},{v}" for i, c, _, hs, _ in rows for r, v in enumerate(hs)])
    page = render(agreement(judge, humans, resamples=50))
    section = page.split("<h2>System level</h2>", 1)[1]
    assert "see the note below" in section and "only 3 systems" in section
