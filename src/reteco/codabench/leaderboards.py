"""Leaderboard keys of every sub-track: the one place they are defined.

``competition.yaml`` (both layouts), the scoring program's handling of absent keys and
``reteco check-bundle`` all read these lists, so a key added here appears everywhere at once.

Each sub-track's list is ordered official figure first: in a per-sub-track competition it is
column index 0, the column Codabench ranks by. 2b has no official retrieval figure; its first
key is the judge mean (reported, not an official ranking).

Some keys may be legitimately absent from a scoring run's ``scores.json`` (never written as 0
or NaN): the judge's keys when the judge could not run (the organizers' ``reteco judge`` fills
them in later), ``ndcg_fc_10`` when no query reaches full temporal coverage (undefined, not 0),
and the text metrics when their resource (a tokenizer's data, model weights) is unavailable.
Every other key must be written as a finite number.
"""

from __future__ import annotations

from dataclasses import dataclass

SUBTRACKS = ("1a", "1b", "2a", "2b", "2c")

SUBTRACK_NAMES = {
    "1a": "1a Temporal retrieval",
    "1b": "1b Step-wise retrieval",
    "2a": "2a Conversational retrieval",
    "2b": "2b Gold-passage generation",
    "2c": "2c Full conversational RAG",
}

RETRIEVAL = ("ndcg_10", "map_10", "recall_10", "p_10", "mrr", "ndcg_10_domain_macro")
TEMPORAL = ("tp_10", "tr_10", "tc_10", "ndcg_fc_10")
JUDGE = ("judge_mean", "correctness", "completeness", "relevance", "coherence", "faithfulness")
TEXT = ("rouge_l", "meteor", "bertscore_f1")

KEYS: dict[str, tuple[str, ...]] = {
    "1a": RETRIEVAL + TEMPORAL,
    "1b": RETRIEVAL + TEMPORAL,
    "2a": RETRIEVAL,
    "2b": JUDGE + TEXT,
    "2c": RETRIEVAL + JUDGE + TEXT,
}

# Column titles: Codabench truncates nothing, it refuses titles over 36 characters.
TITLES = {
    "ndcg_10": "nDCG@10",
    "map_10": "MAP@10",
    "recall_10": "Recall@10",
    "p_10": "P@10",
    "mrr": "MRR",
    "ndcg_10_domain_macro": "nDCG@10 domain macro",
    "tp_10": "Temporal Precision@10",
    "tr_10": "Temporal Relevance@10",
    "tc_10": "Temporal Coverage@10",
    "ndcg_fc_10": "nDCG|FC@10",
    "judge_mean": "Judge mean (0-1)",
    "correctness": "Correctness (judge)",
    "completeness": "Completeness (judge)",
    "relevance": "Relevance (judge)",
    "coherence": "Coherence (judge)",
    "faithfulness": "Faithfulness (judge)",
    "rouge_l": "ROUGE-L",
    "meteor": "METEOR",
    "bertscore_f1": "BERTScore F1",
}

# Keys a scoring run may leave out, and the circumstance that allows it. The scoring program
# must then say why (log, details.json "absent_scores", detailed_results.html).
OPTIONAL = {
    **{k: "the LLM judge did not run (the organizers' `reteco judge` fills it in later)" for k in JUDGE},
    "ndcg_fc_10": "undefined when no query reaches full temporal coverage",
    "tc_10": "undefined when no query of the reference has a required time period",
    **{k: "its resource (tokenizer data or model weights) is unavailable to the scoring program" for k in TEXT},
}

PRECISION = 4
MAX_KEY_LENGTH = 36  # Codabench's Column.key and Column.title are CharField(max_length=36)


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    index: int
    sorting: str = "desc"
    precision: int = PRECISION

    def as_yaml(self) -> dict:
        return {
            "title": self.title,
            "key": self.key,
            "index": self.index,
            "sorting": self.sorting,
            "precision": self.precision,
        }


def official_key(subtrack: str) -> str:
    """The key Codabench ranks a per-sub-track competition by (index 0)."""
    return KEYS[subtrack][0]


def required_keys(subtrack: str) -> tuple[str, ...]:
    """Keys every successful scoring run of the sub-track writes as a finite number."""
    return tuple(k for k in KEYS[subtrack] if k not in OPTIONAL)


def optional_keys(subtrack: str) -> tuple[str, ...]:
    return tuple(k for k in KEYS[subtrack] if k in OPTIONAL)


def columns(subtracks: tuple[str, ...] | list[str]) -> list[Column]:
    """Leaderboard columns for the given sub-tracks, in order, each key once.

    For one sub-track this is exactly its keys, official first. For several (the single
    competition, whose one leaderboard Codabench repeats for each task of a phase) it is the
    union in first-seen order: with 1a first, nDCG@10 is index 0 and ranks the leaderboard.
    """
    keys: list[str] = []
    for sub in subtracks:
        for key in KEYS[sub]:
            if key not in keys:
                keys.append(key)
    return [Column(key, TITLES[key], i) for i, key in enumerate(keys)]
