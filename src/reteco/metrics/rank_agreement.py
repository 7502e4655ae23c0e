"""How alike two rankings of the same systems are: Kendall's tau-b and Yilmaz et al.'s tau_AP,
with bootstrap intervals over conversations.

The figures compare two system rankings built from scores of the same items (the judge's and
the humans', a judge's and its re-judging, two judges). Both are functions of the systems'
mean scores only; means are rounded to ``MEAN_DECIMALS`` decimals first, so that equal means
tie despite floating-point summation.

- ``kendall_tau_b``: Kendall's tau-b (Kendall 1945), ``(P - Q) / sqrt((n0 - n1)(n0 - n2))``,
  ``P`` and ``Q`` the concordant and discordant pairs of systems, ``n0 = S(S-1)/2``, ``n1``,
  ``n2`` the pairs tied in the first, the second ranking; equal to ``scipy.stats.kendalltau``
  (variant "b"). Symmetric. Undefined when either ranking ties every system.
- ``tau_ap``: the AP rank correlation (Yilmaz, Aslam & Robertson 2008, "A new rank correlation
  coefficient for information retrieval", SIGIR), ``tau_AP = 2/(S-1) sum_{i=2..S} C(i)/(i-1) - 1``
  where ``i`` runs over the positions of the **other** ranking (the estimate: the judge's, the
  re-judging's, the second judge's) from its best system down, and ``C(i)`` counts the systems
  above position ``i`` whose order relative to the system at ``i`` is the same in the
  **reference** ranking (the humans', the first judging, the first judge). It is asymmetric: an
  error near the top of the estimate costs more than one near its bottom. The convention
  (positions from the estimate, correctness from the reference) is the paper's and that of
  Urbano & Marrero's implementation (``ircor``).

  Ties (the paper assumes none): tau_AP here is the **expected** tau_AP over all ways of breaking
  the ties of both rankings, each way equally likely. A pair tied in the reference is then right
  with probability 1/2; a system in a tie group of size ``t`` below ``p`` strictly better systems
  of the estimate sits at position ``p+1..p+t`` with equal chance, so it weighs
  ``h(p, t) = (1/t) sum_{k=0..t-1} 1/(p+k)``; a pair inside one tie group of the estimate is in
  the reference's order with probability 1/2 and contributes ``(1/2) sum_{k=1..t-1} k/(p+k)``
  per group. Without ties in the reference this is Urbano & Marrero's tau_AP,a (2017, "The
  treatment of ties in AP correlation", ICTIR); without ties at all, the paper's. Undefined
  (like tau-b) when either ranking ties every system.

``system_rank_agreement`` adds a 95% bootstrap interval over conversations (the percentile
interval re-centred on the estimate and clipped to [-1, 1]: ``significance.
centred_percentile_interval``; the plain one put 5 of 12 taus of an organizer's run outside their
own interval, e.g. 0.891 [0.769, 0.864]): a
resample draws as many conversations as there are, with replacement
(``numpy.random.default_rng([seed, stream])``), keeps every item of a drawn conversation, and
recomputes both rankings' system means and both figures; a resample in which a system has no
item is undefined and left out (counted in ``undefined_resamples``); above
``MAX_UNDEFINED_SHARE`` undefined there is no interval. With few systems the interval says
little: tau over 3 systems takes only 4 values, and an interval spanning -1 to 1 or shrunk to
one point is not a measured precision; ``interval_note`` then says so in words, and the tables
print the words, never the bare interval.
"""

from __future__ import annotations

import math

import numpy as np

from reteco.metrics.significance import centred_percentile_interval

#: System means are rounded to this many decimals before ranking (ties despite float summation).
MEAN_DECIMALS = 9
CONFIDENCE = 0.95
#: An interval is given only when at most this share of the resamples leave the figure undefined.
MAX_UNDEFINED_SHARE = 0.10
#: With this many systems or fewer an interval is always described in words (module docstring).
FEW_SYSTEMS = 3
# Elements of one block of pairwise sign matrices (resamples x S x S): memory about 8 bytes x
# this x 4 per block.
_PAIR_BLOCK = 2**21
_RESAMPLE_CHUNK = 256  # resamples per matrix product (memory: chunk x 3S)
FIGURES = ("kendall_tau_b", "tau_ap")


