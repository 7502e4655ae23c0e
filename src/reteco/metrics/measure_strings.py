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

The names trec_eval prints are accepted as well (``ndcg_cut_10``, ``P_5``, ``map_cut_10``), and
ranx's (``precision@10``, ``recall@10``, ``map@10``, ``mrr``, ``mrr@10``, ``hit_rate@5``,
``r-precision``: the rows' ``aliases``). Rows trec_eval lacks (``RR@k``, ``Judged@k``, computed by reteco on request: their
``requested`` function) have no trec_eval spelling. Names are matched
without regard to case (``ndcg@10``, ``NDCG@10``); ``@k`` takes a positive integer. A string that
is none of these raises ``MeasureError`` naming it, the nearest accepted spelling ("did you
mean"; or that the name needs a cutoff) and the accepted forms (``accepted()``, read from the table).
"""

from __future__ import annotations

import difflib
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


_IR_MEASURES = re.compile(r"^([A-Za-z][A-Za-z_-]*)(?:@(\d+))?$")
_TREC_EVAL = re.compile(r"^([A-Za-z_]+)(?:\.(\d+))?$")
_TREC_EVAL_PRINTED = re.compile(r"^([A-Za-z][A-Za-z_]*?)_(\d+)$")  # what trec_eval prints: ndcg_cut_10, P_5
_ANY_CUTOFF = re.compile(r"^([^@.]*?)(?:[@.](.*)|_(\d+))?$")  # a name, then what may be its cutoff


def accepted() -> str:
    """The accepted spellings, for messages: every row's ir_measures spelling (with its aliases
    that are not trec_eval's names), then every trec_eval spelling, in the table's order."""
    rows = list(measure_table.MEASURES.values())
    trec_names = {m.trec_eval.lower() for m in rows if m.by_pytrec_eval}
    ir_spellings, trec_spellings = [], []
    for m in rows:
        shown = [a + ("@k" if m.takes_cutoff else "") for a in m.aliases if a.lower() not in trec_names]
        ir_spellings.append(m.name + ("@k" if m.takes_cutoff else "") + (f" ({', '.join(shown)})" if shown else ""))
        if m.by_pytrec_eval:
            trec_spellings.append(m.trec_eval + (".k" if m.takes_cutoff else ""))
    return f"{', '.join(dict.fromkeys(ir_spellings))}, or trec_eval's {', '.join(dict.fromkeys(trec_spellings))} " \
        "(also as trec_eval prints them: ndcg_cut_10)"


def _spellings() -> dict[str, list[tuple[str, bool]]]:
    """Every accepted spelling of a name, lower-cased -> (the spelling as shown with ``{k}`` for
    its cutoff: ``nDCG@{k}``, ``ndcg_cut.{k}``, ``RR``) for each row it names: the candidates of
    "did you mean"."""
    found: dict[str, list[tuple[str, bool]]] = {}
    for row in measure_table.MEASURES.values():
        names = [(n, "@") for n in (row.name, *row.aliases)] + ([(row.trec_eval, ".")] if row.by_pytrec_eval else [])
        for name, separator in names:
            found.setdefault(name.lower(), []).append(name + (separator + "{k}" if row.takes_cutoff else ""))
    return found


def _suggestion(text: str) -> str:
    """``; did you mean 'nDCG@10'?`` for a near miss, ``; P takes a cutoff: ...`` for a name given
    without the cutoff it needs (or with one it does not take), else nothing."""
    word, rest, printed = _ANY_CUTOFF.match(text).groups()
    rest = rest if rest is not None else printed
    cutoff = rest if rest is not None and rest.isdigit() and int(rest) > 0 else None
    spellings = _spellings()
    options = spellings.get(word.lower())
    if options:
        cut = [o for o in options if "{k}" in o]
        if cutoff is None and len(cut) == len(options):
            return f"; {cut[0][:-4]} takes a cutoff, a positive integer: {cut[0].format(k='k')}, e.g. {cut[0].format(k=10)}"
        if rest is not None and not cut:
            return f"; {options[0]} takes no cutoff (it is over the whole ranking): {options[0]}"
        chosen = (cut if rest is not None else [o for o in options if "{k}" not in o] or cut)[0]
        return f"; did you mean {chosen.format(k=cutoff or 10)!r}?"
    close = difflib.get_close_matches(word.lower(), list(spellings), n=1, cutoff=0.6)
    if not close:
        return ""
    options = spellings[close[0]]
    chosen = next((o for o in options if ("{k}" in o) == (rest is not None)), options[0])
    return f"; did you mean {chosen.format(k=cutoff or 10)!r}?"


def parse_measure(text: str) -> Measure:
    """One measure string, in any spelling (module docstring); ``MeasureError`` otherwise."""
    text = text.strip()
    for pattern, spelling in ((_IR_MEASURES, 0), (_TREC_EVAL, 1), (_TREC_EVAL_PRINTED, 1)):
        match = pattern.match(text)
        if not match:
            continue
        word, cutoff = match.group(1).lower(), match.group(2)
        for row in measure_table.MEASURES.values():
            if spelling == 1 and not row.by_pytrec_eval:
                continue
            names = (row.name, *row.aliases) if spelling == 0 else (row.trec_eval,)
            if word not in {n.lower() for n in names} or row.takes_cutoff != (cutoff is not None):
                continue
            if cutoff is not None and int(cutoff) < 1:
                raise MeasureError(f"measure {text!r}: the cutoff must be a positive integer")
            k = int(cutoff) if cutoff is not None else None
            return Measure(row.name if k is None else f"{row.name}@{k}", row.trec_eval, k)
    raise MeasureError(f"unknown measure {text!r}{_suggestion(text)}; accepted: {accepted()}")


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
