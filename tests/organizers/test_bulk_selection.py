"""A phase's bulk download as the organizers' input: one selection rule, the platform's, shared by
``leaderboard``, ``judge-submissions``, ``human-sample`` and ``relevance-pool``.

The download is built as Codabench builds it (commit c7dbc75 of codalab/codabench):
``SubmissionViewSet.download_many`` in ``src/apps/api/views/submissions.py`` names each file
``f"{sub.id}_{sub.owner}_PhaseId{sub.phase.id}_{created_when:%Y-%m-%d:%M-%S}_{file}"``; the browser
(``src/static/riot/competitions/detail/submission_manager.tag``) stores each under that name with
``:``, ``/`` and ``\\`` replaced by ``_`` in a flat ``bulk_submissions.zip``, and adds
``failed.txt`` ("The following submissions failed to download:", a blank line, then
``<name> (<error>)`` per file) for those it could not fetch. The zip carries no status.

What the platform's leaderboard shows: ``upload_submission_scores`` (same views file) is the only
caller of ``put_on_leaderboard_by_submission_rule``; under ``Force_Last``, ``LastestModeStrategy``
(``src/apps/leaderboards/strategies.py``) takes the owner's other submissions of the phase off and
puts this one on; ``compute_worker/compute_worker.py`` marks a non-zero exit of the scoring
program Failed and raises before ``push_scores``. So a submission that fails the input checks
(the scoring program's exit 1) never replaces an earlier one.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from support.bundle_edits import zip_bytes
from support.judged_program import judge_yaml
from support.paths import SAMPLES

from reteco.commands import main
from reteco.formats.reference import Reference
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.workbench.leaderboard import bulk_download as bd

FAILED_HEADING = "The following submissions failed to download:\n\n"


@pytest.fixture(scope="module")
def refs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bulk")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref", subtracks=("1a", "2b"))
    return root / "ref"


def _download(path: Path, files: dict[str, bytes], not_fetched: list[str] = ()) -> Path:
    """A bulk_submissions.zip as the submission manager's page saves it."""
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name.replace(":", "_"), data)  # the browser's replacement of ':', '/' and '\'
        if not_fetched:
            z.writestr(bd.FAILED_LIST, FAILED_HEADING + "\n".join(not_fetched))
    return path


def _bulk_1a(tmp_path: Path) -> Path:
    """alice: an early run (superseded) and her last; bob: a valid run, then a broken one (his
    last: the platform failed it, so it still shows the first); carol: only a broken run;
    team_53 (an owner with '_'): one run."""
    run = (SAMPLES / "1a" / "run.txt").read_text()
    lines = run.splitlines(keepends=True)
    return _download(tmp_path / "1a.zip", {
        "101_alice_PhaseId7_2027-01-20:01-00_early.zip": zip_bytes({"run.txt": "".join(lines[:50])}),
        "103_bob_PhaseId7_2027-01-20:02-00_bob.zip": zip_bytes({"run.txt": "".join(lines[::2])}),
        "104_carol_PhaseId7_2027-01-20:03-00_c.zip": zip_bytes({"run.txt": "not a run line\n"}),
        "105_alice_PhaseId7_2027-01-21:04-00_final.zip": zip_bytes({"run.txt": run}),
        "106_team_53_PhaseId7_2027-01-21:05-00_t.zip": zip_bytes({"run.txt": "".join(lines[:400])}),
        "108_bob_PhaseId7_2027-01-22:06-00_bob_last.zip": zip_bytes({"run.txt": run + "q1 Q0\n"}),
    })


