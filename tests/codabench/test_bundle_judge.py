"""A bundle whose Evaluation and Post-evaluation phases judge 2b and 2c in the scoring program
(``reteco bundle --judge-config``), built for real and run through the simulated worker with
loopback network against the fake OpenAI server: where the key is (and is not), the five
dimensions on the platform, the worker without network, a server that stalls past the
deadline, and check-bundle's ``[judge]`` rules."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time
import zipfile
from pathlib import Path

import pytest
from support.bundle_edits import PYTHON, rewrite
from support.fake_openai_server import FakeOpenAI, Reply, fake_judge

from reteco.codabench.program import scoring_program
from reteco.codabench.program.judge_setup import call_budget, count_turns, load_for_bundle, write_judge_setup
from reteco.commands import main
from reteco.llm.cache import ARCHIVE_FILE
from reteco.problems import EXIT_INCOMPLETE, InputError
from reteco.subtracks import JUDGE
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle import vendor
from reteco.workbench.codabench.bundle.builder import BuildOptions, build
from reteco.workbench.codabench.check import worker_simulation as worker
from reteco.workbench.codabench.check.check_bundle import check_bundle
from reteco.workbench.codabench.check.scoring_check import find_python

KEY = "sk-reteco-bundle-KEY-9b8a7c6d5e4f3021"
JUDGED = ("evaluation", "post_evaluation")
STALL_LIMIT_S = 90  # the stalling server's run: its platform limit (the test's docstring says why 90)


@pytest.fixture(scope="module")
def judge_server():
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def organizers_config(folder: Path, base_url: str, timeout_s: float = 10) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "key.txt").write_text(KEY + "\n")
    path = folder / "judge.yaml"
    # Few, short retries: the runs without network give up on the preflight quickly.
    path.write_text(f"prompt_version: 2\nmodel: fake-judge\nbase_url: {base_url}\napi_key_file: key.txt\n"
                    f"max_retries: 2\nbackoff_initial_s: 0.05\nbackoff_max_s: 0.1\ntimeout_s: {timeout_s}\n")
    return path


@pytest.fixture(scope="module")
def judged_build(judge_server, tmp_path_factory):
    """The 2b and 2c bundles built by the command, with the build's log."""
    root = tmp_path_factory.mktemp("judged_bundle")
    config = organizers_config(root / "organizers", judge_server.base_url)
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        status = main(["bundle", "--subtracks", "2b,2c", "--judge-config", str(config), "--out", str(root / "dist"),
                       "--build-dir", str(root / "build"), "--cache", str(root / "cache"), "--python", PYTHON,
                       "--wheels", "environment", "--no-check"])
    assert status == 0, log.getvalue()
    return {sub: root / "dist" / f"reteco_{sub}.zip" for sub in ("2b", "2c")}, root, log.getvalue()


