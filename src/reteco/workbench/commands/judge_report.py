"""``reteco judge-report``: the task report's disclosure of the judge, as Markdown and JSON.

    reteco judge-report --out DIR [--config judge.yaml] [--details DETAILS.json ...]
                        [--golden GOLDEN.jsonl judge_meta.json] [--agreement agreement.json]
                        [--sample sample.json] [--stability rejudging_2b.json ...]
                        [--leaderboard leaderboard.json] [--human-set human_set_mtrag.json]

Writes ``DIR/judge-report.md`` and ``DIR/judge-report.json`` (``reteco.workbench.judge_audit.report``;
with details files also ``DIR/judge-report-appendix.md``, one row per file, where the report has
one summary row per sub-track): the
prompts and their signature (prompt version, sha256 of every prompt file), the configured model
and endpoint, decoding, the retry procedure (settings and what is and is not retried); from the
details.json of scored 2b/2c submissions, each file's judge (signature, whether it is the
configured judge, endpoint, reported models, fingerprints) and the invalid and missing
judgments per dimension; from ``--golden``, told apart by their content, a ``reteco judge
--golden`` output (golden set v1: JSONL, one case per line, or a JSON list of such objects or
``{"cases": [...]}``), the golden-case results, and a ``judge_meta.json`` of ``reteco judge-meta``
(golden set v2: a JSON object with ``golden_version``), each check against its threshold and the
judge it ran with (a warning when its signature is not the configured judge's or a details
file's); from a ``reteco human-sample`` record, the sample; from an ``reteco agreement`` result,
the agreement table, under the judge that produced it (its signature; a warning when it is not
the configured judge, or records none) and, when it has a system level, the system rankings'
agreement (Kendall's tau-b and tau_AP, ``reteco.workbench.judge_audit.stability_report``); from ``--stability``,
the re-judging and second judges of ``reteco judge-submissions``, each under both signatures;
from a ``reteco leaderboard --human-ratings`` output, the system-level table judge /
prediction-powered / humans under its judge signature; from a ``reteco judge-meta --human-set``
output, the judge's agreement with a public human-rated set beside the annotators' ceiling (with the
golden set's version and gate when ``--golden`` gives a judge_meta.json). Exit 1 when a file cannot be used (named, with the line
or the field), or when the inputs name judges by signature and none is the configured judge
(``no_input_of_the_configured_judge``: the report would describe another judge than its own).

No path of this machine goes into the report: the config is named by its file name, an input
file by its path relative to the current folder, else by its folder and file names.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

from reteco.commands.judge_options import add_judge_config_option
from reteco.formats.jsonl_records import atomic_write
from reteco.problems import InputError, Problems, quoted

V1 = "an output of `reteco judge --golden` (golden set v1: one case per line with 'id' and 'passed')"
V2 = "a judge_meta.json of `reteco judge-meta` (golden set v2 on: an object with 'golden_version')"


def add_judge_report_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``judge-report`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "judge-report",
        help="the task report's disclosure of the judge: prompts, signature, models, retries, invalid judgments, "
        "golden cases, agreement (Markdown and JSON)",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for judge-report.md and judge-report.json")
    add_judge_config_option(p, help_text="judge config YAML (default: the packaged judge.yaml)", former="--config")
    p.add_argument("--details", type=Path, nargs="+", default=[], help="details.json of scored 2b/2c submissions")
    p.add_argument("--golden", type=Path, nargs="+", action="extend", default=[],
                   help="output of `reteco judge --golden` (golden set v1) and/or judge_meta.json of `reteco judge-meta` "
                   "(golden set v2), told apart by their content; one of each")
    p.add_argument("--agreement", type=Path, help="agreement.json of `reteco agreement`")
    p.add_argument("--sample", type=Path, help="the sample record of `reteco human-sample` (OUT/sample.json)")
    p.add_argument("--stability", type=Path, nargs="+", default=[],
                   help="rejudging_<sub>.json and second_judge_<sub>.json of `reteco judge-submissions --repeat-seed / "
                   "--second-judge-config`")
    p.add_argument("--leaderboard", type=Path,
                   help="leaderboard.json of `reteco leaderboard --human-ratings`: the system-level table judge / "
                   "prediction-powered / humans")
    p.add_argument("--human-set", type=Path,
                   help="human_set_mtrag.json of `reteco judge-meta --human-set`: agreement with a public "
                   "human-rated set beside the annotators' ceiling")
    p.set_defaults(func=cmd_judge_report)
    return p


def cmd_judge_report(args) -> int:
    """Run the command (module docstring)."""
    from reteco.commands.output_folder import check_output_folder
    from reteco.judge.config import load_judge_config
    from reteco.workbench.judge_audit.report import (
        build_report,
        no_input_of_the_configured_judge,
        render_appendix_markdown,
        render_markdown,
    )

    check_output_folder(args.out, "--out")
    config = load_judge_config(args.judge_config)
    details = [(shown_path(path), _details(path)) for path in args.details]
    golden, golden_meta = _golden_inputs(args.golden)
    agreement = _json_object(args.agreement, "dimensions", "an agreement.json of `reteco agreement`") if args.agreement else None
    sample = _json_object(args.sample, "strata", "a sample record of `reteco human-sample`") if args.sample else None
    stability = [(shown_path(path), _json_object(path, "kind", "a rejudging_<sub>.json or second_judge_<sub>.json of "
                                                  "`reteco judge-submissions`")) for path in args.stability]
    leaderboard = ((shown_path(args.leaderboard), _json_object(args.leaderboard, "human_corrected",
                                                               "a leaderboard.json of `reteco leaderboard --human-ratings`"))
                   if args.leaderboard else None)
    human_set = ((shown_path(args.human_set), _json_object(args.human_set, "human_set",
                                                           "a human_set_<name>.json of `reteco judge-meta --human-set`"))
                 if args.human_set else None)
    report = build_report(config, details=details, golden=golden, golden_meta=golden_meta, agreement=agreement,
                          sample=sample, stability=stability, leaderboard=leaderboard, human_set=human_set)
    mismatch = no_input_of_the_configured_judge(report)
    if mismatch:
        raise InputError(mismatch, "judge-report")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        files = [("judge-report.json", json.dumps(report, indent=2, allow_nan=False) + "\n"),
                 ("judge-report.md", render_markdown(report))]
        if "judgments" in report:  # the per-file tables, for the paper's appendix
            files.append(("judge-report-appendix.md", render_appendix_markdown(report)))
        for name, text in files:
            atomic_write(args.out / name, text)
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    others = [f for f in report.get("judgments", {}).get("files", []) if not f["same_judge"]]
    for f in others:
        print(f"warning: {f['file']} was judged by signature {f.get('signature', '(none)')}, not the configured "
              f"{report['judge']['signature']}", file=sys.stderr)
    meta = report.get("golden_meta")
    for m in meta["signature_mismatches"] if meta else []:
        print(f"warning: the golden set v{meta['golden_version']} results were made with judge signature "
              f"{meta['judge']['signature']}, not {m['signature']} ({m['against']})", file=sys.stderr)
    agreed = report.get("agreement")
    if agreed and not agreed["same_judge"]:
        print(f"warning: the agreement figures were made with judge signature "
              f"{agreed['judge_signature'] or '(none recorded)'}, not the configured {report['judge']['signature']}",
              file=sys.stderr)
    scores = report.get("system_scores")
    if scores and not scores["same_judge"]:
        print(f"warning: the system scores of {scores['file']} were made with judge signature(s) "
              f"{', '.join(scores['judge_signatures']) or '(none recorded)'}, not the configured "
              f"{report['judge']['signature']}", file=sys.stderr)
    print(f"judge {report['judge']['signature']}: report -> {args.out / 'judge-report.md'} and judge-report.json")
    return 0


def _load(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", str(path)) from None
    return text


def _parse(path: Path, text: str, line: int | None = None):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", str(path), line if line is not None else exc.lineno) from None


def _json_object(path: Path, key: str, what: str) -> dict:
    value = _parse(path, _load(path))
    if not isinstance(value, dict) or key not in value:
        raise InputError(f"not {what} (no {key!r})", str(path))
    return value


def _details(path: Path) -> dict:
    value = _parse(path, _load(path))
    judge = value.get("generation", {}).get("judge") if isinstance(value, dict) else None
    if not isinstance(judge, dict):
        raise InputError("no generation.judge block: not the details.json of a scored 2b/2c submission", str(path))
    return value


def shown_path(path: Path) -> str:
    """How the report names an input file: as given when relative, else relative to the current
    folder when inside it, else its folder's and its own name (the report goes into a paper:
    no path of the organizer's machine)."""
    path = Path(path)
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(Path(*path.parts[-2:]))


