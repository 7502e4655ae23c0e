"""Measure strings: the names ir_measures and trec_eval give ranking measures, read into one form.

``reteco score -m 'nDCG@10 P@5 R@100 MRR'`` and ``reteco.evaluate(measures=...)`` ask for
diagnostics beyond the leaderboard's keys. Every row of the measure table
(``reteco.metrics.measure_table.MEASURES``, each with its definition) is accepted in both
spellings: ir_measures' (its ``name``, ``@k`` when it takes a cutoff: ``nDCG@10``, ``nDCG``,
``AP``, ``AP@10``, ``R@100``, ``P@5``, ``RR``, ``R-Prec``, ``Success@3``, ``Bpref``, and its
``aliases``: ``MRR`` is ir_measures' ``RR``, whose mean over topics is the MRR, ``MAP`` its
``AP``) and trec_eval's (its ``trec_eval`` name, ``.k`` when it takes a cutoff: ``ndcg_cut.10``,
``recip_rank``). Each measure is computed by pytrec_eval (trec_eval 9.x,
``reteco.metrics.trec_eval_engine``), the engine that already cross-checks the official figures,
asked for the trec_eval spelling (``ndcg_cut.10``), whose answer's key is ``ndcg_cut_10``.

Names are matched without regard to case (``ndcg@10``, ``NDCG@10``); ``@k`` takes a positive
integer. A string that is none of these raises ``MeasureError`` naming it and the accepted forms
(``accepted()``, read from the table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reteco.metrics import measure_table


class MeasureError(ValueError):
    """A measure string that names no measure reteco computes."""


@dataclass(frozen=True)
class Measure:
    """One measure: ``name`` in ir_measures' spelling (what reteco prints), ``trec_eval`` the
    name pytrec_eval is asked for (``ndcg_cut.10``) and ``result_key`` the key of its answer
    (``ndcg_cut_10``)."""

    name: str
    family: str  # trec_eval's family: ndcg_cut, P, recall, ...
    cutoff: int | None

    @property
    def trec_eval(self) -> str:
        return measure_table.trec_eval_spelling(self.family, self.cutoff)

    @property
    def result_key(self) -> str:
        return measure_table.result_key(self.family, self.cutoff)

    def reteco_key(self, cutoffs) -> str | None:
        """The key of the figure reteco computes as this measure on a reference with ``cutoffs``
        (the figures are computed on the same decided rankings), or None."""
        return measure_table.key_of(self.family, self.cutoff, cutoffs)


_IR_MEASURES = re.compile(r"^([A-Za-z][A-Za-z-]*)(?:@(\d+))?$")
_TREC_EVAL = re.compile(r"^([A-Za-z_]+)(?:\.(\d+))?$")


def accepted() -> str:
    """The accepted spellings, for messages: every row's ir_measures spelling (with its aliases
    that are not trec_eval's names), then every row's trec_eval spelling, in the table's order."""
    rows = list(measure_table.MEASURES.values())
    trec_names = {m.trec_eval.lower() for m in rows}
    ir_spellings, trec_spellings = [], []
    for m in rows:
        shown = [a for a in m.aliases if a.lower() not in trec_names]
        ir_spellings.append(m.name + ("@k" if m.takes_cutoff else "") + (f" ({', '.join(shown)})" if shown else ""))
        trec_spellings.append(m.trec_eval + (".k" if m.takes_cutoff else ""))
    return f"{', '.join(dict.fromkeys(ir_spellings))}, or trec_eval's {', '.join(dict.fromkeys(trec_spellings))}"


def parse_measure(text: str) -> Measure:
    """One measure string, in either spelling (module docstring); ``MeasureError`` otherwise."""
    text = text.strip()
    for pattern, spelling in ((_IR_MEASURES, 0), (_TREC_EVAL, 1)):
        match = pattern.match(text)
        if not match:
            continue
        word, cutoff = match.group(1).lower(), match.group(2)
        for row in measure_table.MEASURES.values():
            names = (row.name, *row.aliases) if spelling == 0 else (row.trec_eval,)
            if word not in {n.lower() for n in names} or row.takes_cutoff != (cutoff is not None):
                continue
            if cutoff is not None and int(cutoff) < 1:
                raise MeasureError(f"measure {text!r}: the cutoff must be a positive integer")
            k = int(cutoff) if cutoff is not None else None
            return Measure(row.name if k is None else f"{row.name}@{k}", row.trec_eval, k)
    raise MeasureError(f"unknown measure {text!r}; accepted: {accepted()}")


def parse_measures(text: str | list[str] | tuple[str, ...]) -> list[Measure]:
    """Measure strings separated by spaces or commas (or a list of them), each once, in order."""
    words = text.replace(",", " ").split() if isinstance(text, str) else [w for t in text for w in str(t).replace(",", " ").split()]
    if not words:
        raise MeasureError(f"no measure given; accepted: {accepted()}")
    out: list[Measure] = []
    for word in words:
        measure = parse_measure(word)
        if measure not in out:
            out.append(measure)
    return out
