"""Files in a submission that scoring does not read are warned of (issue 35, point 8): a second
run file beside run.txt, a metadata.yaml, a file named metadata inside a zip (Codabench's
reserved name); documentation is not; exit 0, as before."""

from __future__ import annotations

import shutil

import pytest
from support.bundle_edits import zip_bytes
from support.paths import SAMPLES

from reteco.commands import main
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    root = tmp_path_factory.mktemp("unscored")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref", subtracks=("2a", "2c"))
    return root / "ref"


def test_a_second_run_and_a_metadata_file_in_a_zip_are_warned_of(ref, tmp_path, capsys):
    run = (SAMPLES / "2a" / "run.txt").read_bytes()
    sub = tmp_path / "sub.zip"
    sub.write_bytes(zip_bytes({"run.txt": run, "bm25.txt": run, "metadata": b"x", "metadata.yaml": b"a: 1",
                               "README.md": b"# mine"}))
    for command in (["validate", "--ref", str(ref / "2a"), str(sub)], ["score", "--ref", str(ref / "2a"), "--res", str(sub)]):
        assert main(command) == 0
        err = capsys.readouterr().err
        assert ("sub.zip: warning: 2 files of the submission are not scored: 'sub.zip:bm25.txt', 'sub.zip:metadata.yaml'; "
                "scoring reads 'sub.zip:run.txt' only: remove the others") in err, command
        assert ("sub.zip: warning: the zip holds a file named metadata ('sub.zip:metadata'), a name Codabench reserves: "
                "never include it in a results submission; remove it") in err
        assert "README" not in err


def test_a_clean_submission_and_the_workers_metadata_beside_a_folder_are_not(ref, tmp_path, capsys):
    folder = tmp_path / "res"
    shutil.copytree(SAMPLES / "2c", folder)
    (folder / "metadata").write_text("written by the worker\n")
    assert main(["validate", "--ref", str(ref / "2c"), str(folder)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["validate", "--ref", str(ref / "2c"), str(SAMPLES / "2c")]) == 0
    assert "not scored" not in capsys.readouterr().err


def test_2c_names_both_files_it_reads(ref, tmp_path, capsys):
    files = {n: (SAMPLES / "2c" / n).read_bytes() for n in ("run.txt", "answers.jsonl")}
    sub = tmp_path / "sub.zip"
    sub.write_bytes(zip_bytes({**files, "dense.txt": files["run.txt"]}))
    assert main(["validate", "--ref", str(ref / "2c"), str(sub)]) == 0
    assert ("1 files of the submission are not scored: 'sub.zip:dense.txt'; scoring reads 'sub.zip:run.txt', "
            "'sub.zip:answers.jsonl' only") in capsys.readouterr().err