def _members(data: bytes, name: str, depth: int = 0):
    """(name, bytes) of a zip's files, inner zips opened too."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            content = archive.read(info)
            path = f"{name}:{info.filename}" if name else info.filename
            yield path, content
            if content[:4] == b"PK\x03\x04" and depth < 3:
                yield from _members(content, path, depth + 1)


def test_the_key_is_in_the_judged_phases_reference_data_and_nowhere_else(judged_build):
    bundles, _, log = judged_build
    for sub, path in bundles.items():
        holding = sorted(name for name, content in _members(path.read_bytes(), "") if KEY.encode() in content)
        assert holding == [f"reference_data/{phase}_{sub}.zip:judge/api_key" for phase in JUDGED]
    assert KEY not in log
    assert "judge and its key in: reference_data/evaluation_2b.zip, reference_data/post_evaluation_2b.zip" in log


def test_the_judged_bundle_carries_openai_and_the_phases_time_limit(judged_build):
    bundles, _, _ = judged_build
    with zipfile.ZipFile(bundles["2b"]) as archive:
        program = zipfile.ZipFile(io.BytesIO(archive.read("scoring_program.zip")))
        record = json.loads(program.read("vendor/VENDOR.json"))
        assert "openai" in record["packages"] and "openai" not in record["excluded"]
        for phase in definition.PHASES:
            ref = zipfile.ZipFile(io.BytesIO(archive.read(definition.reference_path(phase, "2b"))))
            assert json.loads(ref.read("phase.json"))["time_limit_s"] == 600
            assert ("judge/manifest.json" in ref.namelist()) is (phase.key in JUDGED)


@pytest.mark.slow
def test_with_loopback_network_every_judged_solution_gets_the_five_dimensions(judged_build, judge_server):
    bundles, root, _ = judged_build
    for sub, path in bundles.items():
        before = judge_server.all_chat_calls
        report = check_bundle(path, cache=root / "cache", network="loopback")
        assert report.errors == []
        runs = {r["task"].rsplit(": ", 1)[-1]: r for r in report.runs}
        assert sorted(runs) == ["Development", "Evaluation", "Post-evaluation"]
        assert all(r["returncode"] == 0 for r in runs.values())
        for phase in ("Evaluation", "Post-evaluation"):
            assert set(JUDGE) <= set(runs[phase]["keys"])
        assert not set(JUDGE) & set(runs["Development"]["keys"])  # Development does not judge
        assert judge_server.all_chat_calls > before


@pytest.mark.slow
def test_without_network_the_judged_runs_score_the_rest_and_leak_nothing(judged_build):
    bundles, root, _ = judged_build
    report = check_bundle(bundles["2c"], cache=root / "cache")  # the default: no network at all
    assert report.errors == []  # includes [leak]: neither the key nor the endpoint in a log or an output
    for run in report.runs:
        assert run["returncode"] == 0 and "ndcg_10" in run["keys"] and not set(JUDGE) & set(run["keys"])


@pytest.mark.slow
def test_without_network_the_judged_2b_runs_are_failed_not_ranked_and_said_so(judged_build):
    """2b ranks by the judge mean: where the judge cannot be reached, its judged phases' runs
    exit 4 (never ranked with an empty ranked column); check-bundle notes it and points to the
    probe; Development, which does not judge, is noted as no ranking."""
    bundles, root, _ = judged_build
    report = check_bundle(bundles["2b"], cache=root / "cache")  # no network
    assert report.errors == []
    runs = {r["task"].rsplit(": ", 1)[-1]: r["returncode"] for r in report.runs}
    assert runs == {"Development": 0, "Evaluation": EXIT_INCOMPLETE, "Post-evaluation": EXIT_INCOMPLETE}
    failed = [n for n in report.notes if "judging did not finish in the simulated worker" in n]
    assert len(failed) == 2 and all("run the judge probe" in n for n in failed)
    no_ranking = [n for n in report.notes if "that leaderboard is no ranking" in n]
    assert len(no_ranking) == 1 and "phase 'Development'" in no_ranking[0]


def test_check_bundle_refuses_a_judge_model_leaving_before_a_judged_phase_ends(judged_build, tmp_path):
    """From the table of announced dates (no network): gpt-4o-2024-08-06 leaves on 2027-01-14,
    inside Evaluation (to 2027-01-31) and before Post-evaluation's open end: refused, both dates
    named; kept with --allow-judge-shutdown, the reason written into the report."""
    bundles, _, _ = judged_build
    report = check_bundle(bundles["2b"], simulate=False)
    assert not [n for n in report.notes + report.errors if "announced shutdown date" in n]  # no date known

    def use_gpt_4o(path: Path):
        with zipfile.ZipFile(path) as archive:
            members = {}
            for phase in JUDGED:
                name = definition.reference_path(next(p for p in definition.PHASES if p.key == phase), "2b")
                inner = zipfile.ZipFile(io.BytesIO(archive.read(name)))
                buffer = io.BytesIO()
                with zipfile.ZipFile(buffer, "w") as out:
                    for info in inner.infolist():
                        data = inner.read(info)
                        if info.filename == "judge/judge.yaml":
                            data = data.replace(b"model: fake-judge", b"model: gpt-4o-2024-08-06")
                        out.writestr(info, data)
                members[name] = buffer.getvalue()
        return members

    changed = rewrite(bundles["2b"], tmp_path / "gpt4o.zip", members=use_gpt_4o(bundles["2b"]))
    errors = [e for e in check_bundle(changed, simulate=False).errors if "announced shutdown date of 2027-01-14" in e]
    assert len(errors) == 2 and all(e.startswith("[judge] ") and "--allow-judge-shutdown REASON" in e for e in errors)
    assert "phase 'Evaluation' ends 2027-01-31 23:59:59 UTC" in errors[0] and "has no end" in errors[1]
    kept = check_bundle(changed, simulate=False, allow_judge_shutdown="the plan's GPT-4o, every turn judged by 01-13")
    assert not [e for e in kept.errors if "announced shutdown" in e]
    notes = [n for n in kept.notes if "announced shutdown date of 2027-01-14" in n]
    assert len(notes) == 2 and all(n.endswith("(--allow-judge-shutdown): the plan's GPT-4o, every turn judged by 01-13")
                                   for n in notes)


@pytest.mark.slow
def test_a_server_that_stalls_past_the_deadline_leaves_the_judge_keys_absent_within_the_limit(judged_build, tmp_path):
    """A small limit: the server answers the preflight and 40 judgments, then holds every reply
    past the run's end; the run ends by itself before the limit, exit 4 (2b not ranked without
    its judge mean), without a judge figure, saying why.

    90 s, not 40: the plan keeps back the start, 5 s for the container, the work after judging
    (6.45 s for 45 turns) scaled by how slowly the run started (up to 4 times: 25.8 s) and 4.5 s
    (judge_plan), so judging ends ~73 s in on a quiet machine and ~52 s in at the bound. The
    text metrics come first (WordNet's loading included: 5 s quiet, 36 s measured at a load of ~7
    on 2 cores), and judging must still get time to reach the stall after them: at 40 s and 60 s
    the bound left judging 5 s and 24 s, which loaded runs had spent on the text metrics. On a
    machine so loaded that the text metrics still take the window (the test's own runs at a load
    of 6-9 on 2 cores, three busy loops among it, judged nothing), the run's ending in time and
    without a judge figure is checked and the stall's part skipped, saying so."""
    bundles, root, _ = judged_build
    stalling = FakeOpenAI()
    answered = []

    def judge(body):
        answered.append(1)
        return fake_judge(body) if len(answered) <= 40 else Reply(200, {}, delay_s=2 * STALL_LIMIT_S)

    stalling.judge = judge
    stalling.start()
    host = stalling.base_url.split("//")[1].split("/")[0]
    try:
        run_root = tmp_path / "run"
        with zipfile.ZipFile(bundles["2b"]) as archive:
            worker.extract(io.BytesIO(archive.read("scoring_program.zip")), run_root / "program")
            worker.extract(io.BytesIO(archive.read("reference_data/evaluation_2b.zip")), run_root / "input" / "ref")
            worker.extract(io.BytesIO(archive.read("solutions/test_2b.zip")), run_root / "input" / "res")
        ref = run_root / "input" / "ref"
        phase = next(p for p in definition.PHASES if p.key == "evaluation")
        (ref / "phase.json").write_text(json.dumps(definition.phase_record(phase, "2b", platform_limit=STALL_LIMIT_S)))
        # Requests wait longer than the whole limit, so what stops the stalled judging is the run's
        # deadline, as the test is about. With the bundle's 10 s a quiet machine gave up on the
        # stalled service first ("did not answer in time"), before the deadline came.
        setup = load_for_bundle(organizers_config(tmp_path / "organizers", stalling.base_url, timeout_s=2 * STALL_LIMIT_S))
        write_judge_setup(ref, setup, max_calls=call_budget(setup, count_turns(ref)))
        # What the program takes from the image, as the bundle's VENDOR.json says (scoring_check does the same).
        taken = json.loads((run_root / "program" / "vendor" / vendor.VENDOR_MANIFEST).read_text())["from_image"]
        site = vendor.image_site(PYTHON, "environment", root / "cache", tuple(taken))
        python = worker.make_interpreter(find_python(PYTHON), site, root / "cache" / "stall-sim")
        started = time.monotonic()
        done = worker.run_program(run_root / "program", run_root, python, timeout=STALL_LIMIT_S, isolation=[],
                                  network="loopback")
        elapsed = time.monotonic() - started
    finally:
        stalling.stop()
    # 2b ranks by the judge mean: the unjudged run is failed rather than ranked (refuse_unranked).
    assert not done.timed_out and done.returncode == EXIT_INCOMPLETE and elapsed < STALL_LIMIT_S, done.stderr
    assert not (done.output / "scores.json").exists()
    scores = json.loads((done.output / scoring_program.UNRANKED_SCORES).read_text())
    details = json.loads((done.output / "details.json").read_text())
    assert not set(JUDGE) & set(scores) and {"rouge_l", "meteor"} <= set(scores)
    reason = details["absent_scores"]["judge_mean"]
    log = done.stdout + done.stderr
    assert reason.startswith("the judge did not finish: ") and reason in log and KEY not in log and host not in log
    judge = details["generation"]["judge"]
    plan = judge["plan"]  # the reserve's parts, measured in the run (judge_plan)
    assert plan["time_limit_s"] == STALL_LIMIT_S and 0 < plan["reserve"]["startup_s"] < elapsed
    assert 1 <= plan["reserve"]["slowdown"] <= 4 and plan["judging_until_s"] + plan["reserve"]["startup_s"] < elapsed
    if len(answered) <= 40 and judge["window"]["judging_window_s"] < 10:
        # Ended by itself in time (above), but the text metrics came first and took the window.
        pytest.skip(f"the machine was too loaded to reach the stall: the text metrics took "
                    f"{judge['window']['text_metrics_s']:.0f} s and left judging {judge['window']['judging_window_s']:.0f} s "
                    f"(the run ended by itself in {elapsed:.0f} s of its {STALL_LIMIT_S} s)")
    assert len(answered) > 40  # the stall was reached: requests were in flight at the deadline
    # The first 40 requests to arrive were answered: about the first 8 turns on all five dimensions.
    conn = sqlite3.connect(done.output / ARCHIVE_FILE)
    complete = sum(1 for (n,) in conn.execute("SELECT COUNT(*) FROM judgments GROUP BY topic_key") if n == 5)
    conn.close()
    assert 6 <= complete <= 8
    assert reason.startswith("the judge did not finish: judging reached this run's time limit before every answer was "
                             f"judged ({complete} of 45 answered turns were judged on all five dimensions)")


