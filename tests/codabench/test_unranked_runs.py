"""No 2b run without its ranked figure reaches the leaderboard above a judged one.

Codabench orders a leaderboard by the ranked column descending, then the other columns in index
order, then submission time (``LeaderboardSerializer.get_submissions``,
``src/apps/api/serializers/leaderboards.py``, c7dbc75), and on PostgreSQL a missing score sorts
first in a descending order (issues #1284, #2321, #2470, #2512). Its worker posts a run's
scores only when the scoring program exits 0 (``run_wrapper``, ``compute_worker.py``). Both are
simulated here, independently of reteco's code, over real runs of the scoring program against
the fake OpenAI server on 127.0.0.1: judged runs, a run whose judge is unreachable and a run
that hits its call budget.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from support.judged_program import EVALUATION, judge_yaml, judged_input

from reteco.codabench.program import scoring_program
from reteco.commands import main
from reteco.problems import EXIT_INCOMPLETE, EXIT_OK
from reteco.subtracks import JUDGE_MEAN, SUBTRACKS
from reteco.workbench.codabench.bundle.leaderboards import columns

DEVELOPMENT = "development"


def postgres_order(rows: list[dict], keys: list[str]) -> list[dict]:
    """Rows (scores by key, ``created`` order) as PostgreSQL orders ``-col0, -col1, ..., created``:
    descending, a missing value (NULL) before every value."""

    def sort_key(row):
        # (0, ...) before (1, ...): NULL first; among values, larger first.
        return (*((0, 0.0) if row["scores"].get(k) is None else (1, -row["scores"][k]) for k in keys), row["created"])

    return sorted(rows, key=sort_key)


def platform_leaderboard(runs: list[dict]) -> list[dict]:
    """What Codabench lists: the runs whose program exited 0 with a scores.json, in its order."""
    keys = [c.key for c in sorted(columns(("2b",)), key=lambda c: c.index)]  # index 0: the ranked column
    posted = [r for r in runs if r["status"] == EXIT_OK and r["scores"] is not None]
    return postgres_order(posted, keys)


def score_2b(tmp_path: Path, ref_root: Path, name: str, base_url: str, *, answers: int | None = None,
             phase=EVALUATION, judge: bool = True, **settings) -> dict:
    """One platform run of the scoring program on 2b; ``answers``: keep only the first N lines."""
    work = tmp_path / name
    work.mkdir()
    input_dir = judged_input(work, ref_root, "2b", judge_yaml(work, base_url, **settings), phase=phase)
    if not judge:
        import shutil

        shutil.rmtree(input_dir / "ref" / "judge")
    if answers is not None:
        path = input_dir / "res" / "answers.jsonl"
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:answers]))
    status = scoring_program.main([str(input_dir), str(work / "output")])
    scores_file = work / "output" / "scores.json"
    unranked = work / "output" / scoring_program.UNRANKED_SCORES
    return {
        "name": name,
        "created": len(list(tmp_path.iterdir())),
        "status": status,
        "scores": json.loads(scores_file.read_text()) if scores_file.exists() else None,
        "unranked": json.loads(unranked.read_text()) if unranked.exists() else None,
        "res": input_dir / "res",
    }


@pytest.mark.slow
def test_an_unjudged_2b_run_never_ranks_above_a_judged_one(ref_root, tmp_path, server, capsys):
    assert SUBTRACKS["2b"].ranked == JUDGE_MEAN and SUBTRACKS["2b"].ranked_may_be_absent
    runs = [
        score_2b(tmp_path, ref_root, "down", "http://127.0.0.1:9/v1"),  # submitted first: earliest created
        score_2b(tmp_path, ref_root, "judged_all", server.base_url),
        score_2b(tmp_path, ref_root, "budget", server.base_url, max_calls_per_run=21, concurrency=1),
        score_2b(tmp_path, ref_root, "judged_part", server.base_url, answers=20),
    ]
    capsys.readouterr()
    by_name = {r["name"]: r for r in runs}
    for name in ("down", "budget"):
        run = by_name[name]
        assert run["status"] == EXIT_INCOMPLETE and run["scores"] is None
        # Its figures stay for the organizers: every key but the judge's.
        assert JUDGE_MEAN not in run["unranked"] and "rouge_l" in run["unranked"]
    board = platform_leaderboard(runs)
    assert [r["name"] for r in board] == ["judged_all", "judged_part"]
    assert all(r["scores"].get(JUDGE_MEAN) is not None for r in board)

    # The simulation catches the bug it guards against: had the unjudged runs been posted (exit 0
    # with their scores, as before), they would have ranked first.
    as_before = [{**r, "status": EXIT_OK, "scores": r["scores"] or r["unranked"]} for r in runs]
    assert [r["name"] for r in platform_leaderboard(as_before)][:2] == ["down", "budget"]


@pytest.mark.slow
def test_judge_submissions_judges_the_failed_run_from_the_bulk_download(ref_root, tmp_path, server, capsys):
    """The refused run is the team's last: the organizers' after-phase judging picks it up."""
    early = score_2b(tmp_path, ref_root, "early", server.base_url, answers=20)
    last = score_2b(tmp_path, ref_root, "last", "http://127.0.0.1:9/v1")
    assert early["status"] == EXIT_OK and last["status"] == EXIT_INCOMPLETE
    bulk = tmp_path / "bulk_submissions.zip"
    with zipfile.ZipFile(bulk, "w") as archive:
        for sid, run in ((11, early), (15, last)):
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as z:
                z.write(run["res"] / "answers.jsonl", "answers.jsonl")
            archive.writestr(f"{sid}_alice_PhaseId4_2027-01-2{sid % 10}_01-00_answers.zip", buffer.getvalue())
    out = tmp_path / "judged"
    capsys.readouterr()
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(bulk), "--out", str(out),
                   "--judge-config", str(tmp_path / "early" / "organizers" / "judge.yaml"),
                   "--judge-cache", str(tmp_path / "cache")])
    assert status == 0, capsys.readouterr().err
    table = (out / "judged_submissions_2b.csv").read_text().splitlines()
    header, row = table[0].split(","), table[1].split(",")
    assert row[header.index("submission")] == "15" and row[header.index(JUDGE_MEAN)] != ""


def test_a_phase_without_a_judge_lists_every_2b_row_with_an_empty_judge_mean(ref_root, tmp_path, server, capsys):
    """Development does not judge: no run is refused, and no row has the ranked figure, so none
    is above a judged one; the order is ROUGE-L's (the next column with figures), not a ranking."""
    from support.judged_program import definition

    development = next(p for p in definition.PHASES if p.key == DEVELOPMENT)
    runs = [score_2b(tmp_path, ref_root, name, server.base_url, answers=n, phase=development, judge=False)
            for name, n in (("few", 5), ("all", None))]
    capsys.readouterr()
    assert [r["status"] for r in runs] == [EXIT_OK, EXIT_OK] and server.all_chat_calls == 0
    board = platform_leaderboard(runs)
    assert all(JUDGE_MEAN not in r["scores"] for r in board)
    assert [r["name"] for r in board] == ["all", "few"]  # ROUGE-L decides
    assert board[0]["scores"]["rouge_l"] > board[1]["scores"]["rouge_l"]
