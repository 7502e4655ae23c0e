"""``reteco judge-submissions``: a Codabench bulk download judged after the phase, each team's
last submission in a per-team table; and the whole path from the platform's archive to a
re-score that pays nothing twice."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from support.fake_openai_server import asks_injection_flag, fake_judge, first_user_text, http_error, judgment
from support.intervals import walk_intervals
from support.judged_program import KEY, judge_yaml, judged_input
from support.paths import SAMPLES

from reteco.codabench.program import scoring_program
from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.judge import load_judge_config
from reteco.scoring.submission import score_submission
from reteco.subtracks import JUDGE, SUBTRACKS
from reteco.workbench.leaderboard import bulk_download as bd
from reteco.workbench.leaderboard import judge_submissions as js


def test_a_bulk_name_gives_id_owner_phase_time_and_file():
    parts = bd.parse_bulk_name("123_team_a_b_PhaseId7_2027-01-20_05-33_my_answers_PhaseId2.zip")
    assert parts == {"id": 123, "owner": "team_a_b", "phase": 7, "date": "2027-01-20", "time": "05-33",
                     "file": "my_answers_PhaseId2.zip"}
    assert bd.parse_bulk_name("answers.zip") is None
    assert bd.parse_bulk_name("12_alice_PhaseId7_2027-01-20:05-33_a.zip") is None  # ':' is replaced by the browser


def _bulk(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def test_a_bulk_download_is_read_with_what_it_could_not_fetch(tmp_path):
    source = _bulk(tmp_path / bd.BULK_ZIP, {
        "5_alice_PhaseId7_2027-01-20_05-33_a.zip": b"x",
        "9_alice_PhaseId7_2027-01-22_10-02_b.zip": b"x",
        "3_bob_PhaseId7_2027-01-19_59-59_answers.jsonl": b"x",
        "notes.txt": b"x",
        bd.FAILED_LIST: b"The following submissions failed to download:\n\n8_carol_PhaseId7_x.zip (HTTP 403)\n",
    })
    bulk = bd.read_bulk_download(source, tmp_path / "work")
    assert [(s.submission_id, s.owner, s.uploaded) for s in bulk.submissions] == [
        (3, "bob", "2027-01-19 59-59"), (5, "alice", "2027-01-20 05-33"), (9, "alice", "2027-01-22 10-02")]
    assert bulk.skipped == ["notes.txt"] and bulk.not_fetched == ["8_carol_PhaseId7_x.zip (HTTP 403)"]
    selection = bd.select(bulk, lambda paths: [None] * len(paths), source=source.name)  # every one passes
    assert [(s.owner, s.submission_id) for s in selection.kept] == [("alice", 9), ("bob", 3)]
    assert [(s.submission_id, by) for s, by in selection.superseded] == [(5, 9)]
    with pytest.raises(Exception, match="no submission named as Codabench's bulk download names them"):
        bd.read_bulk_download(_bulk(tmp_path / "empty.zip", {"readme.md": b"x"}), tmp_path / "work2")


def test_the_table_ranks_by_judge_mean_ties_sharing_a_rank():
    subs = [bd.BulkSubmission(Path(f"{i}"), f"{i}_{o}_PhaseId1_2027-01-01_00-00_a.zip", i, o, 1, "2027-01-01 00-00", "a.zip")
            for i, o in enumerate(["dora", "alice", "carl", "bob", "eve"], 1)]
    figure = {k: 0.5 for k in SUBTRACKS["2b"].keys}
    outcomes = [
        {"ok": True, "scores": {**figure, "judge_mean": 0.4}, "judge_reason": None, "flagged_answers": 2},
        {"ok": True, "scores": {**figure, "judge_mean": 0.6}, "judge_reason": None, "flagged_answers": 0},
        {"ok": True, "scores": {k: v for k, v in figure.items() if k not in JUDGE}, "judge_reason": "no key"},
        {"ok": True, "scores": {**figure, "judge_mean": 0.6}, "judge_reason": None},
        {"ok": False, "kind": "input", "errors": ["answers.jsonl:3: error: not JSON"]},
    ]
    rows = js.table_rows("2b", subs, outcomes)
    assert [(r["rank"], r["team"]) for r in rows] == [(1, "alice"), (1, "bob"), (3, "dora"), (None, "carl"), (None, "eve")]
    assert rows[3]["absent"]["judge_mean"] == "the judge did not run: no key"
    text = js.render_csv("2b", rows)
    table = list(csv.DictReader(io.StringIO(text)))
    assert table[0]["judge_mean"] == "0.6" and table[3]["judge_mean"] == "" and "not scored: answers.jsonl:3" in table[4]["notes"]
    # The answers the judge flagged, per submission (empty where the judge was not asked).
    assert [r["flagged_answers"] for r in table] == ["0", "", "2", "", ""]
    markdown = js.render_markdown("2b", rows, selection=None, judge="test")
    assert markdown.startswith("# 2b Gold-passage generation: submissions") and "| flagged |" in markdown


def _bulk_of_samples(tmp_path: Path, sub: str) -> Path:
    """alice: an early submission answering one turn, then the sample; bob: the sample less its
    last ten turns."""
    answers = (SAMPLES / sub / "answers.jsonl").read_text().splitlines(keepends=True)

    def zipped(lines):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            z.writestr("answers.jsonl", "".join(lines))
            if (SAMPLES / sub / "run.txt").is_file():  # 2c: the run too, or the input checks fail it
                z.writestr("run.txt", (SAMPLES / sub / "run.txt").read_text())
        return buffer.getvalue()

    return _bulk(tmp_path / bd.BULK_ZIP, {
        "11_alice_PhaseId4_2027-01-20_01-00_early.zip": zipped(answers[:1]),
        "15_alice_PhaseId4_2027-01-21_02-00_final.zip": zipped(answers),
        "12_bob_PhaseId4_2027-01-20_03-00_bob.zip": zipped(answers[:-10]),
    })


def test_the_command_judges_each_teams_last_submission(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url)
    out = tmp_path / "out"
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_samples(tmp_path, "2b")),
                   "--out", str(out), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache")])
    assert status == 0, capsys.readouterr().err
    table = list(csv.DictReader(io.StringIO((out / "judged_submissions_2b.csv").read_text())))
    assert [(r["rank"], r["team"], r["submission"]) for r in table] == [("1", "alice", "15"), ("2", "bob", "12")]
    expected = score_submission(Reference.read(ref_root / "2b"), SAMPLES / "2b", judge_config=load_judge_config(config),
                                cache_dir=tmp_path / "cache").scores
    assert {k: float(table[0][k]) for k in SUBTRACKS["2b"].keys if table[0][k]} == expected
    assert set(JUDGE) <= {k for k in SUBTRACKS["2b"].keys if table[1][k]}  # judge columns filled
    # What the verdicts cost, as the fake server reported it (100 prompt + 20 completion tokens a
    # call); no prices in the config: no money.
    calls = int(table[0]["calls"])
    assert calls > 0 and int(table[0]["prompt_tokens"]) == 100 * calls and int(table[0]["completion_tokens"]) == 20 * calls
    assert table[0]["money_usd"] == "" and table[0]["calls_usage_not_recorded"] == "0"
    markdown = (out / "judged_submissions_2b.md").read_text()
    assert "Per-team attribution (each submission's verdicts" in markdown and "no prices in the judge config" in markdown
    assert "Judge, this run: " in markdown
    assert "| 1 | alice | 15 |" in markdown and "11_alice_PhaseId4_2027-01-20_01-00_early.zip: superseded by submission 15" in markdown
    assert KEY not in markdown and KEY not in capsys.readouterr().out


@pytest.mark.slow
def test_the_platforms_archive_makes_the_rescore_free(ref_root, tmp_path, server, capsys):
    """Judged on the platform, archived, imported: judging the bulk download afterwards makes
    no call, and its figures are the platform's to the last bit."""
    config = judge_yaml(tmp_path, server.base_url)
    platform = tmp_path / "platform"
    platform.mkdir()
    assert scoring_program.main([str(judged_input(platform, ref_root, "2b", config)), str(platform / "output")]) == 0
    on_platform = json.loads((platform / "output" / "scores.json").read_text())
    assert set(JUDGE) <= set(on_platform)
    cache = tmp_path / "organizers-cache"
    assert main(["judge", "--import-archive", str(platform / "output"), "--cache", str(cache)]) == 0
    calls = server.all_chat_calls
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_samples(tmp_path, "2b")),
                   "--out", str(tmp_path / "out"), "--judge-config", str(config), "--judge-cache", str(cache)])
    assert status == 0
    # alice's final submission is the sample the platform judged: no call for it (bob's answers
    # are a subset of the same turns and texts, so none for him either, not even the preflight).
    assert server.all_chat_calls == calls
    alice = next(csv.DictReader(io.StringIO((tmp_path / "out" / "judged_submissions_2b.csv").read_text())))
    assert {k: float(alice[k]) for k in JUDGE} == {k: on_platform[k] for k in JUDGE}
    capsys.readouterr()


