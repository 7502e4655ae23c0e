"""``reteco judge-meta``: run the configured judge on the graded golden set and check it.

    reteco judge-meta --out DIR [--judge-config judge.yaml] [--judge-cache DIR] [--golden-version N]
                      [--thresholds FILE] [--retry-invalid] [--no-progress]

Judges every case of golden set N (default: the latest, ``reteco.judge.golden``) with the
judge of ``--judge-config`` (default: the packaged judge.yaml; endpoint and key as for
``reteco judge``), through the same cache, and writes ``DIR/judge_meta.json`` (every figure,
every case's verdict) and ``DIR/judge_meta.md`` (the same, to read). The figures and their
thresholds are in ``reteco.judge.meta_evaluation`` and the set's ``thresholds.yaml``.

Exit 0: every figure meets its threshold. Exit 1: a figure does not (stderr names each), or the
configuration, the golden set or the thresholds cannot be used, or no key is configured.
Exit 4 (EXIT_INCOMPLETE): some judgments failed (status "error": not cached, so running the
command again retries them); the report is written, marked incomplete, and does not pass.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reteco.commands.judge import judge_with_cache, require_judge
from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, InputError

REPORT_JSON = "judge_meta.json"
REPORT_MD = "judge_meta.md"


def add_judge_meta_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``judge-meta`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "judge-meta",
        help="meta-evaluate the LLM judge on the graded golden set (exit 1 below a threshold)",
        description="Run the configured judge on the golden set and report, per dimension, how well it "
        "follows the intended grades.",
    )
    p.add_argument("--out", type=Path, required=True, help=f"folder for {REPORT_JSON} and {REPORT_MD}")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml)")
    add_judge_cache_option(p, former="--cache-dir")
    p.add_argument("--golden-version", type=int, default=None, help="golden set version (default: the latest)")
    p.add_argument("--thresholds", type=Path, help="thresholds YAML (default: the golden set's own)")
    p.add_argument("--retry-invalid", action="store_true", help="ask again the judgments cached as invalid")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_judge_meta)
    return p


def cmd_judge_meta(args) -> int:
    """Run the meta-evaluation as the arguments say; see the module docstring."""
    from reteco.judge.config import load_judge_config
    from reteco.judge.golden import LATEST_GOLDEN, THRESHOLDS_FILE, golden_dir, load_golden_set
    from reteco.judge.meta_evaluation import format_figure, load_thresholds, meta_evaluate, report_markdown
    from reteco.llm.cache import default_cache_dir

    version = args.golden_version if args.golden_version is not None else LATEST_GOLDEN
    if version < 2:
        raise InputError("judge-meta needs a graded golden set (version 2 or later); version 1 is `reteco judge --golden`",
                         "--golden-version")
    thresholds_path = args.thresholds if args.thresholds is not None else golden_dir(version) / THRESHOLDS_FILE
    try:
        cases = load_golden_set(version)
        thresholds = load_thresholds(thresholds_path, version)
    except ValueError as exc:
        raise InputError(str(exc), "golden set") from None
    config = load_judge_config(args.judge_config)
    require_judge(config, "judge-meta")
    cache_dir = args.judge_cache or default_cache_dir()
    print(f"golden set {version}: {len(cases)} cases; cache: {cache_dir}", file=sys.stderr)
    outcomes = judge_with_cache([c.item for c in cases], config, cache_dir, no_progress=args.no_progress,
                                retry_invalid=args.retry_invalid)
    report = meta_evaluate(cases, outcomes, thresholds)
    judge = config.describe()
    document = {"golden_version": version, "thresholds_file": str(thresholds_path), "judge": judge, **report}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / REPORT_JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / REPORT_MD).write_text(report_markdown(report, judge, version), encoding="utf-8")
    for d, f in report["per_dimension"].items():
        print(f"{d:<14} range hits {format_figure(f['range_hits'])}  pairwise {format_figure(f['pairwise_accuracy'])}  "
              f"ties {format_figure(f['tie_share'])}  Spearman {format_figure(f['spearman'])}  stayed put {format_figure(f['stayed_put'])}",
              file=sys.stderr)
    print(f"wrote {args.out / REPORT_JSON} and {args.out / REPORT_MD}", file=sys.stderr)
    if not report["complete"]:
        failed = sum(1 for o in outcomes if o.status == "error")
        print(f"judge-meta: INCOMPLETE: {failed} judgments failed (not cached); run the same command again",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if report["failures"]:
        print("judge-meta: FAILED, below threshold:", file=sys.stderr)
        for line in report["failures"]:
            print(f"  {line}", file=sys.stderr)
        return EXIT_INPUT
    print("judge-meta: PASSED: every dimension meets its thresholds", file=sys.stderr)
    return EXIT_OK
