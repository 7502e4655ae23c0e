"""``reteco judge-report``: the task report's disclosure of the judge, as Markdown and JSON.

    reteco judge-report --out DIR [--config judge.yaml] [--details DETAILS.json ...]
                        [--golden GOLDEN.jsonl] [--agreement agreement.json] [--sample sheet.sample.json]

Writes ``DIR/judge-report.md`` and ``DIR/judge-report.json`` (``reteco.judge.report``): the
prompts and their signature (prompt version, sha256 of every prompt file), the configured model
and endpoint, decoding, the retry procedure (settings and what is and is not retried); from the
details.json of scored 2b/2c submissions, each file's judge (signature, whether it is the
configured judge, endpoint, reported models, fingerprints) and the invalid and missing
judgments per dimension; from a ``reteco judge --golden`` output (JSONL, one case per line, or
a JSON list of such objects or ``{"cases": [...]}``), the golden-case results; from a
``reteco human-sample`` record, the sample; from an ``reteco agreement`` result, the agreement
table. Exit 1 when a file cannot be used (named).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from reteco.problems import InputError


def add_judge_report_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``judge-report`` command to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "judge-report",
        help="the task report's disclosure of the judge: prompts, signature, models, retries, invalid judgments, "
        "golden cases, agreement (Markdown and JSON)",
    )
    p.add_argument("--out", type=Path, required=True, help="folder for judge-report.md and judge-report.json")
    p.add_argument("--config", type=Path, help="judge config YAML (default: the packaged judge.yaml)")
    p.add_argument("--details", type=Path, nargs="+", default=[], help="details.json of scored 2b/2c submissions")
    p.add_argument("--golden", type=Path, help="output of `reteco judge --golden`")
    p.add_argument("--agreement", type=Path, help="agreement.json of `reteco agreement`")
    p.add_argument("--sample", type=Path, help="the sample record of `reteco human-sample` (SHEET.sample.json)")
    p.set_defaults(func=cmd_judge_report)
    return p


def cmd_judge_report(args) -> int:
    """Run the command (module docstring)."""
    from reteco.commands.output_folder import check_output_folder
    from reteco.judge.config import load_judge_config
    from reteco.judge.report import build_report, render_markdown

    check_output_folder(args.out, "--out")
    config = load_judge_config(args.config)
    details = [(str(path), _details(path)) for path in args.details]
    golden = _golden(args.golden) if args.golden else None
    agreement = _json_object(args.agreement, "dimensions", "an agreement.json of `reteco agreement`") if args.agreement else None
    sample = _json_object(args.sample, "strata", "a sample record of `reteco human-sample`") if args.sample else None
    report = build_report(config, details=details, golden=golden, agreement=agreement, sample=sample)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in (("judge-report.json", json.dumps(report, indent=2, allow_nan=False) + "\n"),
                           ("judge-report.md", render_markdown(report))):
            tmp = args.out / (name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, args.out / name)
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    others = [f for f in report.get("judgments", {}).get("files", []) if not f["same_judge"]]
    for f in others:
        print(f"warning: {f['file']} was judged by signature {f.get('signature', '(none)')}, not the configured "
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


def _golden(path: Path) -> list[dict]:
    text = _load(path)
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and "\n{" not in stripped.rstrip()):
        value = _parse(path, text)
        lines = value.get("cases", value.get("results")) if isinstance(value, dict) else value
        if not isinstance(lines, list):
            lines = [value]
    else:
        lines = [_parse(path, line, n) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for n, line in enumerate(lines, 1):
        if not (isinstance(line, dict) and "id" in line and "passed" in line):
            raise InputError(f"golden case {n} has no 'id' and 'passed': not an output of `reteco judge --golden`",
                             str(path))
    return lines
