"""A tiny MTRAG human-evaluation file written by hand in MTRAG's published layout (``name``,
``models``, ``metrics``, ``documents``, ``tasks``, ``evaluations``; annotations per human metric per
annotator, values "1".."4"): two conversations, three turns, three systems, three annotators whose
grades are the same on every metric. The tests of ``judge-meta --human-set`` and ``judge-compare
--human-set`` use it where ../shared's half is not needed. Beside it, the leave-one-out pairs and
Cohen's quadratic kappa computed by hand (no reteco code), for the annotators' ceiling."""

from __future__ import annotations

import json
from statistics import median

#: MTRAG's human metric -> RETECO's dimension, written here independently of reteco's map.
METRICS = {"faithfulness": "faithfulness", "completeness": "completeness", "appropriateness": "relevance",
           "naturalness": "coherence"}


def _grades(*values):
    return {f"a{n}": {"timestamp": 1.0, "duration": 1.0, "value": v} for n, v in enumerate(values, 1)}


def _scale():
    return [{"value": str(v), "display_value": d, "numeric_value": v}
            for v, d in ((1, "No"), (2, "Mostly No"), (3, "Mostly Yes"), (4, "Yes"))]


def tiny_set() -> dict:
    """Two conversations (three turns), three systems, three annotators: MTRAG's layout by hand."""
    tasks = [
        {"task_id": "c1<::>1", "input": [{"speaker": "user", "text": "Who photographs planes?"}],
         "contexts": [{"document_id": "d1"}], "targets": [{"speaker": "agent", "text": "Aviation photographers."}]},
        {"task_id": "c1<::>2", "input": [{"speaker": "user", "text": "Who photographs planes?"},
                                         {"speaker": "agent", "text": "Aviation photographers."},
                                         {"speaker": "user", "text": "From the ground?"}],
         "contexts": [{"document_id": "d1"}, {"document_id": "d2"}], "targets": [{"speaker": "agent", "text": "Yes, ground-to-air."}]},
        {"task_id": "c2<::>1", "input": [{"speaker": "user", "text": "Is it hard?"}], "contexts": [],
         "targets": [{"speaker": "agent", "text": "I do not know."}]},
    ]
    values = {"reference": ("4", "4", "3"), "sys-a": ("3", "2", "3"), "sys-b": ("1", "2", "2")}
    evaluations = [{"task_id": t["task_id"], "model_id": m, "model_response": f"{m} answers {t['task_id']}",
                    "annotations": {"RougeL": {"system": {"value": 0.5}},
                                    **{metric: _grades(*v) for metric in METRICS}}}
                   for t in tasks for m, v in values.items()]
    return {"name": "tiny", "filters": [], "models": [{"model_id": m} for m in values],
            "metrics": [{"name": m, "author": "human", "type": "categorical", "values": _scale()} for m in METRICS],
            "documents": [{"document_id": "d1", "title": "Aviation photography", "text": "Aviation photography\nAviation photography is taking images of aircraft."},
                          {"document_id": "d2", "title": "Ground", "text": "Ground-to-air photos are taken from the ground."}],
            "tasks": tasks, "evaluations": evaluations}


def write(path, doc) -> str:
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return str(path)


def leave_one_out_pairs(units: list[list[int]]) -> tuple[list[int], list[int]]:
    """(rating, the others' median rounded half up) for every rating of a unit with 2+ ratings."""
    xs, ys = [], []
    for unit in units:
        if len(unit) < 2:
            continue
        for i, x in enumerate(unit):
            m = median(unit[:i] + unit[i + 1:])
            xs.append(x)
            ys.append(int(m + 0.5) if m % 1 else int(m))
    return xs, ys


def hand_kappa_quadratic(xs: list[int], ys: list[int]) -> float:
    """Cohen (1968): 1 - sum w O / sum w E, w = (i - j)^2, E the product of O's margins."""
    n = len(xs)
    scale = range(1, 6)
    observed = sum((x - y) ** 2 for x, y in zip(xs, ys)) / n
    px = {v: xs.count(v) / n for v in scale}
    py = {v: ys.count(v) / n for v in scale}
    expected = sum(px[i] * py[j] * (i - j) ** 2 for i in scale for j in scale)
    return 1.0 - observed / expected
