"""`reteco score -m` (measure strings), `--trec-qrels`, and a command's own usage on its mistakes."""

from __future__ import annotations

import json

import pytest
from support.paths import SAMPLES

from reteco.commands import main
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release

RUN = SAMPLES / "2a" / "run.txt"


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    root = tmp_path_factory.mktemp("measures")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref", subtracks=("1b", "2a", "2b"))
    return root / "ref"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bogus"], "reteco score: error: unrecognized arguments: --bogus"),
        (["-m", "nDCG@x"], "reteco score: error: argument -m/--measures: unknown measure 'nDCG@x'; did you mean "
                           "'nDCG@10'?; accepted: nDCG@k"),
        (["-m", "ndcg_cut"], "unknown measure 'ndcg_cut'"),
    ],
)
def test_a_mistake_prints_the_commands_own_usage(ref, capsys, argv, message):
    assert main(["score", "--ref", str(ref / "2a"), "--res", str(RUN), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: reteco score ") and "-m MEASURES" in err  # score's options, not {score,validate}
    assert "{score,validate}" not in err and message in err


def test_measures_are_printed_after_the_marked_official_figure_and_written_to_details_only(ref, tmp_path, capsys):
    assert main(["score", "--ref", str(ref / "2a"), "--res", str(RUN), "--out", str(tmp_path / "out")]) == 0
    plain = json.loads((tmp_path / "out" / "scores.json").read_text())
    capsys.readouterr()
    assert main(["score", "--ref", str(ref / "2a"), "--res", str(RUN), "--out", str(tmp_path / "m"),
                 "-m", "nDCG@10 P@5", "-m", "recall.100"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert json.loads((tmp_path / "m" / "scores.json").read_text()) == plain  # the leaderboard's keys, unchanged
    details = json.loads((tmp_path / "m" / "details.json").read_text())
    measures = details["measures"]
    assert measures["requested"] == ["nDCG@10", "P@5", "R@100"] and measures["engine"] == "pytrec_eval"
    assert measures["overall"]["nDCG@10"] == pytest.approx(plain["ndcg_10"], abs=1e-12)
    assert len(measures["per_unit"]) == details["units"]
    assert out == [f"ndcg_10 (official)\tall\t{plain['ndcg_10']!r}"] + [
        f"{name}\tall\t{measures['overall'][name]!r}" for name in ("nDCG@10", "P@5", "R@100")]


def test_per_topic_lines_come_with_minus_q(ref, capsys):
    assert main(["score", "--ref", str(ref / "2a"), "--res", str(RUN), "-q", "-m", "P@5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    per_unit = [line for line in lines if line.startswith("P@5\t") and not line.startswith("P@5\tall\t")]
    assert len(per_unit) == 51 and lines[-1].startswith("P@5\tall\t")


def test_1b_prints_the_mean_over_steps_too(ref, capsys):
    assert main(["score", "--ref", str(ref / "1b"), "--res", str(SAMPLES / "1b"), "-m", "nDCG@10"]) == 0
    printed = dict(line.split("\tall\t") for line in capsys.readouterr().out.splitlines())
    assert set(printed) == {"ndcg_10 (official)", "nDCG@10", "nDCG@10 (mean over steps)"}
    assert printed["nDCG@10"] == printed["ndcg_10 (official)"] != printed["nDCG@10 (mean over steps)"]


def test_measures_on_answers_and_qrels_for_several_runs_are_usage_errors(ref, capsys):
    assert main(["score", "--ref", str(ref / "2b"), "--res", str(SAMPLES / "2b"), "-m", "P@5"]) == 2
    assert "there is no ranking to measure" in capsys.readouterr().err
    assert main(["score", "--ref", str(ref / "2a"), "--res", str(RUN), "--res", str(RUN), "--trec-run", "r.txt"]) == 2
    assert "give one submission" in capsys.readouterr().err
    assert main(["score", "--ref", str(ref / "2b"), "--res", str(SAMPLES / "2b"), "--trec-run", "r.txt"]) == 2
    assert "there is no ranking to write" in capsys.readouterr().err


def test_trec_qrels_and_run_are_keyed_as_the_reference_and_the_run_is_the_decided_ranking(ref, tmp_path, capsys):
    # The 1b sample writes bare step ids; the reference keys them <domain>/<id>, and so do both files.
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    argv = ["score", "--ref", str(ref / "1b"), "--res", str(SAMPLES / "1b"), "--trec-qrels", str(qrels), "--trec-run", str(run)]
    assert main(argv) == 0
    reference = [line.split("\t") for line in (ref / "1b" / "qrels.txt").read_text().splitlines()]
    written = [line.split(" ") for line in qrels.read_text().splitlines()]
    assert [(key, "0", doc, "1" if int(rel) > 0 else "0") for key, _, doc, rel in reference] == [tuple(w) for w in written]
    keys = {key for key, *_ in reference}
    lines = [line.split(" ") for line in run.read_text().splitlines()]
    by_topic: dict = {}
    for topic, q0, doc, rank, score, tag in lines:
        assert (q0, tag) == ("Q0", "reteco")
        by_topic.setdefault(topic, []).append((doc, int(rank), int(score)))
    assert set(by_topic) <= {t.split("\t")[0] for t in (ref / "1b" / "topics.tsv").read_text().splitlines()[1:]}
    assert keys <= set(by_topic)
    for docs in by_topic.values():  # ranks 1..n, scores n..1: no tie for another tool to break
        n = len(docs)
        assert [(r, s) for _, r, s in docs] == [(i, n - i + 1) for i in range(1, n + 1)]
        assert len({d for d, _, _ in docs}) == n
    err = capsys.readouterr().err
    assert "keyed <domain>/<id>" in err and "the ranking reteco scored" in err


def test_the_comparison_of_several_runs_has_a_column_per_measure(ref, capsys):
    assert main(["score", "--ref", str(ref / "2a"), str(RUN), str(SAMPLES / "2c" / "run.txt"), "-m", "nDCG@10 P@5"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["submission", "topics", "ndcg_10", "(official)"] and "nDCG@10" in header and "P@5" in header
    column = header.split().index("nDCG@10") - 1  # "ndcg_10 (official)" is one column of two words
    official = header.split().index("ndcg_10")
    for row in rows:
        cells = row.split()
        assert cells[column] == cells[official]  # the measure equals the leaderboard key it names
