"""The Codabench bundle: one source for competition.yaml, the build, and check-bundle's rules.

The default layout's bundles (one competition per sub-track) are built once per session for the
interpreter running the tests (wheels copied from this environment: no network), and the
simulated compute worker scores every solution of every task in them. The unpacker's rules are
then each broken on a copy of the 1a bundle whose scoring program is slimmed to what the static
pass reads (metadata.yaml, VENDOR.json). The fixtures are in conftest.py, shared with
test_bundle_platform_rules.py (submission rule and entries, time limit, logo, storage).
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from pathlib import Path

import pytest
import yaml
from support.bundle_edits import PYTHON, only_first_task, rewrite, zip_bytes
from support.paths import REPO_ROOT

from reteco.problems import InputError
from reteco.subtracks import JUDGE, SUBTRACK_IDS, TEXT
from reteco.subtracks import SUBTRACKS as ROWS
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.bundle import leaderboards
from reteco.workbench.codabench.bundle.builder import BuildOptions, write_reference_data
from reteco.workbench.codabench.check.check_bundle import check_bundle

KEYS = {s: row.keys for s, row in ROWS.items()}
OPTIONAL = {k for row in ROWS.values() for k in row.optional_keys()}



# ---------------------------------------------------------------------------------------------
# One source


def test_committed_competition_yaml_is_generated_from_the_definition():
    committed = (REPO_ROOT / "competition.yaml").read_text(encoding="utf-8")
    assert committed == definition.render_all(), (
        "competition.yaml is out of date: run `reteco bundle --write-yaml competition.yaml`"
    )
    documents = list(yaml.safe_load_all(committed))
    assert [d["leaderboards"][0]["key"] for d in documents] == [f"reteco_{s}" for s in SUBTRACK_IDS]
    assert documents == [definition.competition("per-subtrack", s) for s in SUBTRACK_IDS]


@pytest.mark.parametrize("subtrack", SUBTRACK_IDS)
def test_per_subtrack_leaderboard_is_exactly_the_subtracks_keys_official_first(subtrack):
    content = definition.competition("per-subtrack", subtrack)
    (board,) = content["leaderboards"]
    columns = sorted(board["columns"], key=lambda c: c["index"])
    assert [c["key"] for c in columns] == list(KEYS[subtrack])
    assert columns[0]["key"] == leaderboards.ranking_key(subtrack)
    assert board["submission_rule"] == "Force_Last"


def test_single_leaderboard_holds_every_key_once_ranked_by_ndcg():
    (board,) = definition.competition("single")["leaderboards"]
    keys = [c["key"] for c in sorted(board["columns"], key=lambda c: c["index"])]
    assert keys[0] == "ndcg_10"
    assert len(keys) == len(set(keys)) == len({k for sub in SUBTRACK_IDS for k in KEYS[sub]})
    assert all(len(c["key"]) <= 36 and len(c["title"]) <= 36 for c in board["columns"])


def test_leaderboard_lists_are_the_ones_asked_for():
    assert KEYS["1a"] == KEYS["1b"] == (
        "ndcg_10", "map_10", "recall_10", "p_10", "mrr", "ndcg_10_domain_macro", "tp_10", "tr_10", "tc_10", "ndcg_fc_10",
    )
    assert KEYS["2b"][0] == "judge_mean" and KEYS["2c"][0] == "ndcg_10"
    # Only judge keys, nDCG|FC and the text metrics may be absent.
    assert set(OPTIONAL) == set(JUDGE) | {"ndcg_fc_10", "tc_10"} | set(TEXT)


def test_yaml_dates_are_quoted_strings_in_phase_order():
    content = yaml.safe_load(definition.render(definition.competition("single")))
    phases = content["phases"]
    assert [p["name"] for p in phases] == ["Development", "Evaluation", "Post-evaluation"]
    for phase in phases:
        assert isinstance(phase["start"], str) and ("end" not in phase or isinstance(phase["end"], str))
    assert "end" not in phases[-1] and all("end" in p for p in phases[:-1])


# ---------------------------------------------------------------------------------------------
# A real bundle, through the simulated worker


def test_default_layout_is_one_competition_per_subtrack(built_all):
    bundles, options = built_all
    assert options.layout == definition.DEFAULT_LAYOUT == "per-subtrack"
    assert sorted(bundles) == [(s,) for s in SUBTRACK_IDS]
    assert sorted(b.path.name for b in bundles.values()) == sorted(f"reteco_{s}.zip" for s in SUBTRACK_IDS)


@pytest.mark.parametrize("subtrack", SUBTRACK_IDS)
@pytest.mark.slow
def test_bundle_passes_the_check_and_every_solution_scores_in_the_simulated_worker(built_all, subtrack):
    bundles, options = built_all
    report = check_bundle(bundles[(subtrack,)].path, cache=options.cache)
    assert report.errors == []
    # The dev sample on Development, the test sample on Evaluation and Post-evaluation.
    assert len(report.runs) == 3 and all(run["returncode"] == 0 for run in report.runs)


def test_bundle_holds_phase_records_and_vendored_scoring_program(built):
    bundle, _ = built
    with zipfile.ZipFile(bundle.path) as archive:
        names = set(archive.namelist())
        assert {"competition.yaml", "logo.png", "scoring_program.zip", "starting_kit.zip"} <= names
        program = zipfile.ZipFile(io.BytesIO(archive.read("scoring_program.zip")))
        record = json.loads(program.read("vendor/VENDOR.json"))
        assert record["python"] == PYTHON and "pyarrow" in record["packages"] and "openai" not in record["packages"]
        assert "metadata.yaml" in program.namelist()
        for phase in definition.PHASES:
            ref = zipfile.ZipFile(io.BytesIO(archive.read(definition.reference_path(phase, "1a"))))
            assert json.loads(ref.read("phase.json"))["per_topic"] is phase.per_topic
            assert "reference.json" in ref.namelist()
        kit = zipfile.ZipFile(io.BytesIO(archive.read("starting_kit.zip")))
        assert "README.md" in kit.namelist() and "reteco/pyproject.toml" in kit.namelist()


def test_the_bundles_carry_the_scorer_alone(built_all):
    """What the worker and the starting kit get of reteco is the scorer: no module of the
    organizers' workbench in the scoring program's vendor/, the ingestion program's or the kit's
    source (issue 36); the scorer's layers are all there."""
    bundles, _ = built_all
    scorer = {"formats", "metrics", "llm", "judge", "scoring", "outputs", "release", "codabench", "commands", "api"}
    for bundle in bundles.values():
        with zipfile.ZipFile(bundle.path) as archive:
            copies = {"scoring_program.zip": "vendor/reteco/", "starting_kit.zip": "reteco/src/reteco/"}
            if "ingestion_program.zip" in archive.namelist():
                copies["ingestion_program.zip"] = "vendor/reteco/"
            for member, prefix in copies.items():
                names = zipfile.ZipFile(io.BytesIO(archive.read(member))).namelist()
                package = [n[len(prefix):] for n in names if n.startswith(prefix)]
                assert [n for n in package if n.startswith("workbench")] == [], (bundle.path.name, member)
                assert scorer <= {n.split("/")[0] for n in package if "/" in n}, (bundle.path.name, member)
                assert "codabench/program/scoring_program.py" in package


