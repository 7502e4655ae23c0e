"""The suite's own checks fire: each rule of ``hostile_harness.check`` is shown failing on an
outcome that breaks it, and passing on one that keeps it (a check that cannot fail proves
nothing about the scorer)."""

from __future__ import annotations

import json

import pytest
from support.hostile_harness import GOLD_MARK, Case, Expect, Invocation, Outcome, Where, Workspace, check


def outcome(log: str, code: int = 1, **more) -> Outcome:
    return Outcome(code, log, 0.1, 100 * 2**20, **more)


def refused_case(**bounds) -> Case:
    return Case("probe", lambda ws: None, Expect.refused("run.txt", 3, "columns"), **bounds)


def failures(case: Case, result: Outcome, ws: Workspace, out=None) -> list[str]:
    return check(case, Invocation([], "reteco", out), result, ws)


GOOD = "run.txt:3: error: expected 6 columns: topic Q0 docid rank score tag, found 5\n"


def test_a_clean_refusal_passes(workspace):
    assert failures(refused_case(), outcome(GOOD), workspace) == []


@pytest.mark.parametrize(
    "result, broken",
    [
        (outcome(GOOD, code=0), "exit code 0, expected 1"),
        (outcome(GOOD, code=3), "internal error"),
        (outcome("internal error in reteco 0.1.0 (ValueError); please report it\n", code=2), "internal error"),
        (outcome(GOOD + "Traceback (most recent call last):\n  File x\n"), "traceback"),
        (outcome("run.txt:4: error: expected 6 columns\n"), "no message located at 'run.txt:3"),
        (outcome("run.txt:3: error: rank 0 is not positive\n"), "does not say /columns/"),
        (outcome(GOOD + "x" * 70_000), "log of"),
        (outcome(GOOD, log_bytes=10 * 2**20), "log of 10,485,760 bytes"),
        (outcome(GOOD + "topic '\x1b[2J'\n"), "raw control character"),
        (outcome(GOOD + "\x9b31m\n"), "raw control character"),
        (outcome(GOOD, timed_out=True, code=None), "did not finish"),
        (Outcome(1, GOOD, 99.0, 1), "took 99.0 s"),
        (Outcome(1, GOOD, 0.1, 2**31), "peak RSS 2048 MiB"),
        (outcome(GOOD + f"e.g. 'bitcoin/{GOLD_MARK}abc.txt'\n"), "gold document id"),
        (outcome(GOOD + "ANSWERSECRET The answer\n"), "reference data (ANSWERSECRET"),
        (outcome(GOOD + "PASSAGESECRET text\n"), "reference data (PASSAGESECRET"),
    ],
    ids=[
        "wrong_exit_code", "exit_3", "old_exit_2_internal_error", "traceback", "wrong_line", "wrong_message",
        "log_too_long", "log_file_too_long", "raw_escape", "raw_c1_control", "timeout", "too_slow",
        "too_much_memory", "gold_id", "reference_answer", "passage_text",
    ],
)
def test_each_rule_fires(result, broken, workspace):
    found = failures(refused_case(), result, workspace)
    assert any(broken in f for f in found), found


def test_the_bound_on_error_lines_fires(workspace):
    case = Case("probe", lambda ws: None, Expect.refused("run.txt", 3, "columns", error_lines=1))
    assert failures(case, outcome(GOOD), workspace) == []
    found = failures(case, outcome(GOOD + GOOD.replace(":3:", ":4:")), workspace)
    assert found == ["2 error lines in the log, over the bound of 1"]


def test_a_score_written_on_refusal_is_caught(workspace):
    workspace.out.mkdir()
    (workspace.out / "scores.json").write_text('{"ndcg_10": 0.5}')
    found = failures(refused_case(), outcome(GOOD), workspace, out=workspace.out)
    assert any("scores.json written" in f for f in found), found


def test_a_leak_in_details_json_is_caught(workspace):
    workspace.out.mkdir()
    (workspace.out / "details.json").write_text(json.dumps({"x": f"d/{GOLD_MARK}1.txt"}))
    found = failures(refused_case(), outcome(GOOD), workspace, out=workspace.out)
    assert any("details.json" in f for f in found), found


def test_a_gold_id_of_the_participants_own_run_may_come_back_but_no_other(workspace):
    workspace.file("run.txt", f"q Q0 bitcoin/{GOLD_MARK}own.txt 1 1 x\n")
    own = outcome(GOOD + f"e.g. 'bitcoin/{GOLD_MARK}own.txt'\n")
    other = outcome(GOOD + f"e.g. 'bitcoin/{GOLD_MARK}other.txt'\n")
    assert failures(refused_case(), own, workspace) == []
    assert any("did not hold" in f for f in failures(refused_case(), other, workspace))


def test_accepted_scores_are_compared_exactly(workspace):
    workspace.out.mkdir()
    (workspace.out / "scores.json").write_text('{"ndcg_10": 0.25}')
    case = Case("probe", lambda ws: None, Expect.accepted(lambda ws: {"ndcg_10": 0.25 + 1e-9}))
    found = failures(case, outcome("", code=0), workspace, out=workspace.out)
    assert any("ndcg_10 = 0.25, expected" in f for f in found), found
    case = Case("probe", lambda ws: None, Expect.accepted(lambda ws: {"ndcg_10": 0.25}))
    assert failures(case, outcome("", code=0), workspace, out=workspace.out) == []


def test_locations_allow_a_folder_before_the_name_and_nothing_else():
    where = Where("run.txt", 3)
    assert where.regex().search("/app/input/res/run.txt:3: error: x")
    assert not where.regex().search("myrun.txt:3: error: x")
    assert not where.regex().search("run.txt:30: error: x")
    assert Where("run.txt").regex().search("run.txt: error: x")
    assert Where("run.txt").regex().search("run.txt:7: error: x")
