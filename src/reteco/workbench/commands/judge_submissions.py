"""``reteco judge-submissions``: judge a Codabench phase's submissions after the phase.

    reteco judge-submissions --ref REF --submissions BULK --out OUT [--judge-config C]
                             [--judge-cache D] [--jobs N] [--no-progress]
                             [--repeat-seed S] [--second-judge-config C2] [--repeat-share F]
    reteco judge-submissions --ref REF (--submissions BULK | --teams N) --estimate [--judge-config C]

BULK is ``bulk_submissions.zip`` as Codabench's "download" of selected submissions saves it,
or a folder of its files (``reteco.workbench.leaderboard.judge_submissions`` names the layout and where in
Codabench's source it comes from). REF is the sub-track's reference folder (the one the phase
scores against, e.g. ``build/bundle/reference/test/2b``), or a folder of them: then BULK is a
folder holding ``<sub-track>.zip`` or ``<sub-track>/`` per sub-track. The submissions the
platform shows (``bulk_download.select``: per owner the last that passes the input checks; a
broken last one never replaces a valid earlier one) are scored through ``reteco.workbench.leaderboard.standings``'s scoring path, the judge with
the cache (``--judge-cache``; import the platform's archives first with ``reteco judge
--import-archive`` so nothing judged there is paid twice), and OUT gets, per sub-track,
``judged_submissions_<sub>.csv`` and ``.md``: rank, team, submission, every leaderboard figure of
the sub-track, judge columns included, and why a figure is absent; and ``selection_<sub>.json``,
what was kept, superseded or failed, with why (also in the Markdown). ``--details-out DIR``
also writes each scored submission's ``details.json`` (``DIR/<entry name>/details.json``), which
``reteco judge-report --details`` reads: no separate ``reteco score`` of every submission.

``--repeat-seed S`` judges a seeded subset of the judged answers (``--repeat-share``, default
10%) again with sampling seed S (another signature, so the cache cannot answer it), and
``--second-judge-config C2`` the same subset under a second judge; each writes
``rejudging_<sub>.json`` / ``second_judge_<sub>.json`` (``reteco.workbench.judge_audit.rejudging``:
per-item agreement per dimension, Kendall's tau-b and tau_AP of the two system rankings) and
prints a summary. The first judge's verdicts of the subset come from the cache; the repeat's
are cached under its own signature, so a rerun pays for nothing twice.

With ``use_batch_api: true`` in the judge config the whole phase (every sub-track's teams) is
judged as one Batch API job (``_phase_batches``; ``reteco.llm.batch``): queued in a first pass,
sent as one batch (or several of ``batch_max_requests``), each id recorded before waiting, then
the tables are written from the cache. Killed, the same command resumes the same batches; still
running after ``batch_timeout_s``: exit 4 and nothing written.

``--estimate`` prints, per sub-track, the calls, tokens and money judging each team's last
submission would take (``reteco.workbench.judge_audit.judge_cost``: every turn answered, reference answers as
stand-in answers), for the bulk download's teams or ``--teams N`` (before the phase opens);
nothing is sent or written and no key is needed.

Exit codes: 0 written; 1 the input cannot be used (REF, BULK, a judge config without a key);
2 the command line is wrong; 4 written, but some submission failed on an internal error of
reteco or some judge figures are missing because the judge did not run or finish, or a re-judging
or second judge could not be compared (running the same command again asks only what is left:
the cache keeps the rest).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option, check_judge_cache, describe_judge_cache
from reteco.commands.output_folder import check_output_folder
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError, UsageError, quoted


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``reteco judge-submissions`` on the CLI's subparsers; returns its parser."""
    from reteco.commands.argument_types import count_argument

    p = subparsers.add_parser(
        "judge-submissions",
        help="organizers: judge a Codabench phase's 2b/2c submissions (its bulk download) after the phase",
        description="Score and judge each team's last submission of a Codabench bulk download; write a per-team table "
                    "(CSV and Markdown) of the sub-track's figures, judge columns included.",
    )
    p.add_argument("--ref", type=Path, required=True, help="the sub-track's reference folder, or a folder of them")
    p.add_argument("--submissions", type=Path,
                   help="bulk_submissions.zip as Codabench saves it, or a folder of its files (with several sub-tracks: a "
                   "folder of <sub-track>.zip or <sub-track>/)")
    p.add_argument("--out", type=Path, help="output folder (required unless --estimate)")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml); the bundle's "
                            "--judge-config, for the platform's judgments to be found in the cache")
    add_judge_cache_option(p)
    p.add_argument("--jobs", type=count_argument(1), default=1, help="scoring processes (default 1: the judge's own "
                   "concurrency does the waiting)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--details-out", type=Path, metavar="DIR",
                   help="also write each scored submission's details.json (DIR/<entry name>/details.json, as reteco "
                   "score writes it): what reteco judge-report --details reads")
    p.add_argument("--team-names", type=Path, metavar="CSV",
                   help="owner,team CSV: the team name each owner's system carries beside the owner's user name")
    p.add_argument("--repeat-seed", type=count_argument(0), metavar="S",
                   help="judge a seeded subset of the judged answers again with sampling seed S (another signature: "
                   "the cache cannot answer it) and write rejudging_<sub>.json: per-item agreement and the tau of the "
                   "two system rankings (reteco.workbench.judge_audit.rejudging)")
    p.add_argument("--second-judge-config", type=Path, metavar="C2",
                   help="judge the same subset under a second judge config and write second_judge_<sub>.json: "
                   "judge-vs-judge agreement and tau (two judges, never humans)")
    p.add_argument("--repeat-share", type=_share, metavar="F",
                   help="the share of answered items in the subset, 0 < F <= 1 (default "
                   "reteco.workbench.judge_audit.rejudging.DEFAULT_SHARE, 0.1); its seed is --repeat-seed, else the judge's")
    p.add_argument("--estimate", action="store_true",
                   help="print the calls, tokens and money judging each sub-track's last submissions per team would "
                   "take (reteco.workbench.judge_audit.judge_cost); nothing is sent or written, no key is needed")
    p.add_argument("--teams", type=count_argument(1),
                   help="with --estimate: the number of teams expected, instead of counting a bulk download's (before "
                   "the phase opens)")
    p.set_defaults(func=cmd_judge_submissions)
    return p


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number above 0 and at most 1, got {text!r}")
    return value