def test_bundle_pages_are_the_participants_pages_of_the_repository(built):
    """The rules are written once, in pages/; every bundle carries them as they are."""
    bundle, _ = built
    with zipfile.ZipFile(bundle.path) as archive:
        content = yaml.safe_load(archive.read("competition.yaml"))
        named = [content["terms"]] + [page["file"] for page in content["pages"]]
        for path in named:
            assert archive.read(path) == (REPO_ROOT / path).read_bytes(), path
    assert {Path(p).name for p in named} == {p.name for p in (REPO_ROOT / definition.PAGES_FOLDER).glob("*.md")}


def test_reference_data_folder_is_the_bundles_public_reference_data(built_all, tmp_path):
    """`make reference-data` writes the Development phase's zips, byte for byte the bundle's, and
    nothing of the hidden test split; the folder's own files stay."""
    bundles, options = built_all
    dest = tmp_path / "reference_data"
    dest.mkdir()
    (dest / "README.md").write_text("kept\n", encoding="utf-8")
    (dest / "development_9z.zip").write_bytes(b"an older build's zip")
    written = write_reference_data(dataclasses.replace(options, build_dir=tmp_path / "build"), dest)
    assert sorted(p.name for p in dest.iterdir()) == ["README.md"] + [f"development_{s}.zip" for s in SUBTRACK_IDS]
    assert written == [dest / f"development_{s}.zip" for s in SUBTRACK_IDS]
    for sub in SUBTRACK_IDS:
        with zipfile.ZipFile(bundles[(sub,)].path) as archive:
            assert archive.read(f"reference_data/development_{sub}.zip") == (dest / f"development_{sub}.zip").read_bytes()
            names = set(archive.namelist())
        hidden = {f"reference_data/{p.key}_{sub}.zip" for p in definition.PHASES if p.split in definition.HIDDEN_SPLITS}
        assert hidden and hidden <= names  # the bundle carries the hidden phases, the folder never
    with zipfile.ZipFile(dest / "development_1a.zip") as archive:
        assert json.loads(archive.read("phase.json"))["split"] == "dev"


