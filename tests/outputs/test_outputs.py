"""scores.json and details.json writers."""

from __future__ import annotations

import json
import math

import pytest

from reteco.outputs.scores import ROWS_PER_LINE_FROM, write_details, write_scores


def test_scores_must_be_finite(tmp_path):
    with pytest.raises(ValueError, match="non-finite"):
        write_scores(tmp_path, {"ndcg_10": 0.5, "map_10": math.nan})
    assert not (tmp_path / "scores.json").exists()
    write_scores(tmp_path, {"ndcg_10": 0.5, "mrr": 1})
    assert json.loads((tmp_path / "scores.json").read_text()) == {"ndcg_10": 0.5, "mrr": 1.0}


def test_details_round_trip_with_nan_as_null_and_one_row_per_line(tmp_path):
    rows = [{"unit": f"d/q{i}", "ndcg_10": i / 7} for i in range(ROWS_PER_LINE_FROM)]
    details = {"counts": {"lines_read": 3}, "per_unit": rows, "short": [1, 2], "undefined": math.inf, "empty": {}}
    text = write_details(tmp_path, details).read_text()
    back = json.loads(text)
    assert back["per_unit"] == rows and back["short"] == [1, 2] and back["empty"] == {}
    assert back["undefined"] is None
    assert f'    {json.dumps(rows[3])},' in text.splitlines()  # a compact row on its own line
    assert '    "lines_read": 3' in text.splitlines()  # the rest indented


def test_arrow_to_numpy_matches_arrow_and_skips_pandas():
    import subprocess
    import sys

    # pa.array of a Python list imports pandas itself, so the arrays come from Arrow's CSV reader.
    code = (
        "import sys, pyarrow as pa, pyarrow.compute as pc, pyarrow.csv as pcsv\n"
        "from reteco.formats.arrow_arrays import to_numpy\n"
        "t = pcsv.read_csv(pa.py_buffer(b'i,f,b,s\\n3,1.5,true,b\\n1,2.5,false,x\\n2,0.5,true,a\\n'))\n"
        "assert to_numpy(t.column('i')).tolist() == [3, 1, 2]\n"
        "assert to_numpy(t.column('f').chunk(0).slice(1)).tolist() == [2.5, 0.5]\n"
        "assert to_numpy(t.column('b').chunk(0).slice(1)).tolist() == [False, True]\n"
        "found = pc.index_in(t.column('s'), value_set=t.column('s').chunk(0).slice(2))\n"
        "assert to_numpy(found, fill=-1).tolist() == [-1, -1, 0]\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
        "a = pa.chunked_array([pa.array([3, 1, 2], pa.int64()), pa.array([7], pa.int64())])\n"
        "assert to_numpy(a).tolist() == [3, 1, 2, 7]\n"
        "assert to_numpy(pa.array([1.5, 2.5]).slice(1)).tolist() == [2.5]\n"
        "assert to_numpy(pa.array([True, False, True]).slice(1)).tolist() == [False, True]\n"
        "assert to_numpy(pa.array([5, 6, 7], pa.uint64()).slice(2)).tolist() == [7]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_hidden_phase_withholds_per_topic_figures_by_construction_whatever_their_name(tmp_path):
    """Per-topic figures live in ``ScoreResult.per_topic``: a phase that withholds them never
    writes that field, so a section named like an aggregate, or with records naming no topic
    field, cannot slip through (the former guess by key names published both)."""
    from reteco.outputs.results import write_results
    from reteco.problems import Problems
    from reteco.scoring.retrieval import ScoreResult

    scores = {"ndcg_10": 0.5, "map_10": 0.4, "recall_10": 0.6, "p_10": 0.1, "mrr": 0.5, "ndcg_10_domain_macro": 0.5}
    rows = [{"item": "q1", "ndcg_10": 0.5}, {"item": "q2", "ndcg_10": 0.5}]
    result = ScoreResult(
        scores, {"overall": {"ndcg_10": 0.5}, "per_domain": {"d": {"ndcg_10": 0.5}}, "generation": {"turns": 2}},
        Problems(), per_topic={"per_domain_rows": rows, "generation.each": rows}, per_topic_after="overall",
    )
    hidden = {"phase": "final", "name": "Evaluation", "split": "test", "per_topic": False}
    write_results(tmp_path / "hidden", result, "2a", hidden)
    written = json.loads((tmp_path / "hidden" / "details.json").read_text())
    assert "per_domain_rows" not in written and written["generation"] == {"turns": 2}
    assert written["per_topic_withheld"] is True and "q1" not in (tmp_path / "hidden" / "detailed_results.html").read_text()
    shown = {"phase": "dev", "name": "Development", "split": "dev", "per_topic": True}
    write_results(tmp_path / "shown", result, "2a", shown)
    written = json.loads((tmp_path / "shown" / "details.json").read_text())
    assert list(written)[:3] == ["overall", "per_domain_rows", "per_domain"]  # in its place
    assert written["per_domain_rows"] == rows and written["generation"] == {"turns": 2, "each": rows}
    assert "per_topic_withheld" not in written
    assert result.details == {"overall": {"ndcg_10": 0.5}, "per_domain": {"d": {"ndcg_10": 0.5}}, "generation": {"turns": 2}}
