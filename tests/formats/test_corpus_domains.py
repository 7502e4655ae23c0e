"""Which documents a domain's corpus holds in the flat layout (one rule for prepare and the kit's
baseline), and what a reference says when its corpus is mostly relevant documents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import SAMPLES, SHARED_SAMPLE

from reteco.formats import release as rel
from reteco.formats.phase_record import local_phase
from reteco.formats.reference import Reference, ReferenceDataError
from reteco.outputs.results import write_results
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release
from reteco.scoring.submission import score_submission

# ---------------------------------------------------------------------------------------------
# The flat layout's rule, by hand


def test_track1_documents_go_to_their_prefix_else_their_citers_else_everywhere():
    ids = ["bitcoin/a.txt", "Law/b.txt", "plain.txt", "orphan.txt", "bitcoin/a.txt", "orphan.txt"]
    citations = [("history", ["plain.txt", "bitcoin/a.txt"]), ("bitcoin", ["plain.txt"])]
    found = rel.attribute_flat_corpus(ids, citations, ["bitcoin", "history"], by_prefix=True)
    # The prefix wins over a citation from another domain; "Law" is the domain "law".
    assert found.owners["bitcoin/a.txt"] == ("bitcoin",)
    assert found.owners["Law/b.txt"] == ("law",)
    assert found.owners["plain.txt"] == ("bitcoin", "history")
    # Every domain: the topics' and those the ids name (law has no topic but is a domain).
    assert found.domains == ["bitcoin", "history", "law"]
    assert found.owners["orphan.txt"] == ("bitcoin", "history", "law")
    assert found.unattributed == 2  # lines: the orphan is written twice


def test_track2_documents_go_to_their_citers_and_a_prefix_names_no_domain():
    ids = ["biology/x.txt", "shared", "none"]
    citations = [("biology", ["shared"]), ("law", ["shared", "biology/x.txt"]), ("drones", [])]
    found = rel.attribute_flat_corpus(ids, citations, ["biology", "drones", "law"], by_prefix=False)
    assert found.owners == {"biology/x.txt": ("law",), "shared": ("biology", "law"), "none": ("biology", "drones", "law")}
    assert found.domains == ["biology", "drones", "law"] and found.unattributed == 1


def test_a_topics_domain_is_the_prefix_most_of_its_gold_ids_carry():
    assert rel.prefix_domain(["law/1", "bitcoin/2", "law/3"]) == ("law", True)
    assert rel.prefix_domain(["b/1", "a/2"]) == ("a", True)  # a tie: the first by name
    assert rel.prefix_domain(["Drones/1"]) == ("drones", False)
    assert rel.prefix_domain(["plain"]) == (None, False)


# ---------------------------------------------------------------------------------------------
# A corpus of (almost) only relevant documents is said to be one


@pytest.fixture(scope="module")
def synthetic_ref(tmp_path_factory):
    root = tmp_path_factory.mktemp("relevance")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref")
    return root / "ref"


def test_the_synthetic_release_is_not_flagged_and_its_shares_are_the_counted_ones(synthetic_ref):
    for sub in ("1a", "1b", "2a", "2b", "2c"):
        reference = Reference.read(synthetic_ref / sub)
        relevance = reference.manifest["corpus_relevance"]
        assert relevance["mostly_relevant"] == [] and relevance["threshold"] == 0.5
        corpus = set(reference.doc_index.doc_ids.to_pylist())
        # Independently: distinct relevant documents of a domain's topics over its corpus size.
        for domain, share in relevance["relevant_share"].items():
            keys = {t.key for t in reference.topics if t.domain == domain}
            relevant = {j.doc_id for j in reference.judgments if j.key in keys}
            size = reference.doc_index.count_in(domain)
            present = sum(1 for d in relevant if d in corpus)
            assert share == round(present / size, 4) and 0 < share < 0.1, (sub, domain, share)
    result = score_submission(Reference.read(synthetic_ref / "1a"), SAMPLES / "1a")
    assert not any(p.file == "reference" for p in result.problems)
    assert "corpus_mostly_relevant" not in result.details["reference"]


def _only_gold_corpus(release: Path) -> None:
    """Cut each Track-1 domain's corpus to the documents its dev qrels judge relevant."""
    for folder in rel.domain_dirs(release / rel.TRACK1_DIR).values():
        relevant = {line.doc_id for line in rel.read_qrels(folder / "qrels_dev.txt")}
        relevant |= {line.doc_id for line in rel.read_qrels(folder / "qrels_steps_dev.txt")}
        lines = (folder / "documents.jsonl").read_text(encoding="utf-8").splitlines()
        kept = [x for x in lines if json.loads(x)["id"] in relevant]
        (folder / "documents.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")


def test_a_gold_only_corpus_is_recorded_and_warned_about_in_log_details_and_page(tmp_path):
    release = write_synthetic_release(tmp_path / "release")
    _only_gold_corpus(release)
    prepare_release(release, "dev", tmp_path / "ref", subtracks=("1a",))
    reference = Reference.read(tmp_path / "ref" / "1a")
    relevance = reference.manifest["corpus_relevance"]
    assert relevance["mostly_relevant"] == ["bitcoin", "history", "law"]
    assert all(share > 0.5 for share in relevance["relevant_share"].values())

    result = score_submission(reference, SAMPLES / "1a")
    warning = next(str(p) for p in result.problems if p.file == "reference")
    assert warning.startswith("reference: warning: over half of the corpus is judged relevant in 3 of 3 domains "
                              "(bitcoin, history, law)")
    assert "say little about a system" in warning
    assert warning in result.details["warnings"]
    assert result.details["reference"]["corpus_mostly_relevant"] == ["bitcoin", "history", "law"]
    write_results(tmp_path / "out", result, "1a", local_phase("dev"))
    page = (tmp_path / "out" / "detailed_results.html").read_text(encoding="utf-8")
    assert "over half of the corpus is judged relevant in 3 of 3 domains" in page
    details = json.loads((tmp_path / "out" / "details.json").read_text())
    assert warning in details["warnings"]


def test_the_organizers_sample_is_flagged_in_every_subtrack(tmp_path):
    if not SHARED_SAMPLE.is_dir():
        pytest.skip(f"the organizers' sample is not at {SHARED_SAMPLE} (expected beside the repository, in ../shared)")
    prepare_release(SHARED_SAMPLE, "dev", tmp_path / "ref")
    for sub in ("1a", "1b", "2a", "2c"):
        relevance = Reference.read(tmp_path / "ref" / sub).manifest["corpus_relevance"]
        domains = Reference.read(tmp_path / "ref" / sub).domains
        # Its corpus is the gold passages and nothing else.
        assert relevance["mostly_relevant"] == domains and set(relevance["relevant_share"].values()) == {1.0}


def test_a_malformed_corpus_relevance_is_refused_on_reading(synthetic_ref, tmp_path):
    from reteco.formats.file_digest import MANIFEST_DIGEST, manifest_digest

    copy = tmp_path / "1a"
    shutil.copytree(synthetic_ref / "1a", copy)
    manifest = json.loads((copy / "reference.json").read_text())
    manifest["corpus_relevance"] = {"mostly_relevant": "bitcoin"}
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    (copy / "reference.json").write_text(json.dumps(manifest))
    with pytest.raises(ReferenceDataError, match='"corpus_relevance" must be an object'):
        Reference.read(copy)