def test_reference_data_folder_never_carries_a_judge_key(tmp_path):
    options = BuildOptions(judge_config=tmp_path / "judge.yaml", build_dir=tmp_path / "build")
    with pytest.raises(InputError, match="leave out --judge-config"):
        write_reference_data(options, tmp_path / "reference_data")
    assert not (tmp_path / "reference_data").exists() and not (tmp_path / "build").exists()


def test_a_failing_solution_is_reported_by_the_simulated_worker(built, tmp_path):
    bundle, options = built
    # One task (development 1a) whose only solution ranks topics of no sub-track.
    path = rewrite(
        bundle.path,
        tmp_path / "broken.zip",
        content=lambda c: only_first_task(c, "development", "1a"),
        members={"solutions/dev_1a.zip": zip_bytes({"run.txt": "nope Q0 d 1 1 x\n"})},
    )
    report = check_bundle(path, cache=options.cache)
    assert any(e.startswith("[worker]") and "exited 1" in e and "none of the run" in e for e in report.errors)


# ---------------------------------------------------------------------------------------------
# The unpacker's rules, one broken bundle each (static pass only)


def _errors(path: Path) -> list[str]:
    return check_bundle(path, simulate=False).errors


def test_slim_bundle_passes_the_static_rules(slim):
    assert _errors(slim) == []


def _broken(slim: Path, tmp_path: Path, content=None, members=None, yaml_text=None) -> list[str]:
    return _errors(rewrite(slim, tmp_path / "broken.zip", content=content, members=members, yaml_text=yaml_text))


def _rule(errors: list[str], rule: str, text: str = "") -> bool:
    return any(e.startswith(f"[{rule}]") and text in e for e in errors)


def test_not_a_zip(tmp_path):
    path = tmp_path / "x.zip"
    path.write_text("hello")
    assert _rule(_errors(path), "zip")


def test_competition_yaml_in_a_folder(slim, tmp_path):
    path = tmp_path / "nested.zip"
    with zipfile.ZipFile(slim) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            dst.writestr("reteco/" + info.filename, src.read(info))
    assert _rule(_errors(path), "layout", "zip the folder's content")


