"""``reteco score --trec-qrels OUT`` and ``--trec-run OUT``: what reteco scored, as TREC files for
other tools.

trec_eval, ir_measures and ranx match a run's topic ids to the qrels' by string, order a topic's
documents by score (ties by document id, or their own sort), rank unknown and repeated ids as
they are written, and average over the topics they are given. reteco resolves a bare topic id
when one domain has it, orders by score then rank then line order, discards ids outside the
topic's domain corpus and keeps a repeated document's first occurrence (pages/evaluation.md). So
the peers reproduce reteco's figures only on the ranking reteco decided, keyed as the judgments
are:

- the qrels: every judgment of every reference topic, keyed ``<domain>/<id>`` (the reference's
  own key, whatever spelling a run used: one qrels file serves every run), with the relevance
  reteco scores with: binarised (rel > 0 -> 1) where the reference's relevance is binary, the
  levels as they are where it is graded;
- the run: each reference topic's decided ranking (rules 2-4 of ``reteco.scoring.rules``: v1.0
  ids mapped, unknown ids discarded, duplicates removed, not cut), keyed the same way, the rank
  column 1, 2, ... and the score column n, n - 1, ..., 1 for a topic of n documents, so that
  every tool reads exactly reteco's order (a tie in the written scores would be broken the
  tool's way). Topics outside the reference are left out; a reference topic the run does not
  rank has no line, and counts 0 where the tool is told to count it (trec_eval ``-c``, ranx
  ``make_comparable=True``; ir_measures does).

Lines ``topic 0 doc_id relevance`` and ``topic Q0 doc_id rank score reteco``, space-separated, in
the reference's order of topics.
"""

from __future__ import annotations

from pathlib import Path

from reteco.formats.reference import Reference

RUN_TAG = "reteco"


def trec_qrels_lines(reference: Reference) -> list[str]:
    """One qrels line per judgment of a reference topic (module docstring)."""
    binary = reference.relevance == "binary"
    keys = {t.key for t in reference.topics}
    return [
        f"{j.key} 0 {j.doc_id} {(1 if j.relevance > 0 else 0) if binary else j.relevance}"
        for j in reference.judgments
        if j.key in keys
    ]


def trec_run_lines(reference: Reference, ranked) -> list[str]:
    """The decided ranking (``ranked``: a ``reteco.scoring.rules.RankedRun``) as TREC run lines
    (module docstring)."""
    rankings = ranked.rankings(reference)
    lines = []
    for topic in reference.topics:
        docs = rankings.get(topic.key, [])
        lines += [f"{topic.key} Q0 {doc} {i} {len(docs) - i + 1} {RUN_TAG}" for i, doc in enumerate(docs, start=1)]
    return lines


def write_lines(out: Path, lines: list[str]) -> int:
    """Write ``lines`` to ``out``; returns their number."""
    Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)
