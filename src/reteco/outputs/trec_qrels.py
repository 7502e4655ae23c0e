"""``reteco score --trec-qrels OUT``: the reference's judgments as TREC qrels for other tools.

trec_eval, ir_measures and ranx match a run's topic ids to the qrels' by string: a run with
bare ids (``122291_22``) is valid for reteco, which resolves a bare id when one domain has it,
but scores 0 in those tools against qrels keyed ``<domain>/<id>``. This file uses the ids a run
must use to be read the same by every tool, ``<domain>/<id>`` (the reference's topic keys), and
the relevance reteco scores with: binarised (rel > 0 -> 1) where the reference's relevance is
binary, the levels as they are where it is graded (pages/agreement.md).

Lines ``topic 0 doc_id relevance``, space-separated, in the reference's order.
"""

from __future__ import annotations

from pathlib import Path

from reteco.formats.reference import Reference


def trec_qrels_lines(reference: Reference) -> list[str]:
    """One qrels line per judgment of a reference topic (module docstring)."""
    binary = reference.relevance == "binary"
    keys = {t.key for t in reference.topics}
    return [
        f"{j.key} 0 {j.doc_id} {(1 if j.relevance > 0 else 0) if binary else j.relevance}"
        for j in reference.judgments
        if j.key in keys
    ]


def write_trec_qrels(reference: Reference, out: Path) -> int:
    """Write the qrels to ``out``; returns the number of lines."""
    lines = trec_qrels_lines(reference)
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
