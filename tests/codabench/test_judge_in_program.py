"""2b and 2c judged inside the Codabench scoring program (``reteco.codabench.program.scoring_program``),
against the fake OpenAI server: the judge's setup in the reference data, its verification, the
figures (those of ``reteco score``), the archive, and every way a run can end early (deadline,
budget, refused or unreachable service), each with the judge keys absent, a reason in the
participant's words, exit 0 for 2c and 4 for 2b (whose ranked figure, the judge mean, is then
absent: test_unranked_runs.py), and neither the key nor the endpoint in the log or the page."""

from __future__ import annotations

import html
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fake_openai_server import Reply, http_error, rate_limited
from support.judged_program import EVALUATION, KEY, POST_EVALUATION, judge_yaml, judged_input
from support.paths import SAMPLES

from reteco.codabench.program import judge_plan, scoring_program
from reteco.codabench.program.judge_setup import (
    JUDGE_DIR,
    KEY_FILE,
    SETUP_MANIFEST,
    count_turns,
    load_for_bundle,
    read_judge_setup,
    write_judge_setup,
)
from reteco.formats.reference import Reference, ReferenceDataError
from reteco.llm.cache import ARCHIVE_FILE
from reteco.problems import EXIT_INCOMPLETE, InputError
from reteco.scoring.submission import score_submission
from reteco.subtracks import DIMENSIONS, JUDGE, JUDGE_MEAN, SUBTRACKS
from reteco.workbench.codabench.bundle import competition as definition


def run(input_dir: Path, tmp_path: Path, capsys) -> tuple[int, dict, dict, str, str]:
    status = scoring_program.main([str(input_dir), str(tmp_path / "output")])
    out = tmp_path / "output"
    captured = capsys.readouterr()
    scores = json.loads((out / "scores.json").read_text()) if (out / "scores.json").exists() else {}
    details = json.loads((out / "details.json").read_text()) if (out / "details.json").exists() else {}
    page = (out / "detailed_results.html").read_text() if (out / "detailed_results.html").exists() else ""
    return status, scores, details, page, captured.out + captured.err


def assert_nothing_leaks(tmp_path: Path, log: str, page: str, base_url: str) -> None:
    """The key in no log line and no output file (the archive included); the endpoint in
    neither the log nor the page (both shown to the participant)."""
    host = base_url.split("//", 1)[1].split("/", 1)[0]
    assert KEY not in log and KEY not in page
    for path in (tmp_path / "output").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name
    assert host not in log and host not in page and "http://" not in log


def archived_turns(tmp_path: Path) -> int:
    """Turns with a verdict on all five dimensions in the run's archive."""
    conn = sqlite3.connect(tmp_path / "output" / ARCHIVE_FILE)
    rows = conn.execute("SELECT topic_key, COUNT(*) FROM judgments GROUP BY topic_key").fetchall()
    conn.close()
    return sum(1 for _, n in rows if n == len(DIMENSIONS))


# ---------------------------------------------------------------------------------------------
# A judged run: the figures of `reteco score`, the archive, the log


@pytest.mark.parametrize("sub", ["2b", "2c"])
@pytest.mark.slow
def test_a_judged_phase_writes_the_five_dimensions_as_reteco_score_does(ref_root, tmp_path, server, capsys, sub):
    config = judge_yaml(tmp_path, server.base_url)
    input_dir = judged_input(tmp_path, ref_root, sub, config)
    status, scores, details, page, log = run(input_dir, tmp_path, capsys)
    assert status == 0
    assert set(JUDGE) <= set(scores) and all(0 <= scores[k] <= 1 for k in JUDGE)
    # The platform's figures are reteco score's, with the same judge (another cache, so judged again).
    local = score_submission(Reference.read(ref_root / sub), SAMPLES / sub, judge_config=read_judge_setup(input_dir / "ref"),
                             cache_dir=tmp_path / "local-cache", per_topic=False)
    assert scores == pytest.approx(local.scores, abs=0)
    turns = count_turns(ref_root / sub)
    answered = details["generation"]["answers"]["answers"]
    assert archived_turns(tmp_path) == answered == turns  # the sample answers every turn
    judgments = answered * len(DIMENSIONS)
    assert f"judge: {judgments} judgments: {judgments} judged now with {judgments + 1} HTTP requests, 0 answered from " \
           "judgments already present, 0 unfinished" in log  # + 1: the preflight
    assert f"at most {2 * judgments + 1} requests" in log  # the default budget: twice one pass, plus the preflight
    assert "Evaluation" in log and "per_turn" not in json.dumps(details)  # Evaluation: aggregates only
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


