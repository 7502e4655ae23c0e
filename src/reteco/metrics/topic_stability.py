"""Topic-set stability of a retrieval ranking: how often two disjoint topic sets order a pair
of systems differently (Voorhees & Buckley 2002).

Voorhees & Buckley ("The effect of topic set size on retrieval experiment error", SIGIR 2002)
split the topics at random into two disjoint sets of ``n`` topics each, compare every pair of
systems on each set by its mean figure, and count a **swap** when the two sets disagree on which
of the pair is better. The swap rate over many random splits, per bin of the pair's difference,
estimates how often a difference of that size would be reversed by another set of ``n`` topics:
the paper can then say how many topics separate how large a difference.

``topic_set_stability(values, ...)``, per metric (a systems x topics matrix of per-topic
figures, the same topics in the same order for every system):

- ``sizes``: the topic-set sizes ``n`` compared: the ladder ``SIZE_LADDER`` up to half the
  topics, and half the topics itself (the half-splits); each split draws one permutation of the
  topics and takes its first ``n`` topics as set A and the next ``n`` as set B.
- a comparison of a pair on a split is a swap (1) when ``sign(mean_A(i) - mean_A(j))`` and
  ``sign(mean_B(i) - mean_B(j))`` are opposite, no swap (0) when equal and non-zero, and half a
  swap (1/2) when either set ties the pair (means within ``TIE``): a tie leaves the order to a
  coin, so two systems with the same per-topic figures swap half the time, as two systems of
  equal quality do.
- bins: by the absolute difference of the pair's means **over all topics** (the figure the
  leaderboard reports), with edges ``DEFAULT_EDGES`` (``[low, high)``, the last one open).
  Voorhees & Buckley bin by the difference observed on set A; binning by the full-set
  difference instead asks of a difference the table shows how often a topic set of ``n`` would
  reverse it. Per bin and size: the pairs, the comparisons (pairs x splits) and the swap rate
  (swaps / comparisons); ``topics_for_5_percent``: the smallest size of the ladder whose swap
  rate is at most ``SWAP_THRESHOLD`` (None when no size reaches it).

The half-splits' two sets are complementary: their differences sum to twice the full-set
difference, so a pair whose full-set means are equal swaps on every half-split; systems of equal
quality swap about half the time only on sets small against the topics (sets nearly
independent). The rates at the smaller sizes are the curve Voorhees & Buckley extrapolate from.

Permutations come from ``numpy.random.default_rng(seed)`` (``permutations``), the same ones for
every metric of a table, so the metrics' rates are comparable and reruns are identical.
"""

from __future__ import annotations

import numpy as np

DEFAULT_SPLITS = 1000
DEFAULT_SEED = 2027
#: Topic-set sizes compared, up to half the topics (which is always added).
SIZE_LADDER = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)
#: Bin edges of the absolute difference of a pair's means (the last bin is open above).
DEFAULT_EDGES = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.10, 0.15, 0.20)
SWAP_THRESHOLD = 0.05
#: Means closer than this are a tie (floating-point summation of equal figures).
TIE = 1e-12
MAX_SPLITS = 100_000


def sizes_for(n_topics: int) -> list[int]:
    """The topic-set sizes compared for ``n_topics`` topics (module docstring)."""
    half = n_topics // 2
    return sorted({n for n in SIZE_LADDER if n < half} | ({half} if half >= 1 else set()))


def permutations(n_topics: int, splits: int, seed: int) -> np.ndarray:
    """(splits x n_topics) permutations of the topic indices from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((splits, n_topics)), axis=1)


def swap_counts(values: np.ndarray, orders: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Swaps per pair of systems and size, summed over the splits ``orders`` (splits x topics):
    (len(sizes) x pairs), pairs in ``numpy.triu_indices(S, 1)`` order (module docstring)."""
    n_systems = values.shape[0]
    first, second = np.triu_indices(n_systems, 1)
    counts = np.zeros((len(sizes), len(first)))
    size_index = np.asarray(sizes)
    for order in orders:
        prefix = np.cumsum(values[:, order], axis=1)  # systems x topics
        set_a = prefix[:, size_index - 1] / size_index  # systems x sizes
        set_b = (prefix[:, 2 * size_index - 1] - prefix[:, size_index - 1]) / size_index
        diff_a = (set_a[first] - set_a[second]).T  # sizes x pairs
        diff_b = (set_b[first] - set_b[second]).T
        sign_a = np.where(np.abs(diff_a) <= TIE, 0.0, np.sign(diff_a))
        sign_b = np.where(np.abs(diff_b) <= TIE, 0.0, np.sign(diff_b))
        product = sign_a * sign_b
        counts += np.where(product < 0, 1.0, np.where(product == 0, 0.5, 0.0))
    return counts


