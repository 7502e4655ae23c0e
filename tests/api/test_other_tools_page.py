"""pages/other_tools.md: its commands run on the kit's samples (synthetic release); every figure
it calls equal is equal to 1e-9 by pytrec_eval (trec_eval's code), ir_measures and ranx, on the
kit's samples and on the baseline's runs; every difference it states is computed here with the
tool it names, and every figure it quotes is the one computed; PyTerrier's run file (its
``write_results`` format, reproduced below) scores as its DataFrame does. So the page cannot
drift from the code or from the tools."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
import pytrec_eval
import ranx
from support.paths import REPO_ROOT

import reteco

PAGE = REPO_ROOT / "pages" / "other_tools.md"
TEXT = PAGE.read_text(encoding="utf-8")
# reteco's key -> (trec_eval's measure, its result key, ir_measures' name, ranx's name): the page's table.
EQUAL = {
    "ndcg_10": ("ndcg_cut.10", "ndcg_cut_10", "nDCG@10", "ndcg@10"),
    "p_10": ("P.10", "P_10", "P@10", "precision@10"),
    "recall_10": ("recall.10", "recall_10", "R@10", "recall@10"),
    "map_10": ("map_cut.10", "map_cut_10", "AP@10", "map@10"),
    "mrr": ("recip_rank", "recip_rank", "RR", "mrr"),
}
CHANGED = ("partial.txt", "repeated.txt", "tied.txt", "unknown.txt")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TEXT, flags=re.S | re.M)


def _environment(shim_folder: Path) -> dict:
    return {**os.environ, "PATH": os.pathsep.join([str(shim_folder), str(Path(sys.executable).parent), os.environ["PATH"]]),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


@pytest.fixture(scope="module")
def ran(kit, tmp_path_factory) -> Path:
    """The kit's folder after the page's sh blocks (their reteco and awk lines) ran in it."""
    shim = tmp_path_factory.mktemp("bin") / "reteco"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m reteco "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = _environment(shim.parent)
    for block in _blocks("sh"):
        for line in block.splitlines():
            if line.split()[:1] in (["reteco"], ["awk"]):
                done = subprocess.run(["bash", "-c", line], cwd=kit, env=env, capture_output=True, text=True)
                assert done.returncode == 0, (line, done.stderr)
    return kit


@pytest.fixture(scope="module")
def baseline(ran, tmp_path_factory) -> Path:
    """The starting kit's BM25 baseline run on the same release, its runs written to ``base/``."""
    pytest.importorskip("bm25s", reason="the baseline needs bm25s (pip install -e '.[baseline]')")
    out = ran / "base"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "starting_kit" / "baseline" / "reteco_baseline.py"),
                           "--release", str(ran / "release"), "--split", "dev", "--out", str(out),
                           "--subtracks", "1a,1b,2a", "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


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


def trec_eval(qrels_file: Path, run_file: Path, measures, *, c: bool = True) -> dict[str, float]:
    """``trec_eval [-c] -m ...``: pytrec_eval's per-topic figures, averaged over every judged topic
    (``-c``) or over the run's topics."""
    qrels = _qrels(qrels_file)
    results = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(_run(run_file))
    topics = qrels if c else results
    keys = {m.replace(".", "_") for m in measures}
    return {k: sum(results.get(t, {}).get(k, 0.0) for t in topics) / len(topics) for k in keys}


def by_ir_measures(qrels_file: Path, run_file: Path, names) -> dict[str, float]:
    measures = [ir_measures.parse_measure(n) for n in names]
    found = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(str(qrels_file)),
                                       ir_measures.read_trec_run(str(run_file)))
    return {n: float(found[m]) for n, m in zip(names, measures)}


def by_ranx(qrels_file: Path, run_file: Path, names, **options) -> dict[str, float]:
    found = ranx.evaluate(ranx.Qrels.from_file(str(qrels_file), kind="trec"), ranx.Run.from_file(str(run_file), kind="trec"),
                          list(names), **options)
    return {n: float(found[n]) for n in names} if isinstance(found, dict) else {names[0]: float(found)}


def _reteco(folder: Path, subtrack: str, run) -> dict:
    return reteco.evaluate(run if not isinstance(run, str) else folder / run, folder / "ref" / subtrack).details


