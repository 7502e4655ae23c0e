"""``reteco judge``: judge a file of items, or the golden cases, and write one outcome per line.

    reteco judge --items ITEMS.jsonl --out OUT.jsonl [--judge-config judge.yaml] [--judge-cache DIR]
                 [--retry-invalid] [--batch] [--no-progress]
    reteco judge --golden --out GOLDEN.jsonl [--judge-config ...]
    reteco judge --import-archive ARCHIVE [ARCHIVE ...] [--judge-cache DIR]
    reteco judge (--items ITEMS.jsonl | --golden) --estimate [--judge-config judge.yaml] [--batch]

ITEMS.jsonl: one JudgeItem per line ({"key", "dimension", "query", "history", "answer",
"evidence": [[doc_id, text], ...], "reference_answer"}). OUT.jsonl: one outcome per line, in
the items' order ({"key", "dimension", "status", "score", "rationale", "cached", "attempts",
"system_fingerprint", "reported_model", "endpoint", "cache_key", "judge_signature"}). A
summary per dimension, the endpoint and the models the server reported go to stderr.

Exit codes: 0 every judgment has a verdict (ok, or invalid: no usable reply after the
re-asks, counted in the summary); 1 the judge could not run: the items or the config cannot
be used, no key is configured, or the server refused (or never answered) the preflight request
(the message names the rejected parameter and the setting to change; nothing is written: every
answer received is in the cache); 4 (``EXIT_INCOMPLETE``) some judgments failed (status
"error": transport failures, the run stopped, the deadline or the call budget): the outcomes
are written, the rest is kept, and running the same command again asks only the failed ones.

``--estimate``: print the calls, input (and cacheable input) tokens, output tokens and money the
run would take (``reteco.workbench.judge_audit.estimate``: the method is printed with the figures); nothing is
sent or written, no key is needed. Exit 0.

``--import-archive``: merge the judge archives the Codabench scoring program writes into its
scoring output (``judge_archive.sqlite``; give the file, the output folder, or the output's zip as
downloaded) into the cache (``JudgeCache.import_archive``), so that re-scoring the same answers
(``reteco judge-submissions``, ``reteco leaderboard``) makes no call for what was judged on the
platform. Prints what was merged; a verdict the cache already holds is never replaced: a different
one in an archive is counted as a conflict and recorded, with both verdicts, in the cache's table
``conflicts`` (the message says where). An archive left by a scoring program killed mid-run
(with a ``-journal`` beside it) is read as of its last committed verdict. The import writes in
short transactions, so runs sharing the cache go on meanwhile. Exit 0, or 1 when a file is not a
judge archive or the cache stays locked past its wait limit.

``--retry-invalid`` re-judges the verdicts cached as invalid: each is replaced only if it is
still the row this run read (a compare-and-swap), so two runs retrying at once pay once, and a
verdict another run stored meanwhile is returned as it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from reteco.commands.argument_types import count_argument
from reteco.commands.judge_options import add_judge_cache_option, add_judge_config_option
from reteco.formats.jsonl_records import atomic_write
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK, InputError, Problems, UsageError, printable

_EPILOG = """\
items: one JSON object per line: {"key", "dimension", "query", "history", "answer",
  "evidence": [[doc_id, text], ...], "reference_answer"}; dimension is one of correctness,
  completeness, relevance, coherence, faithfulness.
outcomes: one JSON object per line, in the items' order: {"key", "dimension", "status" (ok,
  invalid or error), "score" (1-5, null unless ok), "rationale", "cached", "attempts",
  "system_fingerprint", "reported_model", "endpoint", "cache_key", "judge_signature"}.
exit: 0 done; 1 the judge could not run (nothing written); 4 some judgments failed (written).
endpoint and key: from the config (default: $OPENAI_BASE_URL, $OPENAI_API_KEY); the key is
  never printed or stored. Every request and raw response is kept in the cache, so running
  the same command again makes no HTTP call.