def _golden_inputs(paths: list[Path]) -> tuple[list[dict] | None, tuple[str, dict] | None]:
    """The golden set v1 lines and the v2 meta-evaluation (shown name, judge_meta.json) among
    ``paths``, each told apart by its content; InputError when a file is neither, or when two
    files are of one version."""
    v1: tuple[Path, list[dict]] | None = None
    v2: tuple[Path, dict] | None = None
    for path in paths:
        kind, value = _golden(path)
        seen = v1 if kind == 1 else v2
        if seen is not None:
            version = 1 if kind == 1 else value["golden_version"]
            raise InputError(f"two golden set v{version} results ({shown_path(seen[0])} and {shown_path(path)}): "
                             "give one of each version", "--golden")
        if kind == 1:
            v1 = (path, value)
        else:
            v2 = (path, value)
    return (v1[1] if v1 else None), ((shown_path(v2[0]), v2[1]) if v2 else None)


def _golden(path: Path) -> tuple[int, list[dict] | dict]:
    """(1, lines) for a ``reteco judge --golden`` output, (2, document) for a judge_meta.json."""
    text = _load(path)
    if not text.strip():
        raise InputError(f"no golden case: the file is empty; give {V1} or {V2}", str(path))
    lines = text.splitlines()
    first = next(n for n, line in enumerate(lines, 1) if line.strip())
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # Not one JSON document: JSONL when its first line is a JSON value of its own, else a
        # document broken where the parser says (a judge_meta.json cut short, say).
        try:
            json.loads(lines[first - 1])
        except json.JSONDecodeError:
            raise InputError(f"not valid JSON ({exc.msg})", str(path), exc.lineno) from None
        return 1, _golden_v1([(n, _parse(path, line, n)) for n, line in enumerate(lines, 1) if line.strip()], path)
    if isinstance(value, dict) and "golden_version" in value:
        return 2, _golden_meta(path, value)
    if isinstance(value, dict) and isinstance(value.get("cases", value.get("results")), list):
        cases = value.get("cases", value.get("results"))
    elif isinstance(value, dict) and "id" in value:
        cases = [value]  # a JSONL file of one case
    elif isinstance(value, list):
        cases = value
    else:
        raise InputError(f"neither {V1} nor {V2}", str(path))
    # One document: a case is numbered, not line-numbered (unless the file is one line).
    return 1, _golden_v1([(first if len(cases) == 1 and isinstance(value, dict) else None, c) for c in cases], path)


