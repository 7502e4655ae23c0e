"""``reteco leaderboard``: score many submissions, rank them, compare every pair.

    reteco leaderboard --ref REF --submissions DIR --out OUT [--manifest M.csv] [--jobs N]
                       [--procedure tukey-hsd|holm|fdr] [--alpha A] [--resamples R] [--seed S]
                       [--per-team best] [--top N] [--latex-columns K,K,...]
                       [--no-judge] [--judge-config C] [--judge-cache D] [--round LABELS]
                       [--topic-stability [SPLITS]] [--human-ratings H.csv [H2.csv ...] --key KEY.csv]

REF is one sub-track's reference folder (``build/reference/2a``: DIR holds its submissions and
OUT gets the files), or a folder of them (``build/reference``: DIR/<sub-track>/ holds each
sub-track's submissions, OUT/<sub-track>/ gets its files; a sub-track without a folder in DIR
is skipped and said so). DIR may be the phase's bulk download (``bulk_submissions.zip`` or the
folder of its files; with several sub-tracks ``DIR/<sub-track>.zip`` or ``DIR/<sub-track>/``):
then the systems are the platform's selection, each owner's last submission that passes the
input checks, named by owner (``reteco.workbench.leaderboard.bulk_download``), and the selection
goes into leaderboard.json (``selection``) and the page. Per sub-track: leaderboard.json, .csv, .html, .tex, pairs.csv and
plots/*.png, *.svg (``reteco.workbench.leaderboard.standings``, ``reteco.workbench.leaderboard.tables``,
``reteco.workbench.leaderboard.plots``); with ``--per-team best`` also best_per_team/, the same
files for each team's best run (the paper's main table; its statistics over those runs).
A configuration under which no pair can be significant is said on stderr and in the files.
``--round LABELS`` (a relevance round's labels) adds what the holes in the qrels change
(``reteco.workbench.leaderboard.round_report``): leaderboard.json's ``round``, a page section, a plot.

``--topic-stability``: the retrieval figures' swap rates over random disjoint topic sets
(``reteco.workbench.leaderboard.topic_stability``), in leaderboard.json, .html, .tex and
topic_stability.txt; an option of this command because it needs the per-unit figures that only
the scoring here holds (leaderboard.json does not keep them).

With ``--human-ratings`` (REF a judged sub-track's folder): the humans' ratings of
``reteco human-sample``'s sample, joined through its key, correct the judge's figures
(``reteco.workbench.leaderboard.human_corrected``: prediction-powered estimates beside the judge-only and
human-only intervals; the sub-track ranked by judge_mean also ranked by the corrected figure),
in leaderboard.json's ``human_corrected`` block, human_corrected.csv and the page.

Exit codes: 0 the leaderboards are written (a submission that cannot be scored is listed in
them with its messages, not ranked); 1 the command's input cannot be used (REF, DIR, the
manifest: file and line said); 2 the command line is wrong; 4 the leaderboards are written but
some submission failed on an internal error of reteco (listed; please report it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections import Counter
from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option, check_judge_cache
from reteco.commands.output_folder import check_output_folder
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError

BEST_FOLDER = "best_per_team"
TOPIC_SPLITS = 1000  # reteco.metrics.topic_stability.DEFAULT_SPLITS (a test keeps them equal)

_EPILOG = """\
bulk download: DIR as Codabench's bulk_submissions.zip (or its files' folder): per owner the last
  submission that passes the input checks (the platform's Force_Last leaderboard), named by owner;
  --team-names owner,team adds the teams' names; with --manifest the files it names are ranked
  instead (several runs per team), without the platform's selection.
names: a manifest CSV with the header file,team,run names the submissions it lists (file relative
  to DIR: teamA-run1.zip, or 2a/teamA-run1.zip when REF holds several sub-tracks); any other
  submission is named from its file name less .zip/.gz/.txt/.run/.trec/.tsv/.jsonl:
  <team>__<run>, else <team>-<run> (split at the first hyphen), else <team> alone.
ranking: by the official figure (nDCG@10; 2b: judge_mean when the judge ran, else unranked),
  best first; ties within 1e-12 share a rank ("1224"), then order by team and run.
statistics: per system a percentile bootstrap interval of the figure over units and of its rank;
  per pair the randomised Tukey HSD test over units (default; --procedure holm or fdr: a paired
  randomization test per pair, Holm- or Benjamini-Hochberg-corrected over all pairs); groups of
  systems not significantly different as letters; the per-unit figures are those
  `reteco score` writes in details.json (per_unit). --resamples defaults to what the table needs
  (10,000, or 2 x pairs / alpha under holm and fdr, at most 1,000,000).
human ratings: --human-ratings H.csv ... --key KEY.csv (the sample's key.csv of `reteco
  human-sample`; the ratings in the agreement format keyed by item code, one file per annotator)
  add per system and judge dimension the prediction-powered (PPI++) estimate of the humans' mean
  score with its 95% interval, beside the judge-only and human-only intervals; 2b is also ranked
  by the corrected judge_mean. REF must be one judged sub-track's reference folder.
paper: --top N puts the N best systems in the LaTeX main table (the diagnostics tables, the page
  and the CSV keep all); --latex-columns chooses the main table's figures besides the ranking one (default
  per sub-track, see the rows' paper_columns in reteco.subtracks); the others go to the
  diagnostics tables.
"""


def add_leaderboard_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``leaderboard`` command to an argparse subparsers object; returns its parser."""
    from reteco.metrics.significance import DEFAULT_ALPHA, DEFAULT_PROCEDURE, DEFAULT_SEED, PROCEDURES
    from reteco.subtracks import KEYS

    p = subparsers.add_parser(
        "leaderboard",
        help="organizers: score many submissions, rank them with intervals and pairwise tests",
        description="Score many submissions of a sub-track (or of every sub-track of REF) and write the "
                    "ranked tables (JSON, CSV, HTML, LaTeX) and plots.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--ref", type=Path, required=True, help="a sub-track's reference folder, or a folder of them")
    p.add_argument("--submissions", type=Path, required=True,
                   help="the phase's bulk download (bulk_submissions.zip or its files' folder; with several sub-tracks a "
                   "folder of <sub-track>.zip or <sub-track>/), or a folder of submissions (a zip, folder or file each)")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--manifest", type=Path, help="CSV file,team,run naming the submissions")
    p.add_argument("--team-names", type=Path, metavar="CSV",
                   help="with a bulk download: owner,team CSV, the team name each owner's system carries")
    p.add_argument("--jobs", type=count_argument(1), default=os.cpu_count() or 1,
                   help="scoring processes (default: the CPU count)")
    p.add_argument("--procedure", choices=PROCEDURES, default=DEFAULT_PROCEDURE,
                   help=f"pairwise test and correction (default {DEFAULT_PROCEDURE})")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA,
                   help=f"significance level of the groups (default {DEFAULT_ALPHA})")
    p.add_argument("--resamples", type=count_argument(1), default=None,
                   help="bootstrap resamples and test resamples (default: as many as the table needs)")
    p.add_argument("--seed", type=count_argument(0), default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument("--per-team", choices=("best",), help="also write best_per_team/: each team's best run")
    p.add_argument("--top", type=count_argument(1), help="the LaTeX main table shows the N best systems (the diagnostics, page and CSV all)")
    p.add_argument("--latex-columns", type=lambda text: _latex_columns(text, KEYS),
                   help="comma-separated keys of the LaTeX main table besides the ranking figure")
    p.add_argument("--round", dest="relevance_round", type=Path, metavar="LABELS",
                   help="a relevance round's labels (qrels, 0-3): per system the augmented and condensed nDCG@10 "
                   "with intervals, Kendall's tau against the official ranking, who moves (leaderboard.json "
                   "'round', plots/official_vs_augmented)")

    p.add_argument("--topic-stability", type=count_argument(1), nargs="?", const=TOPIC_SPLITS, metavar="SPLITS",
                   help="retrieval figures: the swap rate of system pairs over SPLITS random disjoint topic sets "
                        f"(Voorhees & Buckley 2002; default {TOPIC_SPLITS} splits, --seed), in every output and "
                        "topic_stability.txt")
    p.add_argument("--no-judge", action="store_true", help="2b/2c: do not call the LLM judge (no judge figures)")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml)")
    add_judge_cache_option(p, used_for=" for 2b/2c")
    p.add_argument("--human-ratings", type=Path, nargs="+", metavar="H.csv",
                   help="humans' ratings of the human-sample's items (agreement format, keyed by item code); with --key")
    p.add_argument("--key", type=Path, help="the human sample's key.csv (reteco human-sample), for --human-ratings")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr "
                                                                "is not a terminal)")
    p.set_defaults(func=cmd_leaderboard)
    return p


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def _latex_columns(text: str, keys) -> list[str]:
    columns = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in columns if k not in keys]
    if unknown or not columns:
        raise argparse.ArgumentTypeError(f"unknown key(s) {', '.join(unknown) or '(none given)'}; "
                                         f"the keys are {', '.join(keys)}")
    return columns


def cmd_leaderboard(args) -> int:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="reteco-bulk-") as work:
        return _leaderboard(args, Path(work))


def _leaderboard(args, work: Path) -> int:
    from reteco.formats.reference import MANIFEST, Reference
    from reteco.subtracks import SUBTRACKS
    from reteco.workbench.leaderboard import bulk_download as bd
    from reteco.workbench.leaderboard import standings as lb
    from reteco.workbench.leaderboard.judge_submissions import score_selection, scoring_check
    from reteco.workbench.leaderboard.plots import write_plots
    from reteco.workbench.leaderboard.tables import write_tables
    from reteco.workbench.leaderboard.usage import run_text, run_usage

    check_output_folder(args.out, "--out")  # before any work
    subtracks = lb.find_subtracks(args.ref)
    several = not (args.ref / MANIFEST).is_file()
    human = _human_ratings(args, subtracks, several)  # bad ratings stop us before anything is scored
    if not args.submissions.is_dir() and not (not several and bd.is_bulk_download(args.submissions)):
        raise InputError("no such submissions folder, nor a Codabench bulk download (bulk_submissions.zip)",
                         str(args.submissions))
    names = lb.read_manifest(args.manifest, args.submissions) if args.manifest and args.submissions.is_dir() else {}
    teams = bd.read_team_names(args.team_names) if args.team_names else None
    round_topics: set[str] = set()
    if args.relevance_round is not None:
        from reteco.formats.relevance_round import RelevanceRound

        # A bad labels file is refused before anything is scored.
        round_topics = {key for key, _ in RelevanceRound.read(args.relevance_round).labels}
    options = lb.ScoringOptions(run_judge_now=not args.no_judge, judge_config=args.judge_config,
                                cache_dir=args.judge_cache, relevance_round=args.relevance_round)
    lb._judge_config(options)  # a bad judge config is refused before anything is scored
    if args.judge_cache is not None and not args.no_judge:
        check_judge_cache(args.judge_cache)  # so is a cache that cannot be used

    # Every sub-track's submissions are found (and their names checked) before any is scored.
    plan = []
    references = {sub: Reference.read(ref_dir) for sub, ref_dir in subtracks}  # a broken one stops us here
    selections = {}
    for sub, ref_dir in subtracks:
        folder = bulk_source(args.submissions, sub) if several else args.submissions
        if several and folder is None:
            print(f"{sub}: skipped: no folder {args.submissions / sub} of its submissions (nor {sub}.zip)",
                  file=sys.stderr)
            continue
        out = args.out / sub if several else args.out
        if args.manifest and bd.is_bulk_download(folder):
            # The organizers name the runs they chose (several per team, say): the platform's selection is theirs.
            print(f"{sub}: the manifest names the runs: the platform's selection (each owner's last valid "
                  "submission) is not applied", file=sys.stderr)
        elif bd.is_bulk_download(folder):
            if human is not None:  # the ratings are checked against the systems before anything is scored
                selections[sub] = bd.select_download(folder, references[sub], work / sub, teams=teams)
                _say_selection(sub, selections[sub])
                plan.append((sub, ref_dir, selections[sub].kept, out))
            else:  # selected while scoring: the scoring is the check, each file read once
                selections[sub] = folder
                plan.append((sub, ref_dir, [], out))
            continue
        skip = (args.manifest,) if args.manifest else ()
        entries = lb.discover_submissions(folder, names, prefix=f"{sub}/" if several else "", skip=skip)
        plan.append((sub, ref_dir, entries, out))
    if not plan:
        raise InputError(f"no sub-track folder ({', '.join(s for s, _ in subtracks)}) holds submissions here",
                         str(args.submissions))
    if human is not None:
        from reteco.workbench.leaderboard.human_corrected import check_items

        sub, _, entries, _ = plan[0]
        if sub in selections:
            entries = [lb.Entry(s.path, s.name, selections[sub].team(s.owner), "") for s in entries]
        check_items(human, entries, lb.expected_unit_keys(references[plan[0][0]]), str(args.submissions))
    used = {e.file for sub, _, entries, _ in plan if sub not in selections for e in entries}
    for file in sorted(set(names) - used):
        print(f"{args.manifest}: warning: {file} is not a submission of any sub-track scored here", file=sys.stderr)

    progress = sys.stderr.isatty() and not args.no_progress
    internal = 0
    for sub, ref_dir, entries, out in plan:
        reference = references[sub]
        sub_options = options
        if args.relevance_round is not None and not round_topics & {t.key for t in reference.topics}:
            # A round labels one sub-track's topics: the others are ranked without it, and say so.
            print(f"{sub}: the round labels none of its topics: no round figures", file=sys.stderr)
            sub_options = dataclasses.replace(options, relevance_round=None)
        selection = selections.get(sub)
        if selection is not None:  # the kept submissions, named by owner (and team)
            scored: dict = {}
            if not isinstance(selection, bd.Selection):
                check = scoring_check(sub, ref_dir, sub_options, jobs=args.jobs, progress=progress, scored=scored)
                selection = bd.select_download(selection, reference, work / sub, teams=teams, check=check)
                _say_selection(sub, selection)
            entries, outcomes = score_selection(sub, ref_dir, selection.kept, sub_options, jobs=args.jobs,
                                                progress=progress, name=selection.team, scored=scored)
        else:
            outcomes = lb.score_entries(ref_dir, entries, sub_options, jobs=args.jobs, progress=progress, label=sub)
        run = None
        if SUBTRACKS[sub].judged and not args.no_judge:
            # What this command sent and paid, from the server's usage (each verdict once, by the run that asked).
            run = run_usage(outcomes)
            print(f"{sub}: judge, {run_text(run)}")
        info = {"fingerprint": reference.fingerprint(), "split": reference.manifest.get("split")}
        views = [(entries, outcomes, out)]
        if args.per_team == "best":
            views.append((*lb.best_per_team(sub, entries, outcomes), out / BEST_FOLDER))
        full: dict = {}
        for view_entries, view_outcomes, view_out in views:
            board = lb.build_leaderboard(
                sub, view_entries, view_outcomes, unit_keys=lb.expected_unit_keys(reference),
                resamples=args.resamples, seed=args.seed, reference_info=info, procedure=args.procedure,
                alpha=args.alpha,
            )
            if selection is not None:
                board["selection"] = selection.record()
            if run is not None:
                board["judge_this_run"] = run
            if sub_options.relevance_round is not None:
                from reteco.workbench.leaderboard.round_report import round_comparison

                unjudged = {e.name: o.get("unjudged") for e, o in zip(view_entries, view_outcomes) if o["ok"]}
                board["round"] = round_comparison(board, unjudged, resamples=args.resamples, seed=args.seed)
                from reteco.workbench.leaderboard.round_validation import validation_section

                validation = validation_section(
                    reference, Path(args.relevance_round).parent, {e.name: e.path for e in view_entries},
                    [s["name"] for s in board["systems"]], sub_options, resamples=args.resamples, seed=args.seed)
                if validation is not None:
                    board["round"]["validation"] = validation
            if args.topic_stability:
                from reteco.workbench.leaderboard.topic_stability import board_topic_stability

                outcome_of = {e.file: o for e, o in zip(view_entries, view_outcomes)}
                board["topic_stability"] = board_topic_stability(
                    [outcome_of[s["file"]] for s in board["systems"]], seed=args.seed, splits=args.topic_stability)
            if human is not None:
                board["human_corrected"] = _corrected(sub, board, view_entries, view_outcomes, human, args)
            label = sub if view_out == out else f"{sub} {BEST_FOLDER}"
            for warning in board["warnings"]:
                print(f"{label}: warning: {warning}", file=sys.stderr)
            try:
                board["plots"] = write_plots(board, view_out)
                write_tables(board, view_out, latex_columns=args.latex_columns, top=args.top)
            except OSError as exc:
                raise InputError(f"cannot write the leaderboard here ({exc.strerror or exc})",
                                 str(exc.filename or view_out)) from None
            if view_out == out:
                full = board
        board = full  # the summary counts every submission
        for failure in board["failed"]:
            internal += failure["kind"] == "internal"
            print(f"{sub}: {failure['file']}: not scored: {failure['errors'][0] if failure['errors'] else ''}",
                  file=sys.stderr)
        # Why systems are unranked, on the terminal too (issue 25: 2b left unranked with its reason
        # only inside the page), once per distinct reason.
        reasons = Counter(row["reason"] for row in board["unranked"])
        for reason, count in reasons.items():
            print(f"{sub}: warning: {count} submission{'s' if count > 1 else ''} unranked: {reason}", file=sys.stderr)
        if "human_corrected" in board:
            print(f"{sub}: {_corrected_summary(board['human_corrected'])}")
            note = (board["human_corrected"].get("ranking") or {}).get("note")
            if note:
                print(f"{sub}: warning: the human-corrected ranking: {note}", file=sys.stderr)
        ranking = f"ranked by {board['ranked_by']}" if board["ranked_by"] else "unranked"
        print(f"{sub}: {len(board['systems'])} ranked, {len(board['unranked'])} unranked, {len(board['failed'])} "
              f"not scored ({ranking}) -> {out}")
    return EXIT_INCOMPLETE if internal else EXIT_OK


def _human_ratings(args, subtracks, several: bool):
    """The humans' scores for ``--human-ratings`` (None without it); UsageError when the options
    do not go together or REF is not one judged sub-track's folder."""
    from reteco.problems import UsageError
    from reteco.subtracks import JUDGED_SUBTRACK_IDS

    if (args.human_ratings is None) != (args.key is None):
        raise UsageError("--human-ratings and --key go together: the ratings are keyed by item code, the sample's "
                         "key.csv says which submission and turn each item is")
    if args.human_ratings is None:
        return None
    if several or subtracks[0][0] not in JUDGED_SUBTRACK_IDS:
        raise UsageError(f"--human-ratings: --ref must be the reference folder of the judged sub-track the sample was "
                         f"drawn from ({' or '.join(JUDGED_SUBTRACK_IDS)}), not {args.ref}")
    if args.no_judge:
        raise UsageError("--human-ratings corrects the judge's figures: it cannot go with --no-judge")
    from reteco.workbench.leaderboard.human_corrected import read_human_ratings

    return read_human_ratings(args.human_ratings, args.key)


def _corrected(sub: str, board: dict, entries, outcomes, human, args) -> dict:
    from reteco.metrics.significance import DEFAULT_CONFIDENCE
    from reteco.workbench.leaderboard.human_corrected import human_corrected

    return human_corrected(sub, board, entries, outcomes, human, confidence=DEFAULT_CONFIDENCE, alpha=args.alpha)


def _above(pair: dict, ranking: dict) -> str:
    """'a > b' in the corrected order of a significant pair."""
    delta = next(p["delta"] for p in ranking["pairs"] if p["a"] == pair["a"] and p["b"] == pair["b"])
    return f"{pair['a']} > {pair['b']}" if delta > 0 else f"{pair['b']} > {pair['a']}"


def _corrected_summary(block: dict) -> str:
    """One line on the human-corrected figures: how many systems got a corrected judge_mean, and
    whether the corrected ranking orders them as the judge does."""
    corrected = sum("estimate" in (s.get("figures") or {}).get("judge_mean", {}) for s in block["systems"])
    line = (f"human-corrected judge_mean for {corrected} of {len(block['systems'])} systems "
            f"({block['ratings']['items']} rated items)")
    ranking = block.get("ranking")
    if ranking and "note" in ranking:
        line += f"; {ranking['note']}"
    elif ranking and "pairs_ordered_differently" in ranking:
        swapped = ranking["pairs_ordered_differently"]
        line += f"; {ranking['significant_pairs']} pairs differ significantly"
        if swapped:
            line += (f", the judge orders {len(swapped)} of them the other way: "
                     + ", ".join(_above(p, ranking) for p in swapped[:5])
                     + (" ..." if len(swapped) > 5 else ""))
    return line


def _say_selection(sub: str, selection) -> None:
    print(f"{sub}: {selection.summary()}", file=sys.stderr)
    for s, why in selection.failed:
        print(f"{sub}: {s.name}: failed the input checks, not selected: {why}", file=sys.stderr)


def bulk_source(folder: Path, sub: str) -> Path | None:
    """A sub-track's submissions inside a folder of several: ``<sub>/`` (a folder of submissions or
    of a bulk download's files) or ``<sub>.zip`` (its bulk download); None when neither is there."""
    for candidate in (folder / sub, folder / f"{sub}.zip"):
        if candidate.exists():
            return candidate
    return None
