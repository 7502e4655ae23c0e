"""Measure strings: the names ir_measures and trec_eval give ranking measures, read into one form.

``reteco score -m 'nDCG@10 P@5 R@100 MRR'`` and ``reteco.evaluate(measures=...)`` ask for
diagnostics beyond the leaderboard's keys. Both spellings are accepted, and each measure is
computed by pytrec_eval (trec_eval 9.x, ``reteco.metrics.trec_eval_engine``), the engine that
already cross-checks the official figures:

==================  ====================  ===================  =========================================
ir_measures         trec_eval             pytrec_eval's key    what it is
==================  ====================  ===================  =========================================
``nDCG@k``          ``ndcg_cut.k``        ``ndcg_cut_k``       DCG@k / ideal DCG@k, gain = relevance,
                                                               discount log2(rank + 1) (Järvelin and
                                                               Kekäläinen 2002; trec_eval's ndcg_cut)
``nDCG``            ``ndcg``              ``ndcg``             the same over the whole ranking
``P@k``             ``P.k``               ``P_k``              relevant in the top k / k
``R@k``             ``recall.k``          ``recall_k``         relevant in the top k / relevant judged
``AP``              ``map``               ``map``              mean of the precision at each relevant
                                                               document's rank, over relevant judged
``AP@k``            ``map_cut.k``         ``map_cut_k``        the same, ranks up to k only
``RR`` (``MRR``)    ``recip_rank``        ``recip_rank``       1 / rank of the first relevant document
``R-Prec``          ``Rprec``             ``Rprec``            precision at R, R = relevant judged
``Success@k``       ``success.k``         ``success_k``        1 if a relevant document is in the top k
``Bpref``           ``bpref``             ``bpref``            Buckley and Voorhees (2004), trec_eval's
==================  ====================  ===================  =========================================

``MRR`` is ir_measures' ``RR`` (its mean over topics is the MRR). Names are matched without regard
to case (``ndcg@10``, ``NDCG@10``); ``@k`` takes a positive integer. A string that is none of
these raises ``MeasureError`` naming it and the accepted forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (ir_measures' name, trec_eval's name, whether it takes a cutoff) per measure family.
_FAMILIES = (
    ("nDCG", "ndcg_cut", True),
    ("nDCG", "ndcg", False),
    ("P", "P", True),
    ("R", "recall", True),
    ("AP", "map_cut", True),
    ("AP", "map", False),
    ("RR", "recip_rank", False),
    ("R-Prec", "Rprec", False),
    ("Success", "success", True),
    ("Bpref", "bpref", False),
)
_ALIASES = {"mrr": "RR", "map": "AP", "rprec": "R-Prec"}  # ir_measures-style spellings of the same measures
ACCEPTED = "nDCG@k, nDCG, P@k, R@k, AP, AP@k, RR (MRR), R-Prec, Success@k, Bpref, or trec_eval's ndcg_cut.k, P.k, recall.k, map, map_cut.k, recip_rank, Rprec, success.k, bpref"

# The reteco key each measure equals on a reference whose cutoffs include k (scores.json's names).
_RETECO_KEY = {"ndcg_cut": "ndcg_{k}", "P": "p_{k}", "recall": "recall_{k}", "map_cut": "map_{k}", "recip_rank": "mrr"}


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
        return self.family if self.cutoff is None else f"{self.family}.{self.cutoff}"

    @property
    def result_key(self) -> str:
        return self.family if self.cutoff is None else f"{self.family}_{self.cutoff}"

    def reteco_key(self, cutoffs) -> str | None:
        """The scores.json key this measure equals on a reference with ``cutoffs`` (the figures
        are computed on the same decided rankings), or None."""
        pattern = _RETECO_KEY.get(self.family)
        if pattern is None or (self.cutoff is not None and self.cutoff not in cutoffs):
            return None
        return pattern.format(k=self.cutoff)


_IR_MEASURES = re.compile(r"^([A-Za-z][A-Za-z-]*)(?:@(\d+))?$")
_TREC_EVAL = re.compile(r"^([A-Za-z_]+)(?:\.(\d+))?$")


def parse_measure(text: str) -> Measure:
    """One measure string, in either spelling (module docstring); ``MeasureError`` otherwise."""
    text = text.strip()
    for pattern, spelling in ((_IR_MEASURES, 0), (_TREC_EVAL, 1)):
        match = pattern.match(text)
        if not match:
            continue
        word, cutoff = match.group(1), match.group(2)
        word = _ALIASES.get(word.lower(), word) if spelling == 0 else word
        for ir_name, trec_name, takes_cutoff in _FAMILIES:
            name = (ir_name, trec_name)[spelling]
            if word.lower() != name.lower() or takes_cutoff != (cutoff is not None):
                continue
            if cutoff is not None and int(cutoff) < 1:
                raise MeasureError(f"measure {text!r}: the cutoff must be a positive integer")
            k = int(cutoff) if cutoff is not None else None
            return Measure(ir_name if k is None else f"{ir_name}@{k}", trec_name, k)
    raise MeasureError(f"unknown measure {text!r}; accepted: {ACCEPTED}")


def parse_measures(text: str | list[str] | tuple[str, ...]) -> list[Measure]:
    """Measure strings separated by spaces or commas (or a list of them), each once, in order."""
    words = text.replace(",", " ").split() if isinstance(text, str) else [w for t in text for w in str(t).replace(",", " ").split()]
    if not words:
        raise MeasureError(f"no measure given; accepted: {ACCEPTED}")
    out: list[Measure] = []
    for word in words:
        measure = parse_measure(word)
        if measure not in out:
            out.append(measure)
    return out
