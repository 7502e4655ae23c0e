"""The bundle's solutions are named for what they are: the starting kit's sample submissions
(dev) and the kit's BM25 baseline run on the test split."""

from __future__ import annotations

import io
import zipfile

import yaml
from support.paths import SAMPLES


def test_each_solution_is_named_after_what_its_zip_holds(built_all):
    bundles, _ = built_all
    bundle = bundles[("1a",)]
    with zipfile.ZipFile(bundle.path) as archive:
        content = yaml.safe_load(archive.read("competition.yaml"))
        names = {s["path"]: s["name"] for s in content["solutions"]}
        assert names == {
            "solutions/dev_1a.zip": "Starting kit sample submission 1a (dev)",
            "solutions/test_1a.zip": "Starting kit BM25 baseline 1a (test)",
        }
        dev = zipfile.ZipFile(io.BytesIO(archive.read("solutions/dev_1a.zip"))).read("run.txt")
        test = zipfile.ZipFile(io.BytesIO(archive.read("solutions/test_1a.zip"))).read("run.txt").decode()
    assert dev == (SAMPLES / "1a" / "run.txt").read_bytes()  # the kit's sample, byte for byte
    assert {line.split()[5] for line in test.splitlines()} == {"reteco_bm25"}  # the baseline's run tag
    assert not any(name.startswith("Baseline ") for name in names.values())
