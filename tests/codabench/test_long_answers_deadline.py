"""The judging deadline holds for the largest answers the format accepts: the scoring program,
run as the worker runs it (``scoring_program/score.py INPUT OUTPUT``, a child process, its wall
time measured from before the process starts), on 2b and 2c submissions whose answers are at
the limits of ``pages/submission_format.md`` (32,000 characters of CJK text; 4,000
English words, the most ROUGE-L's LCS and METEOR cost per answer), judged by a slow fake judge
(1 s a request, 4 at a time) in a 60 s phase, the limit of the reported overrun (60.24 s).

The margin covers a loaded machine: the text metrics run before judging (their real cost comes
out of the judging window, ``reteco.codabench.program.judge_plan``), so what can be late is only what
the reserve covers (the interpreter's start, measured; the outputs, scaled by how slowly the run
started). The child process uses about 8 s of CPU (WordNet's loading 4.5 s, the four 4,000-word
answers ~2 s): with two busy loops on the 2 cores of the development machine it gets 2/3 of a
core, ~12 s of wall time before the deadline (~45 s in when quiet, ~38 s at a slowdown of 2). What no margin can cover is a machine so loaded that those 8 CPU-seconds
take the whole limit (measured: 65-71 s at a load average of 14 on 2 cores, 1/8 of a core).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from support.judged_program import judge_yaml, judged_input
from support.paths import REPO_ROOT

from reteco.codabench.program.scoring_program import UNRANKED_SCORES
from reteco.formats.answers import MAX_ANSWER_CHARS, MAX_ANSWER_WORDS
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK
from reteco.subtracks import JUDGE, SUBTRACKS

LIMIT_S = 60  # the limit of the reported overrun (60.24 s)
LONG_ANSWERS = 4  # of each kind: the rest of the turns keep the sample's answers
SENTENCE = "The motor's bearings are sealed and pre-greased at the factory, so no oil reaches the housing. "


def longest_english() -> str:
    """4,000 words (the word limit) within 32,000 characters."""
    words = (SENTENCE * (MAX_ANSWER_WORDS // len(SENTENCE.split()) + 1)).split()[:MAX_ANSWER_WORDS]
    text = " ".join(words)
    assert len(text) <= MAX_ANSWER_CHARS and len(text.split()) == MAX_ANSWER_WORDS
    return text


def longest_cjk() -> str:
    """32,000 characters (the character limit) of CJK text: one word, as it has no blank."""
    return "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(MAX_ANSWER_CHARS))


@pytest.fixture
def slow_server(slow_judge_server):
    return slow_judge_server(1.0)


@pytest.mark.parametrize("sub", ["2b", "2c"])
@pytest.mark.slow
def test_the_largest_answers_are_scored_within_the_limit_with_a_slow_judge(ref_root, tmp_path, slow_server, sub):
    config = judge_yaml(tmp_path, slow_server.base_url, concurrency=4)
    input_dir = judged_input(tmp_path, ref_root, sub, config, limit=LIMIT_S)
    answers_file = input_dir / "res" / "answers.jsonl"
    sample = [json.loads(line) for line in answers_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    long_texts = [longest_english()] * LONG_ANSWERS + [longest_cjk()] * LONG_ANSWERS
    for row, text in zip(sample, long_texts):
        row["answer"] = text
    answers_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in sample), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}

    started = time.monotonic()
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scoring_program" / "score.py"), str(input_dir),
                           str(tmp_path / "output")], capture_output=True, text=True, env=env, timeout=LIMIT_S + 60)
    wall = time.monotonic() - started

    log = done.stdout + done.stderr
    # A sub-track ranked by the judge mean (2b) is failed without it, never ranked with an empty
    # column (scoring_program.refuse_unranked); its figures stay in the output for the organizers.
    unranked = SUBTRACKS[sub].ranked_may_be_absent
    assert done.returncode == (EXIT_INCOMPLETE if unranked else EXIT_OK), log
    assert wall < LIMIT_S, f"{wall:.1f} s for a {LIMIT_S} s limit\n{log}"
    scores = json.loads((tmp_path / "output" / (UNRANKED_SCORES if unranked else "scores.json")).read_text())
    details = json.loads((tmp_path / "output" / "details.json").read_text())
    # 255 or more requests at 1 s, 4 at a time, need over 60 s: judging is stopped by the deadline.
    assert not set(JUDGE) & set(scores) and {"rouge_l", "meteor"} <= set(scores)
    reason = details["absent_scores"]["judge_mean"]
    assert reason.startswith("the judge did not finish: judging reached this run's time limit before every answer "
                             "was judged") and reason in log
    judge = details["generation"]["judge"]
    assert judge["plan"]["time_limit_s"] == LIMIT_S and judge["window"]["text_metrics_s"] > 0
    assert details["generation"]["answers"]["answers"] == len(sample)  # every long answer was accepted
    assert f"judge: the text metrics took {judge['window']['text_metrics_s']:.1f} s before judging" in log
