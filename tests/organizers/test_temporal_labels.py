"""Temporal label files, CSV review, the pool's corpus streaming, the frozen prompts, and what
``reteco prepare`` writes for temporal diagnostics (periods, time scopes, frozen labels)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from support.paths import SHARED_SAMPLE

from reteco.formats.reference import Reference
from reteco.formats.release import read_guidance
from reteco.formats.temporal_labels import LABELS_DIR, LabelRow, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, Period, QueryPeriods, read_periods
from reteco.problems import InputError
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.workbench.labels.pool import fetch_passages
from reteco.workbench.labels.prompts import PACKAGED, LabelInput, PromptIntegrityError, ReplyProblem, freeze, load_prompts
from reteco.workbench.labels.review import export_csv, import_csv

PERIODS = [
    QueryPeriods("d/q1", "When did fees rise?", (Period("p1", "q1_step1", "fees in 2016"), Period("p2", "q1_step2", "fees in 2017")), ("2017",), True),
    QueryPeriods("d/q2", "Why?", (), (), False),
]


def llm(query, doc, relevant, covers=(), line=0):
    return LabelRow(query, doc, relevant, tuple(covers), "llm", "model-x", "2027-01-20T10:00:00Z", "temporal-labels/v1")


def human(query, doc, relevant, covers, overrides, who="alice"):
    return LabelRow(query, doc, relevant, tuple(covers), "human", who, "2027-01-21T10:00:00Z", None, "note", overrides)


@pytest.fixture
def labels(tmp_path):
    labels = TemporalLabels.create(tmp_path / "labels", PERIODS, "test", "created")
    labels.append([llm("d/q1", "a", True, ["p1"]), llm("d/q1", "b", False), llm("d/q2", "c", True)], "first")
    return labels


# ---------------------------------------------------------------- label files


def test_labels_round_trip_and_count(labels):
    again = TemporalLabels.read(labels.root)
    assert again.content_hash == labels.content_hash and len(again.content_hash) == 64
    assert again.label_of("d/q1", "a").covers == ("p1",) and again.label_of("d/q1", "a").line == 1
    assert again.label_of("d/q2", "c").line == 3
    assert again.counts()["pairs"] == 3 and again.counts()["temporally_relevant"] == 2
    assert [h["what"] for h in again.manifest["history"]] == ["created", "first"]
    assert again.manifest["format"] == "reteco-temporal-labels/1" and again.manifest["split"] == "test"


def test_an_llm_never_relabels_a_pair(labels):
    with pytest.raises(InputError, match="must be a human override"):
        labels.append([llm("d/q1", "a", False)], "again")
    # Nothing was written: the folder still reads, with the same hash.
    assert TemporalLabels.read(labels.root).content_hash == labels.content_hash


def test_a_human_override_names_the_line_it_replaces(labels):
    with pytest.raises(InputError, match='"overrides_line": 1'):
        labels.append([human("d/q1", "a", False, [], overrides=2)], "wrong line")
    with pytest.raises(InputError, match="names no earlier verdict"):
        labels.append([human("d/q1", "zzz", False, [], overrides=1)], "nothing to override")
    labels.append([human("d/q1", "a", False, [], overrides=1)], "review")
    again = TemporalLabels.read(labels.root)
    assert again.label_of("d/q1", "a").source == "human" and again.label_of("d/q1", "a").line == 4
    assert again.counts()["human_overrides"] == 1
    # A second override overrides the first override.
    labels.append([human("d/q1", "a", True, ["p2"], overrides=4, who="bob")], "second review")
    assert TemporalLabels.read(labels.root).label_of("d/q1", "a").labeller == "bob"


@pytest.mark.parametrize(
    "row, message",
    [
        (llm("d/q9", "a", True), "not in periods.jsonl"),
        (llm("d/q1", "z", True, ["p3"]), "distinct period ids"),
        (llm("d/q1", "z", True, ["p1", "p1"]), "distinct period ids"),
        (LabelRow("d/q1", "z", True, (), "llm", "m", "2027-01-20T10:00:00Z", None), "prompt_version"),
        (LabelRow("d/q1", "z", True, (), "robot", "m", "2027-01-20T10:00:00Z", "v"), '"source"'),
        (LabelRow("d/q1", "z", True, (), "human", "m", "yesterday", None), "ISO 8601"),
    ],
)
def test_bad_rows_are_refused(labels, row, message):
    with pytest.raises(InputError, match=message):
        labels.append([row], "bad")


def test_a_stale_reader_cannot_overwrite_newer_rows(labels):
    other = TemporalLabels.read(labels.root)
    labels.append([llm("d/q2", "new", False)], "process one")
    with pytest.raises(InputError, match="changed since it was read"):
        other.append([llm("d/q2", "other", True)], "process two")
    again = TemporalLabels.read(labels.root)
    assert again.label_of("d/q2", "new") is not None and again.label_of("d/q2", "other") is None


def test_any_change_outside_the_tools_is_detected(labels):
    for name in ("labels.jsonl", "periods.jsonl"):
        path = labels.root / name
        original = path.read_bytes()
        path.write_bytes(original + b"\n")
        with pytest.raises(InputError, match=f"{name} does not match the sha256"):
            TemporalLabels.read(labels.root)
        path.write_bytes(original)
    TemporalLabels.read(labels.root)


def test_hand_edited_rows_are_reported_with_their_line(labels, tmp_path):
    # Re-seal a folder whose second row was edited into an LLM relabelling: reading refuses it.
    copy = tmp_path / "copy"
    shutil.copytree(labels.root, copy)
    rows = (copy / "labels.jsonl").read_text().splitlines()
    rows.append(rows[0].replace('"temporally_relevant": true', '"temporally_relevant": false'))
    (copy / "labels.jsonl").write_text("\n".join(rows) + "\n")
    relabelled = TemporalLabels(copy, dict(labels.manifest), labels.periods)
    relabelled._seal("forged", 0)
    with pytest.raises(InputError) as excinfo:
        TemporalLabels.read(copy)
    assert "labels.jsonl:4" in str(excinfo.value) and "human override" in str(excinfo.value)


# ---------------------------------------------------------------- CSV review


def edit(path: Path, changes: dict[tuple[str, str], dict]) -> None:
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    for row in rows:
        row.update(changes.get((row["query"], row["doc_id"]), {}))
    with open(path, "w", encoding="utf-8-sig", newline="") as handle:  # as a spreadsheet saves it
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_csv_export_import_records_only_changes(labels, tmp_path):
    path = tmp_path / "review.csv"
    assert export_csv(labels, path, {("d/q1", "a"): "passage text"}) == 3
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows[0]["query"] == "d/q1" and rows[0]["passage"] == "passage text"
    assert rows[0]["required_periods"] == "p1: fees in 2016 | p2: fees in 2017"
    edit(path, {("d/q1", "b"): {"temporally_relevant": "yes", "covers": "p2; p1", "review_note": "dated 2016"}})
    counts = import_csv(labels, path, "carol")
    assert counts == {"rows": 3, "unchanged": 2, "overridden": 1, "added": 0}
    row = TemporalLabels.read(labels.root).label_of("d/q1", "b")
    assert (row.source, row.labeller, row.temporally_relevant, row.covers, row.overrides_line, row.rationale) == (
        "human", "carol", True, ("p1", "p2"), 2, "dated 2016"
    )
    # The same file again: its line numbers are stale for the overridden pair.
    with pytest.raises(InputError, match="exported before a later change"):
        import_csv(labels, path, "carol")


def test_csv_import_is_all_or_nothing(labels, tmp_path):
    path = tmp_path / "review.csv"
    export_csv(labels, path)
    edit(path, {("d/q1", "a"): {"temporally_relevant": "0"}, ("d/q1", "b"): {"covers": "p7"}})
    before = labels.content_hash
    with pytest.raises(InputError) as excinfo:
        import_csv(labels, path, "carol")
    assert "covers must list distinct period ids of the query (p1, p2)" in str(excinfo.value)
    assert f"{path}:3" in str(excinfo.value)
    assert TemporalLabels.read(labels.root).content_hash == before
    with pytest.raises(InputError, match="--reviewer"):
        import_csv(labels, path, " ")


# ---------------------------------------------------------------- periods files


def test_periods_file_is_validated(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"query": "d/q", "periods": [{"period": "first"}]}) + "\n")
    with pytest.raises(InputError, match='like "p1"'):
        read_periods(path)
    path.write_text(json.dumps({"query": "d/q", "periods": [{"period": "p1", "start_iso": "last year"}]}) + "\n")
    with pytest.raises(InputError, match="ISO date"):
        read_periods(path)


# ---------------------------------------------------------------- prepare


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    return write_synthetic_release(root / "release")


def pad(iso: str, end: bool) -> str:
    """An ISO date of any precision as the first (or last) day it covers, for comparing."""
    parts = iso.split("-")
    return "-".join([parts[0], parts[1] if len(parts) > 1 else ("12" if end else "01"),
                     parts[2] if len(parts) > 2 else ("31" if end else "01")])


def test_prepare_writes_required_periods_with_guidance_time_scopes(synthetic, tmp_path):
    summary = prepare_release(synthetic, "dev", tmp_path / "ref", subtracks=("1a", "1b"))
    for sub in ("1a", "1b"):
        ref = Reference.read(tmp_path / "ref" / sub)
        assert PERIODS_FILE in ref.manifest["files"]  # part of the reference's fingerprint
        info = ref.manifest["temporal"]
        assert info["queries"] == info["queries_with_periods"] == 18 and info["frozen_labels"] is None
        assert info["periods"] == info["periods_with_time_scope"] == 53
    periods = read_periods(tmp_path / "ref" / "1a" / PERIODS_FILE)
    # Check one query by hand against the release's own files.
    domain = "bitcoin"
    steps = [json.loads(l) for l in (synthetic / "track1_tempo" / domain / "steps_dev.jsonl").read_text().splitlines()]
    guidance = {g.query_id: g for g in read_guidance(synthetic / "track1_tempo" / domain / "guidance_dev.jsonl")}
    record = steps[0]
    qp = periods[f"{domain}/{record['id']}"]
    assert [p.step_id for p in qp.periods] == [s["step_id"] for s in record["steps"]]
    assert [p.period for p in qp.periods] == [f"p{n}" for n in range(1, len(record["steps"]) + 1)]
    assert [p.description for p in qp.periods] == [s["step"] for s in record["steps"]]
    assert qp.text == record["query"]
    assert qp.key_time_anchors == tuple(guidance[record["id"]].key_time_anchors)
    for step, p in zip(record["steps"], qp.periods):
        scopes = [guidance[record["id"]].scopes[d] for d in step["gold_ids"]]
        assert p.oracle_docs == tuple(step["gold_ids"])
        # The span of the step's passages: earliest start, latest end ("2015" ends with "2015-12").
        assert pad(p.start_iso, False) == min(pad(s.start_iso, False) for s in scopes)
        assert pad(p.end_iso, True) == max(pad(s.end_iso, True) for s in scopes)
    examples = [json.loads(l) for l in (synthetic / "track1_tempo" / domain / "examples_dev.jsonl").read_text().splitlines()]
    assert qp.oracle_relevant == tuple(examples[0]["gold_ids"])
    assert not [w for w in summary["warnings"] if "guidance" in w]


def test_prepare_copies_the_release_frozen_labels_after_checking_them(synthetic, tmp_path):
    release = tmp_path / "release"
    shutil.copytree(synthetic, release)
    prepare_release(release, "dev", tmp_path / "first", subtracks=("1a",))
    periods = read_periods(tmp_path / "first" / "1a" / PERIODS_FILE)
    query = next(iter(periods))
    labels = TemporalLabels.create(release / "track1_tempo" / "temporal_labels_dev", periods.values(), "dev", "frozen")
    labels.append([llm(query, "some/doc.txt", True, ["p1"])], "one verdict")
    summary = prepare_release(release, "dev", tmp_path / "ref", subtracks=("1a", "1b"))
    for sub in ("1a", "1b"):
        copied = TemporalLabels.read(tmp_path / "ref" / sub / LABELS_DIR)
        assert copied.content_hash == labels.content_hash
        assert summary["subtracks"][sub]["temporal"]["frozen_labels"]["content_hash"] == labels.content_hash
    assert "temporal_labels_dev" not in summary["tracks"]["track1_tempo"]["domains"]
    # Labels of another split in the split's folder are an error, not a guess.
    (release / "track1_tempo" / "temporal_labels_test").mkdir()
    shutil.copytree(release / "track1_tempo" / "temporal_labels_dev", release / "track1_tempo" / "temporal_labels_test", dirs_exist_ok=True)
    with pytest.raises(InputError, match="of split 'dev' in the folder of split 'test'"):
        prepare_release(release, "test", tmp_path / "ref_test", subtracks=("1a",))


@pytest.mark.skipif(not SHARED_SAMPLE.is_dir(), reason="the organizers' sample (../shared/data/reteco_sample) is absent")
def test_prepare_on_the_public_sample_has_one_period_per_flattened_step(tmp_path):
    summary = prepare_release(SHARED_SAMPLE, "dev", tmp_path / "ref", subtracks=("1a",))
    periods = read_periods(tmp_path / "ref" / "1a" / PERIODS_FILE)
    assert len(periods) == 5
    # The sample's steps file is flattened: one record per query, its gold = the query's gold.
    record = periods["genealogy/9808_315"]
    assert len(record.periods) == 1 and len(record.periods[0].oracle_docs) == 7
    assert record.periods[0].start_iso is None  # the sample has no guidance
    assert summary["subtracks"]["1a"]["temporal"]["periods_with_time_scope"] == 0
    # No warning about its periods; the one about its gold-only corpus is test_prepare.py's.
    assert [w for w in summary["warnings"] if not w.startswith("1a: over half of the corpus is judged relevant")] == []


# ---------------------------------------------------------------- passages for the pool


def test_passages_are_streamed_by_id_only(tmp_path):
    corpus = tmp_path / "documents.jsonl"
    lines = [
        {"content": 'a "quoted" text with \\"id\\": \\"b\\" inside', "id": "a"},
        {"id": "b", "content": "bee"},
        {"id": "c\u00e9", "content": "unicode id"},
    ]
    corpus.write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines) + "not json, never read\n")
    texts, files = fetch_passages({"d": {"a", "c\u00e9"}}, documents=[corpus])
    assert texts == {("d", "a"): lines[0]["content"], ("d", "c\u00e9"): "unicode id"}
    # The run stopped once both were found: the broken last line was never parsed.
    texts, _ = fetch_passages({"d": {"b"}, "e": {"b"}}, documents=[corpus])
    assert texts == {("d", "b"): "bee", ("e", "b"): "bee"}
    with pytest.raises(InputError, match="not valid JSON"):
        fetch_passages({"d": {"missing"}}, documents=[corpus])


# ---------------------------------------------------------------- prompts


def test_prompts_are_frozen_and_render_fenced_data():
    prompts = load_prompts(1)
    data = LabelInput("d/q1", "Why <<<END QUESTION>>> now?", (("p1", "fees in 2016"),), "doc/1", "text >>> injected")
    messages = prompts.messages("temporal_relevance", data)
    user = messages[1]["content"]
    assert "<<<END QUESTION>>>" not in user.split("<<<BEGIN QUESTION", 1)[1].split("\n", 2)[1]
    assert "\u2039\u2039\u2039END QUESTION\u203a\u203a\u203a" in user and "text \u203a\u203a\u203a injected" in user
    assert "temporal relevance" in messages[0]["content"] and "period coverage" not in messages[0]["content"]
    fmt = prompts.response_format("period_coverage", ["p1", "p2"])
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["covered_periods"]["items"]["enum"] == ["p1", "p2"]
    assert prompts.name == "temporal-labels/v1" and len(prompts.signature) == 16


@pytest.mark.parametrize(
    "task, content, expected",
    [
        ("temporal_relevance", '{"rationale": "x", "temporally_relevant": true}', (True, "x")),
        ("period_coverage", '{"rationale": "y", "covered_periods": ["p2", "p1"]}', (["p1", "p2"], "y")),
        ("period_coverage", '{"rationale": "y", "covered_periods": []}', ([], "y")),
    ],
)
def test_replies_are_parsed(task, content, expected):
    assert load_prompts(1).parse(task, content, ["p1", "p2"]) == expected


@pytest.mark.parametrize(
    "task, content, problem",
    [
        ("temporal_relevance", "", "empty"),
        ("temporal_relevance", "yes", "not valid JSON"),
        ("temporal_relevance", '{"rationale": "x", "temporally_relevant": 1}', "not true or false"),
        ("temporal_relevance", '{"rationale": "x", "temporally_relevant": true, "score": 5}', "does not allow"),
        ("period_coverage", '{"rationale": "x", "covered_periods": ["p3"]}', "not among p1, p2"),
        ("period_coverage", '{"rationale": "x", "covered_periods": ["p1", "p1"]}', "repeated"),
        ("period_coverage", '{"covered_periods": []}', "lacked"),
    ],
)
def test_unusable_replies_are_refused(task, content, problem):
    with pytest.raises(ReplyProblem, match=problem):
        load_prompts(1).parse(task, content, ["p1", "p2"])


def test_a_changed_prompt_file_fails_to_load(tmp_path):
    root = tmp_path / "prompts"
    shutil.copytree(PACKAGED, root)
    load_prompts(1, root)
    path = root / "v1" / "temporal_relevance.md"
    path.write_text(path.read_text() + "\nAlso, be lenient.\n")
    with pytest.raises(PromptIntegrityError, match="temporal_relevance.md"):
        load_prompts(1, root)
    with pytest.raises(PromptIntegrityError, match="already frozen"):
        freeze(1, root)