def test_a_judge_without_a_key_is_refused_before_anything_is_scored(ref_root, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_samples(tmp_path, "2b")),
                   "--out", str(tmp_path / "out")])
    assert status == 1 and "the judge cannot run: no API key" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("sub", ["2b", "2c"])
def test_the_estimate_needs_no_key_sends_nothing_and_counts_every_turn_of_each_team(ref_root, tmp_path, monkeypatch,
                                                                                    capsys, sub):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status = main(["judge-submissions", "--ref", str(ref_root / sub), "--submissions", str(_bulk_of_samples(tmp_path, sub)),
                   "--out", str(tmp_path / "out"), "--estimate"])
    out = capsys.readouterr().out
    turns = len(Reference.read(ref_root / sub).topics)
    # Two teams (alice's last submission, bob's), every turn answered, five dimensions each; each
    # request is distinct within a submission, and both stand-in submissions are alike: counted twice.
    assert status == 0 and f"{sub}: 2 teams' last submissions" in out
    assert f"calls: {2 * turns * 5:,} " in out and "characters per token" in out
    assert not (tmp_path / "out").exists()


def test_before_the_phase_the_estimate_takes_the_expected_number_of_teams(ref_root, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["judge-submissions", "--ref", str(ref_root / "2c"), "--teams", "180", "--estimate"]) == 0
    turns = len(Reference.read(ref_root / "2c").topics)
    assert f"calls: {180 * turns * 5:,} " in capsys.readouterr().out
    assert main(["judge-submissions", "--ref", str(ref_root / "2c"), "--teams", "3"]) == 2