def cmd_judge_submissions(args) -> int:
    from reteco.formats.reference import Reference
    from reteco.judge import judge_available, load_judge_config
    from reteco.subtracks import SUBTRACKS
    from reteco.workbench.leaderboard import judge_submissions as js
    from reteco.workbench.leaderboard import usage
    from reteco.workbench.leaderboard.bulk_download import read_team_names, select_download
    from reteco.workbench.leaderboard.standings import ScoringOptions, find_subtracks

    if args.teams is not None and not args.estimate:
        raise UsageError("--teams goes with --estimate")
    if args.submissions is None and not (args.estimate and args.teams is not None):
        raise UsageError("--submissions is required (with --estimate, or --teams N)")
    if args.out is None and not args.estimate:
        raise UsageError("--out is required unless --estimate")
    stability = args.repeat_seed is not None or args.second_judge_config is not None
    if args.estimate and stability:
        raise UsageError("--repeat-seed and --second-judge-config judge; they do not go with --estimate")
    if args.repeat_share is not None and not stability:
        raise UsageError("--repeat-share goes with --repeat-seed or --second-judge-config")
    subtracks = find_subtracks(args.ref)
    config = load_judge_config(args.judge_config)
    teams = read_team_names(args.team_names) if args.team_names else None
    if args.estimate:
        return _print_estimates(args, subtracks, config)
    check_output_folder(args.out, "--out")
    ok, why = judge_available(config)
    if not ok:
        raise InputError(f"the judge cannot run: {why}; this command judges, so it needs the judge's key",
                         str(args.judge_config or "judge config"))
    others = _stability_judges(args, config)
    single = len(subtracks) == 1 and args.ref.resolve() == subtracks[0][1].resolve()
    plan = []
    for sub, ref_dir in subtracks:
        source = args.submissions if single else _subtrack_source(args.submissions, sub)
        if source is None:
            print(f"{sub}: skipped: no {sub}.zip or {sub}/ in {args.submissions}", file=sys.stderr)
            continue
        plan.append((sub, ref_dir, source))
    if not plan:
        raise InputError("no sub-track's submissions here", str(args.submissions))
    options = ScoringOptions(run_judge_now=True, judge_config=args.judge_config, cache_dir=args.judge_cache,
                             details_dir=args.details_out)
    if args.judge_cache is not None:
        check_judge_cache(args.judge_cache)  # a cache that cannot be used stops the command before any judging
    progress = sys.stderr.isatty() and not args.no_progress
    judge = f"{config.model}, prompt version {config.prompt_version}, signature {config.signature}"
    print(f"judge: {judge}; cache: {describe_judge_cache(args.judge_cache)}", file=sys.stderr)
    incomplete = 0
    runs = []
    with tempfile.TemporaryDirectory(prefix="reteco-bulk-") as tmp:
        bulks = []
        scored: dict = {}  # outcomes of the selection's scoring check, not scored again
        for n, (sub, ref_dir, source) in enumerate(plan):
            # Through the Batch API the judging waits for the batches: the selection checks the input alone.
            check = None if config.use_batch_api else js.scoring_check(sub, ref_dir, options, jobs=args.jobs,
                                                                       progress=progress, scored=scored)
            selection = select_download(source, Reference.read(ref_dir), Path(tmp) / str(n), teams=teams, check=check)
            print(f"{sub}: {selection.summary()}", file=sys.stderr)
            bulks.append((sub, ref_dir, selection))
        if config.use_batch_api:
            if not _phase_batches(bulks, options, config, args, progress):
                return EXIT_INCOMPLETE
            # Everything the batches answered is in the cache; what they could not answer (failed
            # lines, re-asks) is asked live, never in a batch of its own per team.
            options = dataclasses.replace(options, judge_overrides=(("use_batch_api", False),))
        for sub, ref_dir, selection in bulks:
            bulk, kept = selection.bulk, selection.kept
            for name in bulk.skipped:
                print(f"{sub}: skipped {name}: not named as Codabench's bulk download names submissions", file=sys.stderr)
            for name, why in bulk.refused:
                print(f"{sub}: refused {quoted(name)}: {why}", file=sys.stderr)
            for line in bulk.not_fetched:
                print(f"{sub}: warning: not in the download (Codabench could not fetch it): {line}", file=sys.stderr)
            for s, why in selection.failed:
                print(f"{sub}: {s.name}: failed the input checks, not selected: {why}", file=sys.stderr)
            rows = js.judge_bulk(sub, ref_dir, kept, options, jobs=args.jobs, progress=progress, selection=selection,
                                 scored=scored)
            written = js.write_tables(args.out, sub, rows, selection=selection, judge=judge)
            judged = SUBTRACKS[sub].judged
            for row in rows:
                if row["errors"]:
                    print(f"{sub}: {row['file']}: not scored: {row['errors'][0]}", file=sys.stderr)
                    incomplete += any("internal error" in e for e in row["errors"])
                    continue
                missing = judged and next((w for w in row["absent"].values() if w.startswith("the judge did not")), None)
                if missing:
                    incomplete += 1
                    print(f"{sub}: {row['file']}: judge figures missing: {missing}", file=sys.stderr)
            if judged and others:
                incomplete += _write_stability(args, sub, ref_dir, kept, rows, config, others, progress)
            if judged:
                run = usage.run_usage(rows)
                runs.append(run)
                print(f"{sub}: judge, {usage.run_text(run)}")
                attribution = js.usage_lines(rows)
                if attribution:
                    print(f"{sub}: {attribution[-1]}")
            ranked = sum(1 for r in rows if r["rank"] is not None)
            print(f"{sub}: {len(kept)} teams ({ranked} ranked), {len(selection.superseded)} earlier submissions "
                  f"superseded, {len(selection.failed)} failed the input checks -> "
                  f"{', '.join(os.fspath(p) for p in written)}")
    if len(runs) > 1:
        total = usage.run_usage([{"judge_run": r} for r in runs])
        print(f"judge, all sub-tracks, {usage.run_text(total)}")
    return EXIT_INCOMPLETE if incomplete else EXIT_OK


