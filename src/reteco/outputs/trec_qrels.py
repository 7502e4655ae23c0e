"""``reteco score --trec-qrels OUT``: the reference's judgments as TREC qrels for other tools.

trec_eval, ir_measures and ranx match a run's topic ids to the qrels' by string: a run with
bare ids (``122291_22``) is valid for reteco, which resolves a bare id when one domain has it,
but scores 0 in those tools against qrels keyed ``<domain>/<id>``. So each topic the scored run
ranks is keyed here by the id the run wrote for it (its first spelling), and every other topic
by ``<domain>/<id>``, the form a run may always use: pointed at this file and the same run,
the other tools read the same topics as reteco. The relevance is the one reteco scores with:
binarised (rel > 0 -> 1) where the reference's relevance is binary, the levels as they are where
it is graded (pages/other_tools.md).

Lines ``topic 0 doc_id relevance``, space-separated, in the reference's order.
"""

from __future__ import annotations

from pathlib import Path

from reteco.formats.reference import Reference


def trec_qrels_lines(reference: Reference, spellings: dict[int, str] | None = None) -> list[str]:
    """One qrels line per judgment of a reference topic (module docstring); ``spellings``: the
    run's id of each topic it ranks (``RankedRun.spellings``), by reference topic index."""
    binary = reference.relevance == "binary"
    name = {t.key: (spellings or {}).get(i, t.key) for i, t in enumerate(reference.topics)}
    return [
        f"{name[j.key]} 0 {j.doc_id} {(1 if j.relevance > 0 else 0) if binary else j.relevance}"
        for j in reference.judgments
        if j.key in name
    ]


def write_trec_qrels(reference: Reference, out: Path, spellings: dict[int, str] | None = None) -> int:
    """Write the qrels to ``out``; returns the number of lines."""
    lines = trec_qrels_lines(reference, spellings)
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