# ---------------------------------------------------------------------------------------------
# check-bundle's [judge] rules (static pass)


def _judge_errors(path: Path, tmp_path: Path, **change) -> list[str]:
    report = check_bundle(rewrite(path, tmp_path / "changed.zip", **change), simulate=False)
    return [e for e in report.errors if e.startswith("[judge]")]


def test_a_judged_phase_must_hide_its_scoring_output(judged_build, tmp_path):
    bundles, _, _ = judged_build

    def show(content):
        content["phases"][1]["hide_score_output"] = False

    errors = _judge_errors(bundles["2b"], tmp_path, content=show)
    assert len(errors) == 1 and "phase 'Evaluation' does not set hide_score_output" in errors[0]


def test_the_key_copied_into_another_file_is_found(judged_build, tmp_path):
    bundles, _, _ = judged_build
    with zipfile.ZipFile(bundles["2b"]) as archive:
        page = archive.read("pages/overview.md").decode() + f"\nkey: {KEY}\n"
    errors = _judge_errors(bundles["2b"], tmp_path, members={"pages/overview.md": page})
    assert errors == ["[judge] the judge's key is in pages/overview.md: it may only be in the judged phases' reference data"]


def test_a_judged_task_must_not_run_participants_code_in_the_scoring_step(judged_build, tmp_path):
    bundles, _, _ = judged_build

    def ingestion_in_scoring(content):
        for task in content["tasks"]:
            task["ingestion_only_during_scoring"] = True

    errors = _judge_errors(bundles["2b"], tmp_path, content=ingestion_in_scoring)
    assert len(errors) == 2 and all("sets ingestion_only_during_scoring" in e for e in errors)  # the two judged tasks


def test_the_build_refuses_a_judged_phase_whose_output_participants_download(tmp_path):
    config = organizers_config(tmp_path / "organizers", "http://127.0.0.1:9/v1")
    for phases, message in ((("development",), "development shows its scoring output to participants"),
                            (("final",), r"unknown phase\(s\) final")):
        options = BuildOptions(out=tmp_path / "dist", build_dir=tmp_path / "build", judge_config=config, judge_phases=phases)
        with pytest.raises(InputError, match=message):
            build(options)
    assert not (tmp_path / "build").exists()  # refused before any work


def test_the_build_log_estimates_what_judging_one_submission_of_each_judged_phase_costs(judged_build):
    log = judged_build[2]
    for sub in ("2b", "2c"):
        assert f"_{sub} (nothing was sent):" in log or f" {sub} (nothing was sent):" in log, log
    assert "estimate for judging one submission of" in log and "input tokens:" in log and "characters per token" in log
