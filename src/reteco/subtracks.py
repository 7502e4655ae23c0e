"""The benchmarks, the five sub-tracks of RETECO and their score keys: the tables every other module reads.

``BENCHMARKS`` holds one row per benchmark a reference can belong to (RETECO, FactIR), in the
style of sacrebleu's ``DATASETS``: typed objects, not a dict of strings. ``SUBTRACKS`` holds one
row per sub-track of RETECO. A reference carries its rows (``reteco.formats.reference.Reference``'s
``benchmark`` and ``row``), and the code reads behaviour from them (``row.step_topics``,
``row.evidence``, ``benchmark.cutoffs`` ...), never from an id: ``tests/test_house.py`` finds
any literal id outside this module and the formats readers. docs/development.md ("The tables")
shows the rows and what adding one takes.

A sub-track row says what a participant submits, what a run's topic is, what the official figure
averages over, and which keys ``scores.json`` holds for the sub-track, official figure first.
A key's row says its leaderboard title, what it measures (in the participants' words), and,
for a key that may be absent from a successful scoring run, when that happens. The leaderboard
columns (``reteco.workbench.codabench.bundle.leaderboards``), the reference manifest, the scorers, the scoring
program's check of absent keys, the bundle, the detailed results page and the demo read these
rows; adding a key is an edit of this table and of the scorer that computes it.

Sources: the evaluation plan (official ranking, diagnostics, the five judge dimensions); the
TEMPO paper for the temporal diagnostics; Codabench's 36-character limit on column titles.
"""

from __future__ import annotations

from dataclasses import dataclass

RUN = "run"
ANSWERS = "answers"
GOLD = "gold"  # a judged sub-track's evidence: the turn's gold passages (RUN: the run's top documents)


@dataclass(frozen=True)
class ScoreKey:
    """One ``scores.json`` key: its column title, its meaning, and when it may be absent.

    ``absent_when`` is None for a key every successful scoring run writes as a finite number;
    otherwise the circumstance that leaves it out (a figure that does not apply is absent with a
    reason, never 0).
    """

    key: str
    title: str
    meaning: str
    absent_when: str | None = None


@dataclass(frozen=True)
class SubTrack:
    """One sub-track: what is submitted, what is scored, which keys come out."""

    id: str
    track: int  # 1: TEMPO (temporal retrieval), 2: RECOR (conversational retrieval and generation)
    title: str
    submission: tuple[str, ...]  # what the submission holds: RUN, ANSWERS or both
    topic: str  # what a topic of the run or the answers is: "query", "step" or "turn"
    topic_example: str  # a topic id as a participant writes it
    unit: str  # what the official figure averages over, in words
    keys: tuple[str, ...]  # scores.json keys, the official figure first
    official: str | None  # the official ranking figure (None: 2b has no official ranking)
    topic_form: str = ""  # how a topic id is built, for messages ("" when it is the query id itself)
    step_topics: bool = False  # topics are steps of a parent query: per query the mean over its steps
    evidence: str | None = None  # a judged sub-track's faithfulness evidence: GOLD or RUN
    # the paper's main table (``reteco leaderboard --latex``): its figures besides the ranked one,
    # the overview paper's choice (``--latex-columns`` replaces them); the others go to diagnostics
    paper_columns: tuple[str, ...] = ()

    @property
    def topic_kind(self) -> str:
        """What the sub-track's topic ids are, for messages: ``step ids (<query id>_step<n>)``."""
        return f"{self.topic} ids" + (f" ({self.topic_form})" if self.topic_form else "")

    @property
    def name(self) -> str:
        """``1a Temporal retrieval``."""
        return f"{self.id} {self.title}"

    @property
    def takes_run(self) -> bool:
        return RUN in self.submission

    @property
    def takes_answers(self) -> bool:
        return ANSWERS in self.submission

    @property
    def temporal(self) -> bool:
        """Whether the Track 1 temporal diagnostics apply."""
        return set(TEMPORAL) <= set(self.keys)

    @property
    def judged(self) -> bool:
        """Whether answers are judged by the LLM on the five dimensions."""
        return DIMENSIONS[0] in self.keys

    def required_keys(self) -> tuple[str, ...]:
        """Keys every successful scoring run of the sub-track writes as a finite number."""
        return tuple(k for k in self.keys if KEYS[k].absent_when is None)

    def optional_keys(self) -> tuple[str, ...]:
        return tuple(k for k in self.keys if KEYS[k].absent_when is not None)

    @property
    def ranked(self) -> str:
        """The key the sub-track's leaderboard ranks by (its first key, Codabench's column at
        ``primary_index`` 0): the official figure, or for 2b, which has none, the judge mean."""
        return self.keys[0]

    @property
    def ranked_may_be_absent(self) -> bool:
        """Whether a successful scoring run can leave the ranked column empty (its key's
        ``absent_when``). Codabench sorts a missing score first on PostgreSQL (descending, NULLs
        first), so such a run would rank above every scored one: the scoring program refuses a
        run of a judged phase whose ranked figure is absent
        (``reteco.codabench.program.scoring_program``), and ``check-bundle`` reports where it can happen."""
        return KEYS[self.ranked].absent_when is not None


