"""Reference data is verified before it is scored: every file kind, every kind of damage.

A reference folder (``reteco prepare``'s output, or the Codabench ``input/ref``) whose files are
deleted, truncated, changed by one byte, replaced by garbage or emptied is refused with exit 1
and a message naming the file, through the CLI and through the scoring program: no traceback,
no gold id in the output, no scores.json. Also: the fingerprint follows the verified content,
and duplicate-map chains are followed to their end when a run is scored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from support.paths import SAMPLES

from reteco import commands as cli
from reteco.codabench.program import scoring_program as codabench
from reteco.formats.corpus_index import DocIdIndex, DuplicateCycle, DuplicateMap, resolve_chains
from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest, sha256_file
from reteco.formats.qrels import benchmark_reference
from reteco.formats.reference import Judgment, Reference, Topic
from reteco.formats.temporal_labels import LABELS_DIR, LabelRow, TemporalLabels
from reteco.formats.temporal_periods import PERIODS_FILE, read_periods
from reteco.problems import InputError
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.retrieval import score_run

# ---------------------------------------------------------------------------------------------
# the reference folders: the five sub-tracks, 1a with frozen labels, 2a listing its phase.json,
# and a graded benchmark with stance.tsv


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("integrity")
    release = write_synthetic_release(root / "release")
    prepare_release(release, "dev", root / "ref")
    out = {sub: root / "ref" / sub for sub in ("1a", "1b", "2a", "2b", "2c")}

    # 1a with frozen labels copied from the release (reference.json records them).
    periods = read_periods(out["1a"] / PERIODS_FILE)
    query = next(iter(periods))
    gold = next(j.doc_id for j in Reference.read(out["1a"]).judgments if j.key == query)
    labels = TemporalLabels.create(release / "track1_tempo" / "temporal_labels_dev", periods.values(), "dev", "frozen")
    row = LabelRow(query, gold, True, ("p1",), "llm", "fake-model", "2027-01-20T10:00:00Z", "temporal/1")
    labels.append([row], "one verdict")
    prepare_release(release, "dev", root / "labelled", subtracks=("1a",))
    out["1a_labels"] = root / "labelled" / "1a"

    # 2a whose manifest lists phase.json (a bundle built that way has it verified too).
    phased = root / "phased" / "2a"
    shutil.copytree(out["2a"], phased)
    (phased / "phase.json").write_text(json.dumps({"phase": "development", "name": "Development", "split": "dev",
                                                   "per_topic": True}) + "\n")
    manifest = json.loads((phased / "reference.json").read_text())
    manifest["files"]["phase.json"] = sha256_file(phased / "phase.json")
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    (phased / "reference.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    out["2a_phase"] = phased

    # A graded benchmark folder with stance.tsv.
    judgments = [Judgment("c1", "evidence-a1", 2), Judgment("c1", "evidence-b1", 1), Judgment("c2", "evidence-d1", 1)]
    stance = {("c1", "evidence-a1"): "Supports", ("c1", "evidence-b1"): "Refutes", ("c2", "evidence-d1"): "Supports"}
    graded = benchmark_reference(judgments, benchmark="factir", cutoffs=[1, 5, 10], official="ndcg_10", stance=stance)
    graded.write(root / "graded" / "factir")
    out["factir"] = root / "graded" / "factir"
    (root / "graded" / "run.txt").write_text("c1 Q0 evidence-b1 1 3 t\nc1 Q0 x 2 2 t\nc2 Q0 evidence-d1 1 1 t\n")
    return out


def submission(folders: dict[str, Path], variant: str) -> Path:
    if variant == "factir":
        return folders["factir"].parent / "run.txt"
    return SAMPLES / variant.split("_")[0]


def gold_ids(folder: Path) -> set[str]:
    """The document ids of the folder's qrels and labels: none may appear in any output."""
    ids = {line.split("\t")[2] for line in (folder / "qrels.txt").read_text().splitlines() if line}
    labels = folder / LABELS_DIR / "labels.jsonl"
    if labels.is_file():
        ids |= {json.loads(line)["doc_id"] for line in labels.read_text().splitlines() if line}
    return ids