def topic_set_stability(values: dict[str, np.ndarray], *, seed: int = DEFAULT_SEED, splits: int = DEFAULT_SPLITS,
                        edges: tuple[float, ...] = DEFAULT_EDGES) -> dict:
    """Swap rates per metric, bin and topic-set size (module docstring), as a JSON-ready dict::

        {"method": {...}, "metrics": {metric: {"topics", "systems", "pairs", "sizes",
                                                "bins": [{"low", "high", "pairs", "comparisons",
                                                          "swap_rate": {size: rate}, "topics_for_5_percent"}]}
                                       | {"absent": reason}}}

    Every matrix must be systems x topics (ValueError otherwise: the caller builds them).
    """
    if not 1 <= splits <= MAX_SPLITS:
        raise ValueError(f"splits must be 1 to {MAX_SPLITS}, not {splits}")
    out: dict = {"method": method(seed, splits, edges), "metrics": {}}
    orders_by_topics: dict[int, np.ndarray] = {}
    for metric, matrix in values.items():
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2:
            raise ValueError(f"{metric}: a systems x topics matrix, not shape {matrix.shape}")
        n_systems, n_topics = matrix.shape
        if n_systems < 2:
            out["metrics"][metric] = {"absent": "fewer than 2 systems: no pair to compare"}
            continue
        if n_topics < 2:
            out["metrics"][metric] = {"absent": "fewer than 2 topics: no split into two sets"}
            continue
        if n_topics not in orders_by_topics:
            orders_by_topics[n_topics] = permutations(n_topics, splits, seed)
        sizes = sizes_for(n_topics)
        counts = swap_counts(matrix, orders_by_topics[n_topics], sizes)
        means = matrix.mean(axis=1)
        first, second = np.triu_indices(n_systems, 1)
        difference = np.abs(means[first] - means[second])
        bins = []
        bounds = list(edges) + [None]
        for low, high in zip(bounds, bounds[1:]):
            inside = (difference >= low) & (difference < high if high is not None else True)
            pairs = int(np.count_nonzero(inside))
            if pairs == 0:
                continue
            rates = counts[:, inside].sum(axis=1) / (pairs * splits)
            reaching = [n for n, rate in zip(sizes, rates) if rate <= SWAP_THRESHOLD]
            bins.append({"low": low, "high": high, "pairs": pairs, "comparisons": pairs * splits,
                         "swap_rate": {str(n): float(rate) for n, rate in zip(sizes, rates)},
                         "topics_for_5_percent": reaching[0] if reaching else None})
        out["metrics"][metric] = {"topics": n_topics, "systems": n_systems, "pairs": len(first), "sizes": sizes,
                                  "bins": bins}
    return out


def method(seed: int, splits: int, edges: tuple[float, ...]) -> dict:
    """The method block: what was computed, with its source."""
    return {
        "source": "Voorhees & Buckley 2002, The effect of topic set size on retrieval experiment error (SIGIR)",
        "splits": splits,
        "seed": seed,
        "sets": "per split one permutation of the topics (numpy.random.default_rng(seed)); set A its first n "
                "topics, set B the next n; the same permutations for every metric",
        "swap": "the two sets order the pair oppositely: 1; a tie (means within 1e-12) on either set: 1/2",
        "bins": "absolute difference of the pair's means over all topics, [low, high), the last bin open; "
                f"edges {list(edges)}",
        "topics_for_5_percent": f"the smallest size compared whose swap rate is at most {SWAP_THRESHOLD}",
    }