def _bulk_2b(tmp_path: Path, not_fetched: list[str] = ()) -> Path:
    """alice: two valid (the last kept); team_53: a valid one, then invalid JSONL as the last;
    bob: one valid."""
    answers = (SAMPLES / "2b" / "answers.jsonl").read_text().splitlines(keepends=True)
    return _download(tmp_path / "2b.zip", {
        "201_alice_PhaseId9_2027-01-20:01-00_a.zip": zip_bytes({"answers.jsonl": "".join(answers[:5])}),
        "202_team_53_PhaseId9_2027-01-20:02-00_t.zip": zip_bytes({"answers.jsonl": "".join(answers[:-5])}),
        "203_bob_PhaseId9_2027-01-20:03-00_b.zip": zip_bytes({"answers.jsonl": "".join(answers[3:])}),
        "206_alice_PhaseId9_2027-01-21:04-00_a2.zip": zip_bytes({"answers.jsonl": "".join(answers)}),
        "207_team_53_PhaseId9_2027-01-22:05-00_t2.zip": zip_bytes({"answers.jsonl": "{not json\n"}),
    }, not_fetched)


def _selection(source: Path, ref: Path, work: Path) -> bd.Selection:
    return bd.select_download(source, Reference.read(ref), work)


def test_the_last_valid_submission_per_owner_is_kept_and_a_broken_last_never_knocks_it_out(refs, tmp_path):
    s = _selection(_bulk_1a(tmp_path), refs / "1a", tmp_path / "w")
    assert [(k.owner, k.submission_id) for k in s.kept] == [("alice", 105), ("bob", 103), ("team_53", 106)]
    assert [(k.submission_id, by) for k, by in s.superseded] == [(101, 105)]
    assert [f.submission_id for f, _ in s.failed] == [104, 108]
    assert [why for _, why in s.failed] == [
        "104_carol_PhaseId7_2027-01-20_03-00_c.zip:run.txt:1: error: expected 6 columns: topic Q0 docid rank score tag, "
        "found 4",
        "108_bob_PhaseId7_2027-01-22_06-00_bob_last.zip:run.txt:1801: error: expected 6 columns: topic Q0 docid rank "
        "score tag, found 2"]
    assert s.owners_without_submission == ["carol"]
    record = s.record()
    assert record["rule"] == bd.RULE and record["phase"] == 7 and record["source"] == "1a.zip"
    assert [k["system"] for k in record["kept"]] == ["alice", "bob", "team_53"]
    assert "src/apps/leaderboards/strategies.py (Force_Last: LastestModeStrategy)" in record["codabench_source"]


def test_a_submission_not_fetched_is_kept_unread_rather_than_an_earlier_one_silently(refs, tmp_path):
    missing = "209_bob_PhaseId9_2027-01-23:06-00_b3.zip (HTTP 403)"
    s = _selection(_bulk_2b(tmp_path, [missing]), refs / "2b", tmp_path / "w")
    bob = next(k for k in s.kept if k.owner == "bob")
    assert bob.submission_id == 209 and "not in the download (failed.txt: HTTP 403)" in bob.problem
    assert (s.kept[0].owner, s.kept[0].submission_id) == ("alice", 206)
    assert (203, 209) in [(k.submission_id, by) for k, by in s.superseded]


def test_one_download_is_one_phase(refs, tmp_path):
    source = _download(tmp_path / "mixed.zip", {
        "1_alice_PhaseId3_2027-01-01:00-00_a.zip": b"x", "2_alice_PhaseId4_2027-01-02:00-00_a.zip": b"x"})
    with pytest.raises(bd.InputError, match="2 phases .phase 3: 1 submissions, phase 4: 1 submissions"):
        _selection(source, refs / "1a", tmp_path / "w")


def test_team_names_are_an_owner_team_csv_with_line_numbered_errors(tmp_path):
    good = tmp_path / "teams.csv"
    good.write_text("owner,team\nalice,Orca Labs\nteam_53,Team 53\n")
    assert bd.read_team_names(good) == {"alice": "Orca Labs", "team_53": "Team 53"}
    bad = tmp_path / "bad.csv"
    bad.write_text("owner,team\nalice,A\nalice,B\nbob\n")
    with pytest.raises(bd.InputError) as caught:
        bd.read_team_names(bad)
    lines = caught.value.problems.lines()
    assert lines == [f"{bad}:3: error: owner 'alice' is named twice",
                     f"{bad}:4: error: expected two non-empty fields: owner,team"]


