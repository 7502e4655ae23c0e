"""Text-overlap diagnostics of a generated answer against the turn's reference answer (2b, 2c).

The evaluation plan lists ROUGE-L, METEOR and BERTScore as additional diagnostics beside the
judge. Each is computed per turn, one answer against one reference answer; scoring averages
them over turns (``reteco.scoring.generation``). A metric whose resource is missing (WordNet for
METEOR, the bert-score package, torch or a local model for BERTScore) is *unavailable*: it is
reported as such with the reason, never as 0.

ROUGE-L F1 (Lin 2004, "ROUGE: A Package for Automatic Evaluation of Summaries"), computed by
Google's ``rouge-score`` package (``RougeScorer(["rougeL"], use_stemmer=True)``):
tokens are the lower-cased runs of ``[a-z0-9]`` (every other character separates tokens, so
text without Latin letters or digits has no token and scores 0), tokens longer than 3
characters are Porter-stemmed; with LCS the length of the longest common subsequence of the
answer's tokens (m of them) and the reference's (n)::

    P = LCS / m,  R = LCS / n,  ROUGE-L F1 = 2 P R / (P + R)   (0 when LCS = 0)

This is the sentence-level ROUGE-L ("rougeL"), not the summary-level union LCS ("rougeLsum").

METEOR (Banerjee & Lavie 2005; Lavie & Agarwal 2007), computed by
``nltk.translate.meteor_score.meteor_score`` with its defaults (alpha 0.9, beta 3, gamma 0.5):
words are matched in three stages, exact (lower-cased), Porter stem, then WordNet 3.0 synonym;
with m matched unigrams, t answer words and r reference words, P = m / t, R = m / r, and ch
the number of chunks (maximal runs of matches contiguous and in the same order in both)::

    Fmean = P R / (alpha P + (1 - alpha) R)
    Penalty = gamma (ch / m) ** beta
    METEOR = Fmean (1 - Penalty)                    (0 when m = 0)

Words are ``\\w+`` runs of the lower-cased text (Unicode letters, digits, underscore), so no
tokenizer model is needed. WordNet is read by ``reteco.formats.wordnet`` (installed without nltk's downloader):
its prepared map, which answers METEOR's one WordNet call (``synsets(word)``, the lemma names)
as nltk's reader does, in milliseconds instead of seconds (``reteco.formats.wordnet_map``).

BERTScore F1 (Zhang et al. 2020, "BERTScore: Evaluating Text Generation with BERT"), computed by
the ``bert-score`` package (optional extra ``reteco[bertscore]``, which needs torch and
transformers): with x the reference's token embeddings and x̂ the answer's, taken from layer L
of a model, each token matched to its most similar token of the other text by cosine::

    R = (1/|x|) sum_{x_i in x} max_{x̂_j} cos(x_i, x̂_j),  P = (1/|x̂|) sum_{x̂_j} max_{x_i} cos(x_i, x̂_j)
    F1 = 2 P R / (P + R)

no idf weighting, no baseline rescaling. The model is read from a local folder only
(``RETECO_BERTSCORE_MODEL``; offline, ``HF_HUB_OFFLINE=1``): nothing is downloaded at scoring
time. L is ``RETECO_BERTSCORE_LAYERS``, or bert-score's tuned layer when the folder's name is a
model bert-score knows (``roberta-large`` -> 17, its English default).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from reteco.formats.wordnet import load_wordnet

ROUGE_L = "rouge_l"
METEOR = "meteor"
BERTSCORE_F1 = "bertscore_f1"
TEXT_METRICS = (ROUGE_L, METEOR, BERTSCORE_F1)

MODEL_ENV = "RETECO_BERTSCORE_MODEL"
LAYERS_ENV = "RETECO_BERTSCORE_LAYERS"

_WORD = re.compile(r"\w+")


@dataclass
class MetricValues:
    """One diagnostic over a list of (answer, reference) pairs.

    ``values[i]`` is the figure of pair i (None where that pair has no answer), or the whole
    list is None when the metric is unavailable; ``reason`` then says why, in words anyone
    reading the log can take (no path, no variable of the machine), and ``advice`` what whoever
    runs the scoring would do to make it available (set a variable, install a package): the
    CLI says both (``reason_with_advice``); the platform's scoring program only the reason, since
    a participant cannot act on the organizers' set-up. ``settings`` records how it was
    computed (package versions, model, layer...).
    """

    name: str
    available: bool
    values: list[float | None] | None = None
    reason: str = ""
    settings: dict = field(default_factory=dict)
    advice: str = ""

    def reason_with_advice(self, advice: bool = True) -> str:
        """``reason``, then ``; advice`` when ``advice`` is asked for and there is one."""
        return f"{self.reason}; {self.advice}" if advice and self.advice else self.reason


# ---------------------------------------------------------------------------------------------
# ROUGE-L


def rouge_l_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l_f1(answer: str, reference: str, scorer=None) -> float:
    """ROUGE-L F1 of one answer against one reference (formula in the module docstring)."""
    scorer = scorer or rouge_l_scorer()
    return float(scorer.score(reference, answer)["rougeL"].fmeasure)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def rouge_l_values(answers: Sequence[str | None], references: Sequence[str]) -> MetricValues:
    try:
        scorer = rouge_l_scorer()
    except ImportError as exc:  # a base dependency; reported rather than crashing the scoring
        return MetricValues(ROUGE_L, False, reason=f"rouge-score is not installed ({exc}); reinstall reteco")
    values = [None if a is None else rouge_l_f1(a, r, scorer) for a, r in zip(answers, references)]
    settings = {"package": f"rouge-score {_version('rouge-score')}", "variant": "rougeL", "use_stemmer": True}
    return MetricValues(ROUGE_L, True, values, settings=settings)


# ---------------------------------------------------------------------------------------------
# METEOR


def meteor_tokens(text: str) -> list[str]:
    """The words METEOR compares: ``\\w+`` runs of the lower-cased text."""
    return _WORD.findall(text.lower())


def meteor(answer: str, reference: str, wordnet) -> float:
    """METEOR of one answer against one reference with nltk (formula in the module docstring)."""
    from nltk.translate.meteor_score import meteor_score

    hypothesis = meteor_tokens(answer)
    ref = meteor_tokens(reference)
    if not hypothesis or not ref:
        return 0.0
    return float(meteor_score([ref], hypothesis, wordnet=wordnet))


def meteor_values(
    answers: Sequence[str | None], references: Sequence[str], wordnet_path: Path | None = None
) -> MetricValues:
    reader, info = load_wordnet(wordnet_path)
    if reader is None:
        return MetricValues(METEOR, False, reason=str(info))
    values = [None if a is None else meteor(a, r, reader) for a, r in zip(answers, references)]
    settings = {
        "package": f"nltk {_version('nltk')}",
        "wordnet": f"WordNet {info['version']}",
        "alpha": 0.9,
        "beta": 3.0,
        "gamma": 0.5,
        "tokens": "\\w+ runs of the lower-cased text",
    }
    return MetricValues(METEOR, True, values, settings=settings)


# ---------------------------------------------------------------------------------------------
# BERTScore


@dataclass(frozen=True)
class BertScoreConfig:
    """Where BERTScore's model is and how to use it. ``model`` is a local folder (Hugging Face
    layout: config.json, weights, tokenizer files); ``layers`` the layer whose embeddings are
    compared (None: bert-score's tuned layer for a model name it knows)."""

    model: str | None = None
    layers: int | None = None
    batch_size: int = 16
    device: str = "cpu"

    @classmethod
    def from_env(cls) -> BertScoreConfig:
        layers = os.environ.get(LAYERS_ENV)
        return cls(
            model=os.environ.get(MODEL_ENV) or None,
            layers=int(layers) if layers and layers.strip().isdigit() else None,
        )


def bertscore_values(
    answers: Sequence[str | None], references: Sequence[str], config: BertScoreConfig | None = None
) -> MetricValues:
    """BERTScore F1 per pair, or unavailable with the reason (no model configured, a folder that
    is not there, bert-score / torch not installed, the model failing to load)."""
    config = config or BertScoreConfig.from_env()
    if not config.model:
        return MetricValues(
            BERTSCORE_F1,
            False,
            reason="no BERTScore model configured where this scoring runs",
            advice=f"set {MODEL_ENV} to a local model folder (and install the extra: pip install 'reteco[bertscore]')",
        )
    folder = Path(config.model).expanduser()
    if not (folder / "config.json").is_file():
        return MetricValues(
            BERTSCORE_F1,
            False,
            reason="the BERTScore model configured where this scoring runs is not a model folder",
            advice=f"{MODEL_ENV}={config.model} is not a local model folder (no config.json)",
        )
    if os.environ.get(LAYERS_ENV) and config.layers is None:
        return MetricValues(
            BERTSCORE_F1, False, reason="BERTScore's layer is not set right where this scoring runs",
            advice=f"{LAYERS_ENV} must be a positive integer",
        )
    # Offline only: a missing file must fail, never trigger a download from a model hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import bert_score
        from bert_score.utils import model2layers
    except ImportError as exc:
        return MetricValues(
            BERTSCORE_F1,
            False,
            reason="bert-score is not installed where this scoring runs",
            advice=f"install the extra: pip install 'reteco[bertscore]' ({exc})",
        )
    layers = config.layers if config.layers is not None else model2layers.get(folder.name)
    if layers is None:
        return MetricValues(
            BERTSCORE_F1,
            False,
            reason="BERTScore's layer is not set where this scoring runs",
            advice=f"set {LAYERS_ENV}: bert-score has no tuned layer for a model named {folder.name!r}",
        )
    pairs = [(i, a, r) for i, (a, r) in enumerate(zip(answers, references)) if a is not None]
    values: list[float | None] = [None] * len(answers)
    if pairs:
        try:
            _, _, f1 = bert_score.score(
                [a for _, a, _ in pairs],
                [r for _, _, r in pairs],
                model_type=str(folder),
                num_layers=layers,
                batch_size=config.batch_size,
                device=config.device,
                idf=False,
                rescale_with_baseline=False,
                verbose=False,
            )
        except Exception as exc:  # noqa: BLE001 - a broken model folder: unavailable, never a crash of the scoring
            return MetricValues(
                BERTSCORE_F1, False, reason=f"BERTScore failed with its model ({type(exc).__name__})",
                advice=f"the model at {folder}: {exc}",
            )
        for (i, _, _), value in zip(pairs, f1.tolist()):
            values[i] = float(value)
    settings = {
        "package": f"bert-score {_version('bert-score')}",
        "model": str(folder),
        "model_config_sha256": hashlib.sha256((folder / "config.json").read_bytes()).hexdigest(),
        "layer": layers,
        "idf": False,
        "rescale_with_baseline": False,
    }
    return MetricValues(BERTSCORE_F1, True, values, settings=settings)


def text_overlap_values(
    answers: Sequence[str | None],
    references: Sequence[str],
    *,
    wordnet_path: Path | None = None,
    bertscore: BertScoreConfig | None = None,
) -> dict[str, MetricValues]:
    """ROUGE-L, METEOR and BERTScore per (answer, reference) pair; None answers stay None."""
    return {
        ROUGE_L: rouge_l_values(answers, references),
        METEOR: meteor_values(answers, references, wordnet_path),
        BERTSCORE_F1: bertscore_values(answers, references, bertscore),
    }