def _stability_judges(args, config) -> list[tuple[str, object]]:
    """(kind, judge config) of the re-judging and the second judge asked for, checked before
    anything is judged."""
    from reteco.judge import judge_available, load_judge_config
    from reteco.workbench.judge_audit.rejudging import repeat_config

    others = []
    if args.repeat_seed is not None:
        others.append(("repeat", repeat_config(config, args.repeat_seed)))
    if args.second_judge_config is not None:
        second = load_judge_config(args.second_judge_config)
        if second.signature == config.signature:
            raise UsageError("--second-judge-config is the same judge as --judge-config (one signature): its "
                             "verdicts would come from the cache; give another judge, or --repeat-seed")
        ok, why = judge_available(second)
        if not ok:
            raise InputError(f"the second judge cannot run: {why}", str(args.second_judge_config))
        others.append(("second_judge", second))
    return others


def _write_stability(args, sub, ref_dir, kept, rows, config, others, progress) -> int:
    """The re-judging and the second judge of one sub-track (``reteco.workbench.judge_audit.rejudging``):
    ``rejudging_<sub>.json``, ``second_judge_<sub>.json`` and their summaries on stdout; returns
    how many could not be compared (said on stderr: the command then exits 4)."""
    import json

    from reteco.formats.jsonl_records import atomic_write
    from reteco.workbench.judge_audit.rejudging import DEFAULT_SHARE, KINDS, rejudge, summary_lines

    scored = {row["file"]: row["team"] for row in rows if not row["errors"]}
    paths = [s.path for s in kept if s.name in scored]
    names = [scored[s.name] for s in kept if s.name in scored]
    if not paths:
        print(f"{sub}: warning: no scored submission: nothing to judge again", file=sys.stderr)
        return len(others)
    share = DEFAULT_SHARE if args.repeat_share is None else args.repeat_share
    seed = args.repeat_seed if args.repeat_seed is not None else (config.seed or 0)
    failed = 0
    for kind, other in others:
        try:
            result = rejudge(ref_dir, paths, config, other, kind=kind, share=share, seed=seed,
                             cache_dir=args.judge_cache, progress=progress, names=names)
        except InputError as exc:  # e.g. no item has a verdict of both judges: the tables above stand
            print(f"{sub}: warning: {KINDS[kind]} not compared: {'; '.join(exc.problems.lines())}", file=sys.stderr)
            failed += 1
            continue
        path = args.out / f"{KINDS[kind]}_{sub}.json"
        atomic_write(path, json.dumps(result, indent=2, allow_nan=False) + "\n")
        print("\n".join(summary_lines(result, sub)))
        print(f"{sub}: wrote {path}", file=sys.stderr)
    return failed