"""


def add_judge_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``judge`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "judge",
        help="run the LLM judge on items (2b/2c answers x dimensions) or on the golden cases",
        description="Judge a file of items, or the golden cases, and write one outcome per line.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--items", type=Path, help="JSONL, one JudgeItem per line")
    source.add_argument("--golden", action="store_true", help="judge the packaged golden cases (meta-evaluation)")
    source.add_argument("--import-archive", type=Path, nargs="+", metavar="ARCHIVE",
                        help="merge judge archives of the Codabench scoring program (judge_archive.sqlite, its scoring "
                        "output folder or zip) into the cache; nothing is judged")
    p.add_argument("--out", type=Path, help="JSONL output, one outcome per line (with --items or --golden)")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml)", former="--config")
    add_judge_cache_option(p, former="--cache")
    p.add_argument("--retry-invalid", action="store_true", help="ask again the judgments cached as invalid")
    p.add_argument("--batch", action="store_true", help="send first asks through the Batch API")
    p.add_argument("--max-calls", type=count_argument(0), help="at most this many HTTP requests (0: from the cache only)")
    p.add_argument("--estimate", action="store_true",
                   help="print the calls, tokens and money judging would take (reteco.workbench.judge_audit.estimate); nothing is sent "
                   "or written")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_judge)
    return p


def read_items(path: Path, dimensions=None) -> list:
    """Read ITEMS.jsonl, each item's dimension one of ``dimensions`` (the judge's prompt version's;
    None: the sub-track rows'); raises InputError listing every bad line (file:line: what is wrong)."""
    from reteco.judge.items import item_from_json

    problems = Problems()
    items = []
    seen: dict[tuple[str, str], int] = {}
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", name) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", name) from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = item_from_json(json.loads(line), *(() if dimensions is None else (dimensions,)))
        except json.JSONDecodeError as exc:
            problems.error(name, n, f"not valid JSON ({exc.msg})")
            continue
        except ValueError as exc:
            problems.error(name, n, str(exc))
            continue
        first = seen.setdefault((item.key, item.dimension), n)
        if first != n:
            problems.error(name, n, f"{item.key} / {item.dimension} already given on line {first}")
            continue
        items.append(item)
    if problems.has_errors:
        raise InputError(problems)
    if not items:
        raise InputError("no items", name)
    return items