@pytest.mark.parametrize(
    "mutate, rule, text",
    [
        (lambda c: c.pop("version"), "version", "old"),
        (lambda c: c.update(version=1.5), "version", ""),
        (lambda c: c.pop("leaderboards"), "required", "leaderboards"),
        (lambda c: c.pop("terms"), "required", "terms"),
        (lambda c: c.pop("docker_image"), "required", "py37"),
        (lambda c: c.update(enable_detailed_result=True), "unknown-key", "enable_detailed_result"),
        (lambda c: c["phases"][0].update(max_submission=3), "unknown-key", "max_submission"),
        (lambda c: c["leaderboards"][0]["columns"][0].update(sort="desc"), "unknown-key", "sort"),
        (lambda c: c["pages"].append({"title": "Extra", "file": "pages/missing.md"}), "file", "not in the bundle"),
        (lambda c: c["pages"][0].update(file="../escape.md"), "file", "relative path"),
        (lambda c: c.update(image="nope.png"), "file", "nope.png"),
        (lambda c: c["tasks"][1].update(index=0), "task", "duplicate task index 0"),
        (lambda c: c["tasks"][0].pop("scoring_program"), "task", "no scoring_program"),
        (lambda c: c["solutions"][0].update(tasks=[99]), "solution", "task 99"),
        (lambda c: c.update(solutions=c["solutions"][1:]), "solution", "has no solution"),
        (lambda c: c["phases"][0].update(tasks=[0, 99]), "phase", "task 99"),
        (lambda c: c["phases"][0].update(tasks=[]), "phase", "has no tasks"),
        (lambda c: c["phases"][1].update(execution_time_limit=3600), "time-limit", "600 s"),
        (lambda c: c["phases"][1].update(execution_time_limit=0), "time-limit", "positive"),
        (lambda c: c["phases"][1].update(auto_migrate_to_this_phase=True) or c["phases"][0].update(
            auto_migrate_to_this_phase=True), "phase", "first phase"),
        (lambda c: c["phases"][0].pop("end"), "date", "has no end"),
        (lambda c: c["phases"][1].update(start=c["phases"][0]["end"]), "date", "starts before"),
        (lambda c: c["phases"][1].update(start="2027-01-01 00:00:00"), "date", "starts before"),
        (lambda c: c["phases"][0].update(end="2026-08-01 00:00:00"), "date", "ends before it starts"),
        (lambda c: c["phases"][0].update(start="2026-09-01 00:00:00+02:00"), "date", "offset"),
        (lambda c: c["phases"][0].update(start="1 September 2026"), "date", "YYYY-MM-DD"),
        (lambda c: c["phases"].reverse(), "phase", "index order"),
        (lambda c: c["leaderboards"].append(dict(c["leaderboards"][0])), "leaderboard", "only the first"),
        (lambda c: c["leaderboards"][0].pop("submission_rule"), "leaderboard", "absent (Add)"),
        (lambda c: c["leaderboards"][0].update(submission_rule="Force_Latest_Multiple"), "leaderboard", "own row"),
        (lambda c: c["leaderboards"][0].update(submission_rule="Force_Best"), "leaderboard", "best-scoring"),
        (lambda c: c["leaderboards"][0].update(title="x" * 65), "leaderboard", "64"),
        (lambda c: c["leaderboards"][0]["columns"][1].update(key="k" * 37), "column", "36"),
        (lambda c: c["leaderboards"][0]["columns"][1].update(title="t" * 37), "column", "36"),
        (lambda c: c["leaderboards"][0]["columns"][1].update(key="ndcg_10"), "column", "repeats"),
        (lambda c: c["leaderboards"][0]["columns"][1].update(index=0), "column", "index 0 repeats"),
        (lambda c: c["leaderboards"][0]["columns"][0].update(index=99), "column", "no column has index 0"),
        (lambda c: c["leaderboards"][0]["columns"][2].update(sorting="up"), "column", "sorting"),
        (lambda c: c["leaderboards"][0]["columns"][2].update(computation="avg"), "column", "computation"),
        (lambda c: c["leaderboards"][0].update(columns=c["leaderboards"][0]["columns"][:-1]), "keys", "no column for"),
        (lambda c: c.pop("fact_sheet"), "fact-sheet", "team_name"),
        (lambda c: c["fact_sheet"]["team_name"].pop("is_on_leaderboard"), "fact-sheet", "exactly"),
        (lambda c: c["fact_sheet"]["team_name"].update(type="essay"), "fact-sheet", "type"),
        (lambda c: c["fact_sheet"].pop("models_used"), "fact-sheet", "models_used"),
        (lambda c: c["fact_sheet"]["code_link"].update(title="x" * 5000), "fact-sheet", "4096"),
        (lambda c: c["fact_sheet"]["team_name"].update(is_required=True), "fact-sheet", "is_required is True"),
        (lambda c: c["fact_sheet"]["code_link"].update(is_required="False"), "fact-sheet", "is_required is 'False'"),
        (lambda c: c["fact_sheet"]["team_name"].update(is_on_leaderboard=False), "fact-sheet", "is_on_leaderboard"),
        (lambda c: c["phases"][0].update(hide_output=True), "visibility", "hides the logs"),
        (lambda c: c["phases"][1].update(hide_score_output=False), "visibility", "hidden labels"),
        (lambda c: c["phases"][2].pop("hide_score_output"), "visibility", "hidden labels"),
    ],
)
def test_each_unpacker_rule_is_caught(slim, tmp_path, mutate, rule, text):
    errors = _broken(slim, tmp_path, content=mutate)
    assert _rule(errors, rule, text), errors