CASES = [
    (sub, name)
    for sub in ("1a", "1b", "2a", "2b", "2c")
    for name in ("reference.json", "topics.tsv", "qrels.txt", "doc_ids.arrow")
] + [
    ("1a", "duplicate_map.arrow"),
    ("1b", "duplicate_map.arrow"),
    ("1a", "temporal_periods.jsonl"),
    ("1b", "temporal_periods.jsonl"),
    ("2b", "turns.jsonl"),
    ("2c", "turns.jsonl"),
    ("2b", "passages.sqlite"),
    ("2c", "passages.sqlite"),
    ("1a_labels", "temporal_labels/manifest.json"),
    ("1a_labels", "temporal_labels/periods.jsonl"),
    ("1a_labels", "temporal_labels/labels.jsonl"),
    ("2a_phase", "phase.json"),
    ("factir", "stance.tsv"),
    ("factir", "reference.json"),
    ("factir", "qrels.txt"),
]


def delete(path: Path) -> None:
    path.unlink()


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def change_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 8)


def empty(path: Path) -> None:
    path.write_bytes(b"")


DAMAGES = {"deleted": delete, "truncated": truncate, "one byte changed": change_one_byte, "garbage": garbage,
           "emptied": empty}


def damaged_copy(folders: dict[str, Path], variant: str, name: str, damage: str, where: Path) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(folders[variant], where)
    DAMAGES[damage](where / name)
    return where


def assert_refused(code: int, out: str, err: str, name: str, gold: set[str], scores: Path) -> None:
    text = out + err
    assert code == 1, text
    assert Path(name).name in err, err
    assert "Traceback" not in text and "internal error" not in text, text
    assert "reteco prepare" in err, err
    assert not [g for g in gold if g in text], "a gold id was printed"
    assert not scores.exists()


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("variant, name", CASES)
def test_damaged_reference_is_refused_by_the_cli(folders, tmp_path, capsys, variant, name, damage):
    ref = damaged_copy(folders, variant, name, damage, tmp_path / "ref")
    out_dir = tmp_path / "out"
    code = cli.main(["score", "--ref", str(ref), "--res", str(submission(folders, variant)), "--out", str(out_dir)])
    captured = capsys.readouterr()
    assert_refused(code, captured.out, captured.err, name, gold_ids(folders[variant]), out_dir / "scores.json")


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("variant, name", [c for c in CASES if c[0] != "factir"])
def test_damaged_reference_is_refused_by_the_scoring_program(folders, tmp_path, capsys, variant, name, damage):
    input_dir = tmp_path / "input"
    damaged_copy(folders, variant, name, damage, input_dir / "ref")
    shutil.copytree(submission(folders, variant), input_dir / "res")
    code = codabench.main([str(input_dir), str(tmp_path / "output")])
    captured = capsys.readouterr()
    assert_refused(code, captured.out, captured.err, name, gold_ids(folders[variant]), tmp_path / "output" / "scores.json")


