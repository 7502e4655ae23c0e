"""What the task report discloses about the judge (``reteco judge-report``), and provenance.

Provenance of a run's verdicts (``judge_provenance``, ``model_mismatch_warning``): the endpoint
asked, the configured model, the models the server reported (with counts) and the distinct
system fingerprints (with counts). The runner logs the warning once per run; generation scoring
puts the provenance into details.json's judge block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

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
    """One sentence when the server reported another model than the configured one, else None."""
    models = provenance.get("reported_models") or {}
    configured = provenance.get("configured_model")
    other = {m: n for m, n in models.items() if m != configured}
    if not other:
        return None
    total = sum(models.values())
    listed = ", ".join(f"{m} ({n})" for m, n in other.items())
    return (
        f"the endpoint {provenance.get('endpoint')} reported another model than the configured {configured} for "
        f"{sum(other.values())} of {total} verdicts: {listed}; each verdict records the reported model"
    )