def test_unquoted_dates_are_caught(slim, tmp_path):
    with zipfile.ZipFile(slim) as archive:
        text = archive.read("competition.yaml").decode()
    unquoted = text.replace("start: '2027-01-10 00:00:00'", "start: 2027-01-10 00:00:00")
    assert unquoted != text
    assert _rule(_broken(slim, tmp_path, yaml_text=unquoted), "date", "unquoted")


def test_empty_page_and_empty_data_are_caught(slim, tmp_path):
    errors = _broken(slim, tmp_path, members={"pages/tasks.md": b"", "solutions/dev_1a.zip": zip_bytes({})})
    assert _rule(errors, "file", "pages/tasks.md is empty")
    assert _rule(errors, "file", "holds no file")


@pytest.mark.parametrize(
    "files, text",
    [
        ({"program/metadata.yaml": "command: python3 /app/program/score.py /app/input /app/output\n"}, "at its root"),
        ({"metadata.yaml": "command: ./score.py /app/input /app/output\n"}, "permission bits"),
        ({"metadata.yaml": "command: cd /app/program && python3 score.py\n"}, "without a shell"),
        ({"metadata.yaml": "command: python3 score.py /app/input /app/output\n"}, "relative path"),
        ({"metadata.yaml": "description: no command\n"}, "has no command"),
        ({"metadata.yaml": "command: python3 /app/program/score.py /app/input /app/output\n"}, "VENDOR.json"),
    ],
)
def test_program_rules_are_caught(slim, tmp_path, files, text):
    program = {"score.py": "print('hi')\n", **files}
    if "VENDOR.json" not in text:
        program["vendor/VENDOR.json"] = "{}"
    errors = _broken(slim, tmp_path, members={"scoring_program.zip": zip_bytes(program)})
    assert _rule(errors, "program", text), errors


def test_reference_data_needs_its_phase_record(slim, tmp_path):
    with zipfile.ZipFile(slim) as archive:
        ref = zipfile.ZipFile(io.BytesIO(archive.read("reference_data/evaluation_1a.zip")))
        files = {n: ref.read(n) for n in ref.namelist() if n != "phase.json"}
        wrong = dict(files, **{"phase.json": json.dumps({"name": "Development", "per_topic": True})})
    assert _rule(_broken(slim, tmp_path, members={"reference_data/evaluation_1a.zip": zip_bytes(files)}),
                 "reference", "no phase.json")
    assert _rule(_broken(slim, tmp_path, members={"reference_data/evaluation_1a.zip": zip_bytes(wrong)}),
                 "reference", "phase.json is for phase 'Development'")


def test_per_subtrack_competition_must_rank_by_its_official_key(slim, tmp_path):
    def reversed_columns(c):
        columns = c["leaderboards"][0]["columns"]
        c["leaderboards"][0]["columns"] = [dict(col, index=i) for i, col in enumerate(columns[::-1])]

    assert _rule(_broken(slim, tmp_path, content=reversed_columns), "keys", "not 'ndcg_10'")


def test_data_uploaded_as_a_codabench_dataset_is_named_by_its_key(slim, tmp_path):
    key = "3f2b9c1e-5a7d-4e2f-9b1c-0123456789ab"
    path = definition.reference_path(definition.PHASES[1], "1a")
    content = definition.competition("per-subtrack", "1a", external={path: key})
    assert [t["reference_data"] for t in content["tasks"] if t["reference_data"] == key] == [key]
    # The bundle without that file: noted (not simulated) without a local copy, checked with one.
    with zipfile.ZipFile(slim) as archive:
        local = tmp_path / "evaluation_1a.zip"
        local.write_bytes(archive.read(path))

    def use_key(c):
        for task in c["tasks"]:
            if task["reference_data"] == path:
                task["reference_data"] = key

    bundle = rewrite(slim, tmp_path / "external.zip", content=use_key)
    with zipfile.ZipFile(bundle) as archive, zipfile.ZipFile(tmp_path / "without.zip", "w") as out:
        for info in archive.infolist():
            if info.filename != path:
                out.writestr(info, archive.read(info))
    report = check_bundle(tmp_path / "without.zip", simulate=False)
    assert report.errors == [] and any(key in note for note in report.notes)
    assert check_bundle(tmp_path / "without.zip", simulate=False, datasets={key: local}).errors == []
