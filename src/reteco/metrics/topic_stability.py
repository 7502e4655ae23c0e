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
  equal quality do on independent sets.
- bins: as in the paper, by the absolute difference the pair shows on the set it is read from,
  with edges ``DEFAULT_EDGES`` (``[low, high)``, the last one open): each split gives two
  comparisons of each pair, set A against B (binned by A's difference) and B against A (by
  B's). Per bin and size: the comparisons and the swap rate (swaps / comparisons; None without
  a comparison): how often a difference of that size seen on ``n`` topics is reversed on
  another ``n``. ``topics_for_5_percent``: the smallest size whose swap rate is at most
  ``SWAP_THRESHOLD`` (None when no size reaches it).

The half-splits' two sets are complementary (their differences sum to twice the full-set
difference), so they are not independent draws: the rates at the smaller sizes are the curve
Voorhees & Buckley extrapolate from.

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


def swap_counts(values: np.ndarray, orders: np.ndarray, sizes: list[int],
                edges: tuple[float, ...] = DEFAULT_EDGES) -> tuple[np.ndarray, np.ndarray]:
    """(swaps, comparisons), each (len(sizes) x bins), summed over the splits ``orders``
    (splits x topics) and every pair of systems, both directions (module docstring)."""
    n_systems = values.shape[0]
    first, second = np.triu_indices(n_systems, 1)
    n_bins = len(edges)
    swaps = np.zeros((len(sizes), n_bins))
    comparisons = np.zeros((len(sizes), n_bins))
    size_index = np.asarray(sizes)
    row_offset = (np.arange(len(sizes)) * n_bins)[:, None]
    for order in orders:
        prefix = np.cumsum(values[:, order], axis=1)  # systems x topics
        set_a = prefix[:, size_index - 1] / size_index  # systems x sizes
        set_b = (prefix[:, 2 * size_index - 1] - prefix[:, size_index - 1]) / size_index
        diff_a = (set_a[first] - set_a[second]).T  # sizes x pairs
        diff_b = (set_b[first] - set_b[second]).T
        sign_a = np.where(np.abs(diff_a) <= TIE, 0.0, np.sign(diff_a))
        sign_b = np.where(np.abs(diff_b) <= TIE, 0.0, np.sign(diff_b))
        product = sign_a * sign_b
        swap = np.where(product < 0, 1.0, np.where(product == 0, 0.5, 0.0))
        for diff in (diff_a, diff_b):
            cell = (np.digitize(np.abs(diff), edges) - 1 + row_offset).ravel()
            swaps += np.bincount(cell, weights=swap.ravel(), minlength=swaps.size).reshape(swaps.shape)
            comparisons += np.bincount(cell, minlength=swaps.size).reshape(swaps.shape)
    return swaps, comparisons


def topic_set_stability(values: dict[str, np.ndarray], *, seed: int = DEFAULT_SEED, splits: int = DEFAULT_SPLITS,
                        edges: tuple[float, ...] = DEFAULT_EDGES) -> dict:
    """Swap rates per metric, bin and topic-set size (module docstring), as a JSON-ready dict::

        {"method": {...}, "metrics": {metric: {"topics", "systems", "pairs", "sizes",
                                                "bins": [{"low", "high", "comparisons": {size: count},
                                                          "swap_rate": {size: rate or None},
                                                          "topics_for_5_percent"}]}
                                       | {"absent": reason}}}

    Every matrix must be systems x topics (ValueError otherwise: the caller builds them); bins
    without a comparison at any size are left out.
    """
    if not 1 <= splits <= MAX_SPLITS:
        raise ValueError(f"splits must be 1 to {MAX_SPLITS}, not {splits}")
    if edges[0] != 0.0 or list(edges) != sorted(set(edges)):
        raise ValueError(f"edges must start at 0 and increase, not {edges}")
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
        swaps, comparisons = swap_counts(matrix, orders_by_topics[n_topics], sizes, edges)
        bins = []
        highs = list(edges[1:]) + [None]
        for k, (low, high) in enumerate(zip(edges, highs)):
            if not comparisons[:, k].any():
                continue
            rates = [float(swaps[i, k] / comparisons[i, k]) if comparisons[i, k] else None for i in range(len(sizes))]
            reaching = [n for n, rate in zip(sizes, rates) if rate is not None and rate <= SWAP_THRESHOLD]
            bins.append({"low": low, "high": high,
                         "comparisons": {str(n): int(c) for n, c in zip(sizes, comparisons[:, k])},
                         "swap_rate": {str(n): rate for n, rate in zip(sizes, rates)},
                         "topics_for_5_percent": reaching[0] if reaching else None})
        out["metrics"][metric] = {"topics": n_topics, "systems": n_systems, "pairs": n_systems * (n_systems - 1) // 2,
                                  "sizes": sizes, "bins": bins}
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
        "bins": "absolute difference of the pair's means on the set it is read from (each split: A against B "
                f"and B against A), [low, high), the last bin open; edges {list(edges)}",
        "topics_for_5_percent": f"the smallest size compared whose swap rate is at most {SWAP_THRESHOLD}",
    }
