"""The relevance round's blind validation, as the round's report gives it (``reteco leaderboard
--round ROUND/round.qrels`` when ``ROUND/validation/`` holds a key and reviewers' labels; the
sample and its import: ``reteco.workbench.labels.relevance_review``).

Over one sub-track's items of the sample (its topics):

- ``agreement``: the LLM's label (its row in the round, not a later post-edit) against the
  reviewers' (one reviewer's, or the median of several rounded half up) on the uniformly
  sampled pairs the reviewers labelled: quadratic-weighted kappa on 0-3 and kappa at the binary
  cut the augmented scores use (label >= ``THRESHOLD``), each with a 95% cluster-bootstrap
  interval over topics (``reteco.metrics.label_agreement``), the share of exact agreement and
  the confusion table (rows: the LLM's label, columns: the reviewers').
- ``recall_known``: the LLM's recall on the known-relevant pairs (pairs the official qrels judge
  relevant, mixed into the pool and the sheet unannounced): the share it labels at or above the
  threshold, with Wilson's 95% interval; and the reviewers' own on the same pairs.
- ``rankings``: the ranked systems' nDCG@10 augmented with the sampled pairs' labels only
  (``reteco.scoring.judged``'s ``ndcg_10_augmented``: the qrels plus these labels at the
  threshold or above), once with the LLM's labels and once with the reviewers', each scored by
  ``reteco score``'s rules; Kendall's tau-b between the two, and tau_AP with its positions from
  the LLM's ranking and its correctness from the reviewers' (``reteco.metrics.rank_agreement``).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np

from reteco.formats.reference import Reference
from reteco.formats.relevance_labels import RelevanceLabels
from reteco.formats.relevance_round import MAX_LABEL
from reteco.metrics.label_agreement import contingency, kappa_with_interval, wilson_interval
from reteco.metrics.rank_agreement import kendall_tau_b, tau_ap
from reteco.metrics.significance import DEFAULT_RESAMPLES, DEFAULT_SEED
from reteco.scoring.judged import DEFAULT_THRESHOLD
from reteco.workbench.labels.relevance_review import human_labels, llm_labels, read_validation
from reteco.workbench.leaderboard import standings as lb

#: The augmented qrels' threshold (``scoring.judged``'s): a round label counts as relevant at 2 or more.
THRESHOLD = DEFAULT_THRESHOLD
FIGURE = "ndcg_10_augmented"


def validation_section(
    reference: Reference, round_root: Path, paths_by_name: dict[str, Path], ranked: list[str],
    options: lb.ScoringOptions, *, resamples: int | None = None, seed: int = DEFAULT_SEED,
) -> dict | None:
    """The ``validation`` part of leaderboard.json's ``round`` for one sub-track; None when the
    round has no validation sample. ``ranked``: the board's ranked systems' names, in order;
    ``paths_by_name``: their submissions."""
    found = read_validation(round_root)
    if found is None:
        return None
    key, rows = found
    labels = RelevanceLabels.read(round_root)
    llm, human = llm_labels(labels), human_labels(rows)
    topics = {t.key for t in reference.topics}
    items = [e for e in key["items"] if e["query"] in topics]
    out: dict = {"key": {k: key[k] for k in ("seed", "sample_size", "sampling_frame", "known_relevant",
                                             "round_content_hash")},
                 "threshold": THRESHOLD, "reviewers": sorted({r["reviewer"] for r in rows})}
    sample = [(e, llm[(e["query"], e["doc_id"])], human[e["item"]]) for e in items
              if not e["known_relevant"] and e["item"] in human and (e["query"], e["doc_id"]) in llm]
    known = [(e, llm.get((e["query"], e["doc_id"])), human.get(e["item"])) for e in items if e["known_relevant"]]
    out["items"] = {"sample": sum(1 for e in items if not e["known_relevant"]), "sample_rated": len(sample),
                    "known_relevant": len(known)}
    out["agreement"] = agreement(sample, resamples=resamples or DEFAULT_RESAMPLES, seed=seed)
    out["recall_known"] = recall_known(known)
    out["rankings"] = rankings(reference, sample, paths_by_name, ranked, options)
    return out


def agreement(sample: list[tuple[dict, int, int]], *, resamples: int, seed: int) -> dict:
    """kappa on 0-3 and at the threshold, exact share and confusion table of (LLM, human) labels."""
    if not sample:
        return {"absent": "no sampled pair has a reviewer's label"}
    x = np.array([s[1] for s in sample])
    y = np.array([s[2] for s in sample])
    topics = [s[0]["query"] for s in sample]
    return {
        "pairs": len(sample),
        "kappa_quadratic": kappa_with_interval(x, y, topics, MAX_LABEL + 1, resamples=resamples, seed=seed),
        "kappa_binary": kappa_with_interval((x >= THRESHOLD).astype(int), (y >= THRESHOLD).astype(int), topics, 2,
                                            resamples=resamples, seed=seed),
        "exact": float(np.mean(x == y)),
        "confusion": contingency(x, y, MAX_LABEL + 1).astype(int).tolist(),
    }


def recall_known(known: list[tuple[dict, int | None, int | None]]) -> dict:
    """The LLM's (and the reviewers') share of known-relevant pairs labelled at the threshold or above."""
    out: dict = {"pairs": len(known)}
    for who, index in (("llm", 1), ("human", 2)):
        labelled = [k[index] for k in known if k[index] is not None]
        if not labelled:
            out[who] = {"absent": "no known-relevant pair has a label" + (" by the LLM" if who == "llm" else
                                                                          " by a reviewer")}
            continue
        hits = sum(1 for v in labelled if v >= THRESHOLD)
        low, high = wilson_interval(hits, len(labelled))
        out[who] = {"value": hits / len(labelled), "ci_low": low, "ci_high": high, "hits": hits,
                    "pairs": len(labelled)}
    return out


def rankings(reference: Reference, sample: list[tuple[dict, int, int]], paths_by_name: dict[str, Path],
             ranked: list[str], options: lb.ScoringOptions) -> dict:
    """Each ranked system's nDCG@10 augmented under the LLM's and the reviewers' labels of the
    sampled pairs, and the two rankings' tau-b and tau_AP."""
    if len(ranked) < 2 or not sample:
        return {"absent": "fewer than two ranked systems, or no sampled pair with a reviewer's label"}
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="reteco-validation-") as folder:
        for who, index in (("llm", 1), ("human", 2)):
            path = Path(folder) / f"{who}.qrels"
            path.write_text("".join(f"{s[0]['query']} 0 {s[0]['doc_id']} {s[index]}\n" for s in sample),
                            encoding="utf-8")
            values = []
            for name in ranked:
                outcome = lb.score_one(reference, paths_by_name[name],
                                       dataclasses.replace(options, relevance_round=path, run_judge_now=False))
                if not outcome["ok"]:
                    return {"absent": f"{name} could not be scored with the sample's labels"}
                values.append(float(outcome["unjudged"]["overall"][FIGURE]))
            figures[who] = values
    out: dict = {"figure": FIGURE, "systems": [{"name": n, "llm": figures["llm"][i], "human": figures["human"][i]}
                                               for i, n in enumerate(ranked)]}
    human, llm = np.array([figures["human"]]), np.array([figures["llm"]])
    for name, value in (("kendall_tau_b", kendall_tau_b(human, llm)), ("tau_ap", tau_ap(human, llm))):
        out[name] = float(value[0][0]) if value[1][0] else None
    return out


__all__ = ["THRESHOLD", "validation_section"]
