"""``reteco.compare``: the leaderboard's intervals and paired test between two or more of a
participant's runs, as ``reteco compare`` prints them (``reteco.scoring.comparison``)."""

from __future__ import annotations

from pathlib import Path

from reteco.api.evaluation import _is_path, as_reference, official_key, run_lines, score_object
from reteco.formats.phase_record import phase_rules
from reteco.metrics.significance import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_PROCEDURE, DEFAULT_SEED
from reteco.problems import InputError
from reteco.scoring.comparison import compare_results


def compare(runs, reference, *, procedure: str = DEFAULT_PROCEDURE, resamples: int | None = None,
            seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE, alpha: float = DEFAULT_ALPHA) -> dict:
    """Compare two or more runs on one reference as the organizers' ranked table does.

    ``runs``: a ``{name: run}`` dict, or a list of runs (named by their path, or ``run 1``,
    ``run 2`` ...), each anything ``reteco.evaluate`` takes. Returns ``{"official", "units",
    "systems": [{name, mean, ci_low, ci_high, letters}] (best first), "pairs": [{a, b, delta,
    p_adjusted, significant}], "method", "warnings"}``; ``procedure``: "tukey-hsd" (the
    leaderboard's), "holm" or "fdr"."""
    ref = as_reference(reference)
    if ref.row is not None and not ref.row.takes_run:
        raise InputError(f"sub-track {ref.subtrack} scores answers; compare ranks runs", "reference")
    if isinstance(runs, dict):
        named = [(str(name), run) for name, run in runs.items()]
    elif isinstance(runs, (list, tuple)):
        named = [(str(run) if _is_path(run) else f"run {i}", run) for i, run in enumerate(runs, start=1)]
    else:
        raise InputError(f"runs must be a {{name: run}} dict or a list of runs, not {type(runs).__name__}", "runs")
    if len({name for name, _ in named}) != len(named):
        raise InputError("two runs have one name; give them as a {name: run} dict", "runs")
    try:
        per_topic = phase_rules(ref)["per_topic"]  # phase.json read once for every run
        scored = [(name, score_object(ref, Path(run) if _is_path(run) else None,
                                      {} if _is_path(run) else {"run.txt": run_lines(run)}, per_topic=per_topic))
                  for name, run in named]
        return compare_results(ref, official_key(ref), scored, procedure=procedure, resamples=resamples, seed=seed,
                               confidence=confidence, alpha=alpha)
    except ValueError as exc:  # a bad procedure, seed or confidence
        raise InputError(str(exc), "compare") from None