def _every_tool(qrels_file: Path, run_file: Path) -> dict[str, dict[str, float]]:
    """Each of the table's measures by each tool, keyed by reteco's key."""
    te = trec_eval(qrels_file, run_file, [t for t, _, _, _ in EQUAL.values()])
    irm = by_ir_measures(qrels_file, run_file, [i for _, _, i, _ in EQUAL.values()])
    rx = by_ranx(qrels_file, run_file, [r for _, _, _, r in EQUAL.values()], make_comparable=True)
    return {key: {"trec_eval": te[k], "ir_measures": irm[i], "ranx": rx[r]} for key, (_, k, i, r) in EQUAL.items()}


def _assert_equal(ours: dict, qrels_file: Path, run_file: Path, label) -> None:
    for key, theirs in _every_tool(qrels_file, run_file).items():
        for tool, value in theirs.items():
            assert abs(ours[key] - value) < 1e-9, (label, key, tool, ours[key], value)


def test_the_pages_commands_name_the_measures_of_its_table():
    lines = [line for block in _blocks("sh") for line in block.splitlines()]
    words = shlex.split(next(line for line in lines if line.startswith("trec_eval")))
    assert "-c" in words and words[-2:] == ["qrels-2a.txt", "scored-2a.txt"]
    assert [words[i + 1] for i, w in enumerate(words) if w == "-m"] == [t for t, _, _, _ in EQUAL.values()]
    words = shlex.split(next(line for line in lines if line.startswith("ir_measures")))
    assert words[1:3] == ["qrels-2a.txt", "scored-2a.txt"] and words[3].split() == [i for _, _, i, _ in EQUAL.values()]
    for key, (measure, _, ir_name, ranx_name) in EQUAL.items():
        assert f"| `{key}` | `{measure}` | `{ir_name}` | `{ranx_name}` |" in TEXT


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a"])
def test_every_figure_called_equal_is_every_tools_on_the_scored_run(ran, subtrack):
    details = _reteco(ran, subtrack, f"sample_submissions/{subtrack}/run.txt")
    # 1b: the other tools' figure is details.json's step_mean, as the page says.
    ours = details["step_mean"] if subtrack == "1b" else details["overall"]
    _assert_equal(ours, ran / f"qrels-{subtrack}.txt", ran / f"scored-{subtrack}.txt", subtrack)


@pytest.mark.parametrize("subtrack", ["1a", "1b", "2a"])
def test_the_baselines_runs_too_with_the_same_qrels_file(baseline, subtrack, tmp_path):
    # issue 35: qrels written for the sample served no other run (the baseline writes biology/13_turn_1
    # where the sample writes 13_turn_1). The one qrels file of the page serves the baseline's run.
    ran = baseline.parent
    scored = tmp_path / "scored.txt"
    details = reteco.evaluate(baseline / subtrack / "run.txt", ran / "ref" / subtrack, trec_run=scored).details
    ours = details["step_mean"] if subtrack == "1b" else details["overall"]
    assert ours["ndcg_10"] > 0.1
    _assert_equal(ours, ran / f"qrels-{subtrack}.txt", scored, ("baseline", subtrack))