JUDGE_MEAN = "judge_mean"

_JUDGE_ABSENT = "the LLM judge did not run, or gave too few valid judgments (the reason is given)"

# The judge's dimensions: one key row each (its column title and meaning), in the order of the
# evaluation plan's table. Which dimensions a judge run asks is its prompt version's: the
# version's manifest lists them (``reteco.judge.prompts``), and the items, the per-dimension
# keys and the figures of a run follow the version in use. ``DIMENSIONS`` are the ones the
# packaged versions 1-3 list and the judged sub-tracks' rows hold; a default judge version
# (``judge.yaml``'s ``prompt_version``) lists exactly these, in this order
# (tests/judge/test_judge_dimensions.py). docs/development.md, "Adding a judge dimension".
DIMENSION_KEYS = (
    ScoreKey("correctness", "Correctness (judge)", "are the response's factual claims accurate", _JUDGE_ABSENT),
    ScoreKey("completeness", "Completeness (judge)", "does it cover the information the turn needs", _JUDGE_ABSENT),
    ScoreKey("relevance", "Relevance (judge)", "does it directly address the user's current need", _JUDGE_ABSENT),
    ScoreKey("coherence", "Coherence (judge)", "does it fit the preceding dialogue", _JUDGE_ABSENT),
    ScoreKey("faithfulness", "Faithfulness (judge)", "is it supported by the supplied or retrieved passages", _JUDGE_ABSENT),
)
DIMENSIONS = tuple(k.key for k in DIMENSION_KEYS)


def judged_dimensions(judge: dict | None) -> tuple[str, ...]:
    """The dimensions of a judge run as details.json's ``judge`` block records them: the keys of
    its ``per_dimension`` figures (the prompt version's, in its order) when it ran, else
    ``DIMENSIONS``. The leaderboard and the detailed results page read a run's dimensions so."""
    per_dimension = judge.get("per_dimension") if isinstance(judge, dict) else None
    return tuple(per_dimension) if isinstance(per_dimension, dict) and per_dimension else DIMENSIONS
_TEXT_ABSENT = "its resource (tokenizer data or model weights) is unavailable to the scoring program"

TEMPORAL_KEYS = (
    ScoreKey("tp_10", "Temporal Precision@10", "position-sensitive precision of temporally relevant documents in the top 10"),
    ScoreKey("tr_10", "Temporal Relevance@10", "the share of the top 10 judged temporally relevant"),
    ScoreKey(
        "tc_10",
        "Temporal Coverage@10",
        "the share of a query's required time periods covered by a top-10 document",
        "no query of the reference has a required time period",
    ),
    ScoreKey(
        "ndcg_fc_10",
        "nDCG|FC@10",
        "nDCG@10 over the queries whose top 10 covers every required period",
        "no query reaches full temporal coverage (undefined, not 0)",
    ),
)
RETRIEVAL_KEYS = (
    ScoreKey("ndcg_10", "nDCG@10", "binary nDCG@10: DCG@10 over the ideal DCG@10"),
    ScoreKey("map_10", "MAP@10", "average precision in the top 10, divided by the number of relevant documents"),
    ScoreKey("recall_10", "Recall@10", "the share of the relevant documents found in the top 10"),
    ScoreKey("p_10", "P@10", "relevant documents in the top 10, divided by 10"),
    ScoreKey("mrr", "MRR", "reciprocal rank of the first relevant document, whole ranking"),
    ScoreKey("ndcg_10_domain_macro", "nDCG@10 domain macro", "the mean of the per-domain nDCG@10 figures"),
)
JUDGE_KEYS = (
    ScoreKey(JUDGE_MEAN, "Judge mean (0-1)", "the mean of the five judge dimensions", _JUDGE_ABSENT),
    *DIMENSION_KEYS,
)
TEXT_KEYS = (
    ScoreKey("rouge_l", "ROUGE-L", "ROUGE-L F1 against the reference answer", _TEXT_ABSENT),
    ScoreKey("meteor", "METEOR", "METEOR against the reference answer", _TEXT_ABSENT),
    ScoreKey("bertscore_f1", "BERTScore F1", "BERTScore F1 against the reference answer", _TEXT_ABSENT),
)

KEYS: dict[str, ScoreKey] = {k.key: k for k in (*RETRIEVAL_KEYS, *TEMPORAL_KEYS, *JUDGE_KEYS, *TEXT_KEYS)}
RETRIEVAL = tuple(k.key for k in RETRIEVAL_KEYS)
TEMPORAL = tuple(k.key for k in TEMPORAL_KEYS)
JUDGE = tuple(k.key for k in JUDGE_KEYS)
TEXT = tuple(k.key for k in TEXT_KEYS)