def cmd_judge(args) -> int:
    """Run the judge as the arguments say; see the module docstring."""
    from reteco.judge.config import load_judge_config
    from reteco.judge.items import outcome_to_json, summarize_outcomes
    from reteco.llm.cache import default_cache_dir
    from reteco.workbench.judge_audit.golden import check_golden, golden_result_json, load_golden_cases

    if args.import_archive:
        return import_archives(args.import_archive, args.judge_cache or default_cache_dir())
    if args.out is None and not args.estimate:
        raise UsageError("--out is required with --items and --golden")
    config = load_judge_config(args.judge_config)
    if args.batch:
        config = dataclasses.replace(config, use_batch_api=True)
    cases = load_golden_cases() if args.golden else None
    items = [c.item for c in cases] if cases is not None else read_items(args.items, config.prompts.dimension_names)
    if args.estimate:
        from reteco.workbench.judge_audit.estimate import estimate_judging, estimate_lines

        what = f"{len(items)} judgments with judge {config.signature} ({config.model}, prompt version {config.prompt_version})"
        print("\n".join(estimate_lines(estimate_judging(items, config), what)))
        return EXIT_OK
    require_judge(config, "judge")
    cache_dir = args.judge_cache or default_cache_dir()
    print(f"cache: {cache_dir}", file=sys.stderr)
    outcomes = judge_with_cache(items, config, cache_dir, no_progress=args.no_progress,
                                retry_invalid=args.retry_invalid, max_calls=args.max_calls)
    stats = outcomes.stats
    if stats.calls.preflight == "failed":
        raise InputError(f"the judge did not run: {stats.calls.preflight_detail}; nothing was written "
                         f"(config: {config.source or 'packaged judge.yaml'})", "judge")
    if cases is not None:
        lines = [golden_result_json(r, config.signature) for r in check_golden(cases, outcomes)]
    else:
        lines = [outcome_to_json(o, config.signature) for o in outcomes]
    _write_jsonl(args.out, lines)
    _print_summary(outcomes, summarize_outcomes(outcomes, config.prompts.dimension_names))
    _print_provenance(stats)
    if cases is not None:
        failed = [line["id"] for line in lines if not line["passed"]]
        print(f"golden: {len(lines) - len(failed)}/{len(lines)} passed"
              + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    print(f"wrote {len(lines)} lines to {args.out}", file=sys.stderr)
    if stats.unfinished:
        print(f"error: {stats.unfinished} of {stats.judgments} judgments failed (see the WARNING above); the others are "
              "written and cached. Run the same command again to ask only the failed ones.", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def require_judge(config, where: str) -> None:
    """Refuse a judge that cannot run (InputError naming ``where``: nothing is written), else say
    on stderr which judge runs. ``reteco judge`` and ``judge-meta``."""
    from reteco.judge.config import judge_available

    ok, why = judge_available(config)
    if not ok:
        raise InputError(f"the judge did not run: {why}; nothing was written", where)
    print(f"judge {config.signature}: {config.model}, prompt version {config.prompt_version}; {why}", file=sys.stderr)


def judge_with_cache(items: list, config, cache_dir: Path, *, no_progress: bool, **options):
    """``run_judge`` on ``items`` through the cache at ``cache_dir`` (``options``: its keyword
    arguments), with a progress bar on a terminal only, never in a log; a cache that cannot be
    used is an InputError naming --judge-cache. ``reteco judge`` and ``judge-meta``."""
    from reteco.judge.runner import run_judge
    from reteco.llm.cache import JudgeCacheError

    progress = not no_progress and sys.stderr.isatty()
    try:
        return run_judge(items, config, cache_dir=cache_dir, progress=progress, **options)
    except JudgeCacheError as exc:
        raise InputError(str(exc), "--judge-cache") from None


def import_archives(paths: list[Path], cache_dir: Path) -> int:
    """Merge each judge archive (a file, a scoring output folder, or its zip) into the cache at
    ``cache_dir``; prints what was merged. InputError naming the file that is not an archive."""
    import tempfile

    from reteco.llm.cache import JudgeCache, JudgeCacheBusy, JudgeCacheError

    try:
        cache = JudgeCache(cache_dir)
    except JudgeCacheError as exc:
        raise InputError(str(exc), "--judge-cache") from None
    with cache, tempfile.TemporaryDirectory(prefix="reteco-archive-") as tmp:
        print(f"cache: {cache_dir}", file=sys.stderr)
        found = [archive for n, given in enumerate(paths) for archive in _archive_files(Path(given), Path(tmp) / str(n))]
        for given, archive in found:
            try:
                merged = cache.import_archive(archive)
            except JudgeCacheBusy as exc:  # the cache's lock, not the archive's fault
                raise InputError(str(exc), "--judge-cache") from None
            except JudgeCacheError as exc:
                raise InputError(str(exc), str(given)) from None
            conflicts = merged.judgments_conflicting
            print(f"{given}: {merged.judgments_imported} judgments imported, {merged.judgments_present} already in the "
                  f"cache, {len(conflicts)} in conflict (the cache's verdict kept); {merged.calls_imported} replies, "
                  f"{merged.requests_imported} requests and {merged.failures_imported} failed attempts imported",
                  file=sys.stderr)
            if conflicts:
                print(f"WARNING: {given}: {len(conflicts)} verdicts differ from those in the cache, e.g. "
                      f"{', '.join(conflicts[:3])} (cache keys); the cache's are kept, both verdicts of each are in "
                      f"the table conflicts of {cache.path} (sqlite3 {cache.path} 'SELECT * FROM conflicts')",
                      file=sys.stderr)
    return EXIT_OK


def _nothing_judged(given: Path, kind: str) -> None:
    """A scoring output (folder or zip) without an archive: the platform judged nothing there (a
    phase that does not judge, or no 2b/2c submission). Said, and not an error: a script that
    imports whatever the phase left goes on (exit 0)."""
    from reteco.llm.cache import ARCHIVE_FILE

    print(f"{given}: warning: no {ARCHIVE_FILE} in this {kind}: the platform judged nothing here (a phase that "
          "does not judge, or no 2b/2c submission); nothing imported", file=sys.stderr)


def _archive_files(given: Path, tmp: Path) -> list[tuple[str, Path]]:
    """(name to report, archive file) of what was given: the file itself, every archive below a
    folder, or every archive in a zip (extracted under ``tmp``); none (said) when a folder or zip
    holds none; InputError when a file is not an archive or a path does not exist.
    Each archive is merged in a transaction of its own: one that is not an archive stops the
    command after the ones before it are merged."""
    import zipfile

    from reteco.llm.cache import ARCHIVE_FILE

    if given.is_dir():
        found = [(str(p), p) for p in sorted(given.rglob(ARCHIVE_FILE))]
        if not found:
            _nothing_judged(given, "folder")
        return found
    if not given.is_file():
        raise InputError("no such file", str(given))
    if not zipfile.is_zipfile(given):
        return [(str(given), given)]
    with zipfile.ZipFile(given) as archive:
        names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == ARCHIVE_FILE]
        if not names:
            _nothing_judged(given, "zip")
            return []
        found = []
        members = set(archive.namelist())
        for i, name in enumerate(names):
            target = tmp / str(i) / ARCHIVE_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
            # A run killed while writing leaves a hot journal beside its archive: it travels too.
            if f"{name}-journal" in members:
                Path(f"{target}-journal").write_bytes(archive.read(f"{name}-journal"))
            found.append((f"{given}:{name}", target))
    return found


def _print_provenance(stats) -> None:
    from reteco.judge.provenance import model_mismatch_warning
    from reteco.llm.usage import this_run_line

    p = stats.provenance
    models = ", ".join(f"{printable(m)} x {n}" for m, n in p["reported_models"].items()) \
        or "none (no verdict came from a reply)"
    print(f"endpoint {p['endpoint']}: configured model {p['configured_model']}; reported: {models}; "
          f"{stats.http_requests} HTTP requests (preflight {stats.calls.preflight})", file=sys.stderr)
    print(f"judge, {this_run_line(stats.http_requests, stats.calls.usage.as_dict(stats.prices))}", file=sys.stderr)
    mismatch = model_mismatch_warning(p)
    if mismatch:
        print(f"WARNING: {mismatch} (reported_model)", file=sys.stderr)
    if stats.calls.preflight_detail and stats.calls.preflight == "passed":
        print(f"WARNING: preflight: {stats.calls.preflight_detail}", file=sys.stderr)


def _write_jsonl(path: Path, lines: list[dict]) -> None:
    # Written beside the target then renamed, so a crash never leaves half a file behind.
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


def _print_summary(outcomes, counts: dict[str, dict[str, int]]) -> None:
    fresh = sum(1 for o in outcomes if not o.cached)
    print(f"{len(outcomes)} judgments: {len(outcomes) - fresh} from the cache, {fresh} asked now", file=sys.stderr)
    print(f"{'dimension':<14}{'ok':>7}{'invalid':>9}{'error':>7}", file=sys.stderr)
    for dimension, c in counts.items():
        if c["ok"] + c["invalid"] + c["error"]:
            print(f"{dimension:<14}{c['ok']:>7}{c['invalid']:>9}{c['error']:>7}", file=sys.stderr)
    errors = [o for o in outcomes if o.status == "error"]
    if errors:
        print(f"WARNING: {len(errors)} judgments failed (status error, score null); they are not cached, "
              f"so running the same command again retries them. First: {errors[0].rationale}", file=sys.stderr)
