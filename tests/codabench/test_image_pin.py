"""The worker's image named by digest, and the modules the scoring program found in it.

Codabench's worker pulls ``docker_image`` before every run (``_get_container_image``,
compute_worker.py, c7dbc75) with docker-py, which accepts ``repo@sha256:<64 hex>``; the tag
``codalab/codalab-legacy:py312`` was rebuilt twice since March 2026."""

from __future__ import annotations

import json
import shutil
from importlib import metadata

import pytest
from support.bundle_edits import rewrite
from support.judged_program import EVALUATION
from support.paths import SAMPLES

from reteco.codabench.program import image, scoring_program
from reteco.workbench.codabench.bundle import competition as definition
from reteco.workbench.codabench.check.check_bundle import check_bundle

DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_a_recorded_digest_names_the_image_and_a_bad_one_is_refused(monkeypatch):
    assert image.reference() == "codalab/codalab-legacy:py312"  # none recorded in the repository
    assert image.reference(DIGEST) == f"codalab/codalab-legacy@{DIGEST}"
    assert len(image.reference(DIGEST)) <= 128  # Competition.docker_image's max_length
    with pytest.raises(ValueError, match="not an image digest"):
        image.reference("sha256:abc")
    monkeypatch.setattr(image, "DIGEST", DIGEST)
    assert definition.competition("per-subtrack", "1a")["docker_image"] == f"codalab/codalab-legacy@{DIGEST}"


def test_check_bundle_notes_a_tag_and_refuses_a_malformed_digest(slim, tmp_path):
    report = check_bundle(slim, simulate=False)
    assert any("docker_image 'codalab/codalab-legacy:py312' is a tag" in n for n in report.notes)
    pinned = rewrite(slim, tmp_path / "pinned.zip", content=lambda c: c.update(docker_image=f"codalab/codalab-legacy@{DIGEST}"))
    report = check_bundle(pinned, simulate=False)
    assert not any("is a tag" in n for n in report.notes) and not any(e.startswith("[image]") for e in report.errors)
    bad = rewrite(slim, tmp_path / "bad.zip", content=lambda c: c.update(docker_image="codalab/codalab-legacy@sha256:xyz"))
    assert any(e.startswith("[image]") and "not sha256: and 64 hex digits" in e
               for e in check_bundle(bad, simulate=False).errors)


def test_the_scoring_program_reports_the_versions_it_found(ref_root, tmp_path, capsys):
    ref = tmp_path / "input" / "ref"
    shutil.copytree(ref_root / "2b", ref)
    (ref / "phase.json").write_text(json.dumps(definition.phase_record(EVALUATION, "2b")))
    shutil.copytree(SAMPLES / "2b", tmp_path / "input" / "res")
    assert scoring_program.main([str(tmp_path / "input"), str(tmp_path / "output")]) == 0
    log = capsys.readouterr().out
    environment = json.loads((tmp_path / "output" / "details.json").read_text())["environment"]
    for name in ("numpy", "pandas", "pyyaml"):
        assert environment[name] == metadata.version(name)
        assert f"{name} {metadata.version(name)}" in log
