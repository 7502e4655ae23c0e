"""An independent, deliberately plain implementation of the official retrieval rules and metrics.

Written from the evaluation plan and the rules of pages/evaluation.md, sharing no code with ``reteco``: plain
Python lists and dicts, one topic at a time. Tests compare ``reteco`` against it to 1e-12.
"""

from __future__ import annotations

import math


def decide_rankings(lines, topic_domain, corpus, duplicate_map=None):
    """lines: list of (topic key, doc, rank, score) in file order, topics already resolved.

    Returns {topic key: [doc, ...]} after the rules: map v1.0 ids, drop docs not in the topic's
    domain corpus (``corpus`` maps domain -> set of ids, or is None for "accept all"), order by
    score desc / rank asc / file order, drop repeated docs after their first occurrence.
    """
    per_topic = {}
    for line_no, (topic, doc, rank, score) in enumerate(lines):
        if duplicate_map:
            doc = duplicate_map.get(doc, doc)
        if corpus is not None and doc not in corpus[topic_domain[topic]]:
            continue
        per_topic.setdefault(topic, []).append((-score, rank, line_no, doc))
    decided = {}
    for topic, entries in per_topic.items():
        entries.sort()
        seen = set()
        docs = []
        for _, _, _, doc in entries:
            if doc not in seen:
                seen.add(doc)
                docs.append(doc)
        decided[topic] = docs
    return decided


def ndcg(ranking, qrels, k, graded=False):
    gains = {d: (r if graded else (1 if r > 0 else 0)) for d, r in qrels.items()}
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def relevant_set(qrels):
    return {d for d, r in qrels.items() if r >= 1}


def average_precision(ranking, qrels, k):
    rel = relevant_set(qrels)
    if not rel:
        return 0.0
    hits, total = 0, 0.0
    for i, d in enumerate(ranking[:k]):
        if d in rel:
            hits += 1
            total += hits / (i + 1)
    return total / len(rel)


def recall(ranking, qrels, k):
    rel = relevant_set(qrels)
    return len(rel & set(ranking[:k])) / len(rel) if rel else 0.0


def precision(ranking, qrels, k):
    rel = relevant_set(qrels)
    return sum(1 for d in ranking[:k] if d in rel) / k


def reciprocal_rank(ranking, qrels):
    rel = relevant_set(qrels)
    for i, d in enumerate(ranking):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def topic_metrics(ranking, qrels, k=10, graded=False):
    return {
        f"ndcg_{k}": ndcg(ranking, qrels, k, graded),
        f"map_{k}": average_precision(ranking, qrels, k),
        f"recall_{k}": recall(ranking, qrels, k),
        f"p_{k}": precision(ranking, qrels, k),
        "mrr": reciprocal_rank(ranking, qrels),
    }


def official_scores(decided, qrels_by_topic, topic_unit, topic_domain, k=10, graded=False):
    """Mean over units (a unit averages its topics), and the domain macro."""
    per_unit = {}
    unit_domain = {}
    for topic, qrels in qrels_by_topic.items():
        values = topic_metrics(decided.get(topic, []), qrels, k, graded)
        per_unit.setdefault(topic_unit[topic], []).append(values)
        unit_domain[topic_unit[topic]] = topic_domain[topic]
    unit_values = {
        u: {m: sum(v[m] for v in vs) / len(vs) for m in vs[0]} for u, vs in per_unit.items()
    }
    metrics = next(iter(unit_values.values())).keys()
    overall = {m: sum(v[m] for v in unit_values.values()) / len(unit_values) for m in metrics}
    domains = sorted(set(unit_domain.values()))
    macro = {}
    for m in metrics:
        per_domain = []
        for d in domains:
            vals = [v[m] for u, v in unit_values.items() if unit_domain[u] == d]
            per_domain.append(sum(vals) / len(vals))
        macro[m] = sum(per_domain) / len(per_domain)
    return overall, macro
