"""Hostile command lines: options missing, unknown or contradictory (exit 2, the option named),
and paths on the command line that cannot be used (exit 1, the path named), for `reteco` and
for the Codabench program. Never an internal error, never a score written.

Where the line is drawn: a wrong *invocation* (an option missing, unknown, out of its choices,
an output location that cannot be a folder) is exit 2; a path to *read* that is missing, a
folder, a FIFO or not text is input that cannot be used, exit 1, naming the path.
"""

from __future__ import annotations

import os

import pytest
from support.hostile_harness import Case, Expect, Workspace, good_run, run_case

QRELS = b"t1 0 d1 1\nt1 0 d2 0\nt2 0 d3 2\n"
BENCHMARK_RUN = b"t1 Q0 d1 1 2.0 x\nt2 Q0 d3 1 1.0 x\n"


def score(*options, child: bool = False, run: bytes | None = None):
    """``reteco score`` with ``options`` (functions of the workspace are called), writing into
    the workspace's out folder unless the options say otherwise."""

    def build(ws: Workspace):
        argv = ["score", *(o(ws) if callable(o) else o for o in options)]
        return ws.reteco(*argv, out=ws.out, in_process=not child)

    return build


def ref(sub: str = "1a"):
    return lambda ws: str(ws.sub(sub).root)


def res(ws: Workspace) -> str:
    return str(ws.file("run.txt", good_run(ws)))


def bench_res(ws: Workspace) -> str:
    return str(ws.file("bench_run.txt", BENCHMARK_RUN))


def out(ws: Workspace) -> str:
    return str(ws.out)


def path(name: str, data: bytes | None = None, kind: str = "file"):
    """A path in the workspace: a file holding ``data``, a folder, a FIFO, or nothing."""

    def make(ws: Workspace) -> str:
        target = ws.root / name
        if kind == "folder":
            target.mkdir()
        elif kind == "fifo":
            os.mkfifo(target)
        elif data is not None:
            ws.file(name, data)
        return str(target)

    return make


def benchmark(qrels, *more, child: bool = False):
    return score("--benchmark", "factir", "--qrels", qrels, "--res", bench_res, "--out", out, *more, child=child)


def reteco(*argv, child: bool = False):
    return lambda ws: ws.reteco(*(a(ws) if callable(a) else a for a in argv), in_process=not child)


