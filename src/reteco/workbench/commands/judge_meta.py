"""``reteco judge-meta``: run the configured judge on the graded golden set and check it.

    reteco judge-meta --out DIR [--judge-config judge.yaml] [--judge-cache DIR] [--golden-version N]
                      [--thresholds FILE] [--retry-invalid] [--no-progress]
    reteco judge-meta --calibrate [--runs N] [--seed S] [--golden-version N] [--thresholds FILE]
                      [--power-curves OUT.md] [--calibration-yaml FILE]
    reteco judge-meta --human-set mtrag FILE --out DIR [--judge-config judge.yaml] [--judge-cache DIR]
                      [--cluster conversation|task] [--withhold-reference-answer]
    reteco judge-meta --out DIR --human-grades SHEET... [--golden-key KEY] [--humans-only]
                      [--gate-against intended|consensus] [--resamples N] [--seed S] [judge options]

Judges every case of golden set N (default: the latest, ``reteco.workbench.judge_audit.golden``) with the
judge of ``--judge-config`` (default: the packaged judge.yaml; endpoint and key as for
``reteco judge``), through the same cache, and writes ``DIR/judge_meta.json`` (every figure,
every case's verdict) and ``DIR/judge_meta.md`` (the same, to read). The figures and their
thresholds are in ``reteco.workbench.judge_audit.meta_evaluation`` and the set's ``thresholds.yaml``.

From golden set v3 on, the judge must also pass every contrast tag on every dimension and the
bias probes (``reteco.workbench.judge_audit.meta_contrasts``): the probes add judgments (passages reversed;
each series' first answer judged again through a second cache, ``<cache>/rejudge``, so the
verdict is asked anew). stderr names each failing dimension and tag. A judge whose prompt
version is not the one the golden set was graded for is warned about on stderr.

``--calibrate`` judges nothing: it runs the simulated judges of
``reteco.workbench.judge_audit.simulated_judges`` through the thresholds and prints, per judge, the share of
simulated runs that fail the gate (power for the judges that must fail; 1 - size for the
mildly noisy ones that must pass), as a Markdown table (docs/golden_v3.md holds its output).
``--power-curves OUT.md`` also simulates the gate's size (±1 on 10% of verdicts) and its power
against each partial failure of issue 33 at 10-40% of its verdicts and against monotone
miscalibrations of one grade, and writes them as Markdown tables (docs/golden_v5.md quotes
them); ``--calibration-yaml FILE`` writes their summary (``golden/v5/calibration.yaml``: what the
judge report and ``judge-compare`` quote, read by ``golden.load_calibration``).

``--human-set mtrag FILE`` judges no golden case: it judges the answers of a public human-rated
set (MTRAG's human evaluations, the JSON file as MTRAG publishes it) on the dimensions that have a
human counterpart, through the same cache, and writes ``DIR/human_set_mtrag.json`` and
``DIR/human_set_mtrag.md`` (also printed): per dimension the judge's agreement with the annotators
beside the annotators' agreement with each other (the human ceiling), with intervals, and the
systems' order (``reteco.workbench.judge_audit.human_set_mtrag``). Exit 0 when every judgment was
made (there is no threshold: the figures are the result), 4 when some failed.

``--human-grades``: the annotators' filled sheets of ``reteco golden-sheet`` (``sheet.csv``), read
back through the sheets' key (``--golden-key``, default ``key.json`` two folders above the first
sheet, where ``golden-sheet`` wrote it; the key names the golden set, so ``--golden-version`` is
not needed). Writes ``DIR/golden_humans.json`` and ``DIR/golden_humans.md``: per dimension and per
contrast tag, the annotators' agreement with each other and with the intended grades, and the
cases whose human consensus falls outside the intended range
(``reteco.workbench.judge_audit.golden_humans``; ``--resamples`` and ``--seed`` for the bootstrap
intervals). With ``--humans-only`` nothing is judged. ``--gate-against consensus`` runs the gate
with each graded case's human consensus as its grade (allowed range by the golden rule); a case
nobody graded keeps its intended grade, and ``judge_meta.json`` records how many did
(``gate_against``, ``human_consensus``).

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

from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.problems import EXIT_INCOMPLETE, EXIT_INPUT, EXIT_OK, InputError
from reteco.workbench.commands.judge import judge_with_cache, require_judge

REPORT_JSON = "judge_meta.json"
REPORT_MD = "judge_meta.md"
HUMANS_JSON = "golden_humans.json"
HUMANS_MD = "golden_humans.md"


def add_judge_meta_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``judge-meta`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "judge-meta",
        help="meta-evaluate the LLM judge on the graded golden set (exit 1 below a threshold)",
        description="Run the configured judge on the golden set and report, per dimension, how well it "
        "follows the intended grades.",
    )
    p.add_argument("--out", type=Path, help=f"folder for {REPORT_JSON} and {REPORT_MD} (required unless --calibrate)")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml)")
    add_judge_cache_option(p, former="--cache-dir")
    p.add_argument("--golden-version", type=int, default=None, help="golden set version (default: the latest)")
    p.add_argument("--thresholds", type=Path, help="thresholds YAML (default: the golden set's own)")
    p.add_argument("--retry-invalid", action="store_true", help="ask again the judgments cached as invalid")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--calibrate", action="store_true",
                   help="judge nothing: print how often simulated judges fail the gate (golden v3 on)")
    p.add_argument("--runs", type=int, default=200, help="--calibrate: simulated runs per random judge (default 200)")
    p.add_argument("--human-set", nargs=2, metavar=("NAME", "FILE"),
                   help="judge a public human-rated set instead of the golden set: mtrag FILE (MTRAG's "
                   "reference_subset_with_human_evaluations.json, or a part of it)")
    p.add_argument("--cluster", choices=("conversation", "task"), default="conversation",
                   help="--human-set: what the bootstrap resamples (default: conversations)")
    p.add_argument("--withhold-reference-answer", action="store_true",
                   help="--human-set: do not show the judge the task's target (one MTRAG system answers with it)")
    p.add_argument("--seed", type=int, default=0,
                   help="--calibrate, and --human-grades' bootstrap intervals: random seed (default 0)")
    g = p.add_argument_group("blind human grades of the golden set (sheets of `reteco golden-sheet`)")
    g.add_argument("--human-grades", type=Path, nargs="+", metavar="SHEET",
                   help="the annotators' filled sheet.csv files: their agreement with each other and with the intended "
                   "grades -> DIR/golden_humans.json and .md")
    g.add_argument("--golden-key", type=Path, metavar="KEY_JSON",
                   help="the sheets' key.json (default: two folders above the first sheet, where golden-sheet wrote it)")
    g.add_argument("--humans-only", action="store_true", help="report the human grades and judge nothing")
    g.add_argument("--gate-against", choices=("intended", "consensus"), default="intended",
                   help="the grades the judge is gated on: the golden set's intended ones (default) or the human "
                   "consensus (needs --human-grades; a case nobody graded keeps its intended grade)")
    g.add_argument("--resamples", type=int, default=2000, help="--human-grades: bootstrap resamples (default 2000)")
    p.add_argument("--power-curves", type=Path, metavar="OUT.md",
                   help="--calibrate: also write the gate's size and power curves (partial failures at 10-40%%, "
                   "miscalibrations of one grade) to this Markdown file")
    p.add_argument("--calibration-yaml", type=Path, metavar="FILE",
                   help="--calibrate with --power-curves: also write the calibration summary (size, power at 20%%) as YAML")
    p.set_defaults(func=cmd_judge_meta)
    return p


def cmd_judge_meta(args) -> int:
    """Run the meta-evaluation as the arguments say; see the module docstring."""
    from reteco.judge.config import load_judge_config
    from reteco.llm.cache import default_cache_dir
    from reteco.workbench.judge_audit.golden import (
        LATEST_GOLDEN,
        THRESHOLDS_FILE,
        golden_dir,
        golden_prompt_version,
        load_golden_set,
    )
    from reteco.workbench.judge_audit.meta_contrasts import has_contrasts, load_contrast_thresholds
    from reteco.workbench.judge_audit.meta_evaluation import format_figure, load_thresholds, report_markdown

    if args.human_set is not None:
        return human_set_command(args)
    key = sheets_key(args) if args.human_grades else None
    if args.gate_against == "consensus" and key is None:
        raise InputError("--gate-against consensus needs the annotators' sheets (--human-grades)", "--gate-against")
    if key is not None and args.calibrate:
        raise InputError("--calibrate judges nothing and reads no human grades; run them apart", "--human-grades")
    if args.humans_only and key is None:
        raise InputError("--humans-only needs --human-grades", "--humans-only")
    if key is not None and args.golden_version is not None and args.golden_version != key.golden_version:
        raise InputError(f"the sheets are of golden set {key.golden_version} (their key), not {args.golden_version}",
                         "--golden-version")
    version = key.golden_version if key is not None else args.golden_version if args.golden_version is not None \
        else LATEST_GOLDEN
    if version < 2:
        raise InputError("judge-meta needs a graded golden set (version 2 or later); version 1 is `reteco judge --golden`",
                         "--golden-version")
    thresholds_path = args.thresholds if args.thresholds is not None else golden_dir(version) / THRESHOLDS_FILE
    try:
        cases = load_golden_set(version)
        thresholds = load_thresholds(thresholds_path, version)
    except ValueError as exc:
        raise InputError(str(exc), "golden set") from None
    contrast_thresholds = None
    if has_contrasts(cases):
        try:
            contrast_thresholds = load_contrast_thresholds(thresholds_path)
        except ValueError as exc:
            raise InputError(str(exc), "golden set") from None
    if args.calibrate:
        return calibrate_command(cases, thresholds, contrast_thresholds, args)
    if args.out is None:
        raise InputError("--out is required (the folder for the reports), unless --calibrate", "--out")
    gate = None
    if key is not None:
        gate = humans_report(args, key, cases, version)
        if args.humans_only:
            return EXIT_OK
        if args.gate_against == "consensus":
            cases, gate = gate
            print(f"gating against the human consensus: {gate['graded_cases']} cases re-graded, {gate['kept_intended']} "
                  "not graded keep their intended grade", file=sys.stderr)
        else:
            gate = None
    config = load_judge_config(args.judge_config)
    require_judge(config, "judge-meta")
    graded_for = golden_prompt_version(version)
    if graded_for is not None and graded_for != config.prompt_version:
        print(f"warning: golden set {version} is graded for prompt version {graded_for}; the judge uses prompt version "
              f"{config.prompt_version}: a judge following its own rubric may fail where the rubrics differ", file=sys.stderr)
    cache_dir = args.judge_cache or default_cache_dir()
    print(f"golden set {version}: {len(cases)} cases; cache: {cache_dir}", file=sys.stderr)
    report, outcomes, probe_outcomes = golden_gate(cases, thresholds, contrast_thresholds, config, cache_dir,
                                                   no_progress=args.no_progress, retry_invalid=args.retry_invalid)
    judge = config.describe()
    document = {"golden_version": version, "thresholds_file": str(thresholds_path), "judge": judge,
                "gate_against": args.gate_against, **({"human_consensus": gate} if gate else {}), **report}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / REPORT_JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    markdown = report_markdown(report, judge, version)
    if gate:  # said under the title: the grades gated on are the humans', not the authors'
        title, rest = markdown.split("\n", 1)
        markdown = (f"{title}\n\nGated against the human consensus ({', '.join(gate['annotators'])}): "
                    f"{gate['graded_cases']} cases re-graded, {gate['kept_intended']} not graded keep their intended "
                    f"grade.\n{rest}")
    (args.out / REPORT_MD).write_text(markdown, encoding="utf-8")
    for d, f in report["per_dimension"].items():
        print(f"{d:<14} range hits {format_figure(f['range_hits'])}  pairwise {format_figure(f['pairwise_accuracy'])}  "
              f"ties {format_figure(f['tie_share'])}  Spearman {format_figure(f['spearman'])}  stayed put {format_figure(f['stayed_put'])}",
              file=sys.stderr)
    if "per_tag" in report:
        for tag, dims in report["per_tag"].items():
            shown = "  ".join(f"{d} {format_figure(b['order_share'] if b['order']['pairs'] else b['hold_share'])}"
                              for d, b in dims.items())
            print(f"tag {tag:<24} {shown}", file=sys.stderr)
    print(f"wrote {args.out / REPORT_JSON} and {args.out / REPORT_MD}", file=sys.stderr)
    if not report["complete"]:
        failed = sum(1 for o in [*outcomes, *probe_outcomes] if o.status == "error")
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


def human_set_command(args) -> int:
    """``--human-set NAME FILE``: judge the set's answers, write and print the agreement (module docstring)."""
    from reteco.judge.config import load_judge_config
    from reteco.llm.cache import default_cache_dir
    from reteco.workbench.judge_audit import human_set_mtrag

    name, path = args.human_set
    if name != human_set_mtrag.NAME:
        raise InputError(f"unknown human-rated set {name!r}; the one known is {human_set_mtrag.NAME!r}", "--human-set")
    if args.out is None:
        raise InputError("--out is required (the folder for the reports)", "--out")
    hset = human_set_mtrag.read_mtrag(path)
    config = load_judge_config(args.judge_config)
    require_judge(config, "judge-meta")
    cache_dir = args.judge_cache or default_cache_dir()
    document, outcomes = judge_human_set(hset, config, cache_dir, cluster=args.cluster,
                                         reference_answer=not args.withhold_reference_answer,
                                         no_progress=args.no_progress)
    judge = config.describe()
    document["judge"] = judge
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"human_set_{human_set_mtrag.NAME}"
    text = human_set_mtrag.markdown(document, judge)
    (args.out / f"{stem}.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"wrote {args.out / (stem + '.json')} and {args.out / (stem + '.md')}", file=sys.stderr)
    failed = sum(1 for o in outcomes if o.status == "error")
    if failed:
        print(f"judge-meta --human-set: INCOMPLETE: {failed} judgments failed (not cached); run the same command "
              "again", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def judge_human_set(hset, config, cache_dir: Path, *, cluster: str = "conversation", reference_answer: bool = True,
                    no_progress: bool = True) -> tuple[dict, list]:
    """A human-rated set's answers judged by ``config`` through the judge cache, and its agreement
    document: (document, outcomes). Also run by ``reteco judge-compare --human-set``."""
    from reteco.workbench.judge_audit import human_set_mtrag

    dimensions = tuple(config.prompts.dimension_names)
    items = human_set_mtrag.judge_items(hset, dimensions, reference_answer=reference_answer)
    if not items:
        raise InputError(f"the judge's prompt version {config.prompt_version} has none of the dimensions the set "
                         "rates", "--human-set")
    print(f"human set {human_set_mtrag.NAME}: {len(hset.evaluations)} answers, {len(items)} judgments; "
          f"cache: {cache_dir}", file=sys.stderr)
    outcomes = judge_with_cache(items, config, cache_dir, no_progress=no_progress)
    document = human_set_mtrag.human_set_agreement(hset, outcomes, f"{config.model}@{config.signature}", dimensions,
                                                   cluster=cluster, reference_answer=reference_answer)
    return document, outcomes
def sheets_key(args):
    """The golden sheets' key: ``--golden-key``, or ``key.json`` where golden-sheet wrote it
    (``DIR/key.json`` beside ``DIR/annotators/<name>/sheet.csv``)."""
    from reteco.workbench.judge_audit.golden_sheet import KEY, read_key

    path = args.golden_key
    if path is None:
        path = Path(args.human_grades[0]).resolve().parent.parent.parent / KEY
        if not path.is_file():
            raise InputError(f"no {KEY} two folders above the first sheet: give the sheets' key with --golden-key",
                             str(args.human_grades[0]))
    return read_key(path)


def humans_report(args, key, cases, version: int) -> tuple[list, dict]:
    """Read the filled sheets, write ``golden_humans.json`` and ``.md``, print the summary; returns
    (the cases re-graded by the consensus, what the gate's report records of it)."""
    from reteco.workbench.judge_audit.golden_humans import consensus_cases, consensus_grades, human_figures, human_markdown
    from reteco.workbench.judge_audit.golden_sheet import read_grade_sheets
    from reteco.workbench.judge_audit.meta_evaluation import format_interval

    if args.resamples < 1:
        raise InputError("--resamples must be at least 1", "--resamples")
    human = read_grade_sheets(args.human_grades, key, cases)
    report = human_figures(cases, human, resamples=args.resamples, seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    document = {"golden_version": version, "prompt_version": key.prompt_version, **report}
    (args.out / HUMANS_JSON).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / HUMANS_MD).write_text(human_markdown(report, version), encoding="utf-8")
    print(f"human grades: {len(human.annotators)} annotator(s), {report['graded_cases']} of {report['cases']} cases "
          f"graded", file=sys.stderr)
    for d, f in report["per_dimension"].items():
        print(f"{d:<14} annotators' kappa {format_interval(f['inter_annotator'])}  consensus vs intended "
              f"{format_interval(f['consensus'])}  in range {f['consensus_in_range']:.3f}", file=sys.stderr)
    print(f"{len(report['disagreements'])} case(s) whose human consensus is outside the intended range; wrote "
          f"{args.out / HUMANS_JSON} and {args.out / HUMANS_MD}", file=sys.stderr)
    consensus = consensus_grades(human)
    gate = {"annotators": list(human.annotators), "graded_cases": sum(1 for c in cases if c.id in consensus),
            "kept_intended": sum(1 for c in cases if c.id not in consensus)}
    return consensus_cases(cases, consensus), gate


def golden_gate(cases, thresholds, contrast_thresholds, config, cache_dir: Path, *, no_progress: bool,
                retry_invalid: bool = False) -> tuple[dict, list, list]:
    """The golden cases (and, with contrast tags, the probes) judged by ``config`` through the
    judge cache, and ``meta_evaluate``'s report: (report, outcomes, probe outcomes). Also run by
    ``reteco judge-compare`` for each configuration."""
    from reteco.workbench.judge_audit.meta_contrasts import REJUDGED, probe_items
    from reteco.workbench.judge_audit.meta_evaluation import meta_evaluate

    probes = probe_items(cases) if contrast_thresholds is not None else []
    items = [c.item for c in cases]
    reordered = [p for p in probes if p.kind != REJUDGED]
    rejudged = [p for p in probes if p.kind == REJUDGED]
    outcomes = judge_with_cache(items + [p.item for p in reordered], config, cache_dir, no_progress=no_progress,
                                retry_invalid=retry_invalid)
    second = judge_with_cache([p.item for p in rejudged], config, rejudge_cache(cache_dir), no_progress=no_progress,
                              retry_invalid=retry_invalid) if rejudged else []
    outcomes, probe_outcomes = outcomes[:len(items)], outcomes[len(items):] + second
    report = meta_evaluate(cases, outcomes, thresholds, contrast_thresholds=contrast_thresholds,
                           probes=reordered + rejudged, probe_outcomes=probe_outcomes)
    return report, outcomes, probe_outcomes


def rejudge_cache(cache_dir: Path) -> Path:
    """The second cache of the re-judging probe, beside (or inside) the judge cache."""
    cache_dir = Path(cache_dir)
    return cache_dir.with_name(cache_dir.stem + "-rejudge.sqlite") if cache_dir.suffix == ".sqlite" else cache_dir / "rejudge"


def calibrate_command(cases, thresholds, contrast_thresholds, args) -> int:
    """``--calibrate``: the simulated judges' table on stdout (see the module docstring)."""
    from reteco.workbench.judge_audit.simulated_judges import calibrate, calibration_table

    if contrast_thresholds is None:
        raise InputError("--calibrate needs a golden set with contrast tags (version 3 or later)", "--golden-version")
    if args.runs < 1:
        raise InputError("--runs must be at least 1", "--runs")
    if args.calibration_yaml is not None and args.power_curves is None:
        raise InputError("--calibration-yaml needs --power-curves (the summary is of the power curves)", "--calibration-yaml")
    rows = calibrate(cases, thresholds, contrast_thresholds, runs=args.runs, seed=args.seed)
    print(calibration_table(rows), end="")
    if args.power_curves is not None:
        write_power_curves(cases, thresholds, contrast_thresholds, args)
    wrong = [r["judge"] for r in rows if r["must_fail"] is not None and (r["fail_share"] >= 0.5) != r["must_fail"]]
    if wrong:
        print(f"judge-meta --calibrate: the gate decides wrongly on {', '.join(wrong)}", file=sys.stderr)
    return EXIT_OK


def write_power_curves(cases, thresholds, contrast_thresholds, args) -> None:
    """``--power-curves`` (and ``--calibration-yaml``): simulate and write them."""
    import yaml

    from reteco.workbench.judge_audit.golden import LATEST_GOLDEN
    from reteco.workbench.judge_audit.simulated_judges import calibration_summary, power_curves, power_curves_markdown

    version = args.golden_version if args.golden_version is not None else LATEST_GOLDEN
    curves = power_curves(cases, thresholds, contrast_thresholds, runs=args.runs, seed=args.seed)
    args.power_curves.parent.mkdir(parents=True, exist_ok=True)
    args.power_curves.write_text(power_curves_markdown(curves, version), encoding="utf-8")
    print(f"wrote {args.power_curves}", file=sys.stderr)
    if args.calibration_yaml is not None:
        header = (f"# Golden set v{version}'s gate by simulation, GENERATED by `reteco judge-meta --calibrate --golden-version "
                  f"{version} --runs {args.runs} --seed {args.seed} --power-curves OUT.md --calibration-yaml FILE`.\n"
                  "# size: the share of runs a judge with the intended grades and mild noise passes; power: the share of\n"
                  "# runs the gate fails a judge with the named partial failure on `power_rate` of its verdicts.\n")
        text = yaml.safe_dump(calibration_summary(curves, version), sort_keys=False, allow_unicode=True)
        args.calibration_yaml.write_text(header + text, encoding="utf-8")
        print(f"wrote {args.calibration_yaml}", file=sys.stderr)