@pytest.mark.slow
def test_the_archive_holds_every_request_reply_and_verdict_of_the_run(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url)
    status, *_ = run(judged_input(tmp_path, ref_root, "2b", config), tmp_path, capsys)
    assert status == 0
    conn = sqlite3.connect(tmp_path / "output" / ARCHIVE_FILE)
    judgments = conn.execute("SELECT COUNT(*), COUNT(DISTINCT cache_key) FROM judgments").fetchone()
    calls = conn.execute("SELECT COUNT(*), COUNT(DISTINCT model), MIN(system_fingerprint) FROM calls").fetchone()
    raw = json.loads(conn.execute("SELECT response_json FROM calls WHERE via = 'chat' LIMIT 1").fetchone()[0])
    conn.close()
    n = count_turns(ref_root / "2b") * len(DIMENSIONS)
    assert judgments == (n, n)
    assert calls == (n + 1, 1, "fp_fake_1")  # every reply (and the preflight's), the reported model, the fingerprint
    assert raw["object"] == "chat.completion" and raw["model"] == "fake-judge"  # the raw reply as the server sent it
    assert not (tmp_path / "output" / (ARCHIVE_FILE + "-wal")).exists()  # one self-contained file


def test_without_a_judge_setup_the_phase_scores_as_before(ref_root, tmp_path, server, capsys):
    ref = tmp_path / "input" / "ref"
    shutil.copytree(ref_root / "2b", ref)
    (ref / "phase.json").write_text(json.dumps(definition.phase_record(EVALUATION, "2b")))
    shutil.copytree(SAMPLES / "2b", tmp_path / "input" / "res")
    status, scores, details, _, log = run(tmp_path / "input", tmp_path, capsys)
    assert status == 0 and not set(JUDGE) & set(scores) and server.all_chat_calls == 0
    assert "the LLM judge is not run when a submission is scored" in details["absent_scores"][JUDGE_MEAN]
    assert not (tmp_path / "output" / ARCHIVE_FILE).exists()


# ---------------------------------------------------------------------------------------------
# Runs stopped early: no judge key, the reason, exit 0, nothing leaked


def _stopped(tmp_path, ref_root, server, capsys, sub="2b", **settings):
    config = judge_yaml(tmp_path, settings.pop("base_url", server.base_url), **settings)
    status, scores, details, page, log = run(judged_input(tmp_path, ref_root, sub, config), tmp_path, capsys)
    if SUBTRACKS[sub].ranked in JUDGE:
        # 2b ranks by the judge mean: a run without it is failed, never listed (refuse_unranked);
        # its figures stay in the output for the organizers.
        assert status == EXIT_INCOMPLETE and scores == {}
        assert "is not put on the leaderboard: its ranked figure, Judge mean (0-1), is absent" in log
        scores = json.loads((tmp_path / "output" / scoring_program.UNRANKED_SCORES).read_text())
    else:
        assert status == 0
    assert not set(JUDGE) & set(scores), "a stopped run writes no judge figure, not even a partial one"
    assert {"rouge_l", "meteor"} <= set(scores)  # the rest is scored
    reasons = {details["absent_scores"][k] for k in JUDGE}
    assert len(reasons) == 1
    reason = reasons.pop()
    assert reason.startswith("the judge did not finish: ") and "a partial average is not a figure" in reason
    assert html.escape(reason) in page and reason in log
    assert "the organizers judge its answers after the phase" in log
    return scores, details, page, log, reason