def _seeded_judge(body: dict):
    """The fake judge under the config's seed (2027); under another seed a third of the items
    (by a hash of the message) get the next score: a judge whose sampling changes some verdicts."""
    reply = fake_judge(body)
    if body.get("seed") == 2027:
        return reply
    text = first_user_text(body)
    if int(hashlib.sha256(("other" + text).encode()).hexdigest(), 16) % 3:
        return reply
    return judgment(_score(reply) % 5 + 1, "another sample", injection=False if asks_injection_flag(body) else None)


def _score(reply) -> int:
    return json.loads(reply.body["choices"][0]["message"]["content"])["score"]


@pytest.mark.slow
def test_rejudging_with_another_seed_reports_agreement_and_pays_nothing_twice(ref_root, tmp_path, server, capsys):
    server.judge = _seeded_judge
    config = judge_yaml(tmp_path, server.base_url, seed=2027)
    bulk = _bulk_of_samples(tmp_path, "2b")
    command = ["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(bulk), "--judge-config",
               str(config), "--judge-cache", str(tmp_path / "cache"), "--repeat-seed", "99", "--repeat-share", "0.5"]
    assert main([*command, "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "out" / "rejudging_2b.json").read_text())
    assert walk_intervals(result) > 0  # issue 32: every interval holds its own estimate, every number is finite
    method = result["method"]
    first = load_judge_config(config)
    assert result["kind"] == "rejudging" and method["judge_signature"] == first.signature
    assert method["second_judge_signature"] not in (first.signature, None) and method["repeat_seed"] == 99
    repeat = [r for r in server.chat_requests if r.body.get("seed") == 99]
    # The subset judged again, every request once (bob's answers are alice's texts: one request
    # serves both items, the cache's key being the request).
    assert method["items_sampled"] == round(0.5 * method["items_answered"])
    assert len({json.dumps(r.body["messages"]) for r in repeat}) == len(repeat) <= 5 * method["items_sampled"]
    # Exact agreement, pooled over the dimensions, is about the share of repeat requests whose
    # verdict the first seed gives too (items, not requests, are counted: close, not equal).
    same = sum(_score(_seeded_judge(r.body)) == _score(fake_judge(r.body)) for r in repeat) / len(repeat)
    pooled = sum(b["exact"]["value"] * b["n_items"] for b in result["dimensions"].values()) / (5 * method["items_sampled"])
    assert pooled == pytest.approx(same, abs=0.1) and 0.4 < pooled < 0.9
    assert set(result["system_level"]) >= {"dimensions", "judge_mean"}
    assert "only 2 systems" in result["system_level"]["judge_mean"]["interval_note"]
    printed = capsys.readouterr().out
    assert "2b: re-judging (same judge, another seed)" in printed and "tau_AP" in printed
    # A rerun: the first judge's and the repeat's verdicts all come from the cache.
    calls = server.all_chat_calls
    assert main([*command, "--out", str(tmp_path / "again")]) == 0
    assert server.all_chat_calls == calls
    assert json.loads((tmp_path / "again" / "rejudging_2b.json").read_text()) == result


def _judged_by_two_judges(ref_root: Path, tmp_path: Path, server) -> tuple[int, Path]:
    """judge-submissions of the 2b samples with a second judge (model fake-judge-2) into
    tmp_path/out: (exit status, the second judge's config)."""
    config = judge_yaml(tmp_path, server.base_url)
    second = tmp_path / "second"
    second.mkdir()
    other = judge_yaml(second, server.base_url, model="fake-judge-2")
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_samples(tmp_path, "2b")),
                   "--out", str(tmp_path / "out"), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"),
                   "--second-judge-config", str(other)])
    return status, other


