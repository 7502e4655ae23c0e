"""pages/other_tools.md: its commands run on the kit's samples (synthetic release), every
figure it calls equal is equal to 1e-9 with pytrec_eval (trec_eval's code; ir_measures computes
these measures with it) and with ranx, and every figure it quotes as different is the one
computed here, so the page cannot drift from the code."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from support.paths import REPO_ROOT

PAGE = REPO_ROOT / "pages" / "other_tools.md"
TEXT = PAGE.read_text(encoding="utf-8")
# reteco's key -> (trec_eval's measure, its result key, ranx's name): the page's table of equal figures.
EQUAL = {
    "ndcg_10": ("ndcg_cut.10", "ndcg_cut_10", "ndcg@10"),
    "p_10": ("P.10", "P_10", "precision@10"),
    "recall_10": ("recall.10", "recall_10", "recall@10"),
    "map_10": ("map_cut.10", "map_cut_10", "map@10"),
    "mrr": ("recip_rank", "recip_rank", "mrr"),
}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TEXT, flags=re.S | re.M)


@pytest.fixture(scope="module")
def ran(kit, tmp_path_factory) -> Path:
    """The kit's folder after the page's sh blocks (their reteco and awk lines) ran in it."""
    shim = tmp_path_factory.mktemp("bin") / "reteco"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m reteco "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    for block in _blocks("sh"):
        lines = [line for line in block.splitlines() if line.split()[:1] in (["reteco"], ["awk"])]
        for line in lines:
            done = subprocess.run(["bash", "-c", line], cwd=kit, env=env, capture_output=True, text=True)
            assert done.returncode == 0, (line, done.stderr)
    return kit


def _qrels(path: Path) -> dict:
    qrels: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, _, doc, rel = line.split()
        qrels.setdefault(topic, {})[doc] = int(rel)
    return qrels


def _run(path: Path) -> dict:
    run: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, _, doc, _, score, _ = line.split()
        run.setdefault(topic, {})[doc] = float(score)
    return run


def trec_eval_c(qrels_file: Path, run_file: Path, measures) -> dict[str, float]:
    """``trec_eval -c -m ...``: pytrec_eval's per-topic figures, averaged over every judged topic."""
    qrels = _qrels(qrels_file)
    results = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(_run(run_file))
    keys = {m.replace(".", "_") for m in measures}
    return {k: sum(results.get(t, {}).get(k, 0.0) for t in qrels) / len(qrels) for k in keys}


def _reteco(folder: Path, subtrack: str, run: str) -> dict:
    from reteco import evaluate

    return evaluate(folder / run, folder / "ref" / subtrack).details


def test_the_pages_trec_eval_command_names_the_measures_of_its_table():
    command = next(line for block in _blocks("sh") for line in block.splitlines() if line.startswith("trec_eval"))
    words = shlex.split(command)
    assert "-c" in words
    assert [words[i + 1] for i, w in enumerate(words) if w == "-m"] == [m for m, _, _ in EQUAL.values()]
    for key, (measure, _, ranx_name) in EQUAL.items():
        assert f"| `{key}` | `{measure}` |" in TEXT and f"`{ranx_name}` |" in TEXT


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a"])
def test_every_figure_called_equal_is_trec_evals(ran, subtrack):
    details = _reteco(ran, subtrack, f"sample_submissions/{subtrack}/run.txt")
    # 1b: the other tools' figure is details.json's step_mean, as the page says.
    ours = details["step_mean"] if subtrack == "1b" else details["overall"]
    theirs = trec_eval_c(ran / f"qrels-{subtrack}.txt", ran / f"sample_submissions/{subtrack}/run.txt",
                         [m for m, _, _ in EQUAL.values()])
    for key, (_, result_key, _) in EQUAL.items():
        assert abs(ours[key] - theirs[result_key]) < 1e-9, (subtrack, key)


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a"])
def test_every_figure_called_equal_is_ranxs(ran, subtrack):
    ranx = pytest.importorskip("ranx", reason="ranx is not installed (pip install ranx): the ranx column is unchecked")
    details = _reteco(ran, subtrack, f"sample_submissions/{subtrack}/run.txt")
    ours = details["step_mean"] if subtrack == "1b" else details["overall"]
    if subtrack == "2a":  # the page's own snippet
        scope: dict = {}
        cwd = Path.cwd()
        os.chdir(ran)
        try:
            exec(_blocks("python")[0].replace("evaluate(Q", "result = evaluate(Q"), scope)
        finally:
            os.chdir(cwd)
        theirs = scope["result"]
    else:
        theirs = ranx.evaluate(ranx.Qrels.from_file(str(ran / f"qrels-{subtrack}.txt"), kind="trec"),
                               ranx.Run.from_file(str(ran / f"sample_submissions/{subtrack}/run.txt"), kind="trec"),
                               [name for _, _, name in EQUAL.values()])
    for key, (_, _, name) in EQUAL.items():
        assert abs(ours[key] - float(theirs[name])) < 1e-9, (subtrack, key)


def _row(case: str) -> str:
    return next(line for line in TEXT.splitlines() if line.startswith(f"| {case} |"))


def test_the_figures_quoted_as_different_are_the_computed_ones(ran):
    ndcg = ["ndcg_cut.10"]
    one_b = _reteco(ran, "1b", "sample_submissions/1b/run.txt")
    step = trec_eval_c(ran / "qrels-1b.txt", ran / "sample_submissions/1b/run.txt", ndcg)["ndcg_cut_10"]
    assert abs(step - one_b["step_mean"]["ndcg_10"]) < 1e-9
    assert f"reteco {one_b['overall']['ndcg_10']:.4f}, trec_eval {step:.4f}" in _row("1b: steps")
    assert f"{one_b['overall']['ndcg_10']:.4f}" != f"{step:.4f}"

    one_a = _reteco(ran, "1a", "sample_submissions/1a/run.txt")["overall"]["ndcg_10"]
    bare = trec_eval_c(ran / "ref/1a/qrels.txt", ran / "sample_submissions/1a/run.txt", ndcg)["ndcg_cut_10"]
    assert f"reteco {one_a:.4f}, trec_eval {bare:.4f}" in _row("ids without domain")

    for case, run in (("tied scores", "tied.txt"), ("unknown document ids", "unknown.txt")):
        ours = _reteco(ran, "2a", run)["overall"]["ndcg_10"]
        theirs = trec_eval_c(ran / f"qrels-{run.removesuffix('.txt')}.txt", ran / run, ndcg)["ndcg_cut_10"]
        assert f"reteco {ours:.4f}, trec_eval {theirs:.4f}" in _row(case)
        assert abs(ours - theirs) > 1e-3, case


def test_reteco_m_prints_the_measures_the_page_names(ran):
    command = re.search(r"`(reteco score --ref ref/2a [^`]*-m '[^']*')`", TEXT).group(1)
    done = subprocess.run([sys.executable, "-m", "reteco", *shlex.split(command)[1:]], cwd=ran, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert done.returncode == 0, done.stderr
    printed = dict(line.split("\tall\t") for line in done.stdout.splitlines())
    details = _reteco(ran, "2a", "sample_submissions/2a/run.txt")["overall"]
    assert float(printed["ndcg_10 (official)"]) == details["ndcg_10"]
    for name, key in (("nDCG@10", "ndcg_10"), ("P@10", "p_10"), ("R@10", "recall_10"), ("AP@10", "map_10"), ("RR", "mrr")):
        assert abs(float(printed[name]) - details[key]) < 1e-12