CASES = [
    # --- options missing, unknown, contradictory: exit 2 -------------------------------------------
    Case("score_without_ref", score("--res", res, "--out", out), Expect.usage("--ref")),
    Case("score_without_res", score("--ref", ref(), "--out", out), Expect.usage("--res")),
    # Without --out the scores are printed and nothing is written (trec_eval's convention).
    Case("score_without_out", reteco("score", "--ref", ref(), "--res", res), Expect.accepted(says=r'"ndcg_10": \d')),
    Case("unknown_option", score("--ref", ref(), "--res", res, "--out", out, "--frobnicate"), Expect.usage("--frobnicate")),
    Case(
        "unknown_option_in_a_child_process",
        score("--ref", ref(), "--res", res, "--out", out, "--frobnicate", child=True),
        Expect.usage("--frobnicate"),
    ),
    Case("engine_not_a_choice", score("--ref", ref(), "--res", res, "--out", out, "--engine", "bogus"), Expect.usage("bogus")),
    Case(
        "benchmark_not_a_choice",
        score("--benchmark", "nosuch", "--qrels", path("q.txt", QRELS), "--res", bench_res, "--out", out),
        Expect.usage("nosuch"),
    ),
    Case("benchmark_without_qrels", score("--benchmark", "factir", "--res", bench_res, "--out", out), Expect.usage("--qrels")),
    Case("unknown_command", reteco("frobnicate"), Expect.usage("frobnicate")),
    Case("no_command", reteco(), Expect.usage("command")),
    Case("validate_without_submission", reteco("validate", "--ref", ref()), Expect.usage("submission")),
    Case(
        "out_is_a_file",
        score("--ref", ref(), "--res", res, "--out", path("scores_here.txt", b"keep me\n")),
        Expect.refused("scores_here.txt"),
    ),
    Case(
        "out_under_a_file",
        score("--ref", ref(), "--res", res, "--out", lambda ws: path("plain.txt", b"x")(ws) + "/out"),
        Expect.refused("plain.txt/out", says="plain.txt exists and is not a folder"),
    ),
    Case(
        "prepare_out_is_a_file",
        reteco("prepare", "--release", lambda ws: str(ws.release), "--split", "dev", "--out", path("prepared.txt", b"x")),
        Expect.refused("prepared.txt"),
    ),
    Case("codabench_one_argument", lambda ws: ws.codabench(str(ws.root / "input")), Expect.usage("usage")),
    Case("codabench_three_arguments", lambda ws: ws.codabench("a", "b", "c"), Expect.usage("usage")),
    # --- paths that cannot be used: exit 1, the path named -----------------------------------------
    Case("ref_folder_missing", score("--ref", path("nosuch_ref"), "--res", res, "--out", out), Expect.refused("nosuch_ref")),
    Case("ref_is_a_file", score("--ref", path("ref.txt", b"1a\n"), "--res", res, "--out", out), Expect.refused("ref.txt")),
    Case(
        "ref_is_the_parent_of_the_subtracks",
        score("--ref", lambda ws: str(ws.sub("1a").root.parent), "--res", res, "--out", out),
        Expect.refused("ref"),
    ),
    Case("qrels_file_missing", benchmark(path("nosuch_qrels.txt")), Expect.refused("nosuch_qrels.txt")),
    Case("qrels_is_a_folder", benchmark(path("qrels_dir", kind="folder")), Expect.refused("qrels_dir")),
    Case("qrels_not_utf8", benchmark(path("qrels.bin", b"t1 0 d\xff 1\n")), Expect.refused("qrels.bin")),
    Case(
        "qrels_in_utf16",  # Windows PowerShell's `>`: said once, with what to do
        benchmark(path("qrels.txt", "t1 0 d1 1\nt1 0 d2 0\n".encode("utf-16"))),
        Expect.refused("qrels.txt", None, r"the qrels file is UTF-16 \(little-endian\) text, not UTF-8", error_lines=1),
    ),
    Case("qrels_is_a_fifo", benchmark(path("qrels.fifo", kind="fifo"), child=True), Expect.refused("qrels.fifo"), seconds=6),
    Case("qrels_json_broken", benchmark(path("qrels.json", b'{"t1": {"d1": 1,\n "d2": }}')), Expect.refused("qrels.json", 2)),
    Case("qrels_json_relevance_a_string", benchmark(path("qrels.json", b'{"t1": {"d1": "1"}}')), Expect.refused("qrels.json")),
    Case(
        "qrels_json_integer_of_5000_digits",
        benchmark(path("qrels.json", b'{"t1": {"d1": ' + b"1" * 5000 + b"}}")),
        Expect.refused("qrels.json"),
    ),
    Case("qrels_negative_relevance", benchmark(path("qrels.txt", b"t1 0 d1 -1\n")), Expect.refused("qrels.txt", 1)),
    Case("qrels_empty", benchmark(path("qrels.txt", b"")), Expect.refused("qrels.txt")),
    Case(
        "stance_file_missing",
        benchmark(path("qrels.txt", QRELS), "--stance", path("nosuch_stance.tsv")),
        Expect.refused("nosuch_stance.tsv"),
    ),
    Case(
        "stance_not_utf8",
        benchmark(path("qrels.txt", QRELS), "--stance", path("stance.tsv", b"t1 d1 Supp\xf6rts\n")),
        Expect.refused("stance.tsv"),
    ),
    Case(
        "factir_qrels_evidence_missing",
        reteco("factir-qrels", "--evidence", path("nosuch.csv"), "--qrels-json", path("q.json", b"{}"), "--out", path("fq")),
        Expect.refused("nosuch.csv"),
    ),
    Case(
        "codabench_input_folder_missing",
        lambda ws: ws.codabench(str(ws.root / "no_input"), str(ws.root / "output")),
        Expect.refused(pattern=r"(?:[^\n]*/)?no_input(?:/ref)?"),
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_command_line(case: Case, workspace: Workspace):
    run_case(case, workspace)