def _phase_batches(bulks, options, config, args, progress: bool) -> bool:
    """With ``use_batch_api``: the phase's one Batch API job (``reteco.llm.batch``). A first pass
    scores every kept submission with ``batch_queue_only``, queueing its first asks in the
    cache; they are sent as one batch (or several of ``batch_max_requests``), each id recorded
    before waiting, and collected. Whether every batch finished: False (exit 4, nothing written)
    when one is still running after ``batch_timeout_s``; the same command resumes it."""
    from reteco.judge import default_cache_dir
    from reteco.llm.batch import send_phase_batches
    from reteco.llm.cache import JudgeCache
    from reteco.workbench.leaderboard import judge_submissions as js

    cache_dir = args.judge_cache if args.judge_cache is not None else default_cache_dir()
    with JudgeCache(cache_dir) as cache:
        cache.clear_batch_queue()
    queueing = dataclasses.replace(options, judge_overrides=(("batch_queue_only", True),))
    for sub, ref_dir, selection in bulks:
        js.judge_bulk(sub, ref_dir, selection.kept, queueing, jobs=args.jobs, progress=progress)
    done = send_phase_batches(config, cache_dir)
    resumed = f", {len(done.resumed)} resumed ({', '.join(done.resumed)})" if done.resumed else ""
    print(f"judge: Batch API: {done.requests:,} requests in {len(done.resumed) + len(done.submitted)} batch(es): "
          f"{len(done.submitted)} sent now{resumed}; {done.answered:,} answered", file=sys.stderr)
    if done.pending:
        print(f"judge: {next(iter(done.pending.values()))}. Nothing written: run the same command again to "
              "collect the batches (nothing is sent or paid twice)", file=sys.stderr)
        return False
    return True


def _print_estimates(args, subtracks, config) -> int:
    """``--estimate``: per sub-track, what judging its teams' last submissions would cost."""
    from reteco.formats.reference import Reference
    from reteco.workbench.judge_audit.estimate import estimate_lines
    from reteco.workbench.judge_audit.judge_cost import estimate_phase
    from reteco.workbench.leaderboard.bulk_download import select_download

    single = len(subtracks) == 1 and args.ref.resolve() == subtracks[0][1].resolve()
    with tempfile.TemporaryDirectory(prefix="reteco-bulk-") as tmp:
        for n, (sub, ref_dir) in enumerate(subtracks):
            teams = args.teams
            if teams is None:
                source = args.submissions if single else _subtrack_source(args.submissions, sub)
                if source is None:
                    continue
                teams = len(select_download(source, Reference.read(ref_dir), Path(tmp) / str(n)).kept)
            total, _ = estimate_phase(ref_dir, config, teams)
            what = (f"{sub}: {teams} teams' last submissions, every turn answered (answers as long as the reference "
                    f"answers), judge {config.model}, prompt version {config.prompt_version}")
            print("\n".join(estimate_lines(total, what)))
    return EXIT_OK


def _subtrack_source(folder: Path, sub: str) -> Path | None:
    for candidate in (folder / f"{sub}.zip", folder / sub):
        if candidate.exists():
            return candidate
    return None
