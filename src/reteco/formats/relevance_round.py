"""A relevance round's labels as scoring reads them: graded labels of (topic, document) pairs the
official qrels do not judge, for the diagnostics of ``reteco.scoring.judged``.

The file is TREC qrels text, ``topic iteration docid label`` per line (or pytrec_eval JSON, as
``reteco.formats.qrels`` reads), with ``topic`` the reference's topic key ``<domain>/<topic id>``
(as in the reference's own qrels) and ``label`` on the round's 0-3 scale (UMBRELA's: 0 not
relevant, 1 related, 2 highly relevant, 3 perfectly relevant). A pair written twice keeps its
highest label. The round is identified by the sha256 of the file's bytes (its fingerprint, which
details.json records; the labels themselves never are: they are reference data).

The labels are the organizers'; they are never shown to a participant. Messages about the file
name its line, never a label.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reteco.formats.file_digest import sha256_file
from reteco.formats.qrels import read_qrels
from reteco.problems import InputError

#: The round's graded scale: 0 not relevant, 1 related, 2 highly relevant, 3 perfectly relevant.
MAX_LABEL = 3


@dataclass(frozen=True)
class RelevanceRound:
    """A round's labels: (topic key, doc id) -> label 0..MAX_LABEL; ``fingerprint`` the sha256 of
    the file read, ``name`` its file name."""

    labels: dict[tuple[str, str], int]
    fingerprint: str
    name: str

    @classmethod
    def read(cls, path: Path) -> "RelevanceRound":
        """Read a round's labels file; an InputError names the file (and line) of a label off the scale."""
        path = Path(path)
        labels: dict[tuple[str, str], int] = {}
        over = 0
        for judgment in read_qrels(path):
            if judgment.relevance > MAX_LABEL:
                over += 1
                continue
            labels[(judgment.key, judgment.doc_id)] = judgment.relevance
        if over:
            raise InputError(
                f"{over} labels are above {MAX_LABEL}, the top of a relevance round's 0-{MAX_LABEL} scale: "
                "this is not a relevance round's labels file",
                path.name,
            )
        return cls(labels, sha256_file(path), path.name)

    def counts(self) -> dict[str, int]:
        """Labels per level, as strings "0".."3", and in all (no pair, no document id)."""
        out = {str(level): 0 for level in range(MAX_LABEL + 1)}
        for level in self.labels.values():
            out[str(level)] += 1
        return {"labels": len(self.labels), "per_label": out}  # type: ignore[dict-item]


__all__ = ["MAX_LABEL", "RelevanceRound"]
