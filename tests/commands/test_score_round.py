"""``reteco score --round LABELS``: the unjudged diagnostics with a relevance round, on a prepared
synthetic reference; the round's labels reach neither the participant's page nor the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import SAMPLES

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.problems import EXIT_INPUT, EXIT_USAGE
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


@pytest.fixture(scope="module")
def ref(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("score_round")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref")
    return root / "ref"


def _run_docs(run: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        topic, _, doc, *_ = line.split()
        out.setdefault(topic, []).append(doc)
    return out


def _written(folder: Path, captured) -> str:
    return "\n".join(p.read_text() for p in sorted(folder.iterdir()) if p.is_file()) + captured.out + captured.err


def test_round_diagnostics_and_no_label_in_page_or_log(ref, tmp_path, capsys):
    reference = Reference.read(ref / "1a")
    run = next((SAMPLES / "1a").glob("*.txt"), None) or next(p for p in (SAMPLES / "1a").iterdir() if p.is_file())
    ranked = _run_docs(run)
    judged = {(j.key, j.doc_id) for j in reference.judgments}
    corpus = reference.doc_index.doc_ids.to_pylist()
    labels = []
    for topic in reference.topics:
        docs = ranked.get(topic.topic_id, ranked.get(topic.key, []))
        for doc in docs[:10]:
            if (topic.key, doc) not in judged:
                labels.append((topic.key, doc, 3))
        unranked = [d for d in corpus if d not in docs and (topic.key, d) not in judged][:2]
        labels += [(topic.key, d, 2) for d in unranked]
    assert labels
    round_file = tmp_path / "round.qrels"
    round_file.write_text("".join(f"{k} 0 {d} {level}\n" for k, d, level in labels))

    assert main(["score", "--ref", str(ref / "1a"), "--res", str(run), "--out", str(tmp_path / "plain")]) == 0
    plain = _written(tmp_path / "plain", capsys.readouterr())
    assert main(["score", "--ref", str(ref / "1a"), "--res", str(run), "--out", str(tmp_path / "round"),
                 "--round", str(round_file)]) == 0
    captured = capsys.readouterr()
    with_round = _written(tmp_path / "round", captured)

    details = json.loads((tmp_path / "round" / "details.json").read_text())
    section = details["unjudged"]
    assert section["round"]["labels_of_reference_topics"] == len(labels)
    # Every ranked unjudged top-10 document was labelled 3: nothing of the top 10 is left unjudged.
    assert section["overall"]["unjudged_10"] == pytest.approx(
        sum(max(0, 10 - len(ranked.get(t.topic_id, []))) for t in reference.topics) / 10 / len(reference.topics), abs=1e-12
    )
    assert set(section["overall"]) == {"unjudged_10", "round_labelled_10", "ndcg_10_augmented", "ndcg_10_condensed"}
    # The scores are the same with and without the round.
    scores = lambda folder: json.loads((tmp_path / folder / "scores.json").read_text())  # noqa: E731
    assert scores("plain") == scores("round")
    for key, doc, level in labels:
        if doc not in plain:
            assert doc not in with_round, f"a round label's document reached the page, details or log ({level})"
    assert "round.qrels" not in (tmp_path / "round" / "detailed_results.html").read_text()


def test_round_of_another_subtrack_is_exit_1_naming_the_file(ref, tmp_path, capsys):
    round_file = tmp_path / "foreign.qrels"
    round_file.write_text("nowhere/q1 0 some_doc 3\n")
    run = next(p for p in (SAMPLES / "1a").iterdir() if p.is_file())
    code = main(["score", "--ref", str(ref / "1a"), "--res", str(run), "--round", str(round_file)])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and "foreign.qrels" in err and "Traceback" not in err and "some_doc" not in err


@pytest.mark.slow
def test_leaderboard_round_through_worker_processes(ref, tmp_path, capsys):
    """``reteco leaderboard --round`` with two scoring processes (spawned: the round's path
    travels in the options and each worker reads the labels itself), over two sub-tracks of
    which the round labels one: the other is ranked without round figures, and says so."""
    reference = Reference.read(ref / "1a")
    run = next(p for p in (SAMPLES / "1a").iterdir() if p.is_file())
    subs = tmp_path / "subs"
    (subs / "1a").mkdir(parents=True)
    (subs / "2a").mkdir()
    (subs / "2a" / "kit__run.txt").write_bytes(next(p for p in (SAMPLES / "2a").iterdir() if p.is_file()).read_bytes())
    lines = run.read_text().splitlines()
    (subs / "1a" / "kit__full.txt").write_text("\n".join(lines) + "\n")
    (subs / "1a" / "kit__top3.txt").write_text("\n".join(x for x in lines if int(x.split()[3]) <= 3) + "\n")
    judged = {(j.key, j.doc_id) for j in reference.judgments}
    ranked = _run_docs(run)
    labels = [(t.key, d, 3) for t in reference.topics
              for d in ranked.get(t.topic_id, ranked.get(t.key, []))[3:10] if (t.key, d) not in judged]
    round_file = tmp_path / "round.qrels"
    round_file.write_text("".join(f"{k} 0 {d} {level}\n" for k, d, level in labels))
    code = main(["leaderboard", "--ref", str(ref), "--submissions", str(subs), "--out", str(tmp_path / "lb"),
                 "--round", str(round_file), "--jobs", "2", "--resamples", "200", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "2a: the round labels none of its topics: no round figures" in err
    other = json.loads((tmp_path / "lb" / "2a" / "leaderboard.json").read_text())
    assert "round" not in other and other["systems"] and not other["failed"]
    board = json.loads((tmp_path / "lb" / "1a" / "leaderboard.json").read_text())
    rows = {r["name"]: r for r in board["round"]["systems"]}
    assert set(rows) == {"kit/full", "kit/top3"}
    # Only the full run retrieves the labelled documents (ranks 4-10): only its figures rise.
    assert rows["kit/top3"]["round_labelled_10"] == 0.0 and rows["kit/full"]["round_labelled_10"] > 0
    assert board["round"]["round"]["labels_of_reference_topics"] == len(labels)
    assert (tmp_path / "lb" / "1a" / "plots" / "official_vs_augmented.svg").is_file()
    assert "kendall_tau_b" in board["round"]["agreement"]["ndcg_10_augmented"]


def test_round_for_a_subtrack_without_runs_is_a_usage_error(ref, tmp_path, capsys):
    round_file = tmp_path / "round.qrels"
    round_file.write_text("d/q 0 doc 3\n")
    code = main(["score", "--ref", str(ref / "2b"), "--res", str(SAMPLES / "2b"), "--round", str(round_file)])
    assert code == EXIT_USAGE and "ranks no documents" in capsys.readouterr().err
