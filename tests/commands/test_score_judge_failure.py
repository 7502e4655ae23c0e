"""A judge that could not run is exit 4 of ``reteco score`` (outside the platform), with the
parameter the server rejected named on stderr; the Codabench scoring program, against the same
server, keeps its own rule (exit 0 with the judge keys absent; 2b refused as unranked, exit 4).

The server is the fake OpenAI server in llama-cpp-python's mode: it answers every request whose
``response_format`` is ``json_schema`` with HTTP 500 and pydantic's text (issue 18, item 7:
``details.json`` named the parameter, the console did not, and the exit was 0)."""

from __future__ import annotations

import json

import pytest
from support.fake_openai_server import LLAMA_CPP_PYTHON, FakeOpenAI
from support.judged_program import judge_yaml, judged_input
from support.paths import SAMPLES

from reteco.codabench.program import scoring_program
from reteco.commands import main
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK
from reteco.subtracks import DIMENSIONS, JUDGE_MEAN


@pytest.fixture
def rejecting_server():
    """The fake server refusing ``response_format: json_schema`` as llama-cpp-python does."""
    server = FakeOpenAI(mode=LLAMA_CPP_PYTHON)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_score_exits_4_naming_the_rejected_parameter(ref_root, rejecting_server, tmp_path, capsys):
    config = judge_yaml(tmp_path, rejecting_server.base_url)
    for subtrack in ("2b", "2c"):
        out = tmp_path / f"out-{subtrack}"
        code = main(["score", "--ref", str(ref_root / subtrack), "--res", str(SAMPLES / subtrack), "--out", str(out),
                     "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache")])
        err = capsys.readouterr().err
        assert code == EXIT_INCOMPLETE, err
        (line,) = [line for line in err.splitlines() if line.startswith("error: the judge could not run")]
        assert "the server rejected `response_format`" in line and "HTTP 500" in line, line
        # What could be scored is written, without the judge's keys.
        scores = json.loads((out / "scores.json").read_text())
        assert "rouge_l" in scores and not {*DIMENSIONS, JUDGE_MEAN} & set(scores)


def test_a_judge_config_without_a_key_is_exit_4_but_no_judge_asked_for_is_not(ref_root, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = tmp_path / "judge.yaml"
    config.write_text("prompt_version: 2\nmodel: m\nbase_url: http://127.0.0.1:9/v1\n")
    base = ["score", "--ref", str(ref_root / "2b"), "--res", str(SAMPLES / "2b"), "--judge-cache", str(tmp_path / "c")]
    assert main([*base, "--judge-config", str(config)]) == EXIT_INCOMPLETE
    assert "error: the judge could not run: no API key: the environment variable OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert main(base) == EXIT_OK  # the judge is not configured: the keys are absent, said, exit 0
    assert "error:" not in capsys.readouterr().err


@pytest.mark.slow
def test_the_scoring_program_keeps_exit_0_for_2c_and_refuses_2b_unranked(ref_root, rejecting_server, tmp_path, capsys):
    for subtrack, expected in (("2c", EXIT_OK), ("2b", EXIT_INCOMPLETE)):
        work = tmp_path / subtrack
        work.mkdir()
        input_dir = judged_input(work, ref_root, subtrack, judge_yaml(work, rejecting_server.base_url))
        assert scoring_program.main([str(input_dir), str(work / "output")]) == expected, capsys.readouterr().err
        details = json.loads((work / "output" / "details.json").read_text())
        assert "response_format" in details["generation"]["judge"]["stopped"]["detail"]
    scores = json.loads((tmp_path / "2c" / "output" / "scores.json").read_text())
    assert "ndcg_10" in scores and not {*DIMENSIONS, JUDGE_MEAN} & set(scores)
    assert not (tmp_path / "2b" / "output" / "scores.json").exists()  # refuse_unranked
