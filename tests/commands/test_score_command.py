"""``reteco score`` with the conventions of trec_eval, ir_measures and ranx users: ``--out``
optional, ``-q`` per-topic TSV, several runs compared in one table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support import independent_scorer as ind
from support.paths import SAMPLES

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.problems import EXIT_INPUT, EXIT_USAGE
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission


@pytest.fixture(scope="module")
def ref(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("score_command")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref")
    return root / "ref"


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_without_out_the_scores_are_printed_and_nothing_is_written(ref, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "score", "--ref", ref / "1a", "--res", SAMPLES / "1a")
    assert code == 0 and list(tmp_path.iterdir()) == []
    assert json.loads(out) == score_submission(Reference.read(ref / "1a"), SAMPLES / "1a").scores
    assert "phase rules" not in err  # no page written, none announced
    code, _, _ = _cli(capsys, "score", "--ref", ref / "1a", "--res", SAMPLES / "1a", "--out", tmp_path / "o")
    assert code == 0 and json.loads((tmp_path / "o" / "scores.json").read_text()) == json.loads(out)


def _independent_per_topic(reference: Reference, run: Path) -> dict[str, dict[str, float]]:
    """The sample run's per-topic figures by the independent implementation (tests/independent_scorer)."""
    key_of = {t.topic_id: t.key for t in reference.topics}
    domain_of = {t.key: t.domain for t in reference.topics}
    lines = []
    for text in run.read_text().splitlines():
        topic, _, doc, rank, score, _ = text.split()
        lines.append((key_of[topic], doc, int(rank), float(score)))
    ids = np.array(reference.doc_index.doc_ids.to_pylist(), dtype=object)
    corpus = {d: set(ids[(reference.doc_index.masks >> np.uint64(b)) & np.uint64(1) == 1])
              for b, d in enumerate(reference.doc_index.domains)}
    dup = None
    if reference.duplicate_map is not None:
        dup = dict(zip(reference.duplicate_map.removed.to_pylist(), reference.duplicate_map.kept.to_pylist()))
    decided = ind.decide_rankings(lines, domain_of, corpus, dup)
    qrels: dict[str, dict[str, int]] = {}
    for j in reference.judgments:
        qrels.setdefault(j.key, {})[j.doc_id] = j.relevance
    return {t.key: ind.topic_metrics(decided.get(t.key, []), qrels[t.key]) for t in reference.topics}


def test_q_prints_trec_eval_style_per_topic_rows_then_all_rows(ref, capsys):
    code, out, _ = _cli(capsys, "score", "--ref", ref / "1a", "--res", SAMPLES / "1a", "-q")
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert all(len(r) == 3 for r in rows)
    figures: dict[tuple[str, str], float] = {(k, t): float(v) for k, t, v in rows}
    expected = _independent_per_topic(Reference.read(ref / "1a"), SAMPLES / "1a" / "run.txt")
    for topic, values in expected.items():
        for key, value in values.items():
            assert figures[(key, topic)] == pytest.approx(value, abs=1e-12), (key, topic)
    # Topic by topic (as trec_eval -q), then the `all` rows: exactly the scores.json figures.
    topics = [t for _, t, _ in rows if t != "all"]
    blocks = [t for i, t in enumerate(topics) if i == 0 or topics[i - 1] != t]
    assert len(blocks) == len(set(blocks)) == len(expected)  # each topic's rows together
    all_rows = [r for r in rows if r[1] == "all"]
    assert rows[-len(all_rows):] == all_rows
    scores = score_submission(Reference.read(ref / "1a"), SAMPLES / "1a").scores
    assert {k: float(v) for k, t, v in rows if t == "all"} == scores
    # The temporal diagnostics per query too (TP@10 etc.), the periods counts are no figures.
    assert ("tp_10", topics[0]) in figures and not any(k == "required_periods" for k, _, _ in rows)


def test_q_for_answers_prints_each_turns_text_metrics(ref, capsys):
    code, out, _ = _cli(capsys, "score", "--ref", ref / "2c", "--res", SAMPLES / "2c", "-q")
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    turns = {t for k, t, _ in rows if k == "rouge_l" and t != "all"}
    assert turns == {t.key for t in Reference.read(ref / "2c").topics}
    assert {t for k, t, _ in rows if k == "ndcg_10" and t != "all"} == turns