def _signs(values: np.ndarray) -> np.ndarray:
    """sign(v_i - v_j) for every row: (R x S x S)."""
    return np.sign(values[:, :, None] - values[:, None, :])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's tau-b of (R x S) scores row by row (module docstring): ``(values, defined)``,
    values 0 where undefined. Over ordered pairs ``sum sx*sy / sqrt(sum sx^2 sum sy^2)`` (each
    pair counted twice, which leaves the ratio)."""
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    rows, n = x.shape
    sums = np.zeros((rows, 3))
    step = max(1, _PAIR_BLOCK // max(n * n, 1))
    for start in range(0, rows, step):
        block = slice(start, start + step)
        sx, sy = _signs(x[block]), _signs(y[block])
        sums[block, 0] = np.einsum("rij,rij->r", sx, sy)
        sums[block, 1] = np.count_nonzero(sx, axis=(1, 2))
        sums[block, 2] = np.count_nonzero(sy, axis=(1, 2))
    defined = (sums[:, 1] > 0) & (sums[:, 2] > 0)
    return np.where(defined, sums[:, 0] / np.sqrt(np.where(defined, sums[:, 1] * sums[:, 2], 1.0)), 0.0), defined


def _harmonic(n: int) -> np.ndarray:
    """H[k] = sum_{m=1..k} 1/m for k = 0..n (H[0] = 0)."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])


