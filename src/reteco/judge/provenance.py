"""Provenance of a judge run's verdicts: who answered, and the warning when it was not the
configured model.

``judge_provenance`` counts, over a run's verdicts, the endpoint asked, the configured model,
the models the server reported and the distinct system fingerprints; ``model_mismatch_warning``
says in one sentence when a reported model differs. The runner (``reteco.judge.runner``) logs the
warning once per run and generation scoring (``reteco.scoring.judge_run``) puts the provenance
into details.json's judge block; the disclosure report (``reteco.workbench.judge_audit.report``) imports them
from here. This module is the judge's runtime: it loads no golden set, meta-evaluation or report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from reteco.problems import printable

NOT_REPORTED = "(not reported)"


def judge_provenance(outcomes: Iterable[Any], config: Any) -> dict[str, Any]:
    """Who answered, over the verdicts (status ok or invalid) of ``outcomes`` (JudgeOutcome)::

        {"endpoint", "configured_model", "reported_models": {model: verdicts},
         "reported_model_differs": bool, "system_fingerprints": {fingerprint: verdicts}}

    A verdict whose reply named no model counts under "(not reported)", and one without a
    fingerprint under the same key in ``system_fingerprints``. Outcomes with status "error"
    have no reply and do not count.
    """
    verdicts = [o for o in outcomes if o.status in ("ok", "invalid")]
    models = Counter(o.reported_model or NOT_REPORTED for o in verdicts)
    fingerprints = Counter(o.system_fingerprint or NOT_REPORTED for o in verdicts)
    return {
        "endpoint": config.endpoint(),
        "configured_model": config.model,
        "reported_models": dict(sorted(models.items())),
        "reported_model_differs": any(m != config.model for m in models),
        "system_fingerprints": dict(sorted(fingerprints.items())),
    }


def model_mismatch_warning(provenance: dict[str, Any]) -> str | None:
    """One sentence when the server reported another model than the configured one, else None. It
    names no endpoint: the scoring log is shown to participants (details.json records it). The
    models are the server's text: escaped (``reteco.problems.printable``: control characters such
    as a terminal's ESC as ``\\xNN``, cut at 80 characters), as every participant-visible value is."""
    models = provenance.get("reported_models") or {}
    configured = provenance.get("configured_model")
    other = {m: n for m, n in models.items() if m != configured}
    if not other:
        return None
    total = sum(models.values())
    listed = ", ".join(f"{printable(m)} ({n})" for m, n in other.items())
    return (
        f"the judge's server reported another model than the configured {printable(str(configured))} for "
        f"{sum(other.values())} of {total} verdicts: {listed}; each verdict records the reported model"
    )
