"""``reteco factir-qrels``: FactIR's evidence.csv and qrel_processed -> qrels.txt, stance.tsv, topics.tsv."""

from __future__ import annotations

from pathlib import Path

from reteco.commands.output_folder import check_output_folder
from reteco.problems import InputError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("factir-qrels", help="FactIR's evidence.csv + qrel_processed -> qrels.txt, stance.tsv")
    p.add_argument("--evidence", type=Path, required=True)
    p.add_argument("--qrels-json", type=Path, required=True)
    p.add_argument("--by", choices=["claim", "row"], default="claim")
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_factir_qrels)


def cmd_factir_qrels(args) -> int:
    from reteco.formats.factir import convert_factir, write_factir

    check_output_folder(args.out, "--out")
    judgments, stance, topics = convert_factir(args.evidence, args.qrels_json, args.by)
    try:
        write_factir(args.out, judgments, stance, topics)
    except OSError as exc:
        raise InputError(f"cannot write here ({exc.strerror or exc})", str(exc.filename or args.out)) from None
    relevant = sum(1 for j in judgments if j.relevance > 0)
    print(f"{len(topics)} topics (grouped by {args.by}), {len(judgments)} judgments, {relevant} relevant -> {args.out}")
    return 0
