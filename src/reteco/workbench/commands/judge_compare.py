"""``reteco judge-compare CFG... --out DIR``: the same golden items judged with each judge
configuration, and one table (issue 31, item 2).

Per configuration: its signature and model; the model's announced shutdown date
(``reteco.llm.model_retirement``: the SDK's list) against the end of each judged phase
(Evaluation, Post-evaluation: ``reteco.workbench.codabench.bundle.competition.PHASES``); the
golden gate (``judge-meta``'s: pass or fail, and the failing checks' tags), with what the gate
can detect (the set's size and power by simulation, ``golden/v<N>/calibration.yaml``, golden v5
on); the cost of the
expected phase (``--turns`` turns for ``--submissions`` submissions, the golden turns' estimate
scaled, at the config's ``price_per_million``; none without prices; and the same phase at the
golden run's reported cost per call, reasoning tokens included) and the wall time per
judgment made now (judgments answered from the cache are not timed). Agreement with human
ratings is ``reteco agreement``'s, per rater (the table names the judge's rater id to use).
With ``--human-set mtrag FILE`` each judge also judges a public human-rated set (``judge-meta
--human-set``'s: MTRAG's human evaluations) and its row holds, per dimension, the judge's
quadratic-weighted kappa against the annotators beside the annotators' own (the human ceiling),
with their intervals.

Writes ``judge_compare.json`` and ``judge_compare.md``; exit 0 when every judge ran to the end,
whatever its gate (the table is the result), ``EXIT_INCOMPLETE`` when a judge left judgments
unfinished.

    reteco judge-compare src/reteco/judge/judge.yaml src/reteco/judge/gpt-4o.yaml --out build/compare
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from reteco.commands.judge_options import add_judge_cache_option
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError

REPORT_JSON = "judge_compare.json"
REPORT_MD = "judge_compare.md"
JUDGED_PHASES = ("evaluation", "post_evaluation")


def add_parser(subparsers) -> None:
    """Register ``reteco judge-compare`` on the CLI's subparsers."""
    p = subparsers.add_parser("judge-compare", help="judge the golden items with each judge config and compare them")
    p.add_argument("configs", type=Path, nargs="+", metavar="CFG", help="judge config files (YAML)")
    p.add_argument("--out", type=Path, required=True, help="folder for judge_compare.json and judge_compare.md")
    p.add_argument("--golden-version", type=int, default=None, help="golden set version (default: the latest)")
    p.add_argument("--turns", type=int, default=200, help="turns of the expected phase (default 200: the test set)")
    p.add_argument("--submissions", type=int, default=50, help="submissions of the expected phase (default 50)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--human-set", nargs=2, metavar=("NAME", "FILE"),
                   help="also judge a public human-rated set and show agreement beside the human ceiling: mtrag FILE")
    p.add_argument("--cluster", choices=("conversation", "task"), default="conversation",
                   help="--human-set: what the bootstrap resamples (default: conversations)")
    add_judge_cache_option(p, used_for=" (one cache for every config: a verdict is keyed by its judge's signature)")
    p.set_defaults(func=cmd_judge_compare)


