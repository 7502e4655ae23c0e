"""Runs read as the other tools read them where the plan allows (issue 35): a run none of whose
documents is in the corpus is refused with the likely cause, quoting only the run's own ids; a
DataFrame without a rank column is ranked by its scores, so no warning names a rank column it
does not have."""

from __future__ import annotations

import pandas as pd
import pytest

import reteco
from reteco.commands import main


def _lines(path):
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path, rows):
    path.write_text("".join(" ".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _refusal(capsys, ref, run) -> str:
    assert main(["score", "--ref", str(ref), "--res", str(run)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_every_id_with_a_prefix_is_refused_naming_the_prefix(kit, tmp_path, capsys):
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    run = _write(tmp_path / "run.txt", [[t, q, "corpus/" + d, r, s, g] for t, q, d, r, s, g in rows])
    err = _refusal(capsys, kit / "ref/2a", run)
    assert f"run.txt: error: none of the run's document ids is in the corpus of its topic's domain ({len(rows)} lines, " \
           f"e.g. 'corpus/{rows[0][2]}'" in err
    assert "every id starts with 'corpus/': without it 2000 of the 2000 ids checked are corpus ids; remove it" in err
    with pytest.raises(reteco.InputError, match="every id starts with 'corpus/'"):
        reteco.evaluate(run, kit / "ref/2a")


def test_every_id_with_a_suffix_is_refused_naming_the_suffix(kit, tmp_path, capsys):
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    run = _write(tmp_path / "run.txt", [[t, q, d + ".bak", r, s, g] for t, q, d, r, s, g in rows])
    assert "every id ends with '.bak': without it 2000 of the 2000 ids checked are corpus ids; remove it" in \
        _refusal(capsys, kit / "ref/2a", run)


def test_ids_without_their_domain_are_refused_saying_so(kit, tmp_path, capsys):
    # 1a's corpus ids are <domain>/<file>: a run that dropped the domain part.
    rows = _lines(kit / "sample_submissions/1a/run.txt")
    assert all(d.count("/") == 1 for _, _, d, *_ in rows)
    run = _write(tmp_path / "run.txt", [[t, q, d.split("/", 1)[1], r, s, g] for t, q, d, r, s, g in rows])
    err = _refusal(capsys, kit / "ref/1a", run)
    assert "the ids lack their domain: written <domain>/<id> (e.g. " in err and "are corpus ids" in err


def test_another_domains_ids_are_refused_saying_so(kit, tmp_path, capsys):
    # Every topic ranks the documents the sample ranks for a topic of another domain.
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    drones = [r for r in rows if r[0].startswith("ex_")]
    others = [r for r in rows if not r[0].startswith("ex_")]
    swapped = [["biology/2_turn_1", q, d, r, s, g] for _, q, d, r, s, g in drones]
    swapped += [["drones/ex_26716_turn_1", q, d, r, s, g] for _, q, d, r, s, g in others]
    err = _refusal(capsys, kit / "ref/2a", _write(tmp_path / "run.txt", swapped))
    assert "are ids of another domain's corpus: rank each topic against its own domain's corpus" in err


def test_ids_of_no_corpus_at_all_are_refused_with_the_general_advice(kit, tmp_path, capsys):
    run = _write(tmp_path / "run.txt", [["biology/2_turn_1", "Q0", f"doc{i}", i + 1, 10 - i, "t"] for i in range(3)])
    err = _refusal(capsys, kit / "ref/2a", run)
    assert "(3 lines, e.g. 'doc0', 'doc1', 'doc2'); rank the documents of the official corpus" in err


def test_one_known_document_is_enough_to_be_scored(kit, tmp_path, capsys):
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    changed = [[t, q, "corpus/" + d if i else d, r, s, g] for i, (t, q, d, r, s, g) in enumerate(rows)]
    assert main(["score", "--ref", str(kit / "ref/2a"), "--res", str(_write(tmp_path / "run.txt", changed))]) == 0
    assert f"{len(rows) - 1} lines rank a document id that is not in the topic's domain corpus" in capsys.readouterr().err


def test_a_dataframe_without_rank_is_ranked_by_score_and_warns_of_no_rank_column(kit):
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    frame = pd.DataFrame({"query_id": [r[0] for r in rows], "doc_id": [r[2] for r in rows],
                          "score": [float(r[4]) for r in rows]}).iloc[::-1]  # worst first
    result = reteco.evaluate(frame, kit / "ref/2a")
    assert result.scores == reteco.evaluate(kit / "sample_submissions/2a/run.txt", kit / "ref/2a").scores
    assert not any("rank column" in w for w in result.warnings)
    as_dict: dict = {}
    for r in reversed(rows):
        as_dict.setdefault(r[0], {})[r[2]] = float(r[4])
    assert not any("rank column" in w for w in reteco.evaluate(as_dict, kit / "ref/2a").warnings)


def test_a_negative_rank_is_refused_and_rank_0_is_read_with_a_warning(kit, tmp_path, capsys):
    rows = _lines(kit / "sample_submissions/2a/run.txt")
    zero = _write(tmp_path / "zero.txt", [[t, q, d, int(r) - 1, s, g] for t, q, d, r, s, g in rows])
    assert main(["score", "--ref", str(kit / "ref/2a"), "--res", str(zero)]) == 0
    assert "the ranks start at 0 (as PyTerrier writes them)" in capsys.readouterr().err
    negative = _write(tmp_path / "negative.txt", [[t, q, d, int(r) - 2, s, g] for t, q, d, r, s, g in rows])
    assert "negative.txt:1: error: rank -1 is negative; ranks start at 1 (or at 0, as PyTerrier writes them)" in \
        _refusal(capsys, kit / "ref/2a", negative)


def test_the_rank_warning_quotes_the_topic_as_the_run_spelled_it(kit, tmp_path, capsys):
    # biology/2_turn_1 written qualified, its ranks reversed: the example is the run's own spelling,
    # never the bare '2_turn_1', which names a topic of two domains.
    rows = [r for r in _lines(kit / "sample_submissions/2a/run.txt") if r[0] == "biology/2_turn_1"]
    run = _write(tmp_path / "run.txt", [[t, q, d, len(rows) - int(r) + 1, s, g] for t, q, d, r, s, g in rows])
    assert main(["score", "--ref", str(kit / "ref/2a"), "--res", str(run)]) == 0
    assert "in 1 topics (e.g. 'biology/2_turn_1') the rank column disagrees with the scores" in capsys.readouterr().err
