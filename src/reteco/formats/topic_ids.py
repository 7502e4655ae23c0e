"""Topic ids: queries (1a), steps (1b), conversation turns (2a/2b/2c).

A reference topic is keyed by (domain, topic id), written ``<domain>/<topic id>``, because
RECOR conversation ids in BRIGHT-derived domains are bare integers ("2", "5") that recur in
several domains. Canonical spellings:

- query (Track 1):   ``122291_22``
- step  (Track 1b):  ``122291_22_step3``; its parent query is ``step_id.rsplit("_step", 1)[0]``
- turn  (Track 2):   ``<conversation id>_turn_<n>`` (``n`` is 1-based); the organizers' public
  sample spells it ``<conversation id>#turn<n>``, which is accepted and normalised.
"""

from __future__ import annotations

import re

_SAMPLE_TURN = re.compile(r"^(?P<conv>.+)#turn(?P<n>\d+)$")
_RELEASE_TURN = re.compile(r"^(?P<conv>.+)_turn_(?P<n>\d+)$")

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
    """Rewrite the sample's ``<conv>#turn<n>`` spelling to the canonical ``<conv>_turn_<n>``."""
    match = _SAMPLE_TURN.match(topic_id)
    if match:
        return turn_topic_id(match.group("conv"), int(match.group("n")))
    return topic_id


def parse_turn(topic_id: str) -> tuple[str, int] | None:
    """(conversation id, 1-based turn number) of a turn id in either spelling, else None."""
    match = _RELEASE_TURN.match(topic_id) or _SAMPLE_TURN.match(topic_id)
    if not match:
        return None
    return match.group("conv"), int(match.group("n"))


def step_parent(step_id: str) -> str:
    """The query a step belongs to: ``step_id.rsplit("_step", 1)[0]`` (REFERENCE.md)."""
    return step_id.rsplit("_step", 1)[0]


def topic_key(domain: str, topic_id: str) -> str:
    """The reference's unique key of a topic: ``<domain>/<topic id>``."""
    return f"{domain}/{topic_id}"


def depth_group(turn: int) -> str:
    """Track 2 turn-depth group: T1, T2, T3, T4, T5+."""
    return f"T{turn}" if turn < 5 else "T5+"


DEPTH_GROUPS = ("T1", "T2", "T3", "T4", "T5+")
