"""What the task report discloses about the judge (``reteco judge-report``), and provenance.

Why one module of over 450 lines: the disclosure is one document whose sections (judgments,
golden results, agreement) are attributed to judges by one rule (``judges_of_inputs``: every
figure under the signature of the judge that produced it) and written by the same Markdown
helpers; split, the rule and the helpers would be shared across modules anyway.

Provenance of a run's verdicts (``judge_provenance``, ``model_mismatch_warning``) is the judge
runtime's (``reteco.judge.provenance``, imported here): the runner and generation scoring load it
without this module, its golden sets and its meta-evaluation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import reteco.workbench.judge_audit.stability_report as stability_report
from reteco.formats.ratings import judge_signature
from reteco.judge.config import PACKAGED_CONFIG
from reteco.judge.provenance import judge_provenance, model_mismatch_warning  # noqa: F401 - re-exported
from reteco.metrics.ppi_coverage import SETTINGS, coverage
from reteco.metrics.prediction_powered import MIN_RATED
from reteco.problems import printable
from reteco.workbench.judge_audit.golden import THRESHOLDS_FILE, golden_dir, load_calibration
from reteco.workbench.judge_audit.meta_evaluation import (
    DIMENSION_CHECKS,
    INJECTION_CHECKS,
    format_figure,
    format_interval,
    load_thresholds,
    threshold_failure,
)
from reteco.workbench.judge_audit.simulated_judges import gate_power_sentence

# --- the disclosure (reteco judge-report) -----------------------------------------------------

#: What the call loop retries and what it does not (``reteco.llm.calls``), for the report.
RETRY_RULES = (
    "retried: HTTP 408, 409, 429 and 5xx (but not a 500 saying that a named request parameter is invalid), "
    "timeouts, connection errors and 2xx bodies that are not chat completions, up to max_retries times after "
    "the first attempt",
    "wait before a retry: the server's Retry-After (retry-after-ms, or retry-after in seconds or as an HTTP "
    "date) capped at max_wait_s; else backoff_initial_s * 2^(n-1) capped at backoff_max_s, times a uniform "
    "jitter in [0.5, 1]; a 429's Retry-After pauses every request of the run",
    "not retried: any other 4xx (the request itself is refused; a refusal naming a parameter is reported with "
    "the setting to change); 401, 403, 404 and 429 insufficient_quota stop the run; abort_after_errors "
    "failures in a row stop the run",
    "a preflight request (one tiny request shaped like the judgments') goes before the first judgment; if the "
    "server refuses it or cannot be reached, nothing else is sent",
    "re-asked: a reply that is not JSON, breaks the schema, has a score outside 1..5, is empty or was cut at "
    "the token cap is sent back with what was wrong, up to max_reasks times; then the judgment is invalid",
    "a refusal or a content-filter stop is invalid at once; an invalid or failed judgment has no score and "
    "is left out of its dimension's average (never 0 or 0.5)",
    "every request body, raw response and failed attempt is kept in the judge's cache (the audit trail); a "
    "verdict is reused only for the same request sent to the same endpoint",
)
_RETRY_SETTINGS = ("max_retries", "backoff_initial_s", "backoff_max_s", "max_wait_s", "timeout_s", "max_reasks",
                   "abort_after_errors", "max_calls_per_run", "max_tokens_per_run")
_COUNTS = ("turns", "valid", "invalid", "error", "missing_answer", "turns_averaged")
AGREEMENT_FIGURES = ("kappa_quadratic", "alpha_ordinal_humans", "alpha_ordinal_with_judge", "spearman", "kendall_tau_b",
                     "exact", "bias")
#: Two judges compared (``reteco agreement --second-judge``): no figure of humans.
AGREEMENT_FIGURES_JUDGES = tuple(f for f in AGREEMENT_FIGURES if f != "alpha_ordinal_humans")
#: The dimension checks' column names in the Markdown, in the order of judge-meta's own table.
_CHECK_NAMES = {"range_hits": "range hits", "pairwise_accuracy": "pairwise accuracy", "tie_share": "ties",
                "spearman": "Spearman", "stayed_put": "stayed put", "unscored_share": "unscored"}
CONFIGURED_JUDGE = "the configured judge"
#: The sub-track of a details.json that records none (written by an older reteco).
SUBTRACK_NOT_RECORDED = "not recorded"


def build_report(config: Any, *, details: list[tuple[str, dict]] = (), golden: list[dict] | None = None,
                 golden_meta: tuple[str, dict] | None = None, agreement: dict | None = None,
                 sample: dict | None = None, stability: list[tuple[str, dict]] = (),
                 leaderboard: tuple[str, dict] | None = None,
                 human_set: tuple[str, dict] | None = None) -> dict[str, Any]:
    """The disclosure as a JSON-ready dict: the judge (prompts, signature, models, endpoint,
    decoding, the config's file name, never its path), the retry procedure, invalid and missing
    judgments per sub-track and dimension over the given details.json files, golden set v1 results (``golden``,
    the lines of ``reteco judge --golden``), the golden set v2 meta-evaluation (``golden_meta``,
    (shown name, judge_meta.json of ``reteco judge-meta``): each check against its threshold, the
    judge it ran with and every judge of the report it differs from), the human sample and the
    agreement table, and from a leaderboard made with ``--human-ratings`` (``leaderboard``: (shown
    name, leaderboard.json)) the system-level table judge / prediction-powered / humans under its
    judge signature (``_system_scores``), and from ``judge-meta --human-set`` (``human_set``: (shown
    name, human_set_mtrag.json)) the judge's agreement with a public human-rated set beside the
    annotators' ceiling, quoted with the golden set's version and gate when ``golden_meta`` is given
    (``_human_set``). Each optional part is absent when its input is not given."""
    prompts = config.prompts
    report: dict[str, Any] = {
        "judge": {
            "signature": config.signature,
            "prompt_version": config.prompt_version,
            "prompt_files": {name: digest for name, digest in sorted(prompts.file_hashes.items())},
            "prompts_folder": prompts.directory.name,
            "configured_model": config.model,
            "endpoint": config.endpoint(),
            "decoding": {
                "temperature": config.temperature,  # None: not sent (a reasoning model refuses it)
                "seed": config.seed,
                "reasoning_effort": config.reasoning_effort,
                "max_completion_tokens": config.max_completion_tokens,
                "token_limit_param": config.token_limit_param,
                "response_format": config.response_format,
            },
            "config": Path(config.source).name if config.source else None,
            "config_packaged": _is_packaged(config.source),
        },
        "retry_procedure": {"settings": {k: getattr(config, k) for k in _RETRY_SETTINGS}, "rules": list(RETRY_RULES)},
    }
    if details:
        report["judgments"] = _judgments(details, config)
    if golden is not None:
        report["golden"] = _golden(golden, config.signature)
    if golden_meta is not None:
        report["golden_meta"] = _golden_meta(*golden_meta, config, report.get("judgments", {}).get("files", []))
    if sample is not None:
        report["human_sample"] = {k: sample.get(k) for k in ("subtrack", "seed", "requested", "sampled", "candidates",
                                                           "systems", "dimensions", "allocation_rule", "annotators",
                                                           "prompt_version")}
        report["human_sample"]["strata"] = len(sample.get("strata") or [])
        report["human_sample"].update(sample_design(sample))
    if agreement is not None:
        report["agreement"] = _agreement(agreement, config.signature)
        ranks = stability_report.rank_agreement(agreement, config.signature)
        if ranks is not None:
            report["rank_agreement"] = ranks
    if stability:
        report["stability"] = [stability_report.stability(name, result, config.signature) for name, result in stability]
    if leaderboard is not None:
        report["system_scores"] = _system_scores(*leaderboard, config.signature)
    if human_set is not None:
        report["human_set"] = _human_set(*human_set, config.signature, report.get("golden_meta"))
    return report


def _human_set(name: str, doc: dict, configured_signature: str, golden_meta: dict | None) -> dict[str, Any]:
    """The public human-rated set's figures (``judge-meta --human-set``): per dimension the judge's
    kappa and alpha beside the annotators' (the ceiling), under the judge that made them, with the
    golden gate's version and result when the report has them."""
    signature = (doc.get("judge") or {}).get("signature") or judge_signature(str(doc.get("judge_rater") or ""))
    keep = ("value", "ci_low", "ci_high", "reason")
    dimensions = {}
    for d, block in (doc.get("dimensions") or {}).items():
        judge, ceiling = block.get("judge") or {}, block.get("ceiling") or {}
        dimensions[d] = {"human_metric": block.get("human_metric"), "match": block.get("match"),
                         "n_items": block.get("n_items"),
                         **{f"{side}_{f}": {k: v for k, v in (figures.get(f) or {}).items() if k in keep}
                            for side, figures, names in (("judge", judge, ("kappa_quadratic", "alpha_ordinal_with_judge")),
                                                         ("ceiling", ceiling, ("kappa_quadratic", "alpha_ordinal_humans")))
                            for f in names},
                         "same_system_order": (block.get("system_order") or {}).get("same_order")}
    golden = None
    if golden_meta is not None:
        golden = {"golden_version": golden_meta["golden_version"], "passed": golden_meta["passed"],
                  "complete": golden_meta["complete"], "signature": golden_meta["judge"]["signature"]}
    return {"file": name, "set": doc.get("human_set"), "source": doc.get("source"), "license": doc.get("license"),
            "sha256": doc.get("sha256"), "counts": doc.get("counts"), "cluster": doc.get("cluster"),
            "unmatched": [u.get("dimension") for u in doc.get("unmatched") or []],
            "judge_signature": signature, "same_judge": signature == configured_signature if signature else None,
            "dimensions": dimensions, "golden": golden}


def sample_design(sample: dict) -> dict[str, Any]:
    """The sample's design for the disclosure (issue 32): the design, the items' inclusion
    probabilities (their range over the strata), the rated turns per system, the method the
    leaderboard's corrected figures use, and the coverage that method reaches at the sample's
    smallest per-system size by ``reteco.metrics.ppi_coverage`` (2,000 seeded trials per setting)."""
    strata = sample.get("strata") or []
    design = sample.get("design") or "stratified (written before issue 32: inclusion probabilities not recorded)"
    probabilities = [s["inclusion_probability"] for s in strata if isinstance(s.get("inclusion_probability"), float)]
    if sample.get("design") == "paired" and isinstance(sample.get("items_per_system"), dict):
        per_system = {name: int(n) for name, n in sample["items_per_system"].items()}
    elif sample.get("design") == "paired":  # a record written before items_per_system: every system every turn
        per_system = {name: sample.get("sampled_turns", 0) for name in sample.get("systems") or []}
    else:
        per_system = {}
        for stratum in strata:
            per_system[stratum.get("system")] = per_system.get(stratum.get("system"), 0) + int(stratum.get("sampled", 0))
    out: dict[str, Any] = {"design": design}
    if probabilities:
        out["inclusion_probability"] = {"min": min(probabilities), "max": max(probabilities)}
    if not per_system:
        return out
    n = min(per_system.values())
    out["rated_per_system"] = {"min": n, "max": max(per_system.values())}
    out["method"] = ("lambda = 1 prediction-powered mean weighted by 1 / inclusion probability, t(n - 1) interval with "
                     "the residual variance floored at its mean over the systems (docs/human_corrected.md)")
    if n < MIN_RATED:
        out["coverage_absent"] = (f"{n} rated turns for some system: below {MIN_RATED} the leaderboard gives that "
                                  "system no corrected interval (no method covers there)")
        return out
    size = min(n, 500)  # the simulation's 1,000 turns allow up to 500
    out["coverage"] = {"n": size, "trials": 2000, "per_setting": {
        setting: {"means": round(c.means["pooled"], 4), "differences": round(c.differences["pooled"], 4)}
        for setting in SETTINGS for c in [coverage(setting, size)]}}
    return out


def _system_scores(name: str, board: dict, configured_signature: str) -> dict[str, Any]:
    """judge_mean per system from a leaderboard's ``human_corrected`` block (reteco.workbench.
    leaderboard.human_corrected): judge-only, prediction-powered and human-only figures with their intervals,
    n rated and the effective sample size, under the judge signatures the block records."""
    block = board["human_corrected"]
    keep = ("judge", "judge_ci_low", "judge_ci_high", "estimate", "ci_low", "ci_high", "human", "human_ci_low",
            "human_ci_high", "n_rated", "n_judged", "effective_sample_size")
    systems = []
    for system in block["systems"]:
        row = (system.get("figures") or {}).get("judge_mean") or {"absent": system.get("absent", "")}
        systems.append({"name": system["name"]} | ({k: row[k] for k in keep if k in row} if "estimate" in row
                                                   else {"absent": row.get("absent", "")}))
    signatures = list(block.get("judge_signatures") or [])
    ranking = block.get("ranking") or {}
    return {"file": name, "subtrack": board.get("subtrack"), "judge_signatures": signatures,
            "same_judge": bool(signatures) and all(s == configured_signature for s in signatures),
            "confidence": block.get("confidence"), "ratings": block.get("ratings"), "systems": systems,
            "order_differs": ranking.get("order_differs"), "estimator": (block.get("method") or {}).get("estimator"),
            "significant_pairs": ranking.get("significant_pairs"), "note": ranking.get("note"),
            "design": (block.get("ratings") or {}).get("design")}


def judges_of_inputs(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(input, judge signature) of every input of ``report`` that carries figures of a known judge:
    details files in which the judge ran, golden v1 lines, judge_meta.json, agreement.json."""
    found = [(f["file"], f["signature"]) for f in report.get("judgments", {}).get("files", [])
             if f["ran"] and f.get("signature")]
    golden = report.get("golden") or {}
    found += [("the golden set v1 results", s) for s in golden.get("signatures_seen") or []]
    meta = report.get("golden_meta")
    if meta:
        found.append((meta["file"], meta["judge"]["signature"]))
    agreement = report.get("agreement")
    if agreement and agreement.get("judge_signature"):
        found.append(("the agreement", agreement["judge_signature"]))
    found += [(s["file"], s["judge_signature"]) for s in report.get("stability", []) if s.get("judge_signature")]
    scores = report.get("system_scores")
    found += [(scores["file"], s) for s in (scores or {}).get("judge_signatures") or []]
    human_set = report.get("human_set")
    if human_set and human_set.get("judge_signature"):
        found.append((human_set["file"], human_set["judge_signature"]))
    return found


def no_input_of_the_configured_judge(report: dict[str, Any]) -> str | None:
    """Why the report cannot be made, or None: its inputs name judges by signature and none is
    the configured judge, so every figure would describe another judge than the report's."""
    found = judges_of_inputs(report)
    configured = report["judge"]["signature"]
    if not found or any(signature == configured for _, signature in found):
        return None
    listed = "; ".join(f"{name}: {signature}" for name, signature in found)
    return (f"no input was made by the configured judge (signature {configured}): {listed}. Give --judge-config "
            "the configuration of the judge that made them, or the inputs of this judge")


def _judgments(details: list[tuple[str, dict]], config: Any) -> dict[str, Any]:
    per_file, totals, flagged = [], {}, {}
    models: Counter = Counter()
    fingerprints: dict[str, int | None] = {}
    for name, data in details:
        judge = data["generation"]["judge"]
        entry: dict[str, Any] = {"file": name, "ran": bool(judge.get("ran"))}
        for key in ("signature", "model", "prompt_version"):
            if key in judge:
                entry[key] = judge[key]
        entry["same_judge"] = judge.get("signature") == config.signature
        if not judge.get("ran"):
            entry["reason"] = judge.get("reason", "")
            per_file.append(entry)
            continue
        # What the verdicts cost (reteco.llm.usage); a details.json written before: not recorded.
        entry["usage"] = (judge.get("run") or {}).get("usage_of_verdicts")
        provenance = judge.get("provenance") or {}
        entry["endpoint"] = provenance.get("endpoint") or (judge.get("config") or {}).get("endpoint")
        if provenance.get("reported_models"):
            entry["reported_models"] = provenance["reported_models"]
            models.update(provenance["reported_models"])
        # Counts per fingerprint (the provenance block), or only their names (details.json written
        # before it: a list; counted as None, "not recorded").
        found = provenance.get("system_fingerprints") or judge.get("system_fingerprints") or {}
        entry["system_fingerprints"] = dict(found) if isinstance(found, dict) else dict.fromkeys(found)
        for fp, n in entry["system_fingerprints"].items():
            known = fingerprints.get(fp, 0)
            fingerprints[fp] = None if n is None or known is None else known + n
        entry["per_dimension"] = {d: {k: c.get(k, 0) for k in _COUNTS} for d, c in judge.get("per_dimension", {}).items()}
        # Answers the judge flagged as attempts to influence it: the rules make the organizers
        # review them, so the disclosure counts them per file and per sub-track. None: the prompt
        # version did not ask for the flag, or the file predates the count ("not asked").
        injection = judge.get("injection") or {}
        entry["flagged_answers"] = int(injection["answers_flagged"]) if injection.get("asked") else None
        # Summed within a sub-track only: 2b's turns (gold passages) and 2c's (the run's) are
        # different tasks, so a table pooling them would count neither.
        subtrack = (data.get("reference") or {}).get("subtrack") or SUBTRACK_NOT_RECORDED
        entry["subtrack"] = subtrack
        for d, c in entry["per_dimension"].items():
            total = totals.setdefault(subtrack, {}).setdefault(d, dict.fromkeys(_COUNTS, 0))
            for k in _COUNTS:
                total[k] += c[k]
        if entry["flagged_answers"] is not None:
            flagged[subtrack] = flagged.get(subtrack, 0) + entry["flagged_answers"]
        per_file.append(entry)
    return {"files": per_file, "per_subtrack": dict(sorted(totals.items())), "reported_models": dict(sorted(models.items())),
            "system_fingerprints": dict(sorted(fingerprints.items())), "flagged_per_subtrack": dict(sorted(flagged.items()))}


def _golden(lines: list[dict], configured_signature: str) -> dict[str, Any]:
    by_dimension: dict[str, dict[str, int]] = {}
    for line in lines:
        c = by_dimension.setdefault(str(line.get("dimension", "?")), {"cases": 0, "passed": 0})
        c["cases"] += 1
        c["passed"] += bool(line.get("passed"))
    failed = [{k: line.get(k) for k in ("id", "dimension", "status", "score", "expect", "purpose")}
              for line in lines if not line.get("passed")]
    # `reteco judge --golden` writes the judge's signature into every line (files written before
    # it did have none: the results then cannot be matched to a judge, and the report says so).
    signatures = sorted({str(line["judge_signature"]) for line in lines if line.get("judge_signature")})
    signature = signatures[0] if len(signatures) == 1 and all(line.get("judge_signature") for line in lines) else None
    return {"cases": len(lines), "passed": sum(1 for x in lines if x.get("passed")), "per_dimension": by_dimension,
            "failed": failed, "judge_signature": signature, "signatures_seen": signatures,
            "same_judge": signature == configured_signature if signature else None}


def _golden_meta(name: str, doc: dict, config: Any, files: list[dict]) -> dict[str, Any]:
    """The v2 meta-evaluation: each figure with its threshold and whether it meets it (the rule
    of ``meta_evaluate``: an undefined figure fails), the judge it was run with and the judges
    of this report (configured, details' judges that ran) whose signature differs."""
    # The checks and the pass rule are meta_evaluate's own (DIMENSION_CHECKS, INJECTION_CHECKS, threshold_failure):
    # the report cannot disagree with `reteco judge-meta` on what passed.
    limits = doc["thresholds"]
    # judge-meta's own table's order (range hits first), then any check it has gained since.
    order = [f for f in _CHECK_NAMES if f in DIMENSION_CHECKS] + [f for f in DIMENSION_CHECKS if f not in _CHECK_NAMES]
    checks = {}
    for d, figures in doc["per_dimension"].items():
        mine = {}
        for f in order:
            limit, kind = DIMENSION_CHECKS[f]
            mine[f] = _check(figures[f], limits[limit], kind)
        checks[d] = {"cases": figures["cases"], "scored": figures.get("scored"), "figures": mine}
    injection = {f: _check(doc["injection"][f], limits[limit], kind) for f, limit, kind in INJECTION_CHECKS}
    if doc["injection"].get("reason"):
        injection["reason"] = doc["injection"]["reason"]
    judge = doc["judge"]
    signature = judge["signature"]
    others = [(CONFIGURED_JUDGE, config.signature)] + [(f["file"], f["signature"]) for f in files
                                                       if f["ran"] and f.get("signature")]
    version = doc["golden_version"]
    thresholds_file = doc.get("thresholds_file")
    return {
        "file": name,
        "golden_version": version,
        "judge": {k: judge.get(k) for k in ("signature", "prompt_version", "model", "endpoint", "config")},
        "complete": doc["complete"],
        "passed": doc["passed"],
        "cases": len(doc["cases"]),
        "thresholds_file": Path(thresholds_file).name if thresholds_file else None,
        "thresholds_packaged": _packaged_thresholds(version, limits),
        "checks": checks,
        "injection": injection,
        "failures": list(doc["failures"]),
        "signature_mismatches": [{"against": who, "signature": s} for who, s in others if s != signature],
        "power": _gate_power(version, _packaged_thresholds(version, limits)),
    }


def _gate_power(version: int, packaged: bool | None) -> dict[str, Any]:
    """The gate's size and power by simulation (``golden/v<N>/calibration.yaml``), quoted only for
    the thresholds it was simulated with (the packaged ones)."""
    if not packaged:
        return {"calibration": None, "text": "the gate ran with thresholds other than the packaged ones: no power "
                "figure applies to it"}
    try:
        calibration = load_calibration(version)
    except ValueError as exc:
        return {"calibration": None, "text": f"the calibration summary cannot be read: {exc}"}
    return {"calibration": calibration, "text": gate_power_sentence(calibration)}


def _check(value: float | None, threshold: float, kind: str) -> dict[str, Any]:
    return {"value": value, "threshold": threshold, "kind": kind, "passed": threshold_failure(value, threshold, kind) is None}


def _packaged_thresholds(version: int, limits: dict) -> bool | None:
    """Whether ``limits`` are the packaged thresholds of golden set ``version`` (None: this
    package has no such version)."""
    try:
        packaged = asdict(load_thresholds(golden_dir(version) / THRESHOLDS_FILE, version))
    except ValueError:
        return None
    return all(limits.get(k) == v for k, v in packaged.items())


def _is_packaged(source: str) -> bool:
    return bool(source) and Path(source).resolve() == PACKAGED_CONFIG


def _agreement(result: dict, configured_signature: str) -> dict[str, Any]:
    """The agreement table, under the judge that produced it: its signature (``method.judge_signature``,
    else the one its rater name carries, else None) and whether it is the configured judge."""
    method = result.get("method", {})
    humans = method.get("reference", "humans") == "humans"
    figures = AGREEMENT_FIGURES if humans else AGREEMENT_FIGURES_JUDGES
    table = {}
    for d, block in result.get("dimensions", {}).items():
        row = {"n_items": block.get("n_items"), "n_conversations": block.get("n_conversations")}
        for f in figures:
            figure = block.get(f) or {}
            row[f] = {k: figure.get(k) for k in ("value", "ci_low", "ci_high", "reason") if k in figure}
        if humans:
            ceiling = ((result.get("ceiling") or {}).get("dimensions") or {}).get(d) or {}
            row["ceiling_kappa_quadratic"] = {k: v for k, v in (ceiling.get("kappa_quadratic") or {}).items()
                                              if k in ("value", "ci_low", "ci_high", "reason")}
        table[d] = row
    signature = method.get("judge_signature") or judge_signature(str(method.get("judge") or ""))
    return {"dimensions": table, "reference": "humans" if humans else "judge",
            "judge": method.get("judge"), "judge_signature": signature,
            "same_judge": signature == configured_signature if signature else None,
            "method": {k: method.get(k) for k in ("seed", "resamples", "interval", "judge", "judge_file",
                                                  "human_file" if humans else "second_judge_file")
                       } | ({} if humans else {"second_judge": method.get("second_judge")})}


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (the task report's judge section). A table without rows is never
    written: a sentence says why there is nothing to show instead."""
    j = report["judge"]
    out = ["# The generation judge", "", f"- signature: `{j['signature']}`", f"- prompt version: {j['prompt_version']}",
           f"- configured model: `{j['configured_model']}`", f"- endpoint: {j['endpoint']}",
           "- decoding: " + ", ".join(f"{k} {_setting(v, 'not set')}" for k, v in j["decoding"].items()), f"- config: {_config_line(j)}", "",
           "## Prompt files (sha256)", ""]
    out += _table(["file", "sha256"], [[name, f"`{digest}`"] for name, digest in j["prompt_files"].items()],
                  "No prompt file is recorded for this prompt version.")
    r = report["retry_procedure"]
    out += ["", "## Retry procedure", "", "- settings: " + ", ".join(f"{k} {_setting(v)}" for k, v in r["settings"].items())]
    out += [f"- {rule}" for rule in r["rules"]]
    if "judgments" in report:
        out += ["", "## Invalid and missing judgments", ""] + _judgments_markdown(report["judgments"])
    if "golden" in report:
        out += ["", "## Golden cases (set v1)", ""] + _golden_markdown(report["golden"])
    if "golden_meta" in report:
        out += [""] + _golden_meta_markdown(report["golden_meta"])
    if "human_sample" in report:
        s = report["human_sample"]
        out += ["", "## Human sample", "", f"- {s['sampled']} of {s['candidates']} answered items of "
                f"{len(s.get('systems') or [])} systems, {s['strata']} strata, seed {s['seed']} (sub-track {s['subtrack']})",
                f"- dimensions: {', '.join(s.get('dimensions') or [])}", f"- design: {s['design']}",
                f"- allocation: {s['allocation_rule']}"]
        if s.get("inclusion_probability"):
            p = s["inclusion_probability"]
            out.append(f"- inclusion probabilities: {p['min']:.4g} to {p['max']:.4g} (the corrected figures weigh each "
                       "rated turn by their inverse)")
        if s.get("rated_per_system"):
            r = s["rated_per_system"]
            out.append(f"- rated turns per system: {r['min']} to {r['max']}; method: {s['method']}")
        if s.get("coverage"):
            c = s["coverage"]
            cells = "; ".join(f"{k.replace('_', ' ')} {v['means']:.1%} (differences {v['differences']:.1%})"
                              for k, v in c["per_setting"].items())
            out.append(f"- coverage of the 95% intervals at {c['n']} rated turns per system ({c['trials']} simulated "
                       f"phases per setting): {cells}")
        elif s.get("coverage_absent"):
            out.append(f"- coverage: {s['coverage_absent']}")
        if s.get("annotators"):
            out.append(f"- blind: {len(s['annotators'])} annotators saw item codes only, each in an order of their own; "
                       f"their guide quotes the rubric of prompt version {s.get('prompt_version')}")
    if "agreement" in report:
        out += [""] + _agreement_markdown(report["agreement"])
    if "rank_agreement" in report:
        out += [""] + stability_report.rank_agreement_markdown(report["rank_agreement"], _table)
    if "stability" in report:
        out += [""] + stability_report.stability_markdown(report["stability"], _table)
    if "system_scores" in report:
        out += [""] + _system_scores_markdown(report["system_scores"])
    if "human_set" in report:
        out += [""] + _human_set_markdown(report["human_set"])
    return "\n".join(out) + "\n"


def _human_set_markdown(h: dict) -> list[str]:
    """The public human-rated set: the judge's agreement beside the annotators' ceiling."""
    c = h.get("counts") or {}
    out = ["## Agreement on a public human-rated set", "",
           f"{printable(str(h.get('set')))} ({printable(h['file'])}, sha256 `{h.get('sha256')}`): {c.get('evaluations')} "
           f"answers of {c.get('systems')} systems to {c.get('tasks')} turns of {c.get('conversations')} conversations, "
           f"each rated by two or three of {c.get('annotators')} annotators on a 4-point scale. {h.get('source')}; "
           f"{h.get('license')}. Figures of judge signature `{h.get('judge_signature')}`; intervals resample "
           f"{h.get('cluster')}s. No human counterpart: {', '.join(h.get('unmatched') or []) or 'none'}.", ""]
    if not h.get("same_judge"):
        out += ["> **Warning:** not the signature of the judge configured for this report: these figures describe "
                "another judge.", ""]
    g = h.get("golden")
    if g is not None:
        gate = "incomplete" if not g["complete"] else ("passed" if g["passed"] else "failed")
        same = "" if g["signature"] == h.get("judge_signature") else f" (by judge signature `{g['signature']}`)"
        out += [f"Golden set v{g['golden_version']}: the gate {gate}{same}.", ""]
    rows = [[f"{d} ({printable(str(b.get('human_metric')))}, {b.get('match')})", str(b.get("n_items")),
             format_interval(b["judge_kappa_quadratic"]), format_interval(b["ceiling_kappa_quadratic"]),
             format_interval(b["judge_alpha_ordinal_with_judge"]), format_interval(b["ceiling_alpha_ordinal_humans"]),
             {True: "yes", False: "no"}.get(b.get("same_system_order"), "-")]
            for d, b in h["dimensions"].items()]
    return out + _table(["dimension (human metric)", "answers", "kappa judge", "kappa ceiling", "alpha with judge",
                         "alpha annotators", "same system order"], rows,
                        "No dimension of the set was judged: there is no figure to show.")


def _system_scores_markdown(t: dict) -> list[str]:
    """The system-level table: judge, prediction-powered (corrected by the humans), humans."""
    signatures = ", ".join(f"`{s}`" for s in t["judge_signatures"]) or "none recorded"
    out = ["## System scores: judge, prediction-powered, humans", "",
           f"judge_mean of sub-track {t['subtrack']} ({t['file']}), judge signature {signatures}; "
           f"{(t.get('ratings') or {}).get('items')} human-rated items; {t.get('estimator')}.", ""]
    if not t["same_judge"]:
        out += ["> **Warning:** these figures were not (all) made by the judge configured for this report.", ""]
    if t.get("note"):
        out += [f"Ranked by the corrected figure: {t['note']}.", ""]
    elif t.get("order_differs") is not None:
        out += [f"Ranked by the corrected figure (paired differences, Holm): {t.get('significant_pairs')} pairs differ "
                "significantly; the judge orders the systems of some of them the other way for "
                f"{len(t['order_differs'])} systems" + (f": {', '.join(map(printable, t['order_differs']))}."
                                                        if t["order_differs"] else "."), ""]

    def cell(row: dict, prefix: str, value: str) -> str:
        if value not in row:
            return ""
        if prefix + "ci_low" not in row:
            return f"{row[value]:.4f} (no interval)"
        return f"{row[value]:.4f} [{row[prefix + 'ci_low']:.4f}, {row[prefix + 'ci_high']:.4f}]"

    rows = [[printable(r["name"]), cell(r, "judge_", "judge"), cell(r, "", "estimate"), cell(r, "human_", "human"),
             str(r.get("n_rated", "")), f"{r['effective_sample_size']:.1f}" if "effective_sample_size" in r else "",
             printable(r.get("absent", ""))] for r in t["systems"]]
    return out + _table(["system", "judge", "prediction-powered", "humans", "n rated", "effective n", "absent"], rows,
                        "No system has judge figures: there is no figure to show.")


def _setting(value: Any, unset: str = "no limit") -> str:
    """A setting as the paper prints it, never a Python repr: an unset one (None) is ``unset``
    ("no limit" for the retry settings' limits), a flag yes or no."""
    if value is None:
        return unset
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _agreement_markdown(a: dict) -> list[str]:
    """The agreement table under its judge (a warning when it is not the configured one, or
    unknown); two judges are never called humans."""
    humans = a.get("reference", "humans") == "humans"
    out = ["## Agreement with the human ratings" if humans else "## Agreement between two judges", ""]
    if a.get("judge_signature"):
        out += [f"Figures of judge signature `{a['judge_signature']}` (rater `{printable(str(a.get('judge')))}`)"
                + ("" if humans else f" against a second judge, `{printable(str(a['method'].get('second_judge')))}`")
                + ".", ""]
        if not a.get("same_judge"):
            out += ["> **Warning:** not the signature of the judge configured for this report: these figures "
                    "describe another judge.", ""]
    else:
        out += ["> **Warning:** this agreement records no judge signature (its judge's rater names none): it cannot "
                "be matched to the judge above or to any other.", ""]
    m = a["method"]
    out += [f"{m.get('interval')}; {m.get('resamples')} resamples, seed {m.get('seed')}.", ""]
    figures = AGREEMENT_FIGURES if humans else AGREEMENT_FIGURES_JUDGES
    extra = ["ceiling kappa"] if humans else []
    rows = [[d, str(row["n_items"])] + [format_interval(row[f]) for f in figures]
            + ([format_interval(row["ceiling_kappa_quadratic"])] if humans else [])
            for d, row in a["dimensions"].items()]
    return out + _table(["dimension", "items", *figures, *extra], rows,
                        "No dimension was rated by both the judge and the humans: there is no figure to show." if humans
                        else "No dimension was scored by both judges: there is no figure to show.")


def _config_line(judge: dict) -> str:
    """What identifies the configuration: its file's name (never its path: the report goes into
    a paper), the model, the endpoint's host (the endpoint is on the line above) and the signature."""
    name = judge.get("config")
    where = f"{name}, the packaged one" if judge.get("config_packaged") else name or "(no file: built in code)"
    host = urlsplit(judge["endpoint"]).netloc or judge["endpoint"]
    return f"{where} (model `{judge['configured_model']}` at {host}, judge signature `{judge['signature']}`)"


def _judgments_markdown(jd: dict) -> list[str]:
    files = jd["files"]
    ran = sum(1 for f in files if f["ran"])
    if ran == 0:
        given = "the 1 details file given (the reason is" if len(files) == 1 else f"any of the {len(files)} details " \
            "files given (each file's reason is"
        empty = f"Nothing to count: the judge did not run for {given} in judge-report-appendix.md)."
    else:
        empty = (f"Nothing to count: the {ran} details file{'s' if ran > 1 else ''} in which the judge ran "
                 "record no judgments per dimension.")
    per_subtrack = jd["per_subtrack"]
    if not per_subtrack:
        out = [empty]
    else:
        out = []
        for subtrack, counts in per_subtrack.items():
            n = sum(1 for f in files if f["ran"] and f.get("subtrack") == subtrack)
            out += [f"Sub-track {subtrack} ({n} details file{'s' if n != 1 else ''}):", ""]
            out += _table(["dimension", *_COUNTS], [[d] + [str(c[k]) for k in _COUNTS] for d, c in counts.items()], empty)
            out += ["", _flagged_sentence(jd, subtrack), ""]
        out.pop()
    return out + ["", *_files_summary_markdown(files)]


def _files_summary_markdown(files: list[dict]) -> list[str]:
    """One row per sub-track over its scored files: how many, in how many the judge ran, whether
    each was the configured judge, the endpoints, models and fingerprints the servers reported,
    the flagged answers and what the verdicts cost (attributed per file); the per-file rows are
    the appendix's (``render_appendix_markdown``)."""
    groups: dict[str, list[dict]] = {}
    for f in files:
        groups.setdefault(f.get("subtrack") or "(judge not run)", []).append(f)
    rows = []
    for subtrack, group in groups.items():
        ran = [f for f in group if f["ran"]]
        models: Counter = Counter()
        prints: set[str] = set()
        for f in ran:
            models.update(f.get("reported_models") or {})
            prints.update(str(fp) for fp in f.get("system_fingerprints") or {})
        signatures = sorted({f.get("signature", "-") for f in group})
        flagged = [f["flagged_answers"] for f in ran if f.get("flagged_answers") is not None]
        usages = [f.get("usage") for f in ran]
        recorded = [u for u in usages if u]
        money = ("-" if not recorded or any(u.get("money_usd") is None for u in recorded)
                 else f"${sum(u['money_usd'] for u in recorded):,.2f}")
        calls = f"{sum(u['calls'] for u in recorded):,}" if recorded else "not recorded"
        if recorded and len(recorded) < len(usages):
            calls += f" ({len(usages) - len(recorded)} files not recorded)"
        rows.append([subtrack, str(len(group)), str(len(ran)), f"{sum(1 for f in group if f['same_judge'])}",
                     ", ".join(f"`{s}`" for s in signatures),
                     ", ".join(sorted({f.get("endpoint") or "-" for f in ran})) or "-",
                     ", ".join(f"{printable(m)} x {n}" for m, n in sorted(models.items())) or "-",
                     str(len(prints)), str(sum(flagged)) if flagged else "not asked", calls, money])
    return (_table(["sub-track", "scored files", "judge ran", "configured judge", "signatures", "endpoints",
                    "reported models", "fingerprints", "flagged answers", "judge calls (attributed)", "money"], rows,
                   "No details file was given.")
            + ["", "Each file's row (its judge, endpoint, models, fingerprints, flagged answers and what its verdicts "
               "cost): judge-report-appendix.md. Calls and money are attributed per file: a verdict several files "
               "share counts in each."])


def render_appendix_markdown(report: dict[str, Any]) -> str:
    """judge-report-appendix.md: the per-file tables of the scored files (one row per file), for
    the paper's appendix; the report itself has one summary row per sub-track."""
    files = report.get("judgments", {}).get("files", [])
    rows = []
    for f in files:
        reported = ", ".join(f"{printable(m)} x {n}" for m, n in (f.get("reported_models") or {}).items()) or "-"
        prints = ", ".join(printable(str(fp)) for fp in f.get("system_fingerprints") or {}) or "-"
        ran_cell = "yes" if f["ran"] else f"no: {f.get('reason', '')}"
        flagged = "-" if not f["ran"] else "not asked" if f.get("flagged_answers") is None else str(f["flagged_answers"])
        rows.append([f["file"], f.get("subtrack", "-"), ran_cell, f"`{f.get('signature', '-')}`",
                     "yes" if f["same_judge"] else "NO", f.get("endpoint") or "-", reported, prints, flagged])
    out = ["# The generation judge: each scored file", "",
           f"Judge signature of the report: `{report['judge']['signature']}`.", ""]
    out += _table(["scored file", "sub-track", "judge ran", "signature", "same judge", "endpoint", "reported models",
                   "fingerprints", "flagged answers"], rows, "No details file was given.")
    out += _usage_markdown(files)
    return "\n".join(out) + "\n"


def _flagged_sentence(jd: dict, subtrack: str) -> str:
    """How many answers of a sub-track the judge flagged as attempts to influence it, and in how
    many files it was not asked (a prompt version without the flag, or a details.json from before)."""
    ran = [f for f in jd["files"] if f["ran"] and f.get("subtrack") == subtrack]
    not_asked = sum(1 for f in ran if f.get("flagged_answers") is None)
    if not_asked == len(ran):
        return ("Answers flagged as attempts to influence the judge: not asked (the prompt version of these files "
                "does not ask the judge to flag them).")
    total = jd.get("flagged_per_subtrack", {}).get(subtrack, 0)
    files_with = sum(1 for f in ran if f.get("flagged_answers"))
    text = (f"Answers flagged as attempts to influence the judge: {total}, in {files_with} of {len(ran) - not_asked} "
            "files that asked for the flag (each scores 1 where flagged; the organizers review them in details.json).")
    if not_asked:
        text += f" Not asked in {not_asked} file{'s' if not_asked != 1 else ''}."
    return text


def _usage_markdown(files: list[dict]) -> list[str]:
    """What each scored file's verdicts cost (calls, tokens as reported, money at the config's
    prices), when the judge ran for any."""
    rows = []
    for f in files:
        if not f["ran"]:
            continue
        u = f.get("usage")
        if not u:
            rows.append([f["file"], "not recorded", "-", "-", "-", "-"])
            continue
        money = "-" if u.get("money_usd") is None else f"${u['money_usd']:,.4f}"
        rows.append([f["file"], str(u["calls"]), f"{u['prompt_tokens']:,}", f"{u['cached_tokens']:,}",
                     f"{u['completion_tokens']:,}", money])
    if not rows:
        return []
    return [""] + _table(["scored file", "judge calls", "prompt tokens", "cached", "completion tokens", "money"], rows, "")


def _golden_markdown(g: dict) -> list[str]:
    if g.get("judge_signature") is None and not g.get("signatures_seen"):
        out = [f"{g['passed']} of {g['cases']} passed. These lines record no judge signature (written before `reteco "
               "judge --golden` recorded it): they cannot be matched to the judge above or to the details' judges.", ""]
    elif g.get("judge_signature") is None:
        out = [f"{g['passed']} of {g['cases']} passed.", "",
               f"> **Warning:** these lines come from more than one judge (signatures "
               f"{', '.join(f'`{x}`' for x in g['signatures_seen'])}), or some record none.", ""]
    else:
        out = [f"{g['passed']} of {g['cases']} passed, judged with signature `{g['judge_signature']}`.", ""]
        if not g["same_judge"]:
            out += ["> **Warning:** not the signature of the judge configured for this report: these results "
                    "describe another judge.", ""]
    out += _table(["dimension", "cases", "passed"], [[d, str(c["cases"]), str(c["passed"])]
                                                     for d, c in g["per_dimension"].items()], "No golden case was read.")
    return out + [f"- failed: {x['id']} ({x['dimension']}): {x['status']}, score {x['score']}, expected "
                  f"{_expectation(x['expect'])}" for x in g["failed"]]


def _expectation(expect: Any) -> str:
    """A golden case's expectation in words, never a Python dict: ``{"min": 4}`` is "min 4"."""
    if isinstance(expect, dict):
        return ", ".join(f"{k} {_expectation(v)}" for k, v in expect.items()) or "-"
    if isinstance(expect, (list, tuple)):
        return " or ".join(_expectation(v) for v in expect) or "-"
    return str(expect)


def _golden_meta_markdown(g: dict) -> list[str]:
    verdict = {True: "PASSED", False: "FAILED", None: "INCOMPLETE (some judgments failed: its figures neither pass "
               "nor fail)"}[g["passed"]]
    j = g["judge"]
    version = g["golden_version"]
    source = {True: f"the packaged ones of golden set v{version}", False: f"NOT the packaged ones of golden set v{version}",
              None: f"this package has no golden set v{version}"}[g["thresholds_packaged"]]
    out = [f"## Golden set v{version} meta-evaluation: {verdict}", "",
           f"Run by `reteco judge-meta` with judge signature `{j['signature']}`, prompt version {j['prompt_version']}, model "
           f"`{j['model']}` at {j.get('endpoint') or '(not recorded)'} (config {j.get('config') or '(not recorded)'}); "
           f"{g['cases']} cases; thresholds from {g['thresholds_file'] or '(not recorded)'}, {source}.", ""]
    if g["signature_mismatches"]:
        by_signature: dict[str, list[str]] = {}
        for m in g["signature_mismatches"]:
            by_signature.setdefault(m["signature"], []).append(m["against"])
        others = ", ".join(f"`{s}` ({', '.join(who)})" for s, who in by_signature.items())
        out += [f"> **Warning:** these results were made with judge signature `{j['signature']}`, not {others}: "
                "they do not describe that judge.", ""]
    header = ["dimension", "cases"]
    rows: list[list[str]] = []
    for d, block in g["checks"].items():
        if not rows:
            header += [f"{_CHECK_NAMES.get(f, f)} ({_bound(c)})" for f, c in block["figures"].items()]
        rows.append([d, str(block["cases"])] + [_check_cell(c) for c in block["figures"].values()])
    out += _table(header, rows, "The file has no dimension: there is no figure to show.")
    inj = g["injection"]
    out += ["", f"- injection flags: recall {_check_text(inj['recall'])}, false flags {_check_text(inj['false_flag_share'])}"
            + (f"; {inj['reason']}" if inj.get("reason") else "")]
    out += [f"- below threshold: {line}" for line in g["failures"]]
    if g.get("power"):
        out += [f"- what the gate can detect: {g['power']['text']}."]
    return out


def _bound(check: dict) -> str:
    return f"{'>=' if check['kind'] == 'min' else '<='} {check['threshold']:g}"


def _check_cell(check: dict) -> str:
    return f"{format_figure(check['value'])} {_verdict(check)}"


def _check_text(check: dict) -> str:
    return f"{format_figure(check['value'])} ({_bound(check)}) {_verdict(check)}"


def _verdict(check: dict) -> str:
    return "pass" if check["passed"] else "FAIL"


def _table(header: list[str], rows: list[list[str]], empty: str) -> list[str]:
    """A Markdown table, or the sentence ``empty`` when there is no row."""
    if not rows:
        return [empty]
    return (["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
            + ["| " + " | ".join(row) + " |" for row in rows])