def test_several_runs_print_one_comparison_table(ref, tmp_path, capsys, monkeypatch):
    # Named as given, relative to the test's folder: a name over printable()'s limit would be cut
    # in the table, and the temporary folder's path is longer under pytest-xdist (popen-gwN/).
    monkeypatch.chdir(tmp_path)
    broken = Path("broken.txt")
    broken.write_text("only three columns\n")
    other = Path("other") / "run.txt"
    other.parent.mkdir()
    # The sample's first half of each topic's ranking: a weaker run.
    kept = [line for line in (SAMPLES / "1a" / "run.txt").read_text().splitlines() if int(line.split()[3]) <= 5]
    other.write_text("\n".join(kept) + "\n")
    code, out, err = _cli(capsys, "score", "--ref", ref / "1a", "--res", SAMPLES / "1a" / "run.txt", other, broken)
    assert code == EXIT_INPUT  # one of them could not be scored: said, and the others still compared
    lines = out.splitlines()
    header = lines[0].split()
    assert header[:4] == ["submission", "topics", "ndcg_10", "(official)"]
    assert header[-3:] == ["unknown_doc_ids", "duplicate_doc_ids", "topics_ignored"]
    reference = Reference.read(ref / "1a")
    for line, run in zip(lines[1:3], (SAMPLES / "1a" / "run.txt", other)):
        cells = line.split()
        scores = score_submission(reference, run).scores
        assert cells[0] == str(run) and cells[1] == f"{len(reference.topics)}/{len(reference.topics)}"
        assert cells[2] == f"{scores['ndcg_10']:.4f}" and cells[3] == f"{scores['map_10']:.4f}"
    assert lines[3].split()[0] == str(broken) and "not scored" in lines[3]
    assert f"== {broken}" in err and "broken.txt:1: error" in err


def test_several_runs_with_out_get_a_folder_each(ref, tmp_path, capsys):
    copy = tmp_path / "again" / "run.txt"
    copy.parent.mkdir()
    shutil.copy(SAMPLES / "1a" / "run.txt", copy)
    code, _, _ = _cli(capsys, "score", "--ref", ref / "1a", SAMPLES / "1a" / "run.txt", copy, "--out", tmp_path / "o")
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["run", "run-2"]
    assert all((tmp_path / "o" / n / "detailed_results.html").is_file() for n in ("run", "run-2"))


@pytest.mark.parametrize("extra, message", [
    (("-q", "--res", "x"), "-q prints one submission's per-topic figures"),
    (("-q", "--no-per-topic"), "-q prints the per-topic figures that --no-per-topic leaves out"),
    (("--res", "-", "--res", "-"), "standard input (-) can be read once"),
])
def test_contradictory_options_are_usage_errors(ref, capsys, extra, message):
    code, _, err = _cli(capsys, "score", "--ref", ref / "1a", "--res", SAMPLES / "1a", *extra)
    assert code == EXIT_USAGE and message in err


def test_q_is_refused_where_the_phase_withholds_per_topic_figures(ref, tmp_path, capsys):
    from reteco.workbench.codabench.bundle import competition as definition

    copy = tmp_path / "1a"
    shutil.copytree(ref / "1a", copy)
    phase = next(p for p in definition.PHASES if p.key == "evaluation")
    (copy / "phase.json").write_text(json.dumps(definition.phase_record(phase, "1a")))
    code, _, err = _cli(capsys, "score", "--ref", copy, "--res", SAMPLES / "1a", "-q")
    assert code == EXIT_USAGE and "withhold per-topic figures" in err


def test_validate_help_says_what_benchmark_does(capsys):
    assert main(["validate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "instead of --ref: validate against a graded benchmark's plain qrels (--qrels)" in text


def test_the_judge_not_run_reason_is_said_once(ref, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = _cli(capsys, "score", "--ref", ref / "2b", "--res", SAMPLES / "2b")
    assert code == 0
    assert err.count("the judge did not run") == 1, err
    assert "correctness" in err and "judge_mean" in err  # the keys it leaves out, named once


def test_validate_and_score_count_the_topics_a_run_ranks_the_same_way(ref, tmp_path, capsys):
    """The input that triggered it (issue 22): topics whose every line names a document id
    unknown to the corpus. `validate` said "18 of 18 topics ranked" where `score` said 12/18: a
    topic left without a ranked document is not ranked (it scores 0), for both commands."""
    lines = (SAMPLES / "1a" / "run.txt").read_text().splitlines()
    topics = list(dict.fromkeys(line.split()[0] for line in lines))
    unranked = set(topics[:2])
    run = tmp_path / "run.txt"
    run.write_text("".join(
        (" ".join([c[0], c[1], "no-such-doc-" + c[2], *c[3:]]) if c[0] in unranked else line) + "\n"
        for line in lines for c in [line.split()]
    ))
    total = len(Reference.read(ref / "1a").topics)
    assert total == len(topics)  # the sample ranks every topic
    code, out, err = _cli(capsys, "validate", "--ref", ref / "1a", run)
    assert code == 0 and f"{total - 2} of {total} reference topics ranked" in out + err
    code, out, _ = _cli(capsys, "score", "--ref", ref / "1a", "--res", run, "--res", SAMPLES / "1a" / "run.txt")
    assert code == 0
    assert out.splitlines()[1].split()[:2] == [str(run), f"{total - 2}/{total}"]