def cmd_judge_compare(args) -> int:
    """Run ``reteco judge-compare``."""
    from reteco.judge.config import load_judge_config
    from reteco.llm.cache import default_cache_dir
    from reteco.workbench.commands.judge import require_judge
    from reteco.workbench.judge_audit.golden import LATEST_GOLDEN, THRESHOLDS_FILE, golden_dir, load_calibration, load_golden_set
    from reteco.workbench.judge_audit.meta_contrasts import has_contrasts, load_contrast_thresholds
    from reteco.workbench.judge_audit.meta_evaluation import load_thresholds
    from reteco.workbench.judge_audit.simulated_judges import gate_power_sentence

    if args.turns < 1 or args.submissions < 1:
        raise InputError("--turns and --submissions must be at least 1", "command line")
    version = args.golden_version if args.golden_version is not None else LATEST_GOLDEN
    try:
        cases = load_golden_set(version)
        thresholds = load_thresholds(golden_dir(version) / THRESHOLDS_FILE, version)
        contrast = load_contrast_thresholds(golden_dir(version) / THRESHOLDS_FILE) if has_contrasts(cases) else None
    except ValueError as exc:
        raise InputError(str(exc), "golden set") from None
    human_set = None
    if args.human_set is not None:
        from reteco.workbench.judge_audit import human_set_mtrag

        if args.human_set[0] != human_set_mtrag.NAME:
            raise InputError(f"unknown human-rated set {args.human_set[0]!r}; the one known is "
                             f"{human_set_mtrag.NAME!r}", "--human-set")
        human_set = human_set_mtrag.read_mtrag(args.human_set[1])
    configs = [load_judge_config(path) for path in args.configs]
    for config in configs:
        require_judge(config, "judge-compare")
    cache_dir = args.judge_cache or default_cache_dir()
    rows = [compare_one(config, cases, thresholds, contrast, cache_dir, args, human_set) for config in configs]
    # What the gate can detect (golden v5 on: its size and power by simulation), beside every pass or fail.
    try:
        calibration = load_calibration(version)
    except ValueError as exc:
        raise InputError(str(exc), "golden set") from None
    document = {"golden_version": version, "turns": args.turns, "submissions": args.submissions,
                "gate_power": {"calibration": calibration, "text": gate_power_sentence(calibration)}, "judges": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / REPORT_JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / REPORT_MD).write_text(table_markdown(document), encoding="utf-8")
    print(table_markdown(document), end="")
    print(f"wrote {args.out / REPORT_JSON} and {args.out / REPORT_MD}", file=sys.stderr)
    complete = all(r["gate"]["complete"] and (r.get("human_set") or {}).get("complete", True) for r in rows)
    return EXIT_OK if complete else EXIT_INCOMPLETE


def compare_one(config, cases, thresholds, contrast, cache_dir: Path, args, human_set=None) -> dict:
    """One configuration's row: who, the shutdown against the phases, the gate, cost, time."""
    from reteco.llm.model_retirement import SOURCE, known_shutdown, retirement_warning
    from reteco.workbench.codabench.bundle.competition import PHASES
    from reteco.workbench.commands.judge_meta import golden_gate

    started = time.monotonic()
    report, outcomes, probe_outcomes = golden_gate(cases, thresholds, contrast, config, cache_dir,
                                                   no_progress=args.no_progress)
    seconds = time.monotonic() - started
    judged_now = sum(1 for o in [*outcomes, *probe_outcomes] if not o.cached and o.status != "error")
    shutdown = known_shutdown(config.model)
    phases = []
    for phase in (p for p in PHASES if p.key in JUDGED_PHASES):
        warning = retirement_warning(config.model, shutdown, phase.name, phase.end, SOURCE)
        phases.append({"phase": phase.name, "start": phase.start, "end": phase.end, "judge_leaves_before_end": bool(warning)})
    failing = report["failures"]
    tags = sorted({m.group(1) for f in failing for m in [re.search(r"tag (\S+?)[,:]", f)] if m})
    cost = phase_cost(config, cases, args.turns, args.submissions)
    measured = measured_cost(config, [*outcomes, *probe_outcomes], args.turns, args.submissions)
    row = {
        "config": str(config.source), "signature": config.signature, "model": config.model,
        "prompt_version": config.prompt_version, "decoding": {k: v for k, v in config.decoding().items()},
        "shutdown_date": shutdown, "shutdown_source": SOURCE if shutdown else None, "phases": phases,
        "gate": {"complete": report["complete"], "passed": report["passed"], "failures": failing, "failing_tags": tags},
        "human_agreement": {"rater": f"{config.model}@{config.signature}",
                            "how": "reteco agreement with the organizers' human ratings (not given here)"},
        "expected_phase_cost_usd": cost,
        "golden_usage": measured["usage"],
        "expected_phase_cost_usd_measured": measured["phase_usd"],
        "judgments": len(outcomes) + len(probe_outcomes), "judged_now": judged_now,
        "seconds_per_judgment": round(seconds / judged_now, 3) if judged_now else None,
    }
    if human_set is not None:
        row["human_set"] = human_set_row(human_set, config, cache_dir, args)
    return row


def human_set_row(hset, config, cache_dir: Path, args) -> dict:
    """The judge on the human-rated set (``judge-meta --human-set``'s figures): per dimension its
    kappa against the annotators beside the annotators' own, with intervals."""
    from reteco.workbench.commands.judge_meta import judge_human_set
    from reteco.workbench.judge_audit import human_set_mtrag

    document, outcomes = judge_human_set(hset, config, cache_dir, cluster=args.cluster, no_progress=args.no_progress)
    return {"name": document["human_set"], "file": document["file"], "sha256": document["sha256"],
            "cluster": document["cluster"], "complete": not any(o.status == "error" for o in outcomes),
            "dimensions": human_set_mtrag.headline(document)}


