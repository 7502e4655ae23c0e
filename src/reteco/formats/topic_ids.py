"""Topic ids: queries (1a), steps (1b), conversation turns (2a/2b/2c).

A reference topic is keyed by (domain, topic id), written ``<domain>/<topic id>``, because
RECOR conversation ids in BRIGHT-derived domains are bare integers ("2", "5") that recur in
several domains. Canonical spellings:

- query (Track 1):   ``122291_22``
- step  (Track 1b):  ``122291_22_step1`` (``is_step_id``); its parent query is ``step_id.rsplit("_step", 1)[0]``
- turn  (Track 2):   ``<conversation id>_turn_<n>`` (``n`` is 1-based); the organizers' public
  sample spells it ``<conversation id>#turn<n>``, which is accepted and normalised.

One rule reads the turn number in both spellings (pages/submission_format.md): ASCII digits ``0-9``
only, leading zeros allowed and meaning the same number (``_turn_01``, ``#turn01`` and
``_turn_1`` are one turn), at most ``MAX_TURN_DIGITS`` significant digits. Anything else is not
a turn number: the id is left as written, so it matches no reference turn (it is then ignored
like any unknown topic) and is never handed to ``int()`` (which refuses 4,300 digits and more).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only an annotation: reference data imports this module
    from reteco.formats.reference import Reference

# ``[0-9]`` under re.ASCII, not a bare ``\d``: Unicode's ``\d`` also matches fullwidth and
# Arabic-Indic digits, which int() would read silently into a turn number.
# Matched with fullmatch, not ``$``, which also matches before a final newline.
_TURN = re.compile(r"(?P<conv>.+)(?:_turn_|#turn)(?P<n>[0-9]+)", re.ASCII | re.DOTALL)
_STEP = re.compile(r".+_step[0-9]+", re.ASCII | re.DOTALL)


def is_step_id(text: str) -> bool:
    """Whether ``text`` follows the step id convention ``<query id>_step<n>``."""
    return _STEP.fullmatch(text) is not None

#: More significant digits than this is not a turn number of any reference (RECOR conversations
#: have a few dozen turns): such an id is left as written and matches nothing.
MAX_TURN_DIGITS = 6

# Upstream RECOR spells one domain "Drones" where the release spells "drones".
DOMAIN_ALIASES = {"drones": "drones"}


def canonical_domain(name: str) -> str:
    """The release's spelling of a domain name (lower case; "Drones" -> "drones")."""
    lowered = name.strip().lower()
    return DOMAIN_ALIASES.get(lowered, lowered)


def turn_topic_id(conversation_id: str, turn: int) -> str:
    """Canonical id of a conversation turn: ``<conversation id>_turn_<turn>``."""
    return f"{conversation_id}_turn_{int(turn)}"


def normalize_topic_id(topic_id: str) -> str:
    """The canonical ``<conv>_turn_<n>`` of a turn id in either spelling (``<conv>#turn<n>``,
    leading zeros dropped); any other id, unchanged."""
    parsed = parse_turn(topic_id)
    return topic_id if parsed is None else turn_topic_id(*parsed)


def parse_turn(topic_id: str) -> tuple[str, int] | None:
    """(conversation id, 1-based turn number) of a turn id in either spelling, else None.

    Leading zeros are accepted in both spellings and mean the same number: a zero-padded turn
    (``ex_3025_turn_01``, as a ``%02d`` format writes it) names the same turn as ``_turn_1``,
    as the sample's ``#turn01`` always did; refusing them would make the two spellings differ
    again, or turn runs that resolved before into errors. A number of more than
    ``MAX_TURN_DIGITS`` significant digits, or with any character other than ``0-9``, is not a
    turn number (None).
    """
    match = _TURN.fullmatch(topic_id)
    if not match:
        return None
    digits = match.group("n").lstrip("0") or "0"
    if len(digits) > MAX_TURN_DIGITS:
        return None
    return match.group("conv"), int(digits)


def step_parent(step_id: str) -> str:
    """The query a step belongs to: ``step_id.rsplit("_step", 1)[0]`` (step ids are ``<query id>_step<n>``)."""
    return step_id.rsplit("_step", 1)[0]


def topic_key(domain: str, topic_id: str) -> str:
    """The reference's unique key of a topic: ``<domain>/<topic id>``."""
    return f"{domain}/{topic_id}"


def depth_group(turn: int) -> str:
    """Track 2 turn-depth group: T1, T2, T3, T4, T5+."""
    return f"T{turn}" if turn < 5 else "T5+"


DEPTH_GROUPS = ("T1", "T2", "T3", "T4", "T5+")


NOT_FOUND = -1  # TopicResolver.resolve: not a topic of the reference
AMBIGUOUS = -2  # TopicResolver.resolve: a bare id that several domains have


class TopicResolver:
    """Maps the topic strings of a run or of answers to reference topic indices: a topic may be
    written ``<domain>/<topic id>`` (domain names ignore case), and a bare id resolves when one
    domain has it, and is AMBIGUOUS when several do (RECOR's bare-integer conversation ids)."""

    def __init__(self, reference: "Reference"):
        self.by_key = {t.key: i for i, t in enumerate(reference.topics)}
        self.by_bare: dict[str, list[int]] = {}
        for i, t in enumerate(reference.topics):
            self.by_bare.setdefault(t.topic_id, []).append(i)
        self.domain_of = [t.domain for t in reference.topics]
        self.domains = set(self.domain_of)

    def resolve(self, text: str) -> int:
        """Reference topic index, NOT_FOUND or AMBIGUOUS."""
        if "/" in text:
            domain, rest = text.split("/", 1)
            domain = canonical_domain(domain)
            if domain in self.domains:
                return self.by_key.get(f"{domain}/{normalize_topic_id(rest)}", NOT_FOUND)
        candidates = self.by_bare.get(normalize_topic_id(text), [])
        if len(candidates) == 1:
            return candidates[0]
        return AMBIGUOUS if candidates else NOT_FOUND

    def domains_of(self, text: str) -> list[str]:
        """The domains in which a bare topic id exists."""
        return sorted({self.domain_of[i] for i in self.by_bare.get(normalize_topic_id(text), [])})