@pytest.mark.slow
def test_a_401_ends_the_judging_with_a_reason_and_2c_keeps_its_retrieval_figures(ref_root, tmp_path, server, capsys):
    server.echo_auth = True  # hostile: the key sent comes back in every body
    server.preflight = lambda body: http_error(401, "Incorrect API key provided")
    scores, details, page, log, reason = _stopped(tmp_path, ref_root, server, capsys, sub="2c")
    assert "the judge's service refused the organizers' credentials (0 of 51 answered turns" in reason
    assert {"ndcg_10", "map_10", "recall_10", "mrr"} <= set(scores)
    assert details["generation"]["judge"]["stopped"]["kind"] == "service"
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


@pytest.mark.slow
def test_an_unreachable_endpoint_ends_the_judging_with_a_reason(ref_root, tmp_path, server, capsys):
    *_, page, log, reason = _stopped(tmp_path, ref_root, server, capsys, base_url="http://127.0.0.1:9/v1")
    assert "the judge's service could not be reached (0 of 51 answered turns" in reason
    assert_nothing_leaks(tmp_path, log, page, "http://127.0.0.1:9/v1")


@pytest.mark.slow
def test_a_429_storm_ends_the_judging_with_a_reason(ref_root, tmp_path, server, capsys):
    server.preflight = lambda body: rate_limited("0.05")
    *_, page, log, reason = _stopped(tmp_path, ref_root, server, capsys)
    assert "kept answering that too many requests were sent (rate limit)" in reason
    assert len(server.preflight_requests) == 3  # the first attempt and max_retries 2, each after its Retry-After
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


@pytest.mark.slow
def test_a_rejected_parameter_ends_the_judging_with_a_reason(ref_root, tmp_path, server, capsys):
    server.preflight = lambda body: Reply(400, {"error": {"message": "Unsupported parameter: 'seed'", "param": "seed",
                                                          "type": "invalid_request_error", "code": "unsupported_parameter"}})
    *_, page, log, reason = _stopped(tmp_path, ref_root, server, capsys)
    assert "refused a parameter of the judge's requests" in reason and "seed" not in reason
    assert len(server.preflight_requests) == 1  # the request's own fault: not retried
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


@pytest.mark.slow
def test_the_call_budget_stops_the_judging_and_the_log_counts_the_calls(ref_root, tmp_path, server, capsys):
    scores, details, page, log, reason = _stopped(tmp_path, ref_root, server, capsys, max_calls_per_run=21, concurrency=1)
    # 21 requests: the preflight and 20 judgments, i.e. the first four turns on all five dimensions.
    assert server.all_chat_calls == 21
    assert "the judge's budget of 21 requests for one submission was used up" in reason
    assert "(4 of 51 answered turns were judged on all five dimensions)" in reason
    assert "judged now with 21 HTTP requests" in log
    assert archived_turns(tmp_path) == 4  # what was paid for is kept for the organizers
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


def test_a_damaged_judge_setup_refuses_the_submission_and_says_whom_to_tell(ref_root, tmp_path, server, capsys):
    config = judge_yaml(tmp_path, server.base_url)
    input_dir = judged_input(tmp_path, ref_root, "2b", config)
    judge_file = input_dir / "ref" / JUDGE_DIR / "judge.yaml"
    judge_file.write_text(judge_file.read_text().replace("concurrency: 16", "concurrency: 64"))
    status, scores, _, page, log = run(input_dir, tmp_path, capsys)
    assert status == 1 and scores == {} and server.all_chat_calls == 0
    assert "judge.yaml: error: does not match the sha256 recorded in manifest.json" in log
    assert "this is not a problem of your submission: please tell the organizers" in log
    assert KEY not in log and KEY not in page