SUBTRACKS: dict[str, SubTrack] = {
    s.id: s
    for s in (
        SubTrack(
            "1a", 1, "Temporal retrieval", (RUN,), "query", "122291_22",
            "mean over the reference queries", RETRIEVAL + TEMPORAL, "ndcg_10",
            paper_columns=("map_10", "recall_10", "tc_10"),
        ),
        SubTrack(
            "1b", 1, "Step-wise retrieval", (RUN,), "step", "122291_22_step1",
            "per query the mean over its steps, then the mean over queries", RETRIEVAL + TEMPORAL, "ndcg_10",
            topic_form="<query id>_step<n>", step_topics=True, paper_columns=("map_10", "recall_10", "tc_10"),
        ),
        SubTrack(
            "2a", 2, "Conversational retrieval", (RUN,), "turn", "ex_3025_turn_2",
            "mean over the reference target turns", RETRIEVAL, "ndcg_10", topic_form="<conv>_turn_<n>",
            paper_columns=("map_10", "recall_10", "mrr"),
        ),
        SubTrack(
            "2b", 2, "Gold-passage generation", (ANSWERS,), "turn", "ex_3025_turn_2",
            "mean over the reference target turns", JUDGE + TEXT, None, topic_form="<conv>_turn_<n>",
            evidence=GOLD, paper_columns=("correctness", "faithfulness", "rouge_l"),
        ),
        SubTrack(
            "2c", 2, "Full conversational RAG", (RUN, ANSWERS), "turn", "ex_3025_turn_2",
            "mean over the reference target turns", RETRIEVAL + JUDGE + TEXT, "ndcg_10",
            topic_form="<conv>_turn_<n>", evidence=RUN, paper_columns=("judge_mean", "recall_10", "rouge_l"),
        ),
    )
}
SUBTRACK_IDS = tuple(SUBTRACKS)  # ("1a", "1b", "2a", "2b", "2c"); SUBTRACKS is always the dict of rows
JUDGED_SUBTRACK_IDS = tuple(s.id for s in SUBTRACKS.values() if s.judged)  # ("2b", "2c")


def subtrack(subtrack_id: str) -> SubTrack:
    """The row of a sub-track id; KeyError names the ids that exist."""
    try:
        return SUBTRACKS[subtrack_id]
    except KeyError:
        raise KeyError(f"unknown sub-track {subtrack_id!r}; the sub-tracks are {', '.join(SUBTRACK_IDS)}") from None


def of_track(track: int) -> tuple[str, ...]:
    """The sub-track ids of a track, in order (1: 1a, 1b; 2: 2a, 2b, 2c)."""
    return tuple(s.id for s in SUBTRACKS.values() if s.track == track)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark a reference can belong to: its judgments' kind and its retrieval preset.

    ``subtracks`` names the sub-track rows whose references it has (RETECO: all five, each a
    folder ``reteco prepare`` writes); a benchmark without sub-tracks (FactIR) is scored from its
    plain qrels (``reteco score --benchmark``), a run per submission, and its keys are its
    cutoffs' (``nDCG@k``, ``Recall@k`` ... and ``recall_<k>_<stance>`` with stance labels).
    ``relevance``, ``cutoffs`` and ``official`` are the preset a reference of the benchmark is
    built with; a reference's manifest records its own (``reteco.formats.reference.Manifest``).
    """

    id: str
    title: str
    relevance: str  # "binary" (rel > 0 is relevant, gain 1) or "graded" (gain = level)
    cutoffs: tuple[int, ...]  # the k of the @k figures; the largest is the ranking's depth
    official: str  # the official ranking figure
    subtracks: tuple[str, ...] = ()  # ids of its SUBTRACKS rows; () for a benchmark of plain qrels
    source: str = ""  # where its judgments come from, in words

    @property
    def has_subtracks(self) -> bool:
        return bool(self.subtracks)


BENCHMARKS: dict[str, Benchmark] = {
    b.id: b
    for b in (
        Benchmark(
            "reteco", "RETECO (SemEval-2027 Task 1)", "binary", (10,), "ndcg_10", SUBTRACK_IDS,
            "the organizers' release, prepared per sub-track by `reteco prepare`",
        ),
        Benchmark(
            "factir", "FactIR (Venktesh et al. 2025)", "graded", (1, 5, 10, 100), "ndcg_10", (),
            "FactIR's evidence.csv and qrel_processed, converted by `reteco factir-qrels`",
        ),
    )
}
DEFAULT_BENCHMARK = "reteco"  # a reference manifest that names no benchmark is RETECO's
PLAIN_QRELS_BENCHMARK_IDS = tuple(b.id for b in BENCHMARKS.values() if not b.has_subtracks)  # ("factir",)


def benchmark(benchmark_id: str) -> Benchmark:
    """The row of a benchmark id. An id the table does not hold (a reference built in memory
    from another benchmark's qrels) is a plain-qrels benchmark with the manifest's own preset."""
    found = BENCHMARKS.get(benchmark_id)
    if found is not None:
        return found
    return Benchmark(benchmark_id, benchmark_id, "graded", (10,), "ndcg_10", (), "plain qrels")