def tau_ap(reference: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Yilmaz et al.'s tau_AP of (R x S) scores row by row, positions from ``other`` (higher is
    better), correctness from ``reference``, ties by expectation (module docstring):
    ``(values, defined)``, values 0 where undefined (fewer than 2 systems, or a ranking that
    ties every system)."""
    x, y = np.atleast_2d(reference), np.atleast_2d(other)
    rows, n = x.shape
    values = np.zeros(rows)
    if n < 2:
        return values, np.zeros(rows, dtype=bool)
    harmonic = _harmonic(2 * n)
    step = max(1, _PAIR_BLOCK // max(n * n, 1))
    for start in range(0, rows, step):
        block = slice(start, start + step)
        sx, sy = _signs(x[block]), _signs(y[block])
        # For system b (axis 1): p = systems strictly better in the estimate, t = its tie group.
        above = sy < 0  # sy[b, a] = sign(y_b - y_a) < 0: a is above b
        p = above.sum(axis=2)
        t = (sy == 0).sum(axis=2)
        # Systems above b that the reference orders the same way: a above b in x counts 1, a tie 1/2.
        agreeing = (p - (above * sx).sum(axis=2)) / 2.0  # sx[b, a] = -1 when a is above b in x
        spread = (harmonic[p + t - 1] - harmonic[np.maximum(p - 1, 0)]) / t  # h(p, t), for p >= 1
        across = np.where(p > 0, agreeing * spread, 0.0)
        # Pairs within b's tie group: (1/2) sum_{k=1..t-1} k/(p+k), shared among its t members.
        within = ((t - 1) - p * (harmonic[p + t - 1] - harmonic[p])) / (2.0 * t)
        values[block] = 2.0 / (n - 1) * (across + within).sum(axis=1) - 1.0
    defined = np.any(x != x[:, :1], axis=1) & np.any(y != y[:, :1], axis=1)
    return np.where(defined, values, 0.0), defined


def conversation_draws(n_conversations: int, resamples: int, seed: int, stream: int = 0) -> np.ndarray:
    """How often each conversation is drawn in each resample: (resamples x n_conversations) ints
    whose rows sum to ``n_conversations``, from ``numpy.random.default_rng([seed, stream])``."""
    rng = np.random.default_rng([seed, stream])
    draws = rng.integers(0, n_conversations, size=(resamples, n_conversations))
    offsets = (np.arange(resamples) * n_conversations)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=resamples * n_conversations)
    return counts.reshape(resamples, n_conversations)


def system_rank_agreement(
    conversation: np.ndarray,
    system: np.ndarray,
    reference_scores: np.ndarray,
    other_scores: np.ndarray,
    systems: list[str],
    *,
    seed: int,
    resamples: int,
    stream: int = 0,
    counts: np.ndarray | None = None,
) -> dict:
    """Kendall's tau-b and tau_AP between the system rankings by mean ``reference_scores`` and
    by mean ``other_scores`` of the same items, with bootstrap intervals over conversations
    (module docstring). Per item: ``conversation`` (index 0..C-1), ``system`` (index into
    ``systems``), the two scores. ``counts`` (resamples x C) replaces the draws when given (a
    caller sharing them with other figures). Returns::

        {"n_systems", "n_items", "n_conversations",
         "systems": {name: {"n_items", "reference_mean", "other_mean"}},
         "kendall_tau_b": {"value", "ci_low", "ci_high", "undefined_resamples"[, "reason"]},
         "tau_ap": {... the same ...}, "interval_note": words or None}
    """
    conversation = np.asarray(conversation, dtype=np.int64)
    system = np.asarray(system, dtype=np.int64)
    n_systems = len(systems)
    n_conversations = int(conversation.max()) + 1 if len(conversation) else 0
    out: dict = {"n_systems": n_systems, "n_items": int(len(system)), "n_conversations": n_conversations,
                 "systems": {}}
    if len(system) == 0:
        for figure in FIGURES:
            out[figure] = undefined_figure("no item is scored by both")
        out["interval_note"] = None
        return out
    # Per conversation and system: items, the reference's sum, the other's sum (conversations x 3S),
    # summed without an items x 3S matrix (120,000 items x 60 systems would be 170 MB).
    width = 3 * n_systems
    cells = conversation * width + system
    per_conversation = np.zeros(n_conversations * width)
    for k, weights in enumerate((np.ones(len(system)), reference_scores, other_scores)):
        per_conversation += np.bincount(cells + k * n_systems, weights=np.asarray(weights, dtype=np.float64),
                                        minlength=n_conversations * width)
    per_conversation = per_conversation.reshape(n_conversations, width)
    totals = per_conversation.sum(axis=0)
    size = totals[:n_systems]
    with np.errstate(invalid="ignore", divide="ignore"):
        reference_mean = totals[n_systems : 2 * n_systems] / size
        other_mean = totals[2 * n_systems :] / size
    for k, name in enumerate(systems):
        out["systems"][name] = {"n_items": int(size[k]),
                                "reference_mean": _finite(reference_mean[k]) if size[k] else None,
                                "other_mean": _finite(other_mean[k]) if size[k] else None}
    points: dict[str, tuple[float | None, str | None]] = {}
    if n_systems < 2:
        points = dict.fromkeys(FIGURES, (None, "one system only: there is no ranking to compare"))
    elif np.any(size == 0):
        points = dict.fromkeys(FIGURES, (None, "a system has no item scored by both"))
    else:
        x = np.round(reference_mean, MEAN_DECIMALS)[None, :]
        y = np.round(other_mean, MEAN_DECIMALS)[None, :]
        for figure, function in (("kendall_tau_b", kendall_tau_b), ("tau_ap", tau_ap)):
            value, ok = function(x, y)
            points[figure] = (float(value[0]), None) if ok[0] else (None, _constant_reason(x[0], y[0]))
    if counts is None:
        counts = conversation_draws(n_conversations, resamples, seed, stream)
    values = {figure: np.zeros(resamples) for figure in FIGURES}
    defined = {figure: np.zeros(resamples, dtype=bool) for figure in FIGURES}
    if any(point is not None for point, _ in points.values()):
        for start in range(0, resamples, _RESAMPLE_CHUNK):
            chunk = slice(start, start + _RESAMPLE_CHUNK)
            block = counts[chunk] @ per_conversation
            drawn = block[:, :n_systems]
            present = np.all(drawn > 0, axis=1)  # a system without items in the resample has no mean
            with np.errstate(invalid="ignore", divide="ignore"):
                x = np.round(block[:, n_systems : 2 * n_systems] / drawn, MEAN_DECIMALS)
                y = np.round(block[:, 2 * n_systems :] / drawn, MEAN_DECIMALS)
            x, y = np.where(present[:, None], x, 0.0), np.where(present[:, None], y, 0.0)
            for figure, function in (("kendall_tau_b", kendall_tau_b), ("tau_ap", tau_ap)):
                value, ok = function(x, y)
                values[figure][chunk] = value
                defined[figure][chunk] = ok & present
    for figure in FIGURES:
        out[figure] = summary(*points[figure], values[figure], defined[figure], resamples)
    out["interval_note"] = interval_note(n_systems, out["kendall_tau_b"], out["tau_ap"])
    return out


def _constant_reason(x: np.ndarray, y: np.ndarray) -> str:
    if np.all(x == x[0]):
        return "the reference ranking ties every system: a rank correlation is undefined"
    return "the other ranking ties every system: a rank correlation is undefined"


def interval_note(n_systems: int, *figures: dict) -> str | None:
    """Words for intervals that must not be printed bare (module docstring), or None."""
    if n_systems <= FEW_SYSTEMS and n_systems >= 2:
        return (f"only {n_systems} systems: tau takes a handful of values, so a bootstrap interval is no measure "
                "of precision; read the point value only")
    for figure in figures:
        low, high = figure.get("ci_low"), figure.get("ci_high")
        if low is None or high is None:
            continue
        if low <= -1 + 1e-12 and high >= 1 - 1e-12:
            return ("the interval spans every possible value, -1 to 1: the resamples cannot tell this agreement "
                    "from chance")
        if high - low < 1e-12:
            return "every resample gives the same value: the interval is one point, not a measured precision"
    return None


def undefined_figure(reason: str) -> dict:
    """A figure that has no value, with the reason."""
    return {"value": None, "ci_low": None, "ci_high": None, "reason": reason}


def summary(point: float | None, reason: str | None, values: np.ndarray, defined: np.ndarray, resamples: int,
            bounds: tuple[float, float] = (-1.0, 1.0)) -> dict:
    """``{"value", "ci_low", "ci_high", "undefined_resamples"}`` (+ ``reason`` when something is
    None): the point and the 95% re-centred percentile interval (``numpy.quantile``, linear) of the defined
    resamples, none when more than ``MAX_UNDEFINED_SHARE`` are undefined."""
    if point is None:
        return undefined_figure(reason or "undefined")
    undefined = int(resamples - np.count_nonzero(defined))
    out: dict = {"value": _finite(point), "ci_low": None, "ci_high": None, "undefined_resamples": undefined}
    if undefined > MAX_UNDEFINED_SHARE * resamples:
        out["reason"] = f"undefined on {undefined} of {resamples} resamples (more than {MAX_UNDEFINED_SHARE:.0%}): no interval"
        return out
    low, high = centred_percentile_interval(float(point), values[defined], CONFIDENCE, *bounds)
    out["ci_low"], out["ci_high"] = _finite(low), _finite(high)
    return out


def figure_text(figure: dict, note: str | None = None) -> str:
    """``0.733 [0.467, 1.000]``, the point alone with ``note`` when the interval must not be
    printed bare, or ``- (reason)``."""
    if figure.get("value") is None:
        return f"- ({figure.get('reason', 'undefined')})"
    if note is not None or figure.get("ci_low") is None:
        return f"{figure['value']:.3f}"
    return f"{figure['value']:.3f} [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}]"


def _finite(value: float) -> float:
    value = float(value)
    if not math.isfinite(value):  # a bug, never the data: every undefined case is caught above
        raise ArithmeticError(f"rank agreement: a non-finite figure ({value})")
    return value