# ---------------------------------------------------------------------------------------------
# The setup's verification


@pytest.fixture
def setup_folder(ref_root, tmp_path, server) -> Path:
    ref = tmp_path / "ref"
    shutil.copytree(ref_root / "2b", ref)
    setup = load_for_bundle(judge_yaml(tmp_path, server.base_url))
    write_judge_setup(ref, setup, max_calls=99)
    return ref


def test_the_setup_reads_back_as_the_judge_it_was_built_from(setup_folder, tmp_path, server):
    built = load_for_bundle(judge_yaml(tmp_path, server.base_url)).config
    read = read_judge_setup(setup_folder)
    assert read.signature == built.signature and read.max_calls_per_run == 99
    assert read.resolved_base_url() == server.base_url and Path(read.api_key_file).read_text().strip() == KEY
    assert KEY not in (setup_folder / JUDGE_DIR / "judge.yaml").read_text()  # the config names the file, not the key
    assert Reference.read(setup_folder).subtrack == "2b"  # the reference's own verification is unchanged
    assert read_judge_setup(tmp_path / "nowhere") is None


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / KEY_FILE).write_text("sk-another-key-0000000000\n"), "api_key: error: does not match the sha256"),
    (lambda f: (f / KEY_FILE).unlink(), "api_key: error: missing, though manifest.json lists it"),
    (lambda f: (f / "extra.yaml").write_text("model: x\n"), "extra.yaml: error: not listed in manifest.json"),
    (lambda f: (f / SETUP_MANIFEST).write_text((f / SETUP_MANIFEST).read_text().replace('"format"', '"fmt"')),
     "manifest.json: error: not a reteco-judge-setup/1 manifest"),
    (lambda f: (f / SETUP_MANIFEST).write_text("{"), "manifest.json: error: missing or unreadable"),
])
def test_a_changed_setup_is_refused_naming_the_file(setup_folder, damage, message):
    damage(setup_folder / JUDGE_DIR)
    with pytest.raises(ReferenceDataError) as caught:
        read_judge_setup(setup_folder)
    assert message in str(caught.value) and KEY not in str(caught.value)


def test_an_edited_manifest_is_refused_by_its_own_digest(setup_folder):
    manifest_path = setup_folder / JUDGE_DIR / SETUP_MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["signature"] = "0" * 16
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ReferenceDataError, match="does not match the manifest_sha256 it records"):
        read_judge_setup(setup_folder)


