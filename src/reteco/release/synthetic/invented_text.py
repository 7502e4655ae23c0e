"""The text of the synthetic release, shared by both tracks' generators (``track1_tempo``,
``track2_recor``): the splits and sizes, invented words (``Coiner``) and sentences (``compose``),
and the JSONL and qrels text of the files.

Every function draws from the ``random.Random`` it is given, in a fixed order: the same
generator state gives the same text (``release``'s determinism).
"""

from __future__ import annotations

import json
import random

SPLITS = ("train", "dev", "test")
QUERIES_PER_SPLIT = 6
NEGATIVES_PER_GOLD = 6

# Ordinary words that carry no topic: they give texts their bulk and shared common terms.
_ADJECTIVES = (
    "early", "later", "first", "new", "old", "large", "small", "local", "general", "public",
    "official", "common", "main", "several", "major", "minor", "formal", "gradual", "sudden",
)
_NOUNS = (
    "report", "record", "period", "effect", "result", "reason", "source", "account",
    "practice", "system", "process", "level", "number", "part", "case", "form", "rule",
    "view", "decision", "debate", "response",
)
VERBS = (
    "changed", "reduced", "expanded", "replaced", "affected", "delayed", "shaped",
    "weakened", "strengthened", "described", "limited", "introduced", "ended", "raised",
)
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
# Sentence frames: {W} takes a content word, {A} an adjective, {N} a generic noun, {V} a verb,
# {D} a date phrase.
_DATED_FRAMES = (
    "{D}, the {W} of {W} {V} the {A} {W} {N}.",
    "Records show that {D} the {W} {W} {V} the {A} {W}.",
    "The {W} {N} was {V} {D} after the {A} {W}.",
    "{A} {N}s on the {W} {V} the {W} {W} {D}.",
)
_UNDATED_FRAMES = (
    "The {W} and the {W} {V} the {A} {W} {N}.",
    "The {A} {W} {N} {V} the {W} of {W}.",
    "In {A} {N}s, the {W} {V} the {W} of {W}.",
    "Its {W} {V} the {A} {N} of {W} and {W}.",
)

_ONSETS = (
    "b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
    "gr", "kl", "pr", "st", "tr", "sh", "th",
)
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "n", "r", "l", "s", "m", "x", "th", "nd", "rk")


class Coiner:
    """Invents pronounceable words that no lexicon holds, each at most once per domain.

    Topic-specific words must be shared only by the texts meant to share them, which real
    words from a lexicon cannot guarantee.
    """

    def __init__(self, rng: random.Random, reserved: tuple[str, ...]):
        self._rng = rng
        self._used = set(reserved) | set(_ADJECTIVES) | set(_NOUNS) | set(VERBS)

    def word(self) -> str:
        while True:
            syllables = self._rng.choice((2, 2, 3))
            parts = [self._rng.choice(_ONSETS) + self._rng.choice(_NUCLEI) for _ in range(syllables)]
            candidate = "".join(parts) + self._rng.choice(_CODAS)
            if len(candidate) >= 5 and candidate not in self._used:
                self._used.add(candidate)
                return candidate



def compose(
    rng: random.Random,
    lexicon: tuple[str, ...],
    content: list[str],
    dates: list[str],
    sentences: int,
) -> str:
    """Sentences that use every content word and date phrase once, padded from the lexicon."""
    words, phrases = list(content), list(dates)
    out = []
    while words or phrases or len(out) < sentences:
        frame = rng.choice(_DATED_FRAMES if phrases else _UNDATED_FRAMES)
        text = frame
        while "{W}" in text:
            text = text.replace("{W}", words.pop(0) if words else rng.choice(lexicon), 1)
        for slot, choices in (("{A}", _ADJECTIVES), ("{N}", _NOUNS), ("{V}", VERBS)):
            while slot in text:
                text = text.replace(slot, rng.choice(choices), 1)
        if "{D}" in text:
            text = text.replace("{D}", phrases.pop(0))
        out.append(text[0].upper() + text[1:])
    return " ".join(out)


def jsonl_text(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)


def qrels_text(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"{topic}\t0\t{doc}\t1\n" for topic, doc in pairs)