def test_a_second_judge_is_two_judges_never_humans(ref_root, tmp_path, server, capsys):
    status, other = _judged_by_two_judges(ref_root, tmp_path, server)
    assert status == 0, capsys.readouterr().err
    text = (tmp_path / "out" / "second_judge_2b.json").read_text()
    assert walk_intervals(json.loads(text)) > 0
    result = json.loads(text)
    assert result["kind"] == "second_judge" and result["method"]["reference"] == "judge"
    assert result["method"]["second_judge_signature"] == load_judge_config(other).signature
    assert not [key for key in re.findall(r'"([^"]+)":', text) if "human" in key]  # every key of the file
    # The fake server answers both models alike: the two judges agree on every item.
    assert all(block["exact"]["value"] == 1.0 for block in result["dimensions"].values())
    assert "2b: two judges" in capsys.readouterr().out


def test_the_repeat_seed_must_differ_from_the_configs(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url, seed=5)
    status = main(["judge-submissions", "--ref", str(ref_root / "2b"), "--submissions", str(_bulk_of_samples(tmp_path, "2b")),
                   "--out", str(tmp_path / "out"), "--judge-config", str(config), "--repeat-seed", "5"])
    assert status == 2 and "the judge config's own seed" in capsys.readouterr().err
    assert server.all_chat_calls == 0


def test_a_second_judge_without_a_verdict_is_said_and_exits_4_with_the_tables_written(ref_root, tmp_path, server,
                                                                                        capsys):
    server.rules.append((lambda body: body.get("model") == "fake-judge-2", http_error(400, "no such model")))
    status, other = _judged_by_two_judges(ref_root, tmp_path, server)
    assert status == 4
    assert "2b: warning: second_judge not compared: " in capsys.readouterr().err
    assert (tmp_path / "out" / "judged_submissions_2b.csv").is_file()
    assert not (tmp_path / "out" / "second_judge_2b.json").exists()