def test_every_command_selects_the_same_systems_named_by_owner_and_writes_the_selection(refs, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url)
    cache = tmp_path / "cache"
    bulk_2b = _bulk_2b(tmp_path)
    expected = {"alice", "bob", "team_53"}

    assert main(["leaderboard", "--ref", str(refs / "2b"), "--submissions", str(bulk_2b), "--out", str(tmp_path / "lb"),
                 "--judge-config", str(config), "--judge-cache", str(cache), "--jobs", "1", "--resamples", "200"]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert {s["name"] for s in board["systems"]} | {s["name"] for s in board["unranked"]} == expected
    assert not board["failed"]
    assert [(k["owner"], k["submission"]) for k in board["selection"]["kept"]] == [
        ("alice", 206), ("bob", 203), ("team_53", 202)]
    assert [f["submission"] for f in board["selection"]["failed"]] == [207]
    assert "The submissions selected" in (tmp_path / "lb" / "leaderboard.html").read_text()
    err = capsys.readouterr().err
    assert "2b: bulk download 2b.zip (phase 9): 5 submissions of 3 owners: 3 kept" in err
    assert "207_team_53_PhaseId9_2027-01-22_05-00_t2.zip: failed the input checks, not selected" in err

    out = tmp_path / "judged"
    assert main(["judge-submissions", "--ref", str(refs / "2b"), "--submissions", str(bulk_2b), "--out", str(out),
                 "--judge-config", str(config), "--judge-cache", str(cache)]) == 0
    table = list(csv.DictReader(io.StringIO((out / "judged_submissions_2b.csv").read_text())))
    assert {(r["team"], r["submission"]) for r in table} == {("alice", "206"), ("bob", "203"), ("team_53", "202")}
    assert all(r["rank"] for r in table)  # team_53 is ranked with its valid earlier submission
    assert json.loads((out / "selection_2b.json").read_text()) == board["selection"]
    markdown = (out / "judged_submissions_2b.md").read_text()
    assert "## The submissions selected" in markdown and "superseded by submission 206" in markdown
    # BERTScore (no model here) is no empty column with the same note on every row: one line.
    assert "BERTScore F1 |" not in markdown and markdown.count("Not reported (no submission has it): BERTScore F1:") == 1
    assert "bertscore_f1 absent" not in markdown and all(r["bertscore_f1"] == "" for r in table)  # the CSV keeps it

    human = tmp_path / "human"
    assert main(["human-sample", "--ref", str(refs / "2b"), "--submissions", str(bulk_2b), "--n", "12", "--seed", "3",
                 "--out", str(human)]) == 0
    key = list(csv.DictReader(io.StringIO((human / "key.csv").read_text())))
    assert {row["system"] for row in key} == expected
    assert json.loads((human / "sample.json").read_text())["selection"] == board["selection"]


def test_the_leaderboard_and_the_pool_read_a_retrieval_download_alike(refs, tmp_path, capsys):
    bulk_1a = _bulk_1a(tmp_path)
    teams = tmp_path / "teams.csv"
    teams.write_text("owner,team\nalice,Orca Labs\n")
    assert main(["leaderboard", "--ref", str(refs / "1a"), "--submissions", str(bulk_1a), "--out", str(tmp_path / "lb"),
                 "--jobs", "1", "--resamples", "200", "--team-names", str(teams)]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert sorted(s["name"] for s in board["systems"]) == ["Orca Labs (alice)", "bob", "team_53"]
    assert board["selection"]["owners_without_submission"] == ["carol"]
    pool = tmp_path / "pool.jsonl"
    assert main(["relevance-pool", "--ref", str(refs / "1a"), "--submissions", str(bulk_1a), "--round",
                 str(tmp_path / "round"), "--out", str(pool)]) == 0
    assert "1a: 3 runs," in capsys.readouterr().out
    selected = json.loads((tmp_path / "pool.jsonl.selection.json").read_text())["1a"]
    assert [k["submission"] for k in selected["kept"]] == [k["submission"] for k in board["selection"]["kept"]]


def test_a_folder_of_the_downloads_files_is_the_same_download(refs, tmp_path):
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(_bulk_1a(tmp_path)) as z:
        z.extractall(folder)
    assert bd.is_bulk_download(folder) and not bd.is_bulk_download(SAMPLES / "1a")
    s = _selection(folder, refs / "1a", tmp_path / "w")
    assert [(k.owner, k.submission_id) for k in s.kept] == [("alice", 105), ("bob", 103), ("team_53", 106)]


PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}


def _money(usages) -> float:
    return sum((p - c) * PRICES["input"] + c * PRICES["cached_input"] + o * PRICES["output"] for p, c, o in usages) / 1e6


def test_the_run_prints_what_the_server_received_and_reported_and_a_rerun_pays_nothing(refs, tmp_path, capsys):
    """The money line is the server's: its request count, its reported usage (preflight
    included) at the config's prices; the per-team attribution beside it, labelled; a rerun
    from the cache is 0 requests and $0."""
    from support.fake_openai_server import FakeOpenAI

    server = FakeOpenAI(count_tokens=True)
    server.start()
    preflights: list[tuple[int, int, int]] = []

    def preflight(body):
        reply = server.default_preflight(body)
        usage = reply.body["usage"]
        preflights.append((usage["prompt_tokens"], 0, usage["completion_tokens"]))
        return reply

    server.preflight = preflight
    try:
        config = judge_yaml(tmp_path, server.base_url, price_per_million=PRICES)
        bulk_2b = _bulk_2b(tmp_path)
        base = ["--ref", str(refs / "2b"), "--submissions", str(bulk_2b), "--judge-config", str(config),
                "--judge-cache", str(tmp_path / "cache")]
        assert main(["judge-submissions", *base, "--out", str(tmp_path / "j1")]) == 0
        out = capsys.readouterr().out
        usages = server.usage_reported + preflights
        requests = server.all_chat_calls
        tokens = sum(p + o for p, _, o in usages)
        cached = sum(c for _, c, _ in usages)
        line = (f"2b: judge, this run: {requests:,} requests, {tokens:,} tokens (cached {cached:,}), "
                f"${_money(usages):,.2f} at the judge config's prices")
        assert line in out.splitlines(), out
        assert requests > 0 and cached > 0
        # Beside it, the attribution per submission, labelled as such: alice's two submissions
        # share turns with bob's, so it counts more calls than were sent.
        attribution = next(x for x in out.splitlines() if x.startswith("2b: Per-team attribution"))
        calls = int(attribution.split(" submissions, ")[1].split(" calls")[0].replace(",", ""))
        assert calls > requests - len(preflights)
        assert line.removeprefix("2b: judge, ") in (tmp_path / "j1" / "judged_submissions_2b.md").read_text()

        assert main(["leaderboard", *base, "--out", str(tmp_path / "lb"), "--jobs", "1", "--resamples", "100"]) == 0
        assert "2b: judge, this run: 0 requests, 0 tokens (cached 0), $0.00 at the judge config's prices" in (
            capsys.readouterr().out)
        assert main(["judge-submissions", *base, "--out", str(tmp_path / "j2")]) == 0
        assert "2b: judge, this run: 0 requests, 0 tokens (cached 0), $0.00" in capsys.readouterr().out
        assert server.all_chat_calls == requests
    finally:
        server.stop()


def test_the_leaderboard_writes_the_runs_exact_figures(refs, tmp_path, capsys):
    from support.fake_openai_server import FakeOpenAI

    server = FakeOpenAI(count_tokens=True)
    server.start()
    try:
        config = judge_yaml(tmp_path, server.base_url, price_per_million=PRICES)
        assert main(["leaderboard", "--ref", str(refs / "2b"), "--submissions", str(_bulk_2b(tmp_path)), "--out",
                     str(tmp_path / "lb"), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"),
                     "--jobs", "1", "--resamples", "100"]) == 0
        run = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["judge_this_run"]
        assert run["http_requests"] == server.all_chat_calls
        answered = server.usage_reported
        assert run["usage"]["completion_tokens"] >= sum(o for _, _, o in answered)  # the preflight's beside them
        assert run["usage"]["cached_tokens"] == sum(c for _, c, _ in answered)
        assert "this run:" in (tmp_path / "lb" / "leaderboard.html").read_text()
    finally:
        server.stop()


def test_the_estimate_gives_the_money_range_and_the_hours_at_the_configs_concurrency(refs, tmp_path, capsys,
                                                                                     monkeypatch):
    from reteco.judge import load_judge_config
    from reteco.workbench.judge_audit.estimate import LATENCY_S
    from reteco.workbench.judge_audit.judge_cost import estimate_phase

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = judge_yaml(tmp_path, "http://127.0.0.1:9/v1", price_per_million=PRICES, concurrency=8)
    total, one = estimate_phase(refs / "2b", load_judge_config(config), 60)
    assert total.calls == 60 * one.calls and total.cacheable_tokens > 0
    hit = ((total.input_tokens - total.cacheable_tokens) * PRICES["input"] + total.cacheable_tokens
           * PRICES["cached_input"] + total.output_tokens * PRICES["output"]) / 1e6
    miss = (total.input_tokens * PRICES["input"] + total.output_tokens * PRICES["output"]) / 1e6
    assert total.money_usd == pytest.approx(hit, rel=1e-9) and total.money_no_cache_usd == pytest.approx(miss, rel=1e-9)
    assert total.hours() == (total.calls * LATENCY_S[0] / 8 / 3600, total.calls * LATENCY_S[1] / 8 / 3600)
    assert main(["judge-submissions", "--ref", str(refs / "2b"), "--teams", "60", "--estimate",
                 "--judge-config", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"money: ${hit:,.2f} (every cacheable token a cache hit) to ${miss:,.2f} (no cache hit)" in out
    low, high = total.hours()
    assert f"time: {low:,.1f} to {high:,.1f} hours at concurrency 8 (1 to 4 s a request" in out


def test_the_details_judge_submissions_writes_are_what_judge_report_reads(refs, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url)
    details = tmp_path / "details"
    assert main(["judge-submissions", "--ref", str(refs / "2b"), "--submissions", str(_bulk_2b(tmp_path)), "--out",
                 str(tmp_path / "judged"), "--judge-config", str(config), "--judge-cache", str(tmp_path / "cache"),
                 "--details-out", str(details)]) == 0
    files = sorted(details.glob("*/details.json"))
    assert [f.parent.name for f in files] == ["202_team_53_PhaseId9_2027-01-20_02-00_t.zip",
                                              "203_bob_PhaseId9_2027-01-20_03-00_b.zip",
                                              "206_alice_PhaseId9_2027-01-21_04-00_a2.zip"]
    assert main(["judge-report", "--out", str(tmp_path / "report"), "--judge-config", str(config),
                 "--details", *map(str, files)]) == 0
    report = (tmp_path / "report" / "judge-report.md").read_text()
    summary = [line for line in report.splitlines() if line.startswith("| 2b |")]
    assert len(summary) == 1 and summary[0].startswith("| 2b | 3 | 3 | 3 |")  # one row for the sub-track
    appendix = (tmp_path / "report" / "judge-report-appendix.md").read_text()
    assert sum("/details.json |" in line for line in appendix.splitlines()) == 6  # the files' table and the usage table


def test_validate_takes_several_submissions_as_score_does(refs, tmp_path, capsys):
    """Issue 37 item 6: every submission is checked, each one's messages printed, exit 1 when any
    is invalid; one submission alone behaves as before."""
    good = SAMPLES / "1a" / "run.txt"
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0\n")
    assert main(["validate", "--ref", str(refs / "1a"), str(good), str(bad), str(good)]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("valid for sub-track 1a") == 2
    assert "bad.txt:1: error: expected 6 columns" in captured.err
    assert "error: 1 of 3 submissions are invalid (their messages above)" in captured.err
    assert main(["validate", "--ref", str(refs / "1a"), str(good), str(good)]) == 0
    assert main(["validate", "--ref", str(refs / "1a"), str(bad)]) == 1