@pytest.mark.parametrize("variant", ["1a", "1b", "2a", "2b", "2c", "1a_labels", "2a_phase", "factir"])
def test_the_undamaged_folders_score(folders, tmp_path, capsys, variant):
    # The refusals above are about the damage: the same folders as prepared score.
    code = cli.main(["score", "--ref", str(folders[variant]), "--res", str(submission(folders, variant)),
                     "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "scores.json").is_file()
    if variant == "1a_labels":
        details = json.loads((tmp_path / "out" / "details.json").read_text())
        assert details["temporal"]["source"] == "frozen"


def test_the_whole_label_folder_deleted_is_refused_when_the_manifest_records_it(folders, tmp_path, capsys):
    ref = tmp_path / "ref"
    shutil.copytree(folders["1a_labels"], ref)
    shutil.rmtree(ref / LABELS_DIR)
    code = cli.main(["score", "--ref", str(ref), "--res", str(SAMPLES / "1a"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and f"{ref / LABELS_DIR}: error: missing" in err and "reteco prepare" in err
    assert not (tmp_path / "out" / "scores.json").exists()


def test_the_message_names_the_file_and_says_what_to_do(folders, tmp_path, capsys):
    ref = damaged_copy(folders, "2a", "qrels.txt", "one byte changed", tmp_path / "ref" / "2a")
    code = cli.main(["validate", "--ref", str(ref), str(SAMPLES / "2a" / "run.txt")])
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{ref / 'qrels.txt'}: error: does not match the sha256 recorded in reference.json (the reference data "
        "was changed or damaged); prepare it again with `reteco prepare`"
    ]


def test_a_data_file_the_manifest_does_not_list_is_refused(folders, tmp_path):
    # A deleted doc_ids.arrow must never mean "accept every id", nor may an unlisted one be used.
    ref = tmp_path / "ref"
    shutil.copytree(folders["2a"], ref)
    reseal(ref, lambda m: m["files"].pop("doc_ids.arrow"))
    with pytest.raises(InputError, match=r"doc_ids.arrow: error: not listed in reference.json"):
        Reference.read(ref)
    (ref / "doc_ids.arrow").unlink()
    assert Reference.read(ref).doc_index is None  # listed nowhere, present nowhere: a corpus-less reference


def reseal(folder: Path, change) -> None:
    """Edit reference.json and record its new sha256, as a hand edit that knows the format would."""
    manifest = json.loads((folder / "reference.json").read_text())
    change(manifest)
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    (folder / "reference.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda m: m.update(files=["qrels.txt"]), "files"),
        (lambda m: m["files"].update({"../qrels.txt": "0" * 64}), "files"),
        (lambda m: m["files"].update({"qrels.txt": "not a digest"}), "files"),
        (lambda m: m.update(domains="bitcoin"), "domains"),
        (lambda m: m.update(subtrack=5), "subtrack"),
        (lambda m: m.update(relevance="some"), "relevance"),
        (lambda m: m.update(cutoffs=[10, True]), "cutoffs"),
        (lambda m: m.update(temporal=[]), "temporal"),
    ],
)
def test_a_manifest_with_wrong_types_names_the_field(folders, tmp_path, change, field):
    ref = tmp_path / "ref"
    shutil.copytree(folders["1a"], ref)
    reseal(ref, change)
    with pytest.raises(InputError) as excinfo:
        Reference.read(ref)
    message = str(excinfo.value)
    assert message.startswith(f'{ref / "reference.json"}: error: "{field}" must be '), message
    assert message.endswith("prepare it again with `reteco prepare`")


def test_a_manifest_that_is_not_an_object_or_lacks_its_digest(folders, tmp_path):
    ref = tmp_path / "ref"
    shutil.copytree(folders["2a"], ref)
    (ref / "reference.json").write_text("[]")
    with pytest.raises(InputError, match="reference.json: error: not a JSON object"):
        Reference.read(ref)
    shutil.copy(folders["2a"] / "reference.json", ref / "reference.json")
    manifest = json.loads((ref / "reference.json").read_text())
    del manifest[MANIFEST_DIGEST]
    (ref / "reference.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=f"records no {MANIFEST_DIGEST}"):
        Reference.read(ref)
    with pytest.raises(InputError, match="reference folder not found"):
        Reference.read(tmp_path / "nowhere")


# ---------------------------------------------------------------------------------------------
# the fingerprint


def test_the_fingerprint_follows_the_verified_content(folders, tmp_path):
    first = Reference.read(folders["2a"])
    again = tmp_path / "again"
    shutil.copytree(folders["2a"], again)
    assert Reference.read(again).fingerprint() == first.fingerprint()
    # Other judgments, written and recorded as prepare writes them: another fingerprint.
    changed = tmp_path / "changed"
    edited = Reference(dict(first.manifest), first.topics, first.judgments[1:], first.doc_index)
    edited.write(changed)
    assert Reference.read(changed).fingerprint() != first.fingerprint()
    # A manifest field (the relevance mode) changes what is scored, hence the fingerprint.
    graded = tmp_path / "graded"
    shutil.copytree(folders["2a"], graded)
    reseal(graded, lambda m: m.update(relevance="graded"))
    assert Reference.read(graded).fingerprint() != first.fingerprint()


def test_references_built_in_memory_have_a_fingerprint_of_their_content():
    def ref(judgments):
        return benchmark_reference(judgments, benchmark="factir", cutoffs=[10], official="ndcg_10")

    a = ref([Judgment("c1", "x", 1)])
    assert a.fingerprint() == ref([Judgment("c1", "x", 1)]).fingerprint()
    assert a.fingerprint() != ref([Judgment("c1", "y", 1)]).fingerprint()
    assert a.fingerprint() != ref([Judgment("c1", "x", 2)]).fingerprint()
    assert len(a.fingerprint()) == 16
    assert score_run(a, b"c1 Q0 x 1 1 t\n").scores["ndcg_10"] == 1.0  # and they still score


# ---------------------------------------------------------------------------------------------
# duplicate-map chains: a -> b -> c is followed to c wherever an id is mapped


def chain_reference(b_in_corpus: bool, dup: DuplicateMap) -> Reference:
    corpus = ["c", "z"] + (["b"] if b_in_corpus else [])
    manifest = {"subtrack": "2a", "benchmark": "reteco", "relevance": "binary", "cutoffs": [10],
                "official": "ndcg_10", "unit": "turn", "domains": ["d"]}
    topics = [Topic("d/t1", "d", "t1", "d/t1", "d/t", 1)]
    return Reference(manifest, topics, [Judgment("d/t1", "c", 1)], DocIdIndex.from_pairs([("d", x) for x in corpus], ["d"]), dup)


@pytest.mark.parametrize("engine", ["numpy", "pytrec_eval"])
@pytest.mark.parametrize("b_in_corpus", [False, True])
def test_a_run_naming_the_start_of_a_chain_gets_credit(engine, b_in_corpus):
    # a -> b -> c, c relevant. Mapped one step, "a" became "b": unknown (or, when "b" is still
    # a corpus id, not relevant), and the topic scored 0. Followed to its end, "a" is "c".
    reference = chain_reference(b_in_corpus, DuplicateMap.from_mapping({"a": "b", "b": "c"}))
    result = score_run(reference, b"d/t1 Q0 a 1 2 t\nd/t1 Q0 z 2 1 t\n", engine=engine)
    assert result.scores["ndcg_10"] == 1.0
    assert result.scores["mrr"] == 1.0
    assert result.details["counts"]["doc_ids_remapped"] == 1


def write_raw_map(path: Path, removed: list[str], kept: list[str]) -> None:
    """A duplicate_map.arrow as an older reteco wrote it: pairs as given, chains unresolved."""
    table = pa.table({"removed": pa.array(removed, pa.string()), "kept": pa.array(kept, pa.string())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def test_chains_are_resolved_however_the_map_is_built(tmp_path):
    mapping = {"a": "b", "b": "c", "c": "d", "x": "d", "e": "a"}
    assert resolve_chains(mapping) == {"a": "d", "b": "d", "c": "d", "x": "d", "e": "d"}
    built = DuplicateMap.from_mapping(mapping)
    assert dict(zip(built.removed.to_pylist(), built.kept.to_pylist())) == resolve_chains(mapping)
    # An older reference's map, written with its chains: read, it maps the same way.
    write_raw_map(tmp_path / "old.arrow", list(mapping), list(mapping.values()))
    read = DuplicateMap.read(tmp_path / "old.arrow")
    assert read.apply(pa.array(["e", "b", "q"]))[0].to_pylist() == ["d", "d", "q"]
    # A long chain (1000 links) resolves too.
    long = {f"n{i}": f"n{i + 1}" for i in range(1000)}
    assert set(DuplicateMap.from_mapping(long).kept.to_pylist()) == {"n1000"}
    write_raw_map(tmp_path / "long.arrow", list(long), list(long.values()))
    assert set(DuplicateMap.read(tmp_path / "long.arrow").kept.to_pylist()) == {"n1000"}


def test_a_cycle_is_an_error(tmp_path):
    with pytest.raises(DuplicateCycle) as excinfo:
        resolve_chains({"x": "a", "a": "b", "b": "a"})
    assert excinfo.value.ids == ["a", "b"]
    with pytest.raises(DuplicateCycle):
        resolve_chains({"a": "a"})
    write_raw_map(tmp_path / "cycle.arrow", ["a", "b"], ["b", "a"])
    with pytest.raises(InputError, match="cycle.arrow: error: its chains of removed ids never end"):
        DuplicateMap.read(tmp_path / "cycle.arrow")


def test_an_in_memory_fingerprint_covers_the_corpus_and_the_duplicate_map():
    def ref(corpus, mapping):
        index = DocIdIndex.from_pairs([("d", x) for x in corpus], ["d"])
        dup = DuplicateMap.from_mapping(mapping) if mapping else None
        return Reference({"subtrack": "2a", "domains": ["d"]}, [Topic("d/t", "d", "t", "d/t")], [Judgment("d/t", "a", 1)],
                         index, dup)

    base = ref(["a", "b"], {"x": "a"})
    assert base.fingerprint() == ref(["a", "b"], {"x": "a"}).fingerprint()
    assert base.fingerprint() != ref(["a", "c"], {"x": "a"}).fingerprint()
    assert base.fingerprint() != ref(["a", "b"], {"x": "b"}).fingerprint()
    assert base.fingerprint() != ref(["a", "b"], None).fingerprint()