def test_the_pages_ranx_snippet_and_ir_measures_command_print_retecos_figures(ran):
    ours = _reteco(ran, "2a", "sample_submissions/2a/run.txt")["overall"]
    scope: dict = {}
    cwd = Path.cwd()
    os.chdir(ran)
    try:
        exec(_blocks("python")[0].replace("evaluate(Q", "result = evaluate(Q"), scope)
    finally:
        os.chdir(cwd)
    for key, (_, _, _, ranx_name) in EQUAL.items():
        assert abs(ours[key] - float(scope["result"][ranx_name])) < 1e-9, key
    command = next(line for block in _blocks("sh") for line in block.splitlines() if line.startswith("ir_measures"))
    done = subprocess.run(["bash", "-c", command], cwd=ran, env=_environment(Path(sys.executable).parent),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    printed = dict(line.split("\t") for line in done.stdout.splitlines())
    for key, (_, _, ir_name, _) in EQUAL.items():
        assert printed[ir_name] == f"{ours[key]:.4f}", key  # ir_measures prints 4 decimals


def test_the_api_writes_the_same_two_files_as_the_command(ran, tmp_path):
    reteco.evaluate(ran / "sample_submissions/2a/run.txt", ran / "ref/2a", trec_run=tmp_path / "r.txt",
                    trec_qrels=tmp_path / "q.txt")
    assert (tmp_path / "r.txt").read_bytes() == (ran / "scored-2a.txt").read_bytes()
    assert (tmp_path / "q.txt").read_bytes() == (ran / "qrels-2a.txt").read_bytes()


def _row(case: str) -> str:
    return next(line for line in TEXT.splitlines() if line.startswith(f"| {case} |"))


def test_topics_left_out_count_0_in_ir_measures_and_ranx_made_comparable_and_trec_eval_c_only(ran):
    ours = _reteco(ran, "2a", "partial.txt")["overall"]["ndcg_10"]
    qrels, run = ran / "qrels-2a.txt", ran / "partial.txt"
    assert len({line.split()[0] for line in run.read_text().splitlines()}) == 51 - 17  # the page's 17 turns
    assert abs(by_ir_measures(qrels, run, ["nDCG@10"])["nDCG@10"] - ours) < 1e-9
    assert abs(trec_eval(qrels, run, ["ndcg_cut.10"])["ndcg_cut_10"] - ours) < 1e-9
    assert abs(by_ranx(qrels, run, ["ndcg@10"], make_comparable=True)["ndcg@10"] - ours) < 1e-9
    with pytest.raises(AssertionError):  # ranx refuses a run without every qrels topic
        by_ranx(qrels, run, ["ndcg@10"])
    without_c = trec_eval(qrels, run, ["ndcg_cut.10"], c=False)["ndcg_cut_10"]
    assert abs(without_c - ours) > 1e-3
    assert f"`partial.txt`: reteco {ours:.4f}, trec_eval {without_c:.4f}" in _row("topics left out")


def test_the_figures_quoted_as_different_are_the_computed_ones(ran):
    one_a = _reteco(ran, "1a", "sample_submissions/1a/run.txt")["overall"]["ndcg_10"]
    bare = by_ir_measures(ran / "qrels-1a.txt", ran / "sample_submissions/1a/run.txt", ["nDCG@10"])["nDCG@10"]
    assert f"1a sample: reteco {one_a:.4f}, ir_measures {bare:.4f}" in _row("ids without domain")
    assert bare == 0.0 and trec_eval(ran / "qrels-1a.txt", ran / "sample_submissions/1a/run.txt", ["ndcg_cut.10"]) == {
        "ndcg_cut_10": 0.0}
    for case, run in (("repeated documents", "repeated.txt"), ("tied scores", "tied.txt"),
                      ("unknown document ids", "unknown.txt")):
        ours = _reteco(ran, "2a", run)["overall"]["ndcg_10"]
        theirs = by_ir_measures(ran / "qrels-2a.txt", ran / run, ["nDCG@10"])["nDCG@10"]
        assert f"`{run}`: reteco {ours:.4f}, ir_measures {theirs:.4f}" in _row(case)
        assert abs(ours - theirs) > 1e-3, case
        # trec_eval's code agrees with ir_measures here, as the table says
        assert abs(trec_eval(ran / "qrels-2a.txt", ran / run, ["ndcg_cut.10"])["ndcg_cut_10"] - theirs) < 1e-9, case
        if case == "tied scores":  # trec_eval's code breaks a tie by document id, descending
            by_id = {}
            for topic, docs in _run(ran / run).items():
                order = sorted(docs, key=lambda d: (-docs[d], tuple(-ord(c) for c in d)))
                by_id[topic] = {d: float(len(order) - i) for i, d in enumerate(order)}
            results = pytrec_eval.RelevanceEvaluator(_qrels(ran / "qrels-2a.txt"), {"ndcg_cut.10"}).evaluate(by_id)
            assert abs(sum(r["ndcg_cut_10"] for r in results.values()) / 51 - theirs) < 1e-9
        else:  # ranx sorts ties its own way
            assert abs(by_ranx(ran / "qrels-2a.txt", ran / run, ["ndcg@10"])["ndcg@10"] - theirs) < 1e-9, case


def test_the_peers_keep_a_repeated_documents_last_line(ran):
    lines = (ran / "repeated.txt").read_text().splitlines()
    topic, _, doc, _, _, _ = lines[0].split()
    assert lines[1].split()[:5] == [topic, "Q0", doc, "1000", "0"]  # the repeat, right after, score 0
    assert ranx.Run.from_file(str(ran / "repeated.txt"), kind="trec").to_dict()[topic][doc] == 0.0
    assert _run(ran / "repeated.txt")[topic][doc] == 0.0  # what pytrec_eval is given: a dict
    per_topic = {m.query_id: m.value for m in ir_measures.iter_calc(
        [ir_measures.parse_measure("RR")], ir_measures.read_trec_qrels(str(ran / "qrels-2a.txt")),
        ir_measures.read_trec_run(str(ran / "repeated.txt")))}
    first_relevant = _qrels(ran / "qrels-2a.txt").get(topic, {}).get(doc, 0) > 0
    if first_relevant:
        assert per_topic[topic] < 1.0  # the document moved to the bottom
    ours = _reteco(ran, "2a", "repeated.txt")
    assert ours["counts"]["duplicate_doc_ids"] == 51 and ours["overall"] == _reteco(ran, "2a", "scored-2a.txt")["overall"]


@pytest.mark.parametrize("run", CHANGED)
def test_with_trec_run_every_tool_gives_retecos_figure_again(ran, run, tmp_path):
    details = reteco.evaluate(ran / run, ran / "ref/2a", trec_run=tmp_path / "scored.txt").details
    _assert_equal(details["overall"], ran / "qrels-2a.txt", tmp_path / "scored.txt", run)


def test_reteco_m_prints_the_measures_the_page_names_and_those_trec_eval_lacks_as_ir_measures_does(ran):
    command = re.search(r"`(reteco score --ref ref/2a [^`]*-m '[^']*')`", TEXT).group(1)
    command = command.replace("'nDCG@10 P@10 R@10 AP@10 RR'", "'nDCG@10 P@10 R@10 AP@10 RR RR@10 Judged@10 ndcg_cut_10 mrr@10'")
    done = subprocess.run([sys.executable, "-m", "reteco", *shlex.split(command)[1:]], cwd=ran, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert done.returncode == 0, done.stderr
    printed = dict(line.split("\tall\t") for line in done.stdout.splitlines())
    scored = _reteco(ran, "2a", "sample_submissions/2a/run.txt")
    details = scored["overall"]
    assert float(printed["ndcg_10 (official)"]) == details["ndcg_10"]
    for name, key in (("nDCG@10", "ndcg_10"), ("P@10", "p_10"), ("R@10", "recall_10"), ("AP@10", "map_10"), ("RR", "mrr")):
        assert abs(float(printed[name]) - details[key]) < 1e-12
    theirs = by_ir_measures(ran / "qrels-2a.txt", ran / "scored-2a.txt", ["RR@10", "Judged@10"])
    for name in ("RR@10", "Judged@10"):
        assert abs(float(printed[name]) - theirs[name]) < 1e-12, name
    assert abs(1 - float(printed["Judged@10"]) - scored["unjudged"]["overall"]["unjudged_10"]) < 1e-12


def write_results_as_pyterrier(frame: pd.DataFrame, path: Path) -> None:
    """PyTerrier's ``pt.io.write_results(res, path)`` (format "trec"), reproduced: PyTerrier needs
    statsmodels and five other packages for this one call, so it is not a test dependency. Its
    source, terrier-org/pyterrier ``pyterrier/io.py`` (``_write_results_trec``, 1.1.2): the columns
    qid, docno, rank, score with "Q0" inserted second and the run name "pyterrier" last, written by
    pandas' ``to_csv`` with a space separator, no header and no index."""
    columns = frame[["qid", "docno", "rank", "score"]].copy()
    columns.insert(1, "Q0", "Q0")
    columns.insert(5, "run_name", "pyterrier")
    columns.to_csv(path, sep=" ", header=False, index=False)


def test_a_file_written_as_pyterrier_writes_scores_as_the_same_dataframe(ran, tmp_path):
    lines = [line.split() for line in (ran / "sample_submissions/2a/run.txt").read_text().splitlines()]
    frame = pd.DataFrame({"qid": [t for t, *_ in lines], "docno": [d for _, _, d, *_ in lines],
                          "score": [float(s) for *_, s, _ in lines]})
    frame["rank"] = frame.groupby("qid").cumcount()  # PyTerrier's ranks start at 0
    path = tmp_path / "pyterrier.res"
    write_results_as_pyterrier(frame, path)
    assert path.read_text().splitlines()[0].split()[3] == "0"
    from_file = reteco.evaluate(path, ran / "ref/2a")
    from_frame = reteco.evaluate(frame, ran / "ref/2a")
    assert from_file.scores == from_frame.scores == reteco.evaluate(ran / "sample_submissions/2a/run.txt", ran / "ref/2a").scores
    for result in (from_file, from_frame):
        assert any("the ranks start at 0 (as PyTerrier writes them)" in w for w in result.warnings)
        assert not any("disagrees" in w for w in result.warnings)
    flat = " ".join(TEXT.split())
    assert "a warning says that the ranks start at 0" in flat and "`pt.io.write_results(res, \"run.txt\")`" in flat