def test_the_bundle_refuses_a_judge_without_a_key_or_with_batches(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = tmp_path / "judge.yaml"
    config.write_text(f"prompt_version: 2\nmodel: m\nbase_url: {server.base_url}\n")
    with pytest.raises(InputError, match="the environment variable OPENAI_API_KEY is not set"):
        load_for_bundle(config)
    batch = judge_yaml(tmp_path, server.base_url, use_batch_api=True)
    with pytest.raises(InputError, match="a batch cannot keep the phase's time limit"):
        load_for_bundle(batch)


def test_the_setup_repr_never_shows_the_key(tmp_path, server):
    setup = load_for_bundle(judge_yaml(tmp_path, server.base_url))
    assert setup.key == KEY and KEY not in repr(setup) and KEY not in str(setup)


# ---------------------------------------------------------------------------------------------
# The deadline's arithmetic


def test_the_plan_keeps_back_startup_finishing_and_a_share_of_the_limit():
    plan = judge_plan.plan_judging(100.0, 600, 200)
    # Not measured (main called in-process): 0 startup + 5 s container + 1 x (6 s + 200 x 0.01 s) + 5% of 600 s.
    assert plan.reserve_s == pytest.approx(43.0) and plan.slowdown == 1.0
    assert plan.deadline == pytest.approx(657.0) and plan.judging_until_s == pytest.approx(557.0)
    small = judge_plan.plan_judging(0.0, 30, 51)
    assert small.reserve_s == pytest.approx(5 + 6 + 0.51 + 1.5)


def test_a_slow_start_keeps_back_more_for_the_work_after_judging():
    Startup = judge_plan.Startup
    # All on the CPU, faster than the reference's 0.4 s: slowdown 1.
    quiet = judge_plan.plan_judging(0.0, 600, 200, Startup(0.36, 0.36))
    assert quiet.slowdown == 1.0 and quiet.reserve_s == pytest.approx(0.36 + 5 + 8 + 30)
    # 0.33 s of its 0.36 s on the CPU (some waiting on the disk): 0.36 / 0.33 = 12/11.
    waited = judge_plan.plan_judging(0.0, 600, 200, Startup(0.36, 0.33))
    assert waited.slowdown == pytest.approx(12 / 11) and waited.reserve_s == pytest.approx(0.36 + 5 + 8 * 12 / 11 + 30)
    # A shared machine: 0.6 s of start with 0.2 s of CPU: 3 times slower (0.6 / 0.4 = 1.5 is less).
    shared = judge_plan.plan_judging(0.0, 600, 200, Startup(0.6, 0.2))
    assert shared.slowdown == pytest.approx(3.0) and shared.finish_s == pytest.approx(24.0)
    assert shared.reserve_s == pytest.approx(0.6 + 5 + 24 + 30) and shared.judging_until_s == pytest.approx(540.4)
    # A slower machine, not shared: 1 s of start all on the CPU: 1 / 0.4 = 2.5 times the reference.
    slower = judge_plan.plan_judging(0.0, 600, 200, Startup(1.0, 1.0))
    assert slower.slowdown == pytest.approx(2.5) and slower.reserve_s == pytest.approx(1 + 5 + 20 + 30)


def test_the_slowdown_is_bounded_and_its_parts_are_recorded():
    Startup = judge_plan.Startup
    # 12 s of start with 0.5 s of CPU would be x24: held at 4, the start itself counted whole.
    starved = judge_plan.plan_judging(0.0, 60, 45, Startup(12.0, 0.5))
    assert starved.slowdown == 4.0 and starved.finish_s == pytest.approx(4 * 6.45)
    assert starved.reserve_s == pytest.approx(12 + 5 + 25.8 + 3) and starved.judging_until_s == pytest.approx(14.2)
    # No CPU counted at all (a clock that did not tick): the bound, not a division by zero.
    assert judge_plan.Startup(0.05, 0.0).slowdown == 4.0
    # A start faster than the reference never shrinks the reserve below the reference's.
    assert judge_plan.Startup(0.1, 0.1).slowdown == 1.0
    recorded = starved.as_dict()
    assert recorded["reserve_s"] == 45.8 and recorded["judging_until_s"] == 14.2
    assert {k: recorded["reserve"][k] for k in ("startup_s", "startup_cpu_s", "container_s", "slowdown", "finish_s",
                                                "turns", "safety_s")} == {
        "startup_s": 12.0, "startup_cpu_s": 0.5, "container_s": 5.0, "slowdown": 4.0, "finish_s": 25.8, "turns": 45,
        "safety_s": 3.0}
    unmeasured = judge_plan.plan_judging(0.0, 40, 45).as_dict()["reserve"]
    assert unmeasured["startup_s"] is None and unmeasured["slowdown"] == 1.0


def test_the_startup_is_read_from_the_os():
    """A child process that sleeps 0.3 s before measuring: its age covers the sleep and the
    interpreter's start; its CPU time does not cover the sleep."""
    if judge_plan.measure_startup() is None:
        pytest.skip("no /proc/self/stat here (not Linux): the plan counts the start as not measured")
    code = ("import time; time.sleep(0.3); from reteco.codabench.program.judge_plan import measure_startup; "
            "s = measure_startup(); print(s.wall_s, s.cpu_s)")
    before = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    outside = time.monotonic() - before
    wall, cpu = (float(x) for x in done.stdout.split())
    assert 0.3 <= wall <= outside + 0.02  # one clock tick (10 ms) of /proc's resolution, and rounding
    assert cpu < wall - 0.25


def test_phase_json_carries_the_effective_time_limit():
    assert definition.phase_record(EVALUATION, "2b")["time_limit_s"] == 600
    assert definition.phase_record(POST_EVALUATION, "2c", platform_limit=300)["time_limit_s"] == 300
    from reteco.formats.phase_record import time_limit

    assert time_limit({"time_limit_s": 45}) == 45 and time_limit({}) == 600 and time_limit({"time_limit_s": True}) == 600


# ---------------------------------------------------------------------------------------------
# Which fault the participant reads (the call engine's messages, first match)


@pytest.mark.parametrize("status, body, expected", [
    (403, {"error": {"message": "forbidden"}}, "refused the organizers' credentials"),
    (404, {"error": {"message": "The model `x` does not exist"}}, "does not offer the judge's model at its address"),
    (429, {"error": {"message": "quota", "code": "insufficient_quota"}}, "has no quota left for the organizers' account"),
    (503, {"error": {"message": "overloaded"}}, "kept failing (server errors)"),
])
@pytest.mark.slow
def test_each_refusal_of_the_service_has_its_words(ref_root, tmp_path, server, capsys, status, body, expected):
    server.preflight = lambda b: Reply(status, body)
    *_, page, log, reason = _stopped(tmp_path, ref_root, server, capsys)
    assert f"the judge's service {expected} (0 of 51 answered turns" in reason
    assert_nothing_leaks(tmp_path, log, page, server.base_url)


@pytest.mark.slow
def test_the_model_the_server_reports_reaches_the_log_and_page_escaped(ref_root, tmp_path, server, capsys):
    """A server reporting a model name with terminal escapes (clear screen, set title, bell): it
    was printed raw into the participant's log and page."""
    from support.fake_openai_server import fake_judge

    evil = "evil\x1b[2J\x1b]0;pwned\x07model"

    def reply(body):
        answer = fake_judge(body)
        if isinstance(answer.body, dict) and "model" in answer.body:
            answer.body["model"] = evil
            answer.body["system_fingerprint"] = "fp\x1b[31m"
        return answer

    server.judge = reply
    config = judge_yaml(tmp_path, server.base_url)
    status, scores, details, page, log = run(judged_input(tmp_path, ref_root, "2b", config), tmp_path, capsys)
    assert status == 0 and set(JUDGE) <= set(scores)
    assert "\x1b" not in log and "\x07" not in log and "\x1b" not in page and "\x07" not in page
    assert "reported another model than the configured" in log
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07model" in log
    assert html.escape("evil\\x1b[2J\\x1b]0;pwned\\x07model") in page and "fp\\x1b[31m" in page
    # details.json keeps the server's text as it came (JSON escapes it): the organizers' record.
    assert evil in details["generation"]["judge"]["provenance"]["reported_models"]


@pytest.mark.slow
def test_the_token_budget_stops_the_judging_with_its_own_reason(ref_root, tmp_path, server, capsys):
    scores, details, page, log, reason = _stopped(tmp_path, ref_root, server, capsys, max_tokens_per_run=6000,
                                                  concurrency=1)
    assert "the judge's budget of 6000 tokens for one submission was used up before every answer was judged" in reason
    stopped = details["generation"]["judge"]["stopped"]
    assert stopped["kind"] == "budget" and stopped["detail"] == "token budget reached (6000 tokens)"
    assert stopped["tokens"] <= 6000 and 0 < server.chat_calls < 51 * len(DIMENSIONS)
    assert "at most 511 requests and 6000 tokens" in log
    assert_nothing_leaks(tmp_path, log, page, server.base_url)