def _golden_v1(numbered: list[tuple[int | None, object]], path: Path) -> list[dict]:
    if not numbered:
        raise InputError(f"no golden case in the file; give {V1} or {V2}", str(path))
    for n, (line, case) in enumerate(numbered, 1):
        where = "" if line is not None else f"golden case {n}: "
        if not isinstance(case, dict):
            raise InputError(f"{where}not an object: neither {V1} nor {V2}", str(path), line)
        missing = [k for k in ("id", "passed") if k not in case]
        if missing:
            raise InputError(f"{where}no {' and no '.join(repr(k) for k in missing)}: not a case of {V1}", str(path), line)
    return [case for _, case in numbered]


def _golden_meta(path: Path, doc: dict) -> dict:
    """``doc`` when it has every field the report reads, with the right types; else InputError
    naming each wrong field (``per_dimension.correctness.spearman: ...``)."""
    from reteco.workbench.judge_audit.meta_evaluation import DIMENSION_CHECKS, Thresholds
    from reteco.workbench.judge_audit.report import INJECTION_CHECKS

    problems = Problems()

    def field(value: object, name: str, accepts, what: str) -> object:
        if value is _MISSING:
            problems.error(str(path), None, f"{name}: missing")
        elif not accepts(value):
            problems.error(str(path), None, f"{name}: {_shown_value(value)} is not {what}")
        return value

    def get(block: object, key: str) -> object:
        return block.get(key, _MISSING) if isinstance(block, dict) else _MISSING

    version = field(get(doc, "golden_version"), "golden_version", lambda v: _is_int(v) and v >= 2,
                    "a golden set version (2 or later)")
    judge = field(get(doc, "judge"), "judge", lambda v: isinstance(v, dict), "an object")
    if isinstance(judge, dict):
        field(get(judge, "signature"), "judge.signature", lambda v: isinstance(v, str) and v != "", "a signature")
        field(get(judge, "prompt_version"), "judge.prompt_version", _is_int, "an integer")
        field(get(judge, "model"), "judge.model", lambda v: isinstance(v, str), "a model name")
    field(get(doc, "complete"), "complete", lambda v: isinstance(v, bool), "true or false")
    field(get(doc, "passed"), "passed", lambda v: v is None or isinstance(v, bool), "true, false or null")
    field(get(doc, "failures"), "failures", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
          "a list of sentences")
    field(get(doc, "cases"), "cases", lambda v: isinstance(v, list), "a list")
    thresholds = field(get(doc, "thresholds"), "thresholds", lambda v: isinstance(v, dict), "an object")
    if isinstance(thresholds, dict):
        for name in (f.name for f in dataclasses.fields(Thresholds)):
            field(get(thresholds, name), f"thresholds.{name}", _is_number, "a number")
    per_dimension = field(get(doc, "per_dimension"), "per_dimension", lambda v: isinstance(v, dict) and len(v) > 0,
                          "an object with a block per dimension")
    if isinstance(per_dimension, dict):
        for d, block in per_dimension.items():
            if not isinstance(field(block, f"per_dimension.{d}", lambda v: isinstance(v, dict), "an object"), dict):
                continue
            field(get(block, "cases"), f"per_dimension.{d}.cases", _is_int, "an integer")
            for figure in DIMENSION_CHECKS:
                field(get(block, figure), f"per_dimension.{d}.{figure}", _is_figure, "a number or null")
    injection = field(get(doc, "injection"), "injection", lambda v: isinstance(v, dict), "an object")
    if isinstance(injection, dict):
        for figure, _, _ in INJECTION_CHECKS:
            field(get(injection, figure), f"injection.{figure}", _is_figure, "a number or null")
    if problems.has_errors:
        kind = f"golden set v{version}" if _is_int(version) else "golden set v2 on"
        problems.error(str(path), None, f"not a usable judge_meta.json of `reteco judge-meta` ({kind})")
        raise InputError(problems)
    return doc


_MISSING = object()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_figure(value: object) -> bool:
    return value is None or _is_number(value)


def _shown_value(value: object) -> str:
    return quoted(value if isinstance(value, str) else json.dumps(value))