def measured_cost(config, outcomes, turns: int, submissions: int) -> dict:
    """What the golden verdicts cost as the server reported it (``verdicts_usage``: reasoning
    tokens included, which no estimate knows before a run), and the expected phase at that cost
    per judgment and the config's prices (None without prices or usage)."""
    from reteco.judge.items import verdicts_usage

    usage = verdicts_usage(outcomes)
    prices = config.prices()
    recorded = usage.calls - usage.not_recorded
    phase = None
    if prices is not None and recorded:
        judgments = turns * len(config.prompts.dimension_names) * submissions
        phase = round(prices.money(usage) / recorded * judgments, 2)
    return {"usage": usage.as_dict(prices), "phase_usd": phase}


def phase_cost(config, cases, turns: int, submissions: int) -> float | None:
    """The estimate of the expected phase at the config's prices (None without prices): the golden
    set's base answers, one turn per series on every dimension, scaled to ``turns`` x ``submissions``."""
    import dataclasses

    from reteco.workbench.judge_audit.estimate import OPENAI_CACHE_MIN_TOKENS, estimate_judging

    if config.prices() is None:
        return None
    bases = {}
    for case in cases:
        bases.setdefault(case.series, case.item)
    items = [dataclasses.replace(i, dimension=d) for i in bases.values() for d in config.prompts.dimension_names]
    one = estimate_judging(items, config, min_cached_tokens=OPENAI_CACHE_MIN_TOKENS)
    return round(one.scaled(turns * submissions / len(bases)).money_usd, 2)


def table_markdown(document: dict) -> str:
    """The comparison as one Markdown table, a judge a row."""
    lines = [f"Golden set {document['golden_version']}; expected phase: {document['turns']} turns x "
             f"{document['submissions']} submissions.", "",
             f"What the golden gate can detect: {document['gate_power']['text']}.", "",
             "| config | signature | model | decoding | announced shutdown | leaves before the end of | golden gate | "
             "failing tags | human agreement | human set: kappa judge / ceiling | phase cost (estimate) | phase cost (golden run's usage) | reasoning tokens | "
             "s / judgment |",
             "|---|---|---|---|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for r in document["judges"]:
        gate = "incomplete" if not r["gate"]["complete"] else ("pass" if r["gate"]["passed"] else
                                                                f"fail ({len(r['gate']['failures'])} checks)")
        leaves = ", ".join(f"{p['phase']} ({p['end'] or 'no end'})" for p in r["phases"] if p["judge_leaves_before_end"])
        decoding = ", ".join(f"{k} {v}" for k, v in r["decoding"].items())
        cost = "no prices in the config" if r["expected_phase_cost_usd"] is None else f"${r['expected_phase_cost_usd']:,.2f}"
        seconds = "-" if r["seconds_per_judgment"] is None else f"{r['seconds_per_judgment']:.3f}"
        measured = "-" if r["expected_phase_cost_usd_measured"] is None else f"${r['expected_phase_cost_usd_measured']:,.2f}"
        lines.append(f"| {Path(r['config']).name} | `{r['signature']}` | {r['model']} | {decoding} | "
                     f"{r['shutdown_date'] or 'none announced'} | {leaves or '-'} | {gate} | "
                     f"{', '.join(r['gate']['failing_tags']) or '-'} | `reteco agreement` rater `{r['human_agreement']['rater']}` | "
                     f"{_human_set_cell(r.get('human_set'))} | {cost} | {measured} | {r['golden_usage']['reasoning_tokens']:,} | {seconds} |")
    return "\n".join(lines) + "\n"


def _human_set_cell(block: dict | None) -> str:
    """Per dimension the judge's kappa beside the ceiling's, with intervals ("-" without a set)."""
    if block is None:
        return "-"

    def figure(f: dict) -> str:
        if f.get("value") is None:
            return "undefined"
        return f"{f['value']:.2f}" + ("" if f.get("ci_low") is None else f" [{f['ci_low']:.2f}, {f['ci_high']:.2f}]")

    return f"{block['name']}: " + "; ".join(f"{d} {figure(b['judge_kappa'])} / {figure(b['ceiling_kappa'])}"
                                             for d, b in block["dimensions"].items())
